"""The transfer part: a rule supervised in the first half, scored in both halves.

A run's ``Config`` is the main sweep's with ``supervised_positions = L / 2``
(the arm ``"first"``) or without it (``"all"``, the ceiling): the training loss
and the tuning's validation read the labels of positions ``0 .. L/2 - 1`` only
(``train.supervise``). Every run is then scored at every position of
``TEST_SIZE`` test sequences of length ``L`` with the full labels: its
per-position accuracy, its first-half and second-half accuracy (each over the
positions of that half that have a token 3 back), and its *gap*, first minus
second.

The intervention (absolute and sinusoidal models, the schemes whose positions
are rows added to the tokens): the same test sequences read with the rows
*rolled* by ``L / 2`` (position ``i`` takes row ``(i + L/2) mod L``), so the
rows the loss trained sit under the second half; ``mirrored`` is then the
accuracy at ``i + L/2`` for each scored first-half ``i``, where query and key
both read trained rows. For the learned table the
record also holds each row's distance from its initial value (``row_drift``).

Shape legend:
    tokens, labels, predicted: ``(b, n)``; per-position vectors: ``(n,)``
"""

from __future__ import annotations

import time
from typing import Any

import torch

from ...experiments.config import Config, model_seed
from ...experiments.measure import evaluation_set, predict
from ...experiments.model import TinyModel, count_parameters
from ...experiments.schemes import LearnedPositions
from ...experiments.tasks import get_task
from ...experiments.train import initial_model, train
from ...experiments.tuning import mean_final_loss, tune_one
from .design import (
    SPAN,
    SUPERVISED,
    SUPERVISIONS,
    TEST_SIZE,
    TRAIN_LENGTH,
    TRANSFER_SIZE,
)

#: The schemes whose positions are rows added to the tokens (rolled in the
#: intervention).
ROLLED = ("absolute", "sinusoidal")


def transfer_config(
    scheme: str, supervision: str, seed: int = 0, **changes: Any
) -> Config:
    """The ``Config`` of one transfer run (``changes``: other fields, for a test).

    The main sweep's settings (width 32, one layer, 500 steps, batch 32), the
    ``relative`` task at ``L = 32``, ``TRANSFER_SIZE`` training sequences,
    ``TEST_SIZE`` test sequences at ``L`` only, and ``k = L`` for the clipped
    tables; ``supervision`` is a key of ``SUPERVISIONS``.
    """
    if supervision not in SUPERVISIONS:
        raise ValueError(
            f"supervision must be one of {tuple(SUPERVISIONS)}, got {supervision!r}"
        )
    values: dict[str, Any] = {
        "task": "relative",
        "scheme": scheme,
        "seed": seed,
        "train_length": TRAIN_LENGTH,
        "train_size": TRANSFER_SIZE,
        "test_lengths": (TRAIN_LENGTH,),
        "test_size": TEST_SIZE,
        "max_relative_positions": SPAN,
        "supervised_positions": SUPERVISIONS[supervision],
    }
    values.update(changes)
    return Config(**values)


def supervision_of(config: Config) -> str:
    """The name of a config's supervision: ``"first"`` or ``"all"``."""
    return "all" if config.supervised_positions is None else "first"


