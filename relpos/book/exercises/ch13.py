"""Checks for chapter 13, distances that grow with the length.

Shape legend:
    ch13-ex1: a function ``needed(kind, n) -> int``, the largest distance ``i - j``
        between an answer slot ``i`` and a token ``j`` its answer needs, for
        ``kind`` in ``copy``, ``reverse``, ``mqar``, ``addition`` at length ``n``;
    ch13-ex2: two numbers, the exact-match chance of uniform guesses on ``copy``
        at length 32 (``V = 16`` symbols) and the exact-match bound of an encoder
        without positions there
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import torch

from ._core import as_number, call, exercise, fail, require_callable
from .ch09 import fit

#: The lengths the ``needed`` check asks about, per kind: odd and even (copy and
#: reverse pad one token at even ``n``), each remainder mod 3 (mqar, addition).
LENGTHS = (9, 10, 11, 32, 33, 34, 64)
#: The task and length of exercise 2 (``n=`` changes the length).
TASK, LENGTH = "copy", 32


def _distance(got: Any, what: str) -> int:
    """``got`` as an int distance, or a hint naming ``what``."""
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = got.item()
    if isinstance(got, bool) or not isinstance(got, numbers.Real):
        fail(f"{what} must return an int distance, got {type(got).__name__} "
             f"{got!r:.60}")
    if not math.isfinite(got) or got != int(got):
        fail(f"{what} must return a whole number of positions, got {got!r}")
    return int(got)


def _needed_hint(kind: str, n: int, got: int, expected: int) -> str:
    """The hint for ``needed(kind, n) == got`` where ``expected`` is right."""
    from ..experiments.layouts import LAYOUTS, farthest_source

    layout = LAYOUTS[kind]
    m = layout.size(n)
    where = f"needed({kind!r}, {n}) returned {got}"
    as_size = farthest_source(kind, layout.per_size * n + layout.extra)
    if got == as_size and got != expected:
        return (f"{where}: that is the distance for a problem of size m = {n}, but n "
                f"is the sequence length; first find m, the size that fits in n "
                f"tokens (here m = {m})")
    if kind == "addition" and got == 3 * m:
        return (f"{where}: that is slot m - 1's farthest digit; the last slot, the "
                "final carry, needs a_{m-1} too, one position farther")
    if kind == "mqar" and got == 3 * m - 1:
        return (f"{where}: that is the distance of the key k_0; the answer is its "
                "value v_0, one token nearer (and a key cannot change alone: the "
                "queries are the same keys again)")
    if kind == "mqar" and got == 2 * m - 1:
        return (f"{where}: that is query 0's farthest value; every later query sits "
                "one position farther from the pairs")
    if abs(got - expected) == 1:
        return (f"{where}, off by one: the distance is the slot's position minus the "
                "token's, i - j; lay out the sequence with its PAD at the start (if "
                "n leaves a remainder) and its SEP or '=' before the answers, and "
                "count the positions")
    return (f"{where}, expected {expected}: write out a short sequence of the layout "
            "(as the chapter lays them out), find each answer slot's farthest "
            "needed token, and take the largest")


@exercise("ch13-ex1")
def farthest_needed(answer: Any) -> str:
    """``answer(kind, n)`` equals ``layouts.farthest_source(kind, n)`` at several n."""
    from ..experiments.layouts import LAYOUTS, farthest_source

    function = require_callable(answer, "a function needed(kind, n)")
    for kind in LAYOUTS:
        for n in LENGTHS:
            what = f"needed({kind!r}, {n})"
            got = _distance(call(function, kind, n, what=what), what)
            expected = farthest_source(kind, n)
            if got != expected:
                fail(_needed_hint(kind, n, got, expected))
    return fit("the farthest needed token is (n + 1) // 2 back for copy, 2m for "
               "reverse, 3m - 2 for mqar and 3m + 1 for addition: each grows with "
               "n, so no fixed window holds them all.", "ch13-ex1")


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=0.0)


@exercise("ch13-ex2")
def exact_match_chance_and_bound(chance: Any, bound: Any, *, n: int = LENGTH) -> str:
    """Copy at length ``n``: uniform guesses' exact-match chance, and the exact-match
    bound of an encoder without positions (``bounds.permutation_bounds``)."""
    from ..experiments.bounds import permutation_bounds
    from ..experiments.equivariance import expected_max_share
    from ..experiments.layouts import LAYOUTS
    from ..experiments.tasks import get_task

    task = get_task(TASK)
    n = task.check_length(n)
    vocab, m = task.vocab_size, LAYOUTS[TASK].answers(n)
    got_chance = as_number(chance, "a probability, a float")
    got_bound = as_number(bound, "a probability, a float")
    expected_chance = task.exact_chance(n)
    expected_bound = permutation_bounds(task, n)[1].value
    if not _close(got_chance, expected_chance):
        if _close(got_chance, 1 / vocab):
            fail("chance: 1/V is the chance of one slot (per token); exact match "
                 "needs every answer slot of the sequence right at once")
        if _close(got_chance, vocab ** -float(n)):
            fail("chance: that raises 1/V to the n-th power; only the answer slots "
                 "are scored, not all n positions")
        if _close(got_chance, vocab ** -float(m + 1)) or _close(
            got_chance, vocab ** -float(m - 1)
        ):
            fail(f"chance: count the answer slots again: n = {n} holds "
                 "m = (n - 1) // 2 data tokens (after a PAD when n is even), a SEP "
                 "and m answer slots")
        fail("chance: a uniform guess is right with probability 1/V at each answer "
             "slot, independently; exact match needs them all")
    if not _close(got_bound, expected_bound):
        if _close(got_bound, expected_chance):
            fail("bound: an encoder without positions does better than uniform "
                 "guesses: its m answer slots all hold BLANK and see the same bag, "
                 "so they get one prediction; which sequences does that get "
                 "entirely right, and how likely are they?")
        if _close(got_bound, expected_max_share(m, vocab)):
            fail("bound: that is the per-token bound (the commonest data token's "
                 "share); exact match asks for every slot at once")
        if got_bound < expected_chance:
            fail("bound: a bound below the chance of uniform guesses cannot be: "
                 "guessing is one of the things the model can do")
        if _close(got_bound, vocab ** (1.0 - (m - 1))):  # (m + 1): the chance
            fail(f"bound: count the answer slots again: n = {n} holds "
                 "m = (n - 1) // 2 of them")
        fail("bound: one prediction for all m slots is right only when all m data "
             "tokens are equal; how likely is that for i.i.d. uniform tokens?")
    return fit(f"{expected_chance:.2g} for uniform guesses, {expected_bound:.2g} "
               f"without positions ({vocab} times more, V^(1 - m) against V^-m "
               f"with m = {m}): an exact match measured above a few percent comes "
               "from neither.", "ch13-ex2")


__all__ = ["LENGTH", "LENGTHS", "TASK"]
