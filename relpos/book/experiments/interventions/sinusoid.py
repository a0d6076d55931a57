"""The sinusoid's hunger for data: is it the similar neighbours, or the fixed size?

The claim (chapter 9): on ``relative`` at ``L``, ``absolute`` fits with 32
training sequences (98%) where ``sinusoidal`` needs 512 (15% with 32), because
neighbouring sinusoidal rows are nearly the same vector. A confound: the
sinusoid is fixed at the token embeddings' initial size, while the learned
rows (and the token embeddings) grow in training.

The intervention frees the size and nothing else: ``sinusoidal-scale`` (one
learned factor) and ``sinusoidal-scale-dims`` (one per dimension) of
``scaled``, trained under ``sinusoidal``'s model seed, so every other initial
weight and every batch are ``sinusoidal``'s, at ``sinusoidal``'s learning rate.
``absolute`` trains beside them (its own seed and rate, as in the sweep) for
the sizes a learned table reaches. Each run records, before and after
training: the root mean square of the position rows ``0 .. L - 1`` and of the
token embeddings, the mean cosine of neighbouring position rows, and the
learned factor.

Shapes:
    position rows: ``(L, hidden)``
"""

from __future__ import annotations

from typing import Any

import torch

from ..config import Config, model_seed
from ..train import initial_model, train
from .common import Side, arm, arm_accuracies, paired, rms, run_record
from .scaled import SCALED

#: The scheme whose model seed (and learning rate) each arm trains with.
PAIRED_WITH = {name: "sinusoidal" for name in SCALED}
CLAIM = (
    "sinusoidal needs more training sequences than absolute on relative because "
    "its neighbouring rows are nearly alike"
)
CHANGE = (
    "the same sinusoid times a learned factor (one, or one per dimension), "
    "initialised to the fixed scale; same seed, data, batches and rate"
)


def neighbour_cosine(rows: torch.Tensor) -> float:
    """Mean cosine of the rows of neighbouring positions.

    Shapes:
        rows: ``(n, hidden)``, n >= 2; output: a float
    """
    rows = rows.detach()
    return torch.cosine_similarity(rows[:-1], rows[1:], dim=-1).mean().item()


def _sizes(model: torch.nn.Module, length: int) -> dict[str, float | None]:
    positions = model.input_positions
    rows = positions(length)  # (L, hidden)
    scale = getattr(positions, "scale", None)
    return {
        "positions_rms": rms(rows),
        "tokens_rms": rms(model.token_embedding.weight),
        "neighbour_cosine": neighbour_cosine(rows),
        "scale_rms": rms(scale) if isinstance(scale, torch.nn.Parameter) else None,
    }


def measure(config: Config) -> dict[str, Any]:
    """Train one arm; its accuracy and its sizes before and after training.

    The record: :func:`.common.run_record`'s fields (``model_seed`` is the
    seed of the scheme in ``PAIRED_WITH``), ``arms`` (``trained``: accuracy per
    test length), ``initial`` and ``trained`` (``positions_rms``,
    ``tokens_rms``, ``neighbour_cosine``, ``scale_rms``: the factor's, or
    None for a scheme without one).

    Shapes:
        record: JSON-ready; position rows measured: ``(L, hidden)``
    """
    if config.scheme not in (*PAIRED_WITH, "sinusoidal", "absolute"):
        raise ValueError(
            "scheme must be sinusoidal, absolute or one of "
            f"{tuple(PAIRED_WITH)}, got {config.scheme!r}"
        )
    paired_with = PAIRED_WITH.get(config.scheme, config.scheme)
    seed = model_seed(config.replace(scheme=paired_with))
    trained = train(config, seed=seed)
    with torch.no_grad():
        before = _sizes(initial_model(config, seed=seed), config.train_length)
        after = _sizes(trained.model, config.train_length)
    return {
        **run_record(config, trained, seed),
        "arms": arm_accuracies(trained.model, config, {"trained": lambda n: None}),
        "initial": before,
        "trained": after,
    }


def comparisons(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each arm against ``sinusoidal`` at every size and length; sizes after training.

    Shapes:
        records: one per cell and seed; output: one dict per comparison
    """
    found = []
    sizes = sorted({r["train_size"] for r in records})
    lengths = sorted({int(n) for r in records for n in r["arms"]["trained"]})
    schemes = [s for s in (*PAIRED_WITH, "absolute") if any(
        r["scheme"] == s for r in records
    )]
    for size in sizes:
        base = {"scheme": "sinusoidal", "train_size": size}
        for scheme in schemes:
            where = {"scheme": scheme, "train_size": size}
            for n in lengths:
                found.append(
                    paired(
                        records,
                        f"{scheme} - sinusoidal, {size} sequences, n = {n}",
                        arm(f"{scheme}, {size}, n = {n}", where, "trained", n),
                        arm(f"sinusoidal, {size}, n = {n}", base, "trained", n),
                    )
                )
            found.append(
                paired(
                    records,
                    f"{scheme} - sinusoidal, {size} sequences: position rms, trained",
                    Side(f"{scheme} position rms", where,
                         lambda r: r["trained"]["positions_rms"]),
                    Side("sinusoidal position rms", base,
                         lambda r: r["trained"]["positions_rms"]),
                )
            )
    return found


__all__ = [
    "CHANGE",
    "CLAIM",
    "PAIRED_WITH",
    "comparisons",
    "measure",
    "neighbour_cosine",
]