def halves(scored: torch.Tensor, until: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The scored positions before ``until`` and from it on, as two masks.

    Shapes:
        scored: ``(n,)`` bool (``Task.scored_at``)
        output: two ``(n,)`` bool masks
    """
    if scored.dim() != 1 or scored.dtype != torch.bool:
        raise TypeError(f"scored must be a 1-D bool tensor, got {scored!r}")
    if not 0 < until < scored.numel():
        raise ValueError(
            f"until must split the {scored.numel()} positions, got {until!r}"
        )
    before = torch.arange(scored.numel()) < until  # (n,)
    return scored & before, scored & ~before


def position_accuracy(predicted: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The share of sequences right at each position (every sequence scored).

    Shapes:
        predicted, labels: ``(b, n)``
        output: ``(n,)`` floats in ``[0, 1]``
    """
    if predicted.shape != labels.shape or predicted.dim() != 2:
        raise ValueError(
            "predicted and labels must be (b, n) tensors of one shape, got "
            f"{tuple(predicted.shape)} and {tuple(labels.shape)}"
        )
    return (predicted == labels).float().mean(0)  # (n,)


def half_scores(accuracy: torch.Tensor, scored: torch.Tensor) -> dict[str, Any]:
    """Per-position accuracy (None where unscored), each half's mean, the gap.

    The halves split at ``SUPERVISED`` (``L / 2``).

    Shapes:
        accuracy: ``(n,)``; scored: ``(n,)`` bool
        output: ``{"per_position": n floats or None, "first", "second", "gap"}``
    """
    first, second = halves(scored, SUPERVISED)
    a, b = float(accuracy[first].mean()), float(accuracy[second].mean())
    return {
        "per_position": [
            float(v) if s else None
            for v, s in zip(accuracy.tolist(), scored.tolist())
        ],
        "first": a,
        "second": b,
        "gap": a - b,
    }


def mirrored(accuracy: torch.Tensor, scored: torch.Tensor) -> float:
    """Mean accuracy at ``i + L/2`` for every scored first-half position ``i``.

    Under rolled rows these are the positions whose query row and key row (3
    back) are both rows the loss trained, as at ``i`` in the first half.

    Shapes:
        accuracy: ``(n,)``; scored: ``(n,)`` bool; output: a float
    """
    first, _ = halves(scored, SUPERVISED)
    places = first.nonzero().flatten() + SUPERVISED  # (positions,)
    if int(places.max()) >= accuracy.numel():
        raise ValueError(f"accuracy must cover {int(places.max()) + 1} positions")
    return float(accuracy[places].mean())


@torch.no_grad()
def rolled_predict(model: TinyModel, tokens: torch.Tensor) -> torch.Tensor:
    """The top class with the absolute rows rolled by ``n / 2``.

    Position ``i`` reads row ``(i + n/2) mod n``: the rows of the first half
    sit under the second, and the other way round.

    Shapes:
        tokens: ``(b, n)``
        output: ``(b, n)``
    """
    if model.input_positions is None:
        raise ValueError("model must add positions to its tokens (absolute rows)")
    b, n = tokens.shape
    rows = (torch.arange(n) + n // 2) % n  # (n,)
    was_training = model.training
    model.eval()
    hidden = model.embed(tokens, rows.expand(b, n))  # (b, n, hidden)
    predicted = model.classifier(model.encoder(hidden)).argmax(-1)  # (b, n)
    model.train(was_training)
    return predicted


def row_drift(model: TinyModel, start: TinyModel) -> list[float] | None:
    """Each row's distance from its initial value, for a learned table (else None).

    Shapes:
        output: ``L`` floats (one per row), or None
    """
    table = model.input_positions
    if not isinstance(table, LearnedPositions):
        return None
    moved = table.weight.detach() - start.input_positions.weight.detach()  # (L, h)
    return moved.norm(dim=-1).tolist()


def measure(config: Config) -> dict[str, Any]:
    """Train one transfer run and score it by position: its record.

    Shapes:
        (no tensors): a JSON-ready record
    """
    start = time.perf_counter()
    trained = train(config)
    n = config.train_length
    tokens, labels = evaluation_set(config, n)  # (test_size, n) each
    scored = get_task(config.task).scored_at(n)  # (n,)
    scores = half_scores(position_accuracy(predict(trained.model, tokens), labels),
                         scored)
    rolled = None
    if config.scheme in ROLLED:
        moved = position_accuracy(rolled_predict(trained.model, tokens), labels)
        rolled = {**half_scores(moved, scored), "mirrored": mirrored(moved, scored)}
    return {
        "setting": config.setting,
        "task": config.task,
        "scheme": config.scheme,
        "supervision": supervision_of(config),
        "train_size": config.train_size,
        "seed": config.seed,
        "learning_rate": config.learning_rate,
        "model_seed": model_seed(config),
        "parameters": count_parameters(trained.model),
        **scores,
        "rolled": rolled,
        "row_drift": row_drift(trained.model, initial_model(config)),
        "final_loss": mean_final_loss(trained.losses, config.steps),
        "train_seconds": trained.seconds,
        "job_seconds": time.perf_counter() - start,
    }


def run_job(kind: str, config: Config, threads: int = 1) -> dict[str, Any]:
    """What the engine runs: a tuning run (``tuning.tune_one``) or :func:`measure`.

    Shapes:
        (no tensors): a JSON-ready record
    """
    torch.set_num_threads(threads)
    if kind == "tuning":
        return tune_one(config)
    if kind != "measured":
        raise ValueError(f"kind must be 'measured' or 'tuning', got {kind!r}")
    return measure(config)


__all__ = [
    "ROLLED",
    "half_scores",
    "halves",
    "measure",
    "mirrored",
    "position_accuracy",
    "rolled_predict",
    "row_drift",
    "run_job",
    "supervision_of",
    "transfer_config",
]
