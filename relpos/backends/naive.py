"""The ``naive`` backend: the literal per-pair table, every term materialised.

Each pair ``(i, j)`` reads its own table row ``table[delta(i, j)]`` (an
``(n, n, hidden)`` tensor), which is projected pair by pair: the construction
of the paper, written out, and the reference the other backends are tested
against. Memory and work grow with ``n^2 * hidden``.

Shapes:
    query: ``(b, h, i, d)``; key, value: ``(b, h, j, d)``; key_mask ``(b, j)``
    output: ``(b, h, i, d)``
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..positions import index_from_lookup
from ..scores import AttentionScores, _combine
from .registry import PositionTerms


def _pairs(project, table: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """Every pair's row, projected: ``(i, j, h, d)``."""
    i, j = index.shape
    rows = project(table[index].flatten(0, 1))  # (h, i*j, d): one row per pair
    return rows.transpose(0, 1).unflatten(0, (i, j))  # (i, j, h, d)


def scores(
    query: torch.Tensor,
    key: torch.Tensor,
    terms: PositionTerms | None,
    key_mask: torch.Tensor | None,
    scale: float,
    *,
    causal: bool = False,
) -> AttentionScores:
    """c2c, c2p and p2c, each pair from its own projected row (``j <= i`` if causal).

    Shapes:
        query: ``(b, h, i, d)``; key: ``(b, h, j, d)``
        output: ``AttentionScores`` of ``(b, h, i, j)`` tensors
    """
    c2c = torch.einsum("bhid,bhjd->bhij", query, key) * scale
    c2p = p2c = None
    if terms is not None and (terms.project_key or terms.project_query):
        index = index_from_lookup(terms.lookup)  # (i, j)
        if terms.project_key is not None:
            pairs = _pairs(terms.project_key, terms.table, index)  # (i, j, h, d)
            c2p = torch.einsum("bhid,ijhd->bhij", query, pairs) * scale
        if terms.project_query is not None:
            pairs = _pairs(terms.project_query, terms.table, index)  # (i, j, h, d)
            p2c = torch.einsum("bhjd,ijhd->bhij", key, pairs) * scale
    return _combine(c2c, c2p, p2c, key_mask, causal)


def attend(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    terms: PositionTerms | None,
    key_mask: torch.Tensor | None,
    scale: float,
    dropout_p: float,
    *,
    causal: bool = False,
) -> torch.Tensor:
    """The probabilities from :func:`scores`, dropped out, times the values.

    Shapes:
        query: ``(b, h, i, d)``; key, value: ``(b, h, j, d)``
        output: ``(b, h, i, d)``
    """
    probs = scores(query, key, terms, key_mask, scale, causal=causal).probs
    # probs: (b, h, i, j)
    probs = F.dropout(probs, dropout_p, training=dropout_p > 0)
    return probs @ value  # (b, h, i, d)


__all__ = ["attend", "scores"]
