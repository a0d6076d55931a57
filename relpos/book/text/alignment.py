"""Linguistic alignment, measured: the loss at a closer by its opener's distance.

The claim of chapter 1 ("relative positions match how language works: what
matters is how far back a word is, not where it sits") is made falsifiable
here on held-out text. A closing bracket or quote is decided by its opener: a
model that can find the opener at distance ``d`` predicts the closer well.
So, on the test split:

- :func:`opener_distances` finds, with a stack over the bytes, the distance
  ``d = i - j`` (closer ``i`` minus opener ``j``, the book's sign) of every
  matched closer of ``()``, ``[]``, ``{}`` and of the double quote ``"`` (a
  quote closes an open quote on top of the stack, else opens one; a closer
  that matches an opener deeper in the stack pops the openers above it; an
  unmatched closer, as in ``1)``, is skipped; the stack empties at every end
  of document). Single quotes are left out: in prose they are apostrophes.
- :func:`closer_losses` reads every chosen closer at the LAST position of a
  window of length ``n`` that ends at it (causal: the window is the ``n``
  bytes before the closer, which is predicted at position ``n - 1``, so the
  opener is in sight when ``d <= n``; masked: the window is the ``n - 1`` bytes
  before it and the closer, masked, at position ``n - 1``, nothing else
  masked, so the opener is in sight when ``d < n``). At ``n = L`` the openers
  beyond ``L`` are out of sight; at ``n = 16 L`` every opener of the chosen
  closers is in sight, and the closer sits at a position never trained at.
- The losses are averaged in bins of ``d`` (:data:`DISTANCE_BINS`).

The falsifiable form (judged in chapter 11 on the sweep's runs): for closers
whose opener lies beyond ``L`` (``d > L``), read in a window of ``16 L``, a
relative scheme's loss is lower than that of ``none`` and ``absolute``, and
lower than its own loss for the same closers in a window of ``L`` (where the
opener is out of sight). It would have been falsified by a relative scheme at
or above ``none``'s loss there, or no lower than its own window-``L`` loss: the
opener beyond the training length then does not help it.

Shapes:
    stream: ``(bytes,)`` uint8; distances: ``(bytes,)`` long
"""

from __future__ import annotations

import bisect
import math
import statistics
from typing import Any

import torch

from ..experiments.model import TinyModel
from .config import TextConfig
from .corpus import END_OF_DOCUMENT
from .lm import IGNORE, MASK, token_losses

#: Closer byte -> opener byte. The quote is its own opener.
PAIRS = {ord(")"): ord("("), ord("]"): ord("["), ord("}"): ord("{"), ord('"'): ord('"')}
#: Lower edges of the distance bins; a bin holds ``edge <= d < next edge``.
DISTANCE_BINS = (1, 9, 17, 33, 65, 129, 257, 513, 1025)
#: Windows per forward pass when reading closers.
CLOSER_BATCH = 16


def opener_distances(stream: torch.Tensor) -> torch.Tensor:
    """The distance from every matched closer to its opener (0 elsewhere).

    Shapes:
        stream: ``(bytes,)`` integer byte values
        output: ``(bytes,)`` long, ``d = i - j > 0`` at a closer ``i`` of opener ``j``
    """
    if not isinstance(stream, torch.Tensor) or stream.dim() != 1:
        raise TypeError("stream must be a 1-d tensor of byte values")
    data = stream.tolist()
    distances = [0] * len(data)
    openers = set(PAIRS.values())
    stack: list[int] = []
    for i, byte in enumerate(data):
        if byte == END_OF_DOCUMENT:
            stack.clear()
        elif byte == PAIRS.get(byte) and not (stack and data[stack[-1]] == byte):
            stack.append(i)  # a quote that opens
        elif byte in PAIRS:
            for depth in range(len(stack) - 1, -1, -1):
                if data[stack[depth]] == PAIRS[byte]:
                    distances[i] = i - stack[depth]
                    del stack[depth:]
                    break
        elif byte in openers:
            stack.append(i)
    return torch.tensor(distances, dtype=torch.long)


def distance_bin(d: int) -> int:
    """The index of the bin of :data:`DISTANCE_BINS` holding distance ``d >= 1``."""
    if isinstance(d, bool) or not isinstance(d, int) or d < 1:
        raise ValueError(f"d must be an int >= 1, got {d!r}")
    return bisect.bisect_right(DISTANCE_BINS, d) - 1


def chosen_closers(
    distances: torch.Tensor, far: int, near_count: int, longest: int
) -> torch.Tensor:
    """The closers read: all with ``d >= far``, and ``near_count`` with ``d < far``.

    The near ones are evenly spaced over the stream (deterministic). Only
    closers with at least ``longest - 1`` bytes before them are eligible, so
    every window length up to ``longest`` fits.

    Shapes:
        distances: ``(bytes,)``; output: ``(closers,)`` long stream indices, sorted
    """
    index = torch.arange(distances.numel())
    eligible = (distances > 0) & (index >= longest - 1)
    far_ones = index[eligible & (distances >= far)]
    near = index[eligible & (distances < far)]
    if near_count < near.numel():
        picks = torch.linspace(0, near.numel() - 1, near_count).round().long()
        near = near[picks]
    return torch.sort(torch.cat([far_ones, near])).values


