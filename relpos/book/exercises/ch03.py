"""Checks for chapter 3, the 2k table."""

from __future__ import annotations

import math
from typing import Any, Callable

from relpos.checks import check_int
from relpos.embedding import per_pair_memory_bytes
from relpos.positions import relative_position_index
from ._core import as_number, call, exercise, fail, require_callable


@exercise("ch3-ex1")
def rows_read(
    answer: Callable[[int, int], Any], first_full: Any, *, span: int = 24
) -> str:
    """``answer(n, k)``: how many distinct table rows a sequence of ``n`` tokens reads;
    ``first_full``: the shortest sequence that reads all ``2k`` rows of a table of
    span ``span`` (the book: 24).
    """
    function = require_callable(answer, "a function of (n, k)")
    for k in (3, 8):
        for n in range(1, 21):
            index = relative_position_index(n, max_relative_positions=k)
            expected = index.unique().numel()
            got = as_number(
                call(function, n, k, what=f"f({n}, {k})"), "a number of rows"
            )
            if got == expected:
                continue
            if got == 2 * n - 1:
                fail(
                    f"f({n}, {k}) = {got:g}: past n = k the clipping caps "
                    "the rows at 2k"
                )
            if n <= k and got == 2 * n:
                fail(
                    f"f({n}, {k}) = {got:g}: n tokens have 2n - 1 distinct distances, "
                    "from -(n - 1) to n - 1"
                )
            fail(f"f({n}, {k}) = {got:g} rows; count the distinct values of the index")
    shortest = as_number(first_full, "a number of tokens")
    if shortest == span:
        fail(f"{span} tokens have 2 * {span} - 1 distances: one row is still unread")
    if shortest != span + 1:
        fail(
            f"{shortest:g} tokens: find the smallest n whose rows_read(n, {span}) "
            f"reaches 2 * {span}"
        )
    return "min(2n - 1, 2k) for every n <= 20, k in (3, 8); k + 1 tokens fill it."


@exercise("ch3-ex2")
def longest_bfloat16_sequence(answer: Any, *, gib: int = 16) -> str:
    """The longest ``n`` whose ``(n, n, 768)`` bfloat16 tensor fits in ``gib`` GiB
    (16 in the book; a problem set's variant may give another budget).

    Shapes:
        answer: an int
    """
    gib = check_int("gib", gib, minimum=1)
    n = as_number(answer, "a sequence length, an int")
    budget, hidden = gib * 2**30, 768
    if n != int(n) or n < 1:
        fail(f"a sequence length is a positive whole number; got {n:g}")
    n = int(n)
    needed = per_pair_memory_bytes(n, hidden, element_size=2)
    if needed > budget:
        fail(f"n = {n} does not fit: its tensor needs {needed / 2**30:.2f} GiB")
    if per_pair_memory_bytes(n + 1, hidden, element_size=2) <= budget:
        if (
            per_pair_memory_bytes(n, hidden, element_size=4)
            <= budget
            < (per_pair_memory_bytes(n + 1, hidden, element_size=4))
        ):
            fail("that is the float32 answer (4 bytes per number); bfloat16 has 2")
        if n * n * hidden * 2 <= gib * 1e9 < (n + 1) ** 2 * hidden * 2:
            fail(
                f"{gib} GB is {gib}e9 bytes; a GiB is 2**30 bytes, so {gib} GiB is a "
                "little more"
            )
        fail(f"n = {n} fits, but so does n = {n + 1}: look for the longest")
    return f"n = {n}; one token more needs more than {gib} GiB."


@exercise("ch3-ex3")
def sinusoidal_row_norm(answer: Any, *, hidden: int = 768) -> str:
    """The norm shared by every row of the sinusoidal table at hidden size ``hidden``
    (the book: 768)."""
    norm = as_number(answer, "a number, the norm of a row")
    expected, pairs = math.sqrt(hidden / 2), hidden // 2
    if math.isclose(norm, math.sqrt(hidden), rel_tol=1e-4):
        fail(
            f"sqrt({hidden}) would need {hidden} unit entries; a (sin, cos) pair has "
            f"norm 1, and a row holds {pairs} such pairs"
        )
    if math.isclose(norm, 1.0, rel_tol=1e-4):
        fail(
            f"the rows are not unit vectors: each of its {pairs} (sin, cos) pairs has "
            "norm 1"
        )
    if not math.isclose(norm, expected, rel_tol=1e-4):
        fail(
            f"{norm:g} is not the norm; add up sin^2 + cos^2 over the pairs of columns"
        )
    return f"sqrt({pairs}): every (sin, cos) pair adds 1 to the squared norm."
