"""Why the masked absolute and sinusoidal baselines sit on the bag-of-bytes plateau.

In the masked setting (``lm.mask_bytes``; ``text_masked.json``: ``L = 64``,
width 64, two layers, 1000 steps, rates tuned on 1e-3 .. 1e-2) ``absolute``
and ``sinusoidal`` score 4.06-4.17 bits per byte, level with ``none``, a model
with no positions at all: a bag of the window's bytes, which beats the
unigram (4.76 bits per byte on the training split) and nothing more. Every
relative scheme reaches about 1.9-2.2. This study finds out why, by
intervention, with the sweep's own model and data.

Ruled out before the study (read or run by hand, one seed, masked):

- a bug in the masked path: the table reaches the model (moving the bytes of a
  window changes absolute's and sinusoidal's masked logits at initialisation,
  not ``none``'s), both go through ``TinyModel.embed`` as in the causal
  setting, where ``absolute`` trains (2.23 against ``none``'s 3.01); the table
  receives gradients as large as the byte embedding's and moves; training
  passes no attention mask; the mask symbol is a 257th byte, the positions are
  added to it as to any byte; the content attention matches
  ``softmax(q k^T / sqrt(d)) v`` to 2e-7;
- the optimiser and the masking (600 steps, rate 3e-3, training loss in bits
  per byte over the last 60 steps): ``none`` 4.21, ``absolute`` 4.21, and
  ``absolute`` with weight decay 0 4.21, with 50% of the bytes masked 4.24,
  at rate 1e-2 4.24, with one head of width 64 instead of four of 16 4.23,
  with the table and the bytes started in two separate halves of the width
  4.21, with the table ten times larger 4.74 (the bytes drowned).

What the pilot showed (one seed, 600 steps, rate 3e-3): ``tupe``, the same
kind of learned absolute table (BERT's init, std 0.02) entering as a term of
its own in each layer's logits instead of being added to the bytes, leaves
the plateau from about step 200 and reaches 2.74 bits per byte; ``absolute``
stays at 4.21. At 1000 steps the sinusoids ten times larger leave it too
(3.02 over the last 100 steps, still falling); the learned table three times
larger does not (4.21). The study below (:data:`ARMS`, :data:`RATES`) states
that with the sweep's 1000 steps, two seeds and a wider grid of rates.

What the study found (``make masked-baselines``: ``probes/masked_baselines.json``
and ``.png``; validation bits per masked byte at ``L``, seeds 0 and 1, rate
3.16e-3; the prediction holds). Not a bug: the same model trains as soon as the
position gets a way in that does not share the bytes' vector.

- ``none`` 4.136, 4.142: the plateau. ``absolute`` 4.148, 4.154 and blind to
  order (scrambling each window costs it 0.000 and -0.001), and worse at the
  rates one step past the sweep's grid (seed 0: 4.321 at 3.16e-4, 4.671 at
  3.16e-2). ``sinusoidal`` 4.124, 4.104 (0.01-0.04 below ``none``; scrambling
  costs 0.04-0.07): barely reads the order.
- ``tupe``, the same kind of learned absolute table untied from the bytes,
  2.271, 2.308: 1.83-1.87 below ``none``, scrambling costs it 3.9-4.1;
  ``deberta`` 2.010, 1.967 (2.13-2.17 below). The one change (where the table
  enters) moves the loss by 1.8 bits.
- ``sinusoidal-x10``, the fixed sinusoids ten times larger, 2.963, 2.889
  (1.17-1.25 below ``none``), leaving the plateau from about step 400: the
  tied sinusoid trains once it is most of the vector. A learned table ten or
  three times larger does not (pilot above): its random rows carry no shift
  that one projection can read.

So at this size (width 64, two layers, 1000 steps) the masked absolute and
sinusoidal baselines, as BERT builds them, do not train, and no comparison
should lean on them: ``tupe`` is the absolute baseline that trains. Untested:
why the causal ``absolute`` trains where the masked one does not (a guess: the
query's own byte carries the bigram, so attention to the previous byte pays
from the first steps), and whether the tied table leaves the plateau later
than the issue's four-fold steps.

Shapes:
    windows, inputs, targets: ``(b, n)`` long; curves: ``steps // CURVE_EVERY``
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import torch

from ..experiments.config import derive_seed
from ..experiments.model import TinyModel
from ..experiments.schemes import LearnedPositions, SinusoidalPositions
from .config import TextConfig
from .lm import IGNORE, mask_bytes, token_losses, windows_at
from .train import corpus_of, initial_model, train_text

#: The version of the study's numbers: part of every run's key in the runs
#: folder (not relpos's version). Raise it only when a run's numbers change.
SCHEMA = 1

#: The model, data and training of ``text_masked.json``, at ``L`` only.
STUDY = dict(
    setting="masked",
    train_length=64,
    eval_lengths=(64,),
    eval_bytes=32768,
    steps=1000,
    batch_size=32,
    weight_decay=0.01,
    mask_rate=0.15,
    hidden_size=64,
    num_heads=4,
    num_layers=2,
)

#: The rate of every arm: the one tuning chose for none, absolute and sinusoidal.
RATE = 3.16e-3
#: The rates ``absolute`` trains at (the extra ones on the first seed): one
#: step past each edge of the sweep's grid 1e-3 .. 1e-2, whose tuning run
#: (seed 100, ``text_masked.json``) gave absolute 4.20, 4.15 and 4.20.
RATES = (3.16e-4, 3.16e-3, 3.16e-2)
#: Steps averaged into one point of a training curve.
CURVE_EVERY = 50
#: An arm has left the plateau when its validation loss is below ``none``'s
#: by more than this at every seed (bits per byte).
MARGIN = 0.25

#: The scheme (of ``SCHEMES``) each arm builds and the factor its input
#: positions start multiplied by (the intervention on their share).
ARM_PARTS = {
    "none": ("none", 1.0),
    "absolute": ("absolute", 1.0),
    "sinusoidal": ("sinusoidal", 1.0),
    "sinusoidal-x10": ("sinusoidal", 10.0),
    "tupe": ("tupe", 1.0),
    "deberta": ("deberta", 1.0),
}
#: The arms: how positions enter the same masked byte model.
ARMS = {
    "none": "no positions: a bag of the window's bytes, the plateau itself.",
    "absolute": (
        "BERT: a learned table of absolute positions (std 0.02, as the byte "
        "embeddings) added to the bytes before the first LayerNorm; the same "
        "query and key projections read position and byte as one vector."
    ),
    "sinusoidal": (
        "the fixed sinusoids of the original Transformer, at the byte "
        "embeddings' scale, added to the bytes the same way."
    ),
    "sinusoidal-x10": (
        "the same sinusoids ten times larger: the position is nine tenths of "
        "the vector the LayerNorm and the shared projections read."
    ),
    "tupe": (
        "TUPE: the same kind of learned absolute table, added to nothing; "
        "each layer adds (p_i U_q).(p_j U_k) / sqrt(2d) to its logits, with "
        "projections of its own, untied from the bytes' q and k."
    ),
    "deberta": "DeBERTa's relative table (c2p and p2c): the sweep's best arm.",
}

#: The prediction, written before the study's runs (after the pilot above).
PREDICTION = (
    "At the sweep's size and 1000 steps, absolute and sinusoidal end within "
    "0.25 bits per byte of none (absolute at 3.16e-4, 3.16e-3 and 3.16e-2 "
    "alike) and are blind to order: scrambling the bytes of a window changes "
    "their loss by less than 0.25 bits per byte. The same sinusoids ten times "
    "larger, and TUPE, the same kind of absolute table given a term of its "
    "own in the logits, leave the plateau (more than 0.25 below none at every "
    "seed), as DeBERTa does."
)
#: What would show the prediction wrong.
FALSIFIER = (
    "absolute or sinusoidal more than 0.25 bits per byte below none at some "
    "seed and rate (they can train at this size: the sweep's tuning missed "
    "it), or reading the order; or TUPE or the larger sinusoids within 0.25 "
    "of none at some seed (the position's share of the tied input is not the "
    "cause)."
)
#: The mechanism the study tests (with TUPE as the one change).
MECHANISM = (
    "A masked byte is predicted from its neighbours, so the model must learn "
    "an attention that picks keys by position. Added to the bytes, the "
    "position is one half of every query and key vector, read by the same "
    "projections as the byte: at the start the position-to-position part "
    "of the logits is small and its gradient is a small share of the "
    "projections' gradient, the bag of bytes already pays, and the model "
    "stays there. Given its own projections (TUPE) the same table learns the "
    "neighbour attention within a few hundred steps; made most of the vector "
    "(sinusoids ten times larger, whose shift is one rotation per frequency) "
    "the tied position is learned too."
)


@dataclass(frozen=True)
class MaskedRun:
    """One run of the study: an arm of :data:`ARMS`, its config (seed, rate).

    ``config.scheme`` is the arm's scheme (:data:`ARM_PARTS`).

    Shapes:
        (no tensors)
    """

    arm: str
    config: TextConfig

    def __post_init__(self) -> None:
        if self.arm not in ARM_PARTS:
            raise ValueError(f"arm must be one of {tuple(ARM_PARTS)}, got {self.arm!r}")
        if not isinstance(self.config, TextConfig):
            raise TypeError(
                f"config must be a TextConfig, got {type(self.config).__name__}"
            )
        if self.config.causal:
            raise ValueError("config.setting must be 'masked', got 'causal'")
        if self.config.scheme != self.scheme:
            raise ValueError(
                f"config.scheme must be {self.scheme!r} for arm {self.arm!r}, "
                f"got {self.config.scheme!r}"
            )

    @property
    def scheme(self) -> str:
        """The scheme the arm builds."""
        return ARM_PARTS[self.arm][0]

    @property
    def position_scale(self) -> float:
        """The factor the arm's input positions start multiplied by."""
        return ARM_PARTS[self.arm][1]

    def to_dict(self) -> dict[str, Any]:
        """What the run's numbers depend on (the runs folder's key)."""
        return {
            **self.config.to_dict(),
            "arm": self.arm,
            "position_scale": self.position_scale,
            "curve_every": CURVE_EVERY,
        }

    def initial_model(self) -> TinyModel:
        """The config's initial model, its input positions times the arm's scale."""
        model = initial_model(self.config)
        scale, positions = self.position_scale, model.input_positions
        if scale != 1.0:
            if isinstance(positions, SinusoidalPositions):
                positions.scale *= scale
            elif isinstance(positions, LearnedPositions):
                with torch.no_grad():
                    positions.weight.mul_(scale)
            else:
                raise ValueError(f"arm {self.arm!r} has no input positions to scale")
        return model