@torch.no_grad()
def closer_losses(
    model: TinyModel,
    config: TextConfig,
    stream: torch.Tensor,
    closers: torch.Tensor,
    distances: torch.Tensor,
    length: int,
) -> dict[str, Any]:
    """The loss at each closer read at the last position of a window of ``length``.

    Returns ``{"bins": DISTANCE_BINS, "loss": [mean nats or None per bin],
    "count": [closers per bin], "sighted": [closers whose opener is inside the
    window, per bin]}``.

    Shapes:
        stream, distances: ``(bytes,)``; closers: ``(closers,)`` stream indices
    """
    if closers.numel() and int(closers.min()) < length - 1:
        raise ValueError(f"closers must have {length - 1} bytes before them")
    model.eval()
    sums = [0.0] * len(DISTANCE_BINS)
    counts = [0] * len(DISTANCE_BINS)
    sighted = [0] * len(DISTANCE_BINS)
    for first in range(0, closers.numel(), CLOSER_BATCH):
        chunk = closers[first : first + CLOSER_BATCH]  # (b,)
        if config.causal:  # the length bytes before the closer predict it
            offsets = chunk[:, None] - length + torch.arange(length)  # (b, n)
            inputs = stream[offsets].long()
        else:  # the closer, masked, after the length - 1 bytes before it
            offsets = chunk[:, None] - length + 1 + torch.arange(length)  # (b, n)
            inputs = stream[offsets].long()
            inputs[:, -1] = MASK
        targets = torch.full(inputs.shape, IGNORE, dtype=torch.long)  # (b, n)
        targets[:, -1] = stream[chunk].long()
        losses = token_losses(model, inputs, targets)[:, -1]  # (b,)
        for index, loss in zip(chunk.tolist(), losses.tolist()):
            d = int(distances[index])
            k = distance_bin(d)
            sums[k] += loss
            counts[k] += 1
            sighted[k] += int(d <= length - (0 if config.causal else 1))
    means = [s / c if c and math.isfinite(s) else None for s, c in zip(sums, counts)]
    return {
        "bins": list(DISTANCE_BINS),
        "loss": means,
        "count": counts,
        "sighted": sighted,
    }


def alignment_record(
    model: TinyModel,
    config: TextConfig,
    stream: torch.Tensor,
    *,
    near_count: int = 24,
) -> dict[str, Any]:
    """:func:`closer_losses` at ``L`` and at the longest evaluation length.

    The closers: every one of ``stream`` with ``d > L`` and ``near_count``
    with ``d <= L`` (:func:`chosen_closers`). Returns ``{"far": L + 1, "near_count",
    "lengths": {str(n): closer_losses}}``.

    Shapes:
        stream: ``(bytes,)`` uint8
    """
    short, long = config.train_length, max(config.eval_lengths)
    distances = opener_distances(stream)
    closers = chosen_closers(distances, short + 1, near_count, long)
    return {
        "far": short + 1,
        "near_count": near_count,
        "lengths": {
            str(n): closer_losses(model, config, stream, closers, distances, n)
            for n in sorted({short, long})
        },
    }


def closer_means(record: dict[str, Any], length: int, far: bool) -> float | None:
    """The mean loss at the closers far (``d >= record["far"]``) or near, at ``length``.

    Weighted by the closers of each bin; None when there are none.
    """
    reading = record["lengths"][str(length)]
    total, count = 0.0, 0
    for edge, loss, n in zip(reading["bins"], reading["loss"], reading["count"]):
        if loss is not None and (edge >= record["far"]) == far:
            total += loss * n
            count += n
    return total / count if count else None


def opener_effect(record: dict[str, Any], short: int, long: int) -> float:
    """How much an opener beyond ``L`` lowers the loss, net of the position's cost.

    ``(far at L - far at 16L) - (near at L - near at 16L)``: the far closers'
    gain from the longer window (their opener comes into sight) minus the near
    closers' (whose opener is in sight in both, so theirs is the cost of sitting
    at position ``16 L - 1``). Positive: the far opener helps.
    """
    values = [
        closer_means(record, n, far) for far in (True, False) for n in (short, long)
    ]
    if any(v is None for v in values):
        raise ValueError("record must hold far and near closers at both lengths")
    far_short, far_long, near_short, near_long = values
    return (far_short - far_long) - (near_short - near_long)


def summarize_alignment(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Per (setting, scheme) of a text sweep: closer losses and the opener effect.

    Rows: ``setting``, ``scheme``, ``far_long`` and ``near_long`` (mean closer
    loss at ``16 L`` over the seeds, nats), ``far_short``, ``near_short`` (at
    ``L``), ``effect`` (:func:`opener_effect`, one per seed), ``far_count``.
    """
    short = result["config"]["train_length"]
    long = max(result["config"]["eval_lengths"])
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for run in result["runs"]:
        record = run["alignment"]
        row = rows.setdefault(
            (run["setting"], run["scheme"]),
            {"setting": run["setting"], "scheme": run["scheme"], "effect": []},
        )
        for name, n, far in (
            ("far_long", long, True),
            ("near_long", long, False),
            ("far_short", short, True),
            ("near_short", short, False),
        ):
            row.setdefault(name + "_seeds", []).append(closer_means(record, n, far))
        row["effect"].append(opener_effect(record, short, long))
        far_counts = record["lengths"][str(long)]["count"]
        edges = record["lengths"][str(long)]["bins"]
        row["far_count"] = sum(
            c for e, c in zip(edges, far_counts) if e >= record["far"]
        )
    for row in rows.values():
        for name in ("far_long", "near_long", "far_short", "near_short"):
            row[name] = statistics.fmean(row.pop(name + "_seeds"))
    return list(rows.values())


__all__ = [
    "CLOSER_BATCH",
    "DISTANCE_BINS",
    "PAIRS",
    "alignment_record",
    "chosen_closers",
    "closer_losses",
    "closer_means",
    "distance_bin",
    "opener_distances",
    "opener_effect",
    "summarize_alignment",
]
