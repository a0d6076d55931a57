"""Checks for chapter 4, disentangled attention.

Shape legend:
    ch4-ex1: a function ``(Q (i, d), Pk (r, d), index (i, j)) -> (i, j)``;
    ch4-ex2: ``(n, n)`` bool; ch4-ex3: a float; ch4-ex4: a set of names
"""

from __future__ import annotations

import math
from typing import Any, Callable

import torch

from relpos.attention import content_to_position
from relpos.positions import relative_position_index
from ._core import as_number, as_tensor, call, close, exercise, fail, require_callable


@exercise("ch4-ex1")
def c2p_per_pair(answer: Callable[..., Any]) -> str:
    """``answer(Q, Pk, index)``: c2p of one head from the per-pair position keys.

    Shapes:
        Q: ``(i, d)``; Pk: ``(2k, d)``; index: ``(i, j)``; output: ``(i, j)``
    """
    function = require_callable(answer, "a function of (Q, Pk, index)")
    generator = torch.Generator().manual_seed(0)
    for queries, keys, k in ((5, 5, 3), (3, 7, 2)):
        Q = torch.randn(queries, 4, generator=generator, dtype=torch.float64)
        Pk = torch.randn(2 * k, 4, generator=generator, dtype=torch.float64)
        index = relative_position_index(queries, keys, max_relative_positions=k)
        expected = content_to_position(Q[None, None], Pk[None], index)[0, 0]  # (i, j)
        got = as_tensor(call(function, Q, Pk, index, what="your function"), "a tensor")
        if tuple(got.shape) != tuple(expected.shape):
            fail(
                f"for {queries} queries and {keys} keys the result should have shape "
                f"{tuple(expected.shape)}, got {tuple(got.shape)}"
            )
        if queries == keys:
            transposed = content_to_position(Q[None, None], Pk[None], index.T)[0, 0]
            if close(got, transposed, atol=1e-9):
                fail(
                    "you read row index.T, delta(j, i): c2p of (i, j) reads delta(i, j)"
                )
        if not close(got, expected, atol=1e-9):
            fail(
                "entry (i, j) should be Q[i] . Pk[index[i, j]]: index the "
                "position keys "
                "with the whole index, then take one dot product per pair"
            )
    return "equal to the gather version, for square and for 3 x 7 pairs."


@exercise("ch4-ex2")
def where_paper_and_code_agree(answer: Any) -> str:
    """The pairs at which p2c on ``delta(j, i)`` equals p2c on ``delta(i, j)``.

    Shapes:
        answer: ``(n, n)`` bool
    """
    got = as_tensor(answer, "an (n, n) boolean tensor").bool()
    if got.dim() != 2 or got.shape[0] != got.shape[1]:
        fail(f"give an (n, n) mask, one entry per pair; got shape {tuple(got.shape)}")
    n = got.shape[0]
    eye = torch.eye(n, dtype=torch.bool)
    if got.all():
        fail(
            "the two indices differ: delta(i, j) and delta(j, i) are different rows "
            "for most pairs"
        )
    if torch.equal(got, eye):
        return f"only the {n} pairs with i == j, where i - j = j - i = 0."
    fail(
        "delta(i - j) == delta(j - i) needs clamp(r) == clamp(-r): which r satisfy it?"
    )


@exercise("ch4-ex3")
def c2p_only_scale(answer: Any, *, head_size: int = 64, heads: int = 12) -> str:
    """The scale of a module with only the c2p term, of ``heads`` heads of width
    ``head_size`` (the book: 12 heads of 64, hidden size 768)."""
    scale, d = as_number(answer, "the scale, a float"), head_size
    if math.isclose(scale, 1 / math.sqrt(3 * d)):
        fail("1/sqrt(3d) is the scale with both position terms (s = 3)")
    if math.isclose(scale, 1 / math.sqrt(d)):
        fail("1/sqrt(d) is BERT's scale, for c2c alone; c2p adds a second term")
    if math.isclose(scale, math.sqrt(2 * d)):
        fail("the scores are multiplied by the scale, 1 / sqrt(s d), not by sqrt(s d)")
    if not math.isclose(scale, 1 / math.sqrt(2 * d)):
        fail(f"{scale:g} is not 1 / sqrt(s d) for s = 1 + number of position terms "
             f"and d the width of one head ({heads} heads, hidden size {heads * d})")
    return "1 / sqrt(2d): c2c plus one position term."


def _items(answer: Any) -> list | None:
    """The entries of ``answer`` if it can be iterated over, else None."""
    try:
        return list(answer)
    except TypeError:
        return None


@exercise("ch4-ex4")
def p2c_gradient_targets(answer: Any) -> str:
    """The projection weights that the p2c term sends gradient to, with separate keys.
    """
    items = None if isinstance(answer, str) else _items(answer)
    if items is None or not all(isinstance(x, str) for x in items):
        fail(
            "give the names as a set of strings, such as {'key_proj', ...}; got "
            f"{type(answer).__name__} {answer!r:.60}"
        )
    names = set(items)
    expected = {"key_proj", "pos_query_proj"}
    if names == {"query_proj", "key_proj"}:
        fail(
            "that is the answer with share_att_key=True; now the table is projected "
            "by its own pos_query_proj for p2c"
        )
    if "pos_key_proj" in names:
        fail("pos_key_proj projects the table only for c2p")
    if "query_proj" in names:
        fail("p2c reads no content query: it is key content against a position query")
    if names != expected:
        fail(f"{sorted(names)}: p2c is K_j . Pq[row]; which weights make K and Pq?")
    return "key_proj (content keys) and pos_query_proj (the table's queries)."
