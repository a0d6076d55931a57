"""Three readings of a trained causal byte model at a window ``W``, per test module.

Chapter 11 read its models on non-overlapping windows only, where the first
byte of a window sees no context and the last sees ``W - 1`` bytes. Here every
reading keeps, per module of the stream (a document: a module's text and the
end-of-document byte 0 that closes it), the sum of the losses and the count of
the bytes it predicted there, so an interval can resample modules, not windows:

- :func:`nonoverlapping_plan`: windows ``k W .. k W + W`` (``(N - 1) // W`` of
  them), every target scored once; the tail shorter than a window is not.
- :func:`sliding_plan`: windows of ``W`` starting every ``S`` bytes, each
  scoring only its last ``S`` targets, so every scored byte has at least
  ``W - S`` bytes of context; the first window scores all its targets and the
  last one ends at the stream's end and scores what no window scored. Every
  target byte ``1 .. N - 1`` is scored exactly once.
- the *cut* reading: the sliding windows with every query of every layer reading
  only its last ``L`` keys (:func:`band_mask`, a causal band ``i - j < L``). At
  ``W = L`` it is the full reading, bit for bit; beyond, a query reads no key
  ``L`` or more back (through an intermediate byte of the layer below it can
  still hear up to ``2 (L - 1)`` back in two layers).

:func:`score_plan` runs a plan through the model; :func:`attention_beyond`
measures the share of attention on keys ``L`` or more back.

Shapes:
    stream: ``(N,)`` uint8; starts, first: ``(windows,)`` long
    module_ids: ``(N,)`` long, the module of each byte
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import torch
import torch.nn.functional as F

from relpos.checks import check_int

from ..experiments.interventions.surgery import distance_mask, forward_layers
from ..experiments.model import TinyModel
from .corpus import END_OF_DOCUMENT
from .lm import causal_windows, windows_at

#: Tokens per forward batch.
EVAL_TOKENS = 8192
#: Decimals of the binned per-position losses of a record.
CURVE_DECIMALS = 4
#: Windows read to measure the attention mass beyond ``L`` (spread over the split).
MECHANISM_WINDOWS = 16


class Plan(NamedTuple):
    """The windows of one reading: where each starts, from which position it scores.

    Window ``k`` reads ``stream[starts[k] : starts[k] + W + 1]`` (inputs and
    next-byte targets) and scores the targets at positions ``first[k] .. W - 1``.

    Shapes:
        starts, first: ``(windows,)`` long
    """

    starts: torch.Tensor
    first: torch.Tensor
    width: int


def _check(size: int, width: int) -> None:
    check_int("width", width, minimum=1)
    if size < width + 1:
        raise ValueError(
            f"width must leave one target: the stream holds {size} bytes, "
            f"got width {width}"
        )


def nonoverlapping_plan(size: int, width: int) -> Plan:
    """Chapter 11's windows of a stream of ``size`` bytes: every target scored once.

    Shapes:
        output: ``Plan`` of ``(size - 1) // width`` windows
    """
    _check(size, width)
    count = (size - 1) // width
    starts = torch.arange(count) * width  # (windows,)
    return Plan(starts, torch.zeros(count, dtype=torch.long), width)


def sliding_plan(size: int, width: int, stride: int) -> Plan:
    """Windows of ``width`` every ``stride`` bytes; target bytes ``1 .. size - 1`` once.

    The first window scores all its targets, every later one its last
    ``stride`` (at least ``width - stride`` bytes of context each), and a last
    window ending at the stream's end scores the targets left.

    Shapes:
        output: ``Plan``
    """
    _check(size, width)
    stride = check_int("stride", stride, minimum=1)
    if stride > width:
        raise ValueError(f"stride must be at most the width {width}, got {stride}")
    last = size - 1 - width  # the start of a window ending at the stream's end
    starts = list(range(0, last + 1, stride))
    first = [0] + [width - stride] * (len(starts) - 1)
    covered = starts[-1] + width  # targets 1 .. covered are scored
    if covered < size - 1:
        starts.append(last)
        first.append(width - (size - 1 - covered))
    return Plan(torch.tensor(starts), torch.tensor(first), width)


def module_ids(stream: torch.Tensor) -> torch.Tensor:
    """The module of every byte: how many end-of-document bytes come before it.

    A module's closing byte 0 belongs to it.

    Shapes:
        stream: ``(N,)``; output: ``(N,)`` long
    """
    ends = (stream == END_OF_DOCUMENT).long()  # (N,)
    return torch.cumsum(ends, 0) - ends  # (N,)


def band_mask(width: int, context: int) -> torch.Tensor:
    """The pairs a query may read when cut to its last ``context`` keys: ``i - j < L``.

    Future keys are left to the causal model (it removes them itself).

    Shapes:
        output: ``(W, W)`` bool
    """
    width = check_int("width", width, minimum=1)
    context = check_int("context", context, minimum=1)
    return distance_mask(width, lambda rel: rel < context)  # (i, j)


@torch.no_grad()
def score_plan(
    model: TinyModel,
    stream: torch.Tensor,
    plan: Plan,
    *,
    modules: int,
    cut: int | None = None,
    bin_size: int = 16,
) -> dict[str, Any]:
    """The losses of ``plan``'s scored targets, summed per module and binned.

    ``cut``: read with every query cut to its last ``cut`` keys (None: full).
    Returns ``loss`` (nats per scored byte), ``bpb``, ``scored``, ``windows``,
    ``module_sums`` and ``module_counts`` (one per module, ``modules`` of
    them), and ``per_position``: the mean loss over window positions
    ``[k bin_size, (k + 1) bin_size)``, ``None`` where nothing was scored.

    Shapes:
        stream: ``(N,)`` uint8
    """
    width = plan.width
    ids = module_ids(stream)
    if int(ids[-1]) >= modules:
        raise ValueError(f"modules must exceed the last module id {int(ids[-1])}")
    mask = None if cut is None else band_mask(width, cut)
    sums = torch.zeros(modules, dtype=torch.float64)
    counts = torch.zeros(modules, dtype=torch.float64)
    bins = math.ceil(width / bin_size)
    bin_sums = torch.zeros(bins, dtype=torch.float64)
    bin_counts = torch.zeros(bins, dtype=torch.float64)
    bin_of = torch.arange(width) // bin_size  # (W,)
    batch = max(1, EVAL_TOKENS // width)
    model.eval()
    for at in range(0, len(plan.starts), batch):
        starts = plan.starts[at : at + batch]  # (b,)
        inputs, targets = causal_windows(windows_at(stream, starts, width + 1))
        pairs = None if mask is None else mask.expand(len(starts), width, width)
        logits = model(inputs, pairs)  # (b, W, 256)
        losses = F.cross_entropy(
            logits.flatten(0, 1), targets.flatten(), reduction="none"
        ).view(targets.shape).double()  # (b, W)
        scored = torch.arange(width)[None, :] >= plan.first[at : at + batch, None]
        where = ids[starts[:, None] + 1 + torch.arange(width)]  # (b, W): target's
        sums.index_add_(0, where[scored], losses[scored])
        counts.index_add_(0, where[scored], torch.ones_like(losses[scored]))
        bin_sums.index_add_(0, bin_of, (losses * scored).sum(0))
        bin_counts.index_add_(0, bin_of, scored.sum(0).double())
    total = int(counts.sum())
    loss = float(sums.sum()) / max(total, 1)
    return {
        "loss": loss,
        "bpb": loss / math.log(2),
        "scored": total,
        "windows": len(plan.starts),
        "module_sums": [round(float(s), CURVE_DECIMALS) for s in sums],
        "module_counts": [int(c) for c in counts],
        "per_position": [
            round(float(s / c), CURVE_DECIMALS) if c else None
            for s, c in zip(bin_sums, bin_counts)
        ],
    }


@torch.no_grad()
def attention_beyond(
    model: TinyModel, stream: torch.Tensor, width: int, context: int
) -> list[float]:
    """Per layer: the share of attention on keys ``context`` or more back.

    Over :data:`MECHANISM_WINDOWS` non-overlapping windows of ``width`` spread
    evenly over ``stream``, for every query at position ``context`` or later,
    the attention probabilities summed over keys with ``i - j >= context``,
    averaged over heads, queries and windows.

    Shapes:
        stream: ``(N,)`` uint8; output: one float per layer
    """
    context = check_int("context", context, minimum=1)
    if width <= context:
        raise ValueError(f"width must exceed context {context}, got {width}")
    plan = nonoverlapping_plan(stream.numel(), width)
    pick = torch.linspace(0, len(plan.starts) - 1, MECHANISM_WINDOWS).long().unique()
    inputs, _ = causal_windows(windows_at(stream, plan.starts[pick], width + 1))
    _, probs = forward_layers(model, inputs, probs=True)  # [(b, h, W, W)]
    i = torch.arange(width)
    far = (i[:, None] - i[None, :]) >= context  # (i, j)
    shares = []
    for p in probs:
        mass = (p * far).sum(-1)[:, :, context:]  # (b, h, W - context)
        shares.append(round(float(mass.mean()), CURVE_DECIMALS + 2))
    return shares


__all__ = [
    "CURVE_DECIMALS",
    "EVAL_TOKENS",
    "MECHANISM_WINDOWS",
    "Plan",
    "attention_beyond",
    "band_mask",
    "module_ids",
    "nonoverlapping_plan",
    "score_plan",
    "sliding_plan",
]
