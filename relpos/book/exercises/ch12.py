"""Checks for chapter 12, verdicts that survive a referee.

Shape legend:
    ch12-ex1: a function ``sign_flip_p(a, b) -> float``, the exact two-sided
        sign-flip p-value of the paired differences ``a - b`` (one per seed);
    ch12-ex2: a set of the schemes of the protocol's main sweep whose accuracy on
        ``relative`` at ``2L`` with 512 training sequences is above the learned
        absolute table's with a paired p-value under 0.05
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._core import call, exercise, fail, require_callable
from .ch09 import fit

#: Pairs of per-seed values the p-value check runs the answer on.
SAMPLES = (
    ([0.9, 0.8, 1.0, 0.7], [0.5, 0.6, 0.4, 0.9]),
    ([1.0, 1.0, 0.99, 0.98, 0.97, 1.0], [0.2, 0.3, 0.25, 0.1, 0.4, 0.35]),
    ([0.1, 0.2, 0.3, 0.4, 0.5], [0.1, 0.25, 0.2, 0.45, 0.4]),  # a tie, mixed signs
    ([0.3, 0.3, 0.3], [0.3, 0.3, 0.3]),  # every difference zero
)
#: The rule of exercise 2: a paired p-value under this shows the difference.
ALPHA = 0.05


def split_p_value(seeds: int, losses: int) -> float:
    """The exact two-sided sign-flip p-value of ``seeds`` differences of one size,
    ``losses`` of them negative: the share of sign patterns whose sum is at least
    as far from zero as ``seeds - 2 losses``."""
    observed = abs(seeds - 2 * losses)
    far = sum(
        math.comb(seeds, wins)
        for wins in range(seeds + 1)
        if abs(2 * wins - seeds) >= observed
    )
    return far / 2**seeds


@exercise("ch12-ex1")
def sign_flip_function(
    answer: Any, p_split: Any, *, seeds: int = 10, losses: int = 2
) -> str:
    """``answer(a, b)`` equals ``stats.paired_test(a, b)["p_value"]`` on samples;
    ``p_split``: its p-value for ``seeds`` differences of one size, ``losses`` of
    them negative (the book: 10 and 2)."""
    from ..stats import paired_test

    function = require_callable(answer, "sign_flip_p")
    for a, b in SAMPLES:
        got = call(function, list(a), list(b), what="sign_flip_p(a, b)")
        if not isinstance(got, (int, float, np.floating)) or not math.isfinite(got):
            fail(f"sign_flip_p must return a finite float, got {got!r}")
        expected = paired_test(a, b)["p_value"]
        if not math.isclose(float(got), expected, abs_tol=1e-9):
            if math.isclose(float(got), expected / 2, abs_tol=1e-9):
                fail("that is one tail: count the sign patterns whose mean is at "
                     "least as far from zero on either side")
            fail(f"on a = {list(a)}, b = {list(b)}: expected {expected:.4f}, got "
                 f"{float(got):.4f} (enumerate all 2**n sign patterns of the "
                 "differences, keep those whose |mean| >= the observed |mean|)")
    expected = split_p_value(seeds, losses)
    if not isinstance(p_split, (int, float, np.floating)) or not math.isclose(
        float(p_split), expected, abs_tol=1e-9
    ):
        fail(f"p_split: {p_split!r} is not the p-value of {seeds} seeds, "
             f"{losses} of them lost by the same margin: run your function on "
             "such a pair of lists")
    return fit("every one of the 2**n sign patterns weighed, both tails.",
               "ch12-ex1")


def ahead_of_absolute(sweep: dict[str, Any], multiple: int = 2) -> set[str]:
    """The schemes above ``absolute`` at ``multiple`` L (default 2) with 512
    sequences, p < :data:`ALPHA`."""
    from ..experiments import summary_cells
    from ..stats import paired_test

    cells = summary_cells(sweep)
    length = multiple * sweep["config"]["train_length"]
    base = cells["encoder", "relative", "absolute", 512, length]["values"]
    found = set()
    for scheme in sweep["grid"]["scheme"]:
        if scheme == "absolute":
            continue
        values = cells["encoder", "relative", scheme, 512, length]["values"]
        test = paired_test(values, base)
        if test["mean"] > 0 and test["p_value"] < ALPHA:
            found.add(scheme)
    return found


@exercise("ch12-ex2")
def ahead_set(
    answer: Any, *, multiple: int = 2, sweep: dict[str, Any] | None = None
) -> str:
    """The set of schemes ahead of ``absolute`` at ``multiple`` L (the book: 2),
    paired, p < 0.05."""
    from .. import results

    sweep = results.load("protocol/sweep.json") if sweep is None else sweep
    short = sweep["config"]["train_length"]
    lengths = [n // short for n in sweep["config"]["test_lengths"]]
    if multiple not in lengths[1:]:
        raise ValueError(f"multiple must be one of {lengths[1:]}, got {multiple!r}")
    expected = ahead_of_absolute(sweep, multiple)
    if not isinstance(answer, (set, frozenset, list, tuple)) or not all(
        isinstance(s, str) for s in answer
    ):
        fail(f"the answer must be a set of scheme names, got {answer!r}")
    got = set(answer)
    unknown = sorted(got - set(sweep["grid"]["scheme"]))
    if unknown:
        fail(f"not schemes of the sweep: {', '.join(unknown)}")
    if "absolute" in got:
        fail("absolute is the baseline: it cannot be ahead of itself")
    if got == expected:
        return fit(f"{len(expected)} schemes are ahead of the learned table at "
                   f"{multiple}L, "
                   "each in a paired test over the same ten seeds.", "ch12-ex2")
    if got < expected:
        fail("some schemes are missing: test every scheme of the sweep, seed by seed "
             "against absolute (paired_test(scheme, absolute))")
    fail("some of these are not shown ahead: keep a scheme only when its mean "
         f"difference is above 0 and its paired p-value under 0.05, at n = {multiple} "
         "L with 512 training sequences")


__all__ = ["ALPHA", "SAMPLES", "ahead_of_absolute", "split_p_value"]
