"""Checks for chapter 5, efficient attention.

Shape legend:
    ch5-ex1: a function ``(key (b, h, j, d), pos_query (h, r, d), index (i, j))
    -> (b, h, i, j)``; ch5-ex2: ``(n, n)``; ch5-ex3: an ``nn.Module`` class
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch import nn

from relpos.attention import content_to_position, position_to_content
from relpos.positions import relative_position_index
from ._core import (
    ExerciseError,
    as_tensor,
    call,
    close,
    exercise,
    fail,
    require_callable,
)


@exercise("ch5-ex1")
def p2c_by_gather(answer: Callable[..., Any]) -> str:
    """``answer(key, pos_query, index)``: p2c by scoring all rows once, then gathering.

    Shapes:
        key: ``(b, h, j, d)``; pos_query: ``(h, r, d)``; index: ``(i, j)``
        output: ``(b, h, i, j)``
    """
    function = require_callable(answer, "a function of (key, pos_query, index)")
    generator = torch.Generator().manual_seed(0)
    for queries, keys, k in ((6, 6, 3), (4, 9, 2)):
        key = torch.randn(2, 3, keys, 4, generator=generator, dtype=torch.float64)
        pos_query = torch.randn(3, 2 * k, 4, generator=generator, dtype=torch.float64)
        index = relative_position_index(queries, keys, max_relative_positions=k)
        expected = position_to_content(key, pos_query, index)
        got = as_tensor(
            call(function, key, pos_query, index, what="your function"), "a tensor"
        )
        if tuple(got.shape) != tuple(expected.shape):
            fail(
                f"for {queries} queries and {keys} keys the result should have shape "
                f"(b, h, i, j) = {tuple(expected.shape)}, got {tuple(got.shape)}"
            )
        if queries == keys:
            paper = position_to_content(key, pos_query, index.T)
            if close(got, paper, atol=1e-9):
                fail(
                    "you read row delta(j, i), the paper's p2c; the released code, and "
                    "relpos, read delta(i, j)"
                )
            own_key = content_to_position(
                key, pos_query, index
            )  # K_i . Pq[delta(i, j)]
            if close(got, own_key, atol=1e-9):
                fail(
                    "entry (i, j) used key i's content: p2c pairs key j's content with "
                    "row delta(i, j), so gather along the rows, dim -2"
                )
        if not close(got, expected, atol=1e-9):
            fail(
                "entry (b, h, i, j) should be key[b, h, j] . pos_query[h, index[i, j]]"
            )
    return "equal to relpos.position_to_content, for 6 x 6 and for 4 x 9 pairs."


def _asked_sizes(
    query: torch.Tensor,
    pos_key: torch.Tensor,
    key_mask: torch.Tensor,
    n: int | None,
    k: int | None,
    d: int | None,
    masked: int | None,
) -> None:
    """An ExerciseError where the tensors do not have the sizes asked for."""
    if n is not None and d is not None and tuple(query.shape) != (1, 1, n, d):
        fail(f"query should have shape (1, 1, n, d) = (1, 1, {n}, {d}), the sizes "
             f"asked for; got {tuple(query.shape)}")
    if k is not None and d is not None and tuple(pos_key.shape) != (1, 2 * k, d):
        fail(f"pos_key should have shape (1, 2k, d) = (1, {2 * k}, {d}); got "
             f"{tuple(pos_key.shape)}")
    if n is not None and masked is not None:
        asked = [[j < n - masked for j in range(n)]]
        if key_mask.tolist() != asked:
            fail(f"key_mask should hide the last {masked} of {n} keys: {asked}")


@exercise("ch5-ex2")
def scores_from_score_mod(
    answer: Any,
    *,
    query: torch.Tensor,
    pos_key: torch.Tensor,
    key_mask: torch.Tensor,
    n: int | None = None,
    k: int | None = None,
    d: int | None = None,
    masked: int | None = None,
) -> str:
    """The c2p scores with masked keys, rebuilt entry by entry from a ``score_mod``;
    ``n``, ``k``, ``d`` and ``masked`` (the last keys hidden), where given, are the
    sizes the exercise asked for (the book: 5, 2, 3 and 2).

    Shapes:
        answer: ``(n, n)``; query: ``(1, 1, n, d)``; pos_key: ``(1, 2k, d)``
        key_mask: ``(1, n)`` bool
    """
    _asked_sizes(query, pos_key, key_mask, n, k, d, masked)
    got = as_tensor(answer, "an (n, n) tensor of scores").double()
    n, k = query.shape[-2], pos_key.shape[-2] // 2
    index = relative_position_index(n, max_relative_positions=k)
    c2p = content_to_position(query, pos_key, index)[0, 0]  # (i, j)
    masked = ~key_mask[0].bool()
    lowest = torch.finfo(c2p.dtype).min
    expected = c2p.masked_fill(masked, lowest)
    if tuple(got.shape) != (n, n):
        fail(f"the scores should have shape ({n}, {n}), got {tuple(got.shape)}")
    if close(got[:, ~masked], c2p[:, ~masked], atol=1e-9):
        if torch.isinf(got[:, masked]).all():
            fail(
                "masked keys hold -inf; the score_mod writes the dtype's minimum, "
                "torch.finfo(dtype).min, which keeps a fully masked row finite"
            )
        if close(got, c2p, atol=1e-9):
            fail("the masked keys still carry their c2p score: pass key_mask")
    if not close(got, expected, atol=1e-9):
        fail(
            "entry (i, j) should be c2p[i, j] for a kept key and the dtype's minimum "
            "for a masked one; start every entry from a zero score"
        )
    return "the score_mod adds c2p at row delta(i, j) and masks the hidden keys."


def _table_of(module: nn.Module, rows: int, hidden: int) -> torch.Tensor:
    tables = [p for p in module.parameters() if tuple(p.shape) == (rows, hidden)]
    if len(tables) != 1 or sum(1 for _ in module.parameters()) != 1:
        shapes = [tuple(p.shape) for p in module.parameters()]
        fail(
            f"the module should own one parameter, the (2k, hidden) = "
            f"({rows}, {hidden}) "
            f"table; its parameters have shapes {shapes}"
        )
    return tables[0]


@exercise("ch5-ex3")
def per_pair_module(answer: type) -> str:
    """A module class ``(max_relative_positions, hidden_size)`` whose ``forward(n)``
    returns every pair's table row, ``(n, n, hidden)``.

    Shapes:
        forward(seq_len): ``(seq_len, seq_len, hidden_size)``
    """
    cls = require_callable(answer, "a class, such as PerPairEmbedding")
    k, hidden = 4, 8
    module = call(cls, k, hidden, what=f"{getattr(cls, '__name__', 'it')}(4, 8)")
    if not isinstance(module, nn.Module):
        fail(f"the class should subclass nn.Module; got {type(module).__name__}")
    table = _table_of(module, 2 * k, hidden)
    with torch.no_grad():
        table.copy_(
            torch.randn(2 * k, hidden, generator=torch.Generator().manual_seed(0))
        )
    for n in (1, 3, 4, 5, 9):
        expected = table.detach()[relative_position_index(n, max_relative_positions=k)]
        try:
            got = as_tensor(
                call(module, n, what=f"module({n}) with k = {k}"), "a tensor"
            )
        except ExerciseError as error:
            if n > k and "IndexError" in str(error):
                fail(
                    f"{error}. Past n = k some distances leave the window: clip i - j "
                    "to [-k, k - 1] before shifting"
                )
            raise
        if tuple(got.shape) != (n, n, hidden):
            fail(
                f"module({n}) should have shape ({n}, {n}, {hidden}), "
                f"got {tuple(got.shape)}"
            )
        if n > 1 and close(got, expected.transpose(0, 1)):
            fail("pair (i, j) reads the row of j - i: the book's distance is i - j")
        if not close(got, expected):
            fail(
                f"module({n}) with k = {k}: entry (i, j) should be "
                "table[delta(i - j)]; "
                "clip i - j to [-k, k - 1], then add k"
            )
    return "(n, n, hidden) per-pair embeddings, clipped beyond k, for n up to 9."