def curve(losses: list[float], every: int = CURVE_EVERY) -> list[float]:
    """Mean training loss over each block of ``every`` steps, in bits per byte.

    Shapes:
        losses: ``steps`` floats (nats) -> ``ceil(steps / every)`` floats
    """
    if isinstance(every, bool) or not isinstance(every, int) or every < 1:
        raise ValueError(f"every must be an int >= 1, got {every!r}")
    blocks = [losses[i : i + every] for i in range(0, len(losses), every)]
    return [sum(b) / len(b) / math.log(2) for b in blocks]


def scramble(length: int) -> torch.Tensor:
    """The fixed order every window is read in by :func:`masked_bpb` (scrambled).

    Shapes:
        output: ``(length,)`` long, a permutation of ``0 .. length - 1``
    """
    generator = torch.Generator().manual_seed(derive_seed("masked-scramble", length))
    return torch.randperm(length, generator=generator)


@torch.no_grad()
def masked_bpb(
    model: TinyModel,
    config: TextConfig,
    stream: torch.Tensor,
    *,
    scrambled: bool = False,
) -> float:
    """Bits per masked byte on the non-overlapping windows of ``L`` of ``stream``.

    The first ``eval_bytes`` bytes, masked with a seed of the length alone
    (every run, arm and call alike). ``scrambled``: each window is corrupted
    first, then its inputs and targets are moved together to the order
    :func:`scramble` (each masked byte keeps its target, its neighbours
    change); a model blind to order (``none``) scores exactly the same.

    Shapes:
        stream: ``(bytes,)`` uint8
    """
    length = config.train_length
    count = min(config.eval_bytes, stream.numel()) // length
    if count < 1:
        raise ValueError(f"stream must hold {length} bytes, got {stream.numel()}")
    windows = windows_at(stream, torch.arange(count) * length, length)  # (w, n)
    generator = torch.Generator().manual_seed(derive_seed("masked-eval", length))
    inputs, targets = mask_bytes(windows, config.mask_rate, generator)  # (w, n)
    if scrambled:
        order = scramble(length)
        inputs, targets = inputs[:, order], targets[:, order]  # (w, n)
    model.eval()
    total = sum(
        float(token_losses(model, i, t).double().sum())
        for i, t in zip(inputs.split(128), targets.split(128))
    )
    return total / int((targets != IGNORE).sum()) / math.log(2)


