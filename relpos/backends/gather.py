"""The ``gather`` backend: position terms by gather, one bias, torch's fused attention.

The paper's efficient form. Every query and key is scored against the ``2k``
table rows once (``(b, h, n, 2k)``), each pair's row is gathered, and the sum
(c2p + p2c, masked) is the only ``(b, h, n, n)`` tensor built here;
``scaled_dot_product_attention`` adds c2c to it and applies the softmax, the
dropout and the values. The tables are scaled once, before any ``n x n`` work.

Shapes:
    query: ``(b, h, i, d)``; key, value: ``(b, h, j, d)``; key_mask ``(b, j)``
    output: ``(b, h, i, d)``
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..positions import index_from_lookup
from ..scores import AttentionScores, _content_to_position, _gather_scores
from ..scores import future_keys
from ..scores import _position_to_content
from .registry import PositionTerms


def project(terms: PositionTerms | None):
    """The per-head rows ``(pos_key, pos_query)``, each ``(h, r, d)`` or None.

    Shapes:
        terms.table: ``(r, hidden)``; output: ``(h, r, d)`` each, or None
    """
    if terms is None:
        return None, None
    pos_key = None if terms.project_key is None else terms.project_key(terms.table)
    pos_query = None
    if terms.project_query is not None:
        pos_query = terms.project_query(terms.table)
    return pos_key, pos_query


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
    """Attention with the position terms as one additive bias of ``sdpa``.

    Causal: the keys after each query get ``-inf`` in the bias after the padding's
    minimum (as ``relpos.scores.masked_softmax``); with no bias at all, sdpa's own
    ``is_causal``.

    Shapes:
        query: ``(b, h, i, d)``; key, value: ``(b, h, j, d)``
        output: ``(b, h, i, d)``
    """
    b, j = key.shape[0], key.shape[-2]
    pos_key, pos_query = project(terms)  # (h, r, d) each
    bias = None
    if pos_key is not None or pos_query is not None:
        index = index_from_lookup(terms.lookup)  # (i, j)
        if pos_key is not None:
            bias = _content_to_position(query, pos_key * scale, index)  # (b, h, i, j)
        if pos_query is not None:
            p2c = _position_to_content(key, pos_query * scale, index)  # (b, h, i, j)
            bias = p2c if bias is None else bias.add_(p2c)
            del p2c
    if key_mask is not None:
        if bias is None:
            bias = query.new_zeros(b, 1, 1, j)
        padded = ~key_mask[:, None, None, :]  # (b, 1, 1, j)
        bias = bias.masked_fill(padded, torch.finfo(query.dtype).min)
    if causal and bias is not None:
        future = future_keys(query.shape[-2], j, query.device)  # (i, j)
        bias = torch.where(future, float("-inf"), bias)  # (b, h or 1, i, j)
    return F.scaled_dot_product_attention(
        query, key, value, attn_mask=bias, dropout_p=dropout_p, scale=scale,
        is_causal=causal and bias is None,
    )


def scores(
    query: torch.Tensor,
    key: torch.Tensor,
    terms: PositionTerms | None,
    key_mask: torch.Tensor | None,
    scale: float,
    *,
    causal: bool = False,
) -> AttentionScores:
    """Every score term explicitly, the position terms by gather (``j <= i`` if causal).

    Shapes:
        query: ``(b, h, i, d)``; key: ``(b, h, j, d)``
        output: ``AttentionScores`` of ``(b, h, i, j)`` tensors
    """
    pos_key, pos_query = project(terms)  # (h, r, d) each
    index = None if terms is None else index_from_lookup(terms.lookup)  # (i, j)
    return _gather_scores(
        query, key, pos_key, pos_query, index, key_mask, scale, causal
    )


__all__ = ["attend", "project", "scores"]
