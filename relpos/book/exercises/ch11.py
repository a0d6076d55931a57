"""Checks for chapter 11, the seed's claims on real text.

Shape legend:
    ch11-ex1: a function ``distances(stream) -> (bytes,)`` long tensor, the
        opener distance at every matched closer and 0 elsewhere;
    ch11-ex2: a dict ``{scheme: bits per byte at 2 L minus at L}`` (mean over
        the seeds) of the causal text sweep
"""

from __future__ import annotations

import statistics
from typing import Any

import torch

from ._core import as_tensor, call, exercise, fail, require_callable
from .ch09 import fit

#: ch11-ex2 reads the gains at this multiple of L: chapter 11 states 16 L's.
GAIN_AT = 2

#: Strings the opener-distance check runs the answer on (quotes, nesting, a reset).
SAMPLES = (
    'f(x[1], "a(b")',
    "(see [1)] and {2}",
    "a (b) c) d",
    'say "x" (y)\0(z',
)


@exercise("ch11-ex1")
def opener_distance_function(answer: Any) -> str:
    """``answer(stream)`` equals ``text.alignment.opener_distances`` on samples."""
    from ..text.alignment import opener_distances
    from ..text.corpus import encode

    function = require_callable(answer, "distances")
    for text in SAMPLES:
        stream = encode(text).to(torch.uint8)
        got = as_tensor(call(function, stream, what="distances(stream)"), "distances")
        expected = opener_distances(stream)
        if got.shape != expected.shape:
            fail(f"distances must give one value per byte ({expected.numel()}), "
                 f"got shape {tuple(got.shape)} on {text!r}")
        if not torch.equal(got.long(), expected):
            if torch.equal(got.long(), -expected):
                fail("the signs are flipped: d = i - j, closer minus opener")
            index = int((got.long() != expected).nonzero()[0])
            fail(f"on {text!r}, byte {index} ({text[index]!r}): expected "
                 f"{int(expected[index])}, got {int(got[index])} (a closer that "
                 "matches a deeper opener pops the ones above it; a quote closes "
                 "only an open quote on top; the stack empties at byte 0)")
    return fit("the stack finds every opener the chapter's measurement uses.",
               "ch11-ex1")


def length_gain(
    causal: dict[str, Any], length: int | None = None
) -> dict[str, float]:
    """Per scheme: mean bits per byte at ``length`` minus at ``L``.

    ``length`` is ``GAIN_AT`` times the training length unless given.
    """
    short = int(causal["config"]["train_length"])
    at = str(GAIN_AT * short if length is None else length)
    return {
        scheme: statistics.fmean(
            r["eval"][at]["bpb"] - r["eval"][str(short)]["bpb"]
            for r in causal["runs"]
            if r["scheme"] == scheme
        )
        for scheme in causal["grid"]["scheme"]
    }


@exercise("ch11-ex2")
def length_gain_table(
    answer: Any,
    *,
    multiple: int = GAIN_AT,
    causal: dict[str, Any] | None = None,
) -> str:
    """``{scheme: bpb(multiple L) - bpb(L)}``, mean over seeds, within 0.005 bits
    (the book: ``multiple = 2``)."""
    from .. import results

    causal = results.load("text_causal.json") if causal is None else causal
    short = int(causal["config"]["train_length"])
    if multiple * short not in causal["config"]["eval_lengths"][1:]:
        raise ValueError(
            f"multiple must make a length the sweep evaluates past L "
            f"({causal['config']['eval_lengths'][1:]} for L = {short}), got {multiple}"
        )
    expected = length_gain(causal, multiple * short)
    if not isinstance(answer, dict):
        fail(f"the answer must be a dict {{scheme: gain}}, got {type(answer).__name__}")
    missing = [s for s in expected if s not in answer]
    if missing:
        fail("give one entry per scheme of the sweep; missing: " + ", ".join(missing))
    bad = [s for s in expected if not isinstance(answer[s], (int, float))]
    if bad:
        fail(f"{bad[0]}: the gain must be a number, got {answer[bad[0]]!r}")

    def close(got: dict[str, float]) -> bool:
        return all(abs(got[s] - expected[s]) < 0.005 for s in expected)

    got = {s: float(answer[s]) for s in expected}
    if close(got):
        flat = [s for s, g in expected.items() if g <= 0.05]
        worst = max(expected, key=expected.get)
        return fit(f"flat within 0.05 bits at {multiple} L: {', '.join(flat)}; "
                   f"{worst} rises most, {expected[worst]:+.2f} bits per byte.",
                   "ch11-ex2")
    if close({s: -g for s, g in got.items()}):
        fail(f"the signs are flipped: the gain is {multiple} L minus L")
    for n in causal["config"]["eval_lengths"][1:]:
        at_n = length_gain(causal, n)
        if n != multiple * short and all(abs(got[s] - at_n[s]) < 0.005 for s in at_n):
            fail(f"those are the gains at {n} bytes; the exercise reads "
                 f"{multiple} L, {multiple * short}")
    fail(f"read each run's eval[str(n)]['bpb'] at n = L and n = {multiple} L, "
         "subtract, and average over the seeds (not the loss in nats: divide by ln 2)")