def train_run(run: MaskedRun) -> dict[str, Any]:
    """Train ``run`` and measure it on the validation split: one record.

    The record: ``arm``, ``seed``, ``learning_rate``, ``curve`` (:func:`curve`),
    ``valid_bpb`` and ``scrambled_bpb`` (:func:`masked_bpb` plain and
    scrambled; ``None`` when not finite: a diverged run), and ``seconds``.
    """
    config = run.config
    trained = train_text(config, model=run.initial_model())
    valid = corpus_of(config).stream("valid")
    found = {
        key: masked_bpb(trained.model, config, valid, scrambled=scrambled)
        for key, scrambled in (("valid_bpb", False), ("scrambled_bpb", True))
    }
    return {
        "arm": run.arm,
        "seed": config.seed,
        "learning_rate": config.learning_rate,
        "curve": curve(trained.losses),
        **{k: v if math.isfinite(v) else None for k, v in found.items()},
        "seconds": trained.seconds,
    }


def masked_job(kind: str, run: MaskedRun, threads: int = 1) -> dict[str, Any]:
    """One job of an executor (``experiments.engine``): train and measure ``run``."""
    if kind != "measured":
        raise ValueError(f"kind must be 'measured', got {kind!r}")
    torch.set_num_threads(threads)
    start = time.perf_counter()
    return {**train_run(run), "job_seconds": time.perf_counter() - start}


def label(kind: str, run: MaskedRun) -> str:
    """How the progress bar names a finished run."""
    c = run.config
    return f"{run.arm} seed={c.seed} lr={c.learning_rate:g}"


__all__ = [
    "ARMS",
    "ARM_PARTS",
    "CURVE_EVERY",
    "FALSIFIER",
    "MARGIN",
    "MECHANISM",
    "MaskedRun",
    "PREDICTION",
    "RATE",
    "RATES",
    "SCHEMA",
    "STUDY",
    "curve",
    "label",
    "masked_bpb",
    "masked_job",
    "scramble",
    "train_run",
]
