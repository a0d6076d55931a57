"""The position terms written out: each pair's row, bias and values, by gather.

What every kernel adds is defined by ``PositionTerms`` (``registry.py``); this
module computes it explicitly, as ``(b, h, i, j)`` tensors, for the kernels that
build the scores (``gather``'s bias, the ``scores`` of ``return_scores=True``)
and as the reference the others are tested against.

Shapes:
    query: ``(b, h, i, d)``; key: ``(b, h, j, d)``; rows: ``(b or 1, i, j)``
    B: ``b`` or 1 (positions per sequence, or shared)
"""

from __future__ import annotations

import torch

from .. import masks
from ..scores import AttentionScores
from .registry import PositionTerms


def pair_distances(terms: PositionTerms) -> torch.Tensor:
    """``rel = query_positions[i] - key_positions[j]`` of every pair.

    Shapes:
        output: ``(B, i, j)``
    """
    return terms.query_positions[:, :, None] - terms.key_positions[:, None, :]


def rows_of(lookup: torch.Tensor, rel: torch.Tensor) -> torch.Tensor:
    """The row each distance reads: ``lookup[clamp(rel, -L, L) + L]``.

    Shapes:
        lookup: ``(2L + 1,)``; rel: any; output: the shape of ``rel``
    """
    reach = (lookup.shape[0] - 1) // 2
    return lookup[rel.clamp(-reach, reach) + reach]


def pair_rows(terms: PositionTerms) -> torch.Tensor | None:
    """The row of every pair, or None without a lookup.

    Shapes:
        output: ``(B, i, j)`` long
    """
    if terms.lookup is None:
        return None
    return rows_of(terms.lookup, pair_distances(terms))


def projected_rows(
    terms: PositionTerms | None,
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """The per-head c2p rows and p2c rows (``None`` for a term not used).

    Shapes:
        output: ``(h, m, d)`` each, or None
    """
    if terms is None:
        return None, None
    pos_key = terms.key_rows
    if terms.project_key is not None:
        pos_key = terms.project_key(terms.table)  # (h, m, d)
    pos_query = None
    if terms.project_query is not None:
        pos_query = terms.project_query(terms.table)  # (h, m, d)
    return pos_key, pos_query


def c2p_by_gather(
    query: torch.Tensor, pos_key: torch.Tensor, rows: torch.Tensor
) -> torch.Tensor:
    """``q_i . pos_key[h, row(i, j)]``: every query against every row, then gathered.

    Shapes:
        query: ``(b, h, i, d)``; pos_key: ``(h, m, d)``; rows: ``(B, i, j)``
        output: ``(b, h, i, j)``
    """
    b, h, i, _ = query.shape
    all_rows = torch.einsum("bhid,hmd->bhim", query, pos_key)  # (b, h, i, m)
    index = rows[:, None].expand(b, h, i, rows.shape[-1])  # (b, h, i, j)
    return all_rows.gather(-1, index)  # (b, h, i, j)


def p2c_by_gather(
    key: torch.Tensor, pos_query: torch.Tensor, rows: torch.Tensor
) -> torch.Tensor:
    """``k_j . pos_query[h, row(i, j)]``: every key against every row, then gathered.

    Shapes:
        key: ``(b, h, j, d)``; pos_query: ``(h, m, d)``; rows: ``(B, i, j)``
        output: ``(b, h, i, j)``
    """
    b, h, j, _ = key.shape
    # Rows first, keys last: picking row[i, j] for key j is a gather along dim -2.
    all_rows = torch.einsum("hmd,bhjd->bhmj", pos_query, key)  # (b, h, m, j)
    index = rows[:, None].expand(b, h, rows.shape[-2], j)  # (b, h, i, j)
    return all_rows.gather(-2, index)  # (b, h, i, j)


def pair_bias(
    terms: PositionTerms | None, heads: int, rows: torch.Tensor | None = None
) -> torch.Tensor | None:
    """The content-free part: ``row_bias`` at each pair's row plus ``bias(...)``.

    Shapes:
        rows: ``(B, i, j)``; output: ``(B, h, i, j)`` or None
    """
    if terms is None or (terms.row_bias is None and terms.bias is None):
        return None
    total = None
    if terms.row_bias is not None:
        rows = pair_rows(terms) if rows is None else rows  # (B, i, j)
        total = terms.row_bias[:, rows].transpose(0, 1)  # (B, h, i, j)
    if terms.bias is not None:
        rel = pair_distances(terms)[:, None]  # (B, 1, i, j)
        head = torch.arange(heads, device=rel.device)[None, :, None, None]
        query_position = terms.query_positions[:, None, :, None]  # (B, 1, i, 1)
        made = terms.bias(head, rel, query_position)  # (B, h, i, j)
        made = made.expand(rel.shape[0], heads, *rel.shape[-2:])
        total = made if total is None else total + made
    return total


def value_term(
    probs: torch.Tensor, value_rows: torch.Tensor, rows: torch.Tensor
) -> torch.Tensor:
    """``sum_j p_ij value_rows[h, row(i, j)]``: the weight of each row, then the rows.

    Shapes:
        probs: ``(b, h, i, j)``; value_rows: ``(h, m, d)``; rows: ``(B, i, j)``
        output: ``(b, h, i, d)``
    """
    b, h, i, j = probs.shape
    index = rows[:, None].expand(b, h, i, j)  # (b, h, i, j)
    weight = probs.new_zeros(b, h, i, value_rows.shape[1])  # (b, h, i, m)
    weight = weight.scatter_add(-1, index, probs)  # (b, h, i, m)
    return torch.einsum("bhim,hmd->bhid", weight, value_rows)  # (b, h, i, d)


def gather_scores(
    query: torch.Tensor,
    key: torch.Tensor,
    terms: PositionTerms | None,
    mask: masks.Mask | None,
    scale: float,
) -> AttentionScores:
    """Every term of the logits explicitly (position terms by gather), and the softmax.

    Shapes:
        query: ``(b, h, i, d)``; key: ``(b, h, j, d)``
        output: ``AttentionScores`` of ``(b, h, i, j)`` tensors
    """
    c2c = torch.einsum("bhid,bhjd->bhij", query, key) * scale  # (b, h, i, j)
    c2p = p2c = None
    rows = None if terms is None else pair_rows(terms)  # (B, i, j)
    pos_key, pos_query = projected_rows(terms)  # (h, m, d) each
    if pos_key is not None:
        c2p = c2p_by_gather(query, pos_key, rows) * scale
    if pos_query is not None:
        p2c = p2c_by_gather(key, pos_query, rows) * scale
    bias = pair_bias(terms, query.shape[1], rows)  # (B, h, i, j)
    return combine(c2c, c2p, p2c, bias, mask)


def combine(c2c, c2p, p2c, bias, mask) -> AttentionScores:
    """The scores' fields and the masked softmax of their sum.

    Shapes:
        c2c, c2p, p2c: ``(b, h, i, j)``; bias: ``(B, h, i, j)``
        output: ``AttentionScores``
    """
    if bias is not None:
        bias = bias.to(c2c.dtype).expand_as(c2c)
    scores = AttentionScores(c2c, c2p, p2c, c2c, bias)
    probs = masks.apply(scores.logits, mask).softmax(-1)  # (b, h, i, j)
    return scores._replace(probs=probs)


__all__ = [
    "c2p_by_gather",
    "combine",
    "gather_scores",
    "p2c_by_gather",
    "pair_bias",
    "pair_distances",
    "pair_rows",
    "projected_rows",
    "rows_of",
    "value_term",
]
