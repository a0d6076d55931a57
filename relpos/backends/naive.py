"""The ``naive`` backend: the literal per-pair construction, every term materialised.

Each pair ``(i, j)`` reads its own row: DeBERTa's table row ``table[delta(i, j)]``
(an ``(n, n, hidden)`` tensor) projected pair by pair, a scheme's per-head rows
likewise, its bias evaluated at every pair. The construction of the papers,
written out, and the reference the other backends are tested against. Memory
and work grow with ``n^2 * hidden``. The relative values (Shaw) are the one
value term of every kernel (``relpos.scores.value_term``).

Shapes:
    query: ``(b, h, i, d)``; key, value: ``(b, h, j, d)``
    output: ``(b, h, i, d)``
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..masks import Mask
from ..scores import AttentionScores, combine, value_term
from .terms import pair_bias, pair_rows
from .registry import PositionTerms


def _pairs_projected(project, table: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """Every pair's table row, projected on its own: ``(B, i, j, h, d)``."""
    projected = project(table[rows].flatten(0, -2))  # (h, B*i*j, d): a row per pair
    return projected.transpose(0, 1).unflatten(0, rows.shape)  # (B, i, j, h, d)


def _pairs_of_rows(per_head: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """Every pair's per-head row: ``(B, i, j, h, d)``."""
    return per_head[:, rows].movedim(0, -2)  # (B, i, j, h, d)


def scores(
    query: torch.Tensor,
    key: torch.Tensor,
    terms: PositionTerms | None,
    mask: Mask | None,
    scale: float,
) -> AttentionScores:
    """Every term, each pair from its own row; the masked softmax.

    Shapes:
        query: ``(b, h, i, d)``; key: ``(b, h, j, d)``
        output: ``AttentionScores`` of ``(b, h, i, j)`` tensors
    """
    c2c = torch.einsum("bhid,bhjd->bhij", query, key) * scale
    c2p = p2c = None
    rows = None if terms is None else pair_rows(terms)  # (B, i, j)
    if terms is not None and terms.project_key is not None:
        pairs = _pairs_projected(terms.project_key, terms.table, rows)
        c2p = torch.einsum("bhid,bijhd->bhij", query, pairs) * scale
    elif terms is not None and terms.key_rows is not None:
        pairs = _pairs_of_rows(terms.key_rows, rows)  # (B, i, j, h, d)
        c2p = torch.einsum("bhid,bijhd->bhij", query, pairs) * scale
    if terms is not None and terms.project_query is not None:
        pairs = _pairs_projected(terms.project_query, terms.table, rows)
        p2c = torch.einsum("bhjd,bijhd->bhij", key, pairs) * scale
    bias = pair_bias(terms, query.shape[1], rows)  # (B, h, i, j)
    return combine(c2c, c2p, p2c, bias, mask)


def attend(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    terms: PositionTerms | None,
    mask: Mask | None,
    scale: float,
    dropout_p: float,
) -> torch.Tensor:
    """The probabilities from :func:`scores`, dropped out, times the values.

    Shapes:
        query: ``(b, h, i, d)``; key, value: ``(b, h, j, d)``
        output: ``(b, h, i, d)``
    """
    probs = scores(query, key, terms, mask, scale).probs  # (b, h, i, j)
    probs = F.dropout(probs, dropout_p, training=dropout_p > 0)
    context = probs @ value  # (b, h, i, d)
    if terms is not None and terms.value_rows is not None:
        rows = pair_rows(terms)  # (B, i, j)
        context = context + value_term(probs, terms.value_rows, rows)
    return context


__all__ = ["attend", "scores"]
