"""Training a language model at one context, and measuring it at several.

:func:`train_text` trains at the context ``L = train_length``: every step reads
``batch_size`` windows at uniformly random offsets of the training stream (the
offsets and the masks drawn from the data seed, so every scheme sees the same
batches), with AdamW and the experiments' schedule (warm-up over the first
tenth, linear decay to zero). No dropout; with deterministic algorithms on, a
config gives the same weights bit for bit on one machine and thread count.

:func:`evaluate_text` measures the model at every evaluation length ``n`` on
the same bytes (the first ``eval_bytes`` of a split's stream, or the whole
split when shorter), cut into non-overlapping windows of ``n``: the
"nonoverlapping evaluation" of Press et al. (2022, ALiBi), where the first
token of a window sees no context and the last sees ``n - 1`` tokens; each
byte is predicted once at each length (causal: window ``k`` reads bytes
``k n .. k n + n - 1`` and predicts ``k n + 1 .. k n + n``). Sliding windows, one
prediction per window with the longest context, are not implemented. The
masked LM's evaluation masks come from a seed of the length alone, the same
for every run. Reported per length: the mean loss in nats, bits per byte
(``loss / ln 2``: one symbol is one byte), the number of windows and of
predicted bytes, and the per-position loss: the mean loss at each position
``t`` of the window over the windows (positions ``t >= L`` are the ones never
trained at; for the masked LM the mean over the windows where ``t`` was chosen,
``None`` where it never was), rounded to :data:`CURVE_DECIMALS` decimals.

Shapes:
    stream: ``(bytes,)`` uint8; inputs, targets: ``(b, n)``
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable

import torch

from ..experiments.config import derive_seed
from ..experiments.model import TinyModel, count_parameters
from ..experiments.train import deterministic, optimise
from ..experiments.tuning import mean_final_loss
from .alignment import alignment_record
from .config import TextConfig, data_seed, model_seed
from .corpus import Corpus, stdlib_corpus
from .lm import IGNORE, language_model, objective_batch, token_losses

#: Tokens per evaluation batch (windows of one length are grouped up to this).
EVAL_TOKENS = 8192
#: Decimals of the per-position losses kept in a record (nats; far below the noise).
CURVE_DECIMALS = 4


@dataclass
class TrainedText:
    """A trained language model, its config, its loss at every step, its time.

    Shapes:
        losses: ``steps`` floats (nats per predicted byte)
    """

    model: TinyModel
    config: TextConfig
    losses: list[float]
    seconds: float


def corpus_of(config: TextConfig) -> Corpus:
    """The corpus of ``config`` (built once per process), checked against its hash.

    Raises ``ValueError`` when ``config.corpus_sha256`` is set and differs: the
    run was planned on another corpus (another Python, another stdlib).
    """
    corpus = stdlib_corpus(config.corpus)
    if config.corpus_sha256 and config.corpus_sha256 != corpus.sha256:
        raise ValueError(
            f"corpus_sha256 must be this interpreter's {config.corpus} corpus "
            f"{corpus.sha256} (Python {corpus.python}), got {config.corpus_sha256}"
        )
    return corpus


def initial_model(config: TextConfig) -> TinyModel:
    """The model of ``config`` before training, built under its model seed."""
    with deterministic(model_seed(config)):
        return language_model(config)


def train_text(
    config: TextConfig,
    stream: torch.Tensor | None = None,
    *,
    on_step: Callable[[int, float], None] | None = None,
    model: TinyModel | None = None,
) -> TrainedText:
    """Train the language model of ``config`` on ``stream`` (default: train split).

    ``on_step(step, loss)`` is called after every step. ``model``: the model to
    train instead of :func:`initial_model` (an intervention on the start, such
    as a rescaled position table); it is trained in place.

    Shapes:
        stream: ``(bytes,)`` uint8, longer than ``train_length + 1``
    """
    if stream is None:
        stream = corpus_of(config).stream("train")
    width = config.train_length + (1 if config.causal else 0)
    if stream.numel() < width:
        raise ValueError(
            f"stream must hold at least {width} bytes, got {stream.numel()}"
        )
    start = time.perf_counter()
    if model is None:
        model = initial_model(config)
    elif not isinstance(model, TinyModel):
        raise TypeError(
            f"model must be a TinyModel or None, got {type(model).__name__}"
        )
    data = torch.Generator().manual_seed(data_seed(config))

    def batch_loss(step: int) -> torch.Tensor:
        starts = torch.randint(
            stream.numel() - width + 1, (config.batch_size,), generator=data
        )
        inputs, targets = objective_batch(
            config, stream, starts, config.train_length, data
        )
        per_token = token_losses(model, inputs, targets)  # (b, n)
        return per_token.sum() / (targets != IGNORE).sum().clamp(min=1)

    with deterministic(model_seed(config)):
        losses = optimise(model, config, batch_loss, on_step=on_step)
    model.eval()
    return TrainedText(model, config, losses, time.perf_counter() - start)


@torch.no_grad()
def evaluate_length(
    model: TinyModel, config: TextConfig, stream: torch.Tensor, length: int
) -> dict[str, Any]:
    """Loss of ``model`` on non-overlapping windows of ``length`` of ``stream``.

    Uses the first ``eval_bytes`` bytes (all when fewer): ``(bytes - 1) //
    length`` windows. Returns ``loss`` (nats per predicted byte), ``bpb``,
    ``windows``, ``predicted`` and ``per_position`` (``length`` values).

    Shapes:
        stream: ``(bytes,)`` uint8
    """
    used = min(config.eval_bytes, stream.numel())
    count = (used - 1) // length
    if count < 1:
        raise ValueError(
            f"stream must hold more than {length} bytes to evaluate at that length, "
            f"got {used}"
        )
    generator = torch.Generator().manual_seed(derive_seed("text-eval-mask", length))
    starts = torch.arange(count) * length  # (windows,)
    sums = torch.zeros(length, dtype=torch.float64)
    counts = torch.zeros(length, dtype=torch.float64)
    batch = max(1, EVAL_TOKENS // length)
    for first in range(0, count, batch):
        chunk = starts[first : first + batch]
        inputs, targets = objective_batch(config, stream, chunk, length, generator)
        losses = token_losses(model, inputs, targets).double()  # (b, n)
        sums += losses.sum(0)
        counts += (targets != IGNORE).sum(0)
    predicted = int(counts.sum())
    loss = float(sums.sum()) / max(predicted, 1)
    curve = [
        round(float(s / c), CURVE_DECIMALS) if c else None
        for s, c in zip(sums, counts)
    ]
    return {
        "loss": loss,
        "bpb": loss / math.log(2),
        "windows": count,
        "predicted": predicted,
        "per_position": curve,
    }


def evaluate_text(
    model: TinyModel,
    config: TextConfig,
    stream: torch.Tensor,
    lengths: tuple[int, ...] | None = None,
) -> dict[str, dict[str, Any]]:
    """:func:`evaluate_length` at every length (default: ``config.eval_lengths``).

    Returns ``{str(length): record}``.
    """
    lengths = config.eval_lengths if lengths is None else lengths
    model.eval()
    return {str(n): evaluate_length(model, config, stream, n) for n in lengths}


def run_text(config: TextConfig) -> dict[str, Any]:
    """Train ``config`` and evaluate it on the test split: one record of a sweep.

    The record: setting, scheme, seed, learning rate, model seed, parameters,
    mean final training loss, training and evaluation seconds, and ``eval``
    (:func:`evaluate_text` on the test stream), and ``alignment``
    (``alignment.alignment_record``: the loss at closing brackets and quotes by
    their opener's distance, at ``L`` and the longest length).
    """
    corpus = corpus_of(config)
    trained = train_text(config, corpus.stream("train"))
    start = time.perf_counter()
    test = corpus.stream("test")
    measured = evaluate_text(trained.model, config, test)
    closers = alignment_record(trained.model, config, test)
    return {
        **run_identity(config, trained),
        "eval_seconds": time.perf_counter() - start,
        "eval": measured,
        "alignment": closers,
    }


def tune_text(config: TextConfig) -> dict[str, Any]:
    """Train ``config`` and measure it on the validation split at ``L`` only.

    One tuning record: the fields of :func:`run_text` without ``eval``, with
    ``valid_bpb`` (bits per byte on validation windows of the training length;
    ``None`` when the loss is not finite: a diverged run).
    """
    corpus = corpus_of(config)
    trained = train_text(config, corpus.stream("train"))
    valid = evaluate_length(
        trained.model, config, corpus.stream("valid"), config.train_length
    )
    bpb = valid["bpb"] if math.isfinite(valid["bpb"]) else None
    return {**run_identity(config, trained), "valid_bpb": bpb}


def run_identity(config: TextConfig, trained: TrainedText) -> dict[str, Any]:
    """The fields every record of a run shares: what ran, its size, its time."""
    return {
        "setting": config.setting,
        "scheme": config.scheme,
        "seed": config.seed,
        "learning_rate": config.learning_rate,
        "model_seed": model_seed(config),
        "parameters": count_parameters(trained.model),
        "final_loss": mean_final_loss(trained.losses, config.steps),
        "train_seconds": trained.seconds,
    }


__all__ = [
    "CURVE_DECIMALS",
    "EVAL_TOKENS",
    "TrainedText",
    "corpus_of",
    "run_identity",
    "evaluate_length",
    "evaluate_text",
    "initial_model",
    "run_text",
    "train_text",
    "tune_text",
]
