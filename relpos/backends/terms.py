"""A scheme's ``PositionTerms`` read into the explicit score path's arguments.

What every kernel adds is defined by ``PositionTerms`` (``registry.py``); this
module finds what the pairs read of it (each pair's distance and row, the
per-head rows, the content-free bias) and hands them to ``relpos.scores``, where
the arithmetic is (``explicit_scores``: every term as a ``(b, h, i, j)`` tensor,
for ``gather``, ``flex``'s empty inputs and ``return_scores=True``; ``naive``
builds its terms pair by pair and shares the rest).

Shapes:
    query: ``(b, h, i, d)``; key: ``(b, h, j, d)``; rows: ``(b or 1, i, j)``
    B: ``b`` or 1 (positions per sequence, or shared)
"""

from __future__ import annotations

import torch

from .. import masks
from ..scores import AttentionScores, scores_by_gather
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


def explicit_scores(
    query: torch.Tensor,
    key: torch.Tensor,
    terms: PositionTerms | None,
    mask: masks.Mask | None,
    scale: float,
) -> AttentionScores:
    """A scheme's scores, every term explicitly: its terms read into the gather path.

    The ``scores`` of ``gather`` and of ``return_scores=True``
    (``relpos.scores.scores_by_gather`` with this scheme's rows, row scores and
    content-free bias).

    Shapes:
        query: ``(b, h, i, d)``; key: ``(b, h, j, d)``
        output: ``AttentionScores`` of ``(b, h, i, j)`` tensors
    """
    rows = None if terms is None else pair_rows(terms)  # (B, i, j)
    pos_key, pos_query = projected_rows(terms)  # (h, m, d) each
    bias = pair_bias(terms, query.shape[1], rows)  # (B, h, i, j)
    return scores_by_gather(query, key, pos_key, pos_query, rows, bias, mask, scale)


__all__ = [
    "explicit_scores",
    "pair_bias",
    "pair_distances",
    "pair_rows",
    "projected_rows",
    "rows_of",
]
