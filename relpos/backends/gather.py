"""The ``gather`` backend: position terms by gather, one bias, torch's fused attention.

The paper's efficient form. Every query and key is scored against the scheme's
rows once (``(b, h, n, m)``), each pair's row is gathered, and the sum of the
position terms (masked) is the only ``(b, h, n, n)`` tensor built here;
``scaled_dot_product_attention`` adds c2c to it and applies the softmax, the
dropout and the values. A scheme with relative values (Shaw) needs the
probabilities themselves: it takes the explicit softmax instead.

Shapes:
    query: ``(b, h, i, d)``; key, value: ``(b, h, j, d)``
    output: ``(b, h, i, d)``
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .. import masks
from ..masks import Mask
from ..scores import c2p_by_gather, p2c_by_gather, value_term
from .banded import applies as banded_applies, attend as banded_attend
from .registry import PositionTerms
from .strided import applies as strided_applies, attend as strided_attend
from .terms import explicit_scores, pair_bias, pair_rows, projected_rows


def position_bias(
    query: torch.Tensor,
    key: torch.Tensor,
    terms: PositionTerms | None,
    mask: Mask | None,
    scale: float,
) -> torch.Tensor | None:
    """Everything but c2c, as one additive bias: position terms and the mask.

    Shapes:
        query: ``(b, h, i, d)``; key: ``(b, h, j, d)``
        output: ``(b or 1, h or 1, i, j)``, or None when there is nothing to add
    """
    i, j = query.shape[-2], key.shape[-2]
    bias = None
    if terms is not None and terms.has_logit_terms:
        rows = pair_rows(terms)  # (B, i, j)
        pos_key, pos_query = projected_rows(terms)  # (h, m, d) each
        if pos_key is not None:
            bias = c2p_by_gather(query, pos_key * scale, rows)  # (b, h, i, j)
        if pos_query is not None:
            p2c = p2c_by_gather(key, pos_query * scale, rows)
            bias = p2c if bias is None else bias.add_(p2c)
            del p2c
        content_free = pair_bias(terms, query.shape[1], rows)
        if content_free is not None:
            content_free = content_free.to(query.dtype)  # (B, h, i, j)
            bias = content_free if bias is None else bias + content_free
    if mask is None or mask.empty:
        return bias
    causal_only = mask._replace(causal=False).empty
    if bias is None and causal_only and i == j:
        return None  # the causal rule alone, square: sdpa's own is_causal
    bias = query.new_zeros(1, 1, i, j) if bias is None else bias
    return masks.apply(bias, mask)  # (b or 1, h or 1, i, j)


def attend(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    terms: PositionTerms | None,
    mask: Mask | None,
    scale: float,
    dropout_p: float,
) -> torch.Tensor:
    """Attention with the position terms and the mask as one additive bias of sdpa.

    Causal with nothing else to add: sdpa's own ``is_causal``. Terms of the
    distance alone, at inference on the CPU: a strided view of one vector per
    head, nothing ``n x n`` (``relpos.backends.strided``, which says when).
    Clipped table or key rows (DeBERTa, Shaw), likewise: windows of the band and
    far rectangles (``relpos.backends.banded``).

    Shapes:
        query: ``(b, h, i, d)``; key, value: ``(b, h, j, d)``
        output: ``(b, h, i, d)``
    """
    if strided_applies(query, terms, mask):
        return strided_attend(query, key, value, terms, mask, scale, dropout_p)
    if dropout_p == 0 and banded_applies(query, terms, mask):
        return banded_attend(query, key, value, terms, mask, scale, dropout_p)
    if terms is not None and terms.value_rows is not None:
        probs = explicit_scores(query, key, terms, mask, scale).probs
        probs = F.dropout(probs, dropout_p, training=dropout_p > 0)  # (b, h, i, j)
        rows = pair_rows(terms)  # (B, i, j)
        return probs @ value + value_term(probs, terms.value_rows, rows)
    bias = position_bias(query, key, terms, mask, scale)
    causal = mask is not None and mask.causal and bias is None
    return F.scaled_dot_product_attention(
        query, key, value, attn_mask=bias, dropout_p=dropout_p, scale=scale,
        is_causal=causal,
    )


#: Every term explicitly, the position terms by gather.
scores = explicit_scores


__all__ = ["attend", "position_bias", "scores"]
