"""Checks for chapter 13, distances that grow with the length.

Shape legend:
    ch13-ex1: a function ``within(kind, n, d) -> int``, how many answer slots of a
        length-``n`` sequence of ``kind`` (``copy``, ``reverse``, ``mqar``,
        ``addition``) need no token more than ``d`` back (``i - j <= d``);
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
    """``got`` as an int, or a hint naming ``what``."""
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = got.item()
    if isinstance(got, bool) or not isinstance(got, numbers.Real):
        fail(f"{what} must return an int, got {type(got).__name__} "
             f"{got!r:.60}")
    if not math.isfinite(got) or got != int(got):
        fail(f"{what} must return a whole number of positions, got {got!r}")
    return int(got)


#: The reaches ch13-ex1 asks about: 6, the farthest distance a table clipped at
#: k = 8 gives a row of its own, and 14, the farthest one at k = 16.
REACHES = (6, 14)


def _within_hint(kind: str, n: int, d: int, got: int, far: torch.Tensor) -> str:
    """The hint for ``within(kind, n, d) == got``; ``far`` is each slot's distance."""
    where = f"within({kind!r}, {n}, {d}) returned {got}"
    expected = int((far <= d).sum())
    if got == int((far < d).sum()):
        return (f"{where}: a token exactly {d} back is within reach; count the "
                f"slots whose farthest needed token is at most {d} back")
    if got == len(far) - expected:
        return (f"{where}: that counts the slots that need a token beyond {d}; "
                "count those that do not")
    if got == int(far.max()):
        return (f"{where}: that is the farthest distance any slot needs; the "
                "answer counts answer slots")
    if kind == "mqar" and got == len(far) != expected:
        return (f"{where}: a query needs every value (its key may be any pair's), "
                "the first pair's value v_0 included, which is farther for each "
                "later query")
    return (f"{where}, expected {expected}: write out a short sequence of the "
            "layout, find each answer slot's farthest needed token (the chapter "
            "gives each task's), and count the slots at most d back")


@exercise("ch13-ex1")
def slots_within_reach(answer: Any, share: Any, *, n: int = 64, k: int = 8) -> str:
    """``answer(kind, n, d)``: how many answer slots need no token beyond ``d`` back;
    ``share``: per task, the share of the answer slots of length ``n`` that a table
    clipped at ``k`` serves, ``d = k - 2`` (the book: 64 and 8).

    Compared with ``layouts.needed_distances(kind, n)`` at ``LENGTHS`` and
    ``REACHES``.
    """
    asked = n, k
    from ..experiments.layouts import LAYOUTS, needed_distances

    function = require_callable(answer, "a function within(kind, n, d)")
    for kind in LAYOUTS:
        for n in LENGTHS:
            far = needed_distances(kind, n)  # (answers,)
            for d in REACHES:
                what = f"within({kind!r}, {n}, {d})"
                got = _distance(call(function, kind, n, d, what=what), what)
                if got != int((far <= d).sum()):
                    fail(_within_hint(kind, n, d, got, far))
    n, k = asked
    if not isinstance(share, dict) or set(share) != set(LAYOUTS):
        fail(f"share must be a dict from each task ({', '.join(LAYOUTS)}) to a "
             f"fraction, got {share!r:.80}")
    for kind in LAYOUTS:
        far = needed_distances(kind, n)  # (answers,)
        expected = float((far <= k - 2).double().mean())
        got = as_number(share[kind], f"a fraction for {kind}")
        if not math.isclose(got, expected, abs_tol=1e-9):
            fail(f"share[{kind!r}] = {got:g}: divide the slots within {k - 2} back "
                 f"(the farthest distance with a row of its own at k = {k}) by all "
                 f"the answer slots at n = {n}")
    return fit("a fixed window serves a shrinking share of the slots as n grows.",
               "ch13-ex1")


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


__all__ = ["LENGTH", "LENGTHS", "REACHES", "TASK"]
