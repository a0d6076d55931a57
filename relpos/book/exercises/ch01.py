"""Checks for chapter 1, from absolute to relative positions.

Shape legend:
    ch1-ex1: a function ``n -> (n, n)``; ch1-ex2: ``(7, 7)``; ch1-ex3: ``(n - 2,)``, int
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from relpos.positions import delta, relative_position_index, relative_positions
from ._core import as_number, as_tensor, call, close, exercise, fail, require_callable


@exercise("ch1-ex1")
def distance_matrix(
    answer: Callable[[int], Any], pairs_ahead: Any, *, n: int = 10, m: int = 3
) -> str:
    """``answer(n)`` is the ``(n, n)`` matrix of ``i - j``, built from ``torch.arange``;
    ``pairs_ahead``: the pairs of ``n`` tokens whose key is ``m`` ahead (the book:
    ``n = 10``, ``m = 3``).

    Shapes:
        answer(n): ``(n, n)``
    """
    function = require_callable(answer, "a function of n, such as distance_matrix")
    asked, ahead = n, m
    for n in (1, 2, 5, 9):
        expected = relative_positions(n)
        got = as_tensor(call(function, n, what=f"distance_matrix({n})"), "a tensor")
        if tuple(got.shape) != (n, n):
            fail(
                f"distance_matrix({n}) should have shape ({n}, {n}), "
                f"got {tuple(got.shape)}"
            )
        if n > 1 and torch.equal(got.long(), -expected):
            fail(
                "your matrix is the negative of the book's: it holds j - i (key minus "
                "query). Put the query index i on the rows: positions[:, None] - "
                "positions[None, :]"
            )
        if got.is_floating_point() or got.dtype == torch.bool:
            fail(f"distance_matrix should hold integers; got dtype {got.dtype}")
        if not torch.equal(got.long(), expected):
            i, j = (got.long() != expected).nonzero()[0].tolist()
            fail(
                f"entry ({i}, {j}) of distance_matrix({n}) is {int(got[i, j])}, "
                "not i - j"
            )
    count = as_number(pairs_ahead, "a number of pairs")
    if count != asked - ahead:
        fail(
            f"{count:g} is not the number of pairs of {asked} tokens with i - j = "
            f"-{ahead}: count the entries of distance_matrix({asked}) equal to -{ahead}"
        )
    return (
        "entry (i, j) is i - j for every n tried (1, 2, 5, 9); the diagonal "
        "i - j = -m holds n - m pairs."
    )


@exercise("ch1-ex2")
def rows_from_key_minus_query(answer: Any, *, n: int = 7, k: int = 4) -> str:
    """The book's table rows for ``n`` tokens and span ``k`` (the book: 7 and 4),
    from a ``j - i`` matrix.

    Shapes:
        answer: ``(n, n)``
    """
    got = as_tensor(answer, f"a ({n}, {n}) tensor of table rows")
    expected = relative_position_index(n, max_relative_positions=k)
    if tuple(got.shape) != (n, n):
        fail(f"the rows should have shape ({n}, {n}), got {tuple(got.shape)}")
    if torch.equal(got.long(), expected.T):
        fail(
            "you clipped and shifted j - i as it is, so every pair reads the row "
            "of the opposite direction: flip the sign of t first, then apply delta"
        )
    if not torch.equal(got.long(), expected):
        i, j = (got.long() != expected).nonzero()[0].tolist()
        fail(
            f"pair ({i}, {j}) should read row delta(i - j, {k}), not {int(got[i, j])}"
        )
    return "the T5-style matrix, negated, gives the book's rows."


_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight")


def _tokens(m: int) -> str:
    """``"two tokens"`` for 2, ``"one token"`` for 1, ``"11 tokens"`` for 11."""
    word = _WORDS[m] if 0 <= m < len(_WORDS) else str(m)
    return f"{word} token{'s' if m != 1 else ''}"


@exercise("ch1-ex3")
def two_behind(
    values: Any, row: Any, *, scores: torch.Tensor, k: int = 16, behind: int = 2
) -> str:
    """The relative scores of every pair whose key is ``behind`` tokens behind (the
    book: two), and their row.

    Shapes:
        values: ``(n - behind,)``; row: an int; scores: ``(n, n)``
    """
    scores, m = as_tensor(scores, "the (n, n) score matrix"), behind
    got = as_tensor(values, "a tensor of scores").double().flatten()
    below, above = scores.diagonal(offset=-m), scores.diagonal(offset=m)
    if close(got, above.double()) and not close(got, below.double()):
        fail(
            f"those are the pairs whose key is {_tokens(m)} ahead (j = i + {m}, "
            f"i - j = -{m}). "
            f"Behind means j = i - {m}: a diagonal below the main one, offset=-{m}"
        )
    if not close(got, below.double()):
        fail(
            f"expected the {len(below)} entries (i, i - {m}) for i = {m} ... "
            f"{scores.shape[0] - 1}, read along one diagonal of scores"
        )
    number = as_number(row, "the table row, an int")
    if number == delta(-m, k):
        fail(
            f"row {int(number)} is the row of distance -{m} (a key ahead); "
            f"here i - j = +{m}"
        )
    if number != delta(m, k):
        fail(f"row {number:g} is not delta(+{m}) for k = {k}: clip, then add k")
    return (
        f"all {len(below)} pairs {_tokens(m)} behind read row {delta(m, k)} and "
        "score alike."
    )
