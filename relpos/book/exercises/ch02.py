"""Checks for chapter 2, the delta function.

Shape legend:
    ch2-ex1: 7 ints; ch2-ex2: a function ``(n, k) -> int``; ch2-ex3: a function
    ``(r, k) -> rows`` with ``r`` of any shape, and an int
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from relpos.positions import delta, relative_position_index
from ._core import as_number, as_tensor, call, exercise, fail, require_callable

DISTANCES = (-600, -512, -511, 0, 511, 512, 600)


def distances(k: int) -> tuple[int, ...]:
    """Exercise 2.1's distances for span ``k``: ``DISTANCES`` for ``k = 512``."""
    return (-k - 88, -k, -k + 1, 0, k - 1, k, k + 88)


@exercise("ch2-ex1")
def rows_of_distances(answer: Any, *, k: int = 512) -> str:
    """The rows of the distances ``distances(k)`` (with ``k = 512``: ``DISTANCES``)
    with span ``k``, in that order.

    Shapes:
        answer: ``(7,)``
    """
    asked = distances(k)
    got = as_tensor(answer, "a list of 7 row numbers").flatten().tolist()
    if len(got) != len(asked):
        fail(f"give one row per distance, {len(asked)} in all; got {len(got)}")
    for r, row in zip(asked, got):
        if row == delta(r, k):
            continue
        if r >= k and row == 2 * k:
            fail(f"distance {r}: the window ends at k - 1, so the last row is 2k - 1")
        if row == r + k:
            fail(
                f"distance {r} lies outside the window [-k, k - 1]: "
                "clip it before shifting"
            )
        fail(f"distance {r} does not read row {row}; follow the piecewise definition")
    return (
        f"far ahead reads row 0, far behind row {2 * k - 1}, distance 0 row {k}."
    )


def _pairs_on_row_zero(n: int, k: int) -> int:
    return int((relative_position_index(n, max_relative_positions=k) == 0).sum())


@exercise("ch2-ex2")
def pairs_on_row_zero(
    answer: Callable[[int, int], Any], on_row_zero: Any, *, n: int = 100, k: int = 32
) -> str:
    """``answer(n, k)``: how many pairs of ``n`` tokens read row 0 with span ``k``;
    ``on_row_zero``: that count at the asked ``n`` and ``k`` (the book: 100, 32)."""
    function = require_callable(answer, "a function of (n, k)")
    asked = n, k
    for n in range(1, 21):
        for k in range(1, 7):
            expected = _pairs_on_row_zero(n, k)
            got = as_number(
                call(function, n, k, what=f"f({n}, {k})"), "a number of pairs"
            )
            if got == expected:
                continue
            if n <= k:
                fail(
                    f"with n = {n} <= k = {k} no key is k ahead, so no pair "
                    "reads row 0; "
                    f"f({n}, {k}) = {got:g}"
                )
            if got == (n - k + 1) * (n - k + 2) // 2:
                fail(
                    "that counts row 2k - 1 (keys k - 1 or more behind); "
                    "row 0 collects "
                    "the keys k or more ahead, one distance fewer"
                )
            fail(
                f"f({n}, {k}) = {got:g}; count the pairs on each diagonal "
                "i - j = -m, m >= k"
            )
    count, (n, k) = as_number(on_row_zero, "a number of pairs"), asked
    if count != _pairs_on_row_zero(n, k):
        fail(
            f"{count:g} is not the number of pairs of {n} tokens that read row 0 with "
            f"span {k}: evaluate your function there"
        )
    return "checked for every n <= 20 and k <= 6, and at the asked n and k."


@exercise("ch2-ex3")
def symmetric_window(
    answer: Callable[[torch.Tensor, int], Any], rows_used: Any, *, k: int = 4
) -> str:
    """``answer(r, k)`` clips to ``[-k, k]`` and shifts; ``rows_used``: its rows for
    span ``k`` (the book: 4).

    Shapes:
        r: ``(*)``; answer(r, k): ``(*)``
    """
    function = require_callable(answer, "a function of (r, k), such as delta_symmetric")
    r, span = torch.arange(-50, 51), k
    for k in range(1, 12):
        got = as_tensor(
            call(function, r, k, what=f"delta_symmetric(r, {k})"), "a tensor"
        )
        if tuple(got.shape) != tuple(r.shape):
            fail(f"delta_symmetric(r, k) should have r's shape {tuple(r.shape)}")
        if torch.equal(got.long(), delta(r, k)):
            fail(
                "that is DeBERTa's delta, clipped to [-k, k - 1]; the symmetric window "
                "is [-k, k], with one more distance behind"
            )
        if not torch.equal(got.long(), r.clamp(-k, k) + k):
            bad = int(r[got.long() != r.clamp(-k, k) + k][0])
            fail(
                f"k = {k}: distance {bad} reads the wrong row; clamp to [-k, k], add k"
            )
    rows, k = as_number(rows_used, "a number of rows"), span
    if rows == 2 * k:
        fail(
            f"{2 * k} = 2k is DeBERTa's table; the window [-k, k] holds one "
            "distance more"
        )
    if rows != 2 * k + 1:
        fail(f"{rows:g} rows: count the distances from {-k} to {k}")
    return "delta'(r) + delta'(-r) = 2k for every r, with 2k + 1 rows."
