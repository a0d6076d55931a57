"""What each scheme adds to a logit as a function of the distance ``i - j``, to plot.

For one query token and one key token with fixed contents, placed ``r = i - j``
apart, the position contribution is the logit with positions minus the logit
the same contents would get without any position information
(``q . k / sqrt(d)`` for the schemes here, DeBERTa's c2c for DeBERTa):

- T5, ALiBi: the bias itself; the contents do not matter.
- Shaw: ``q . a^K_r / sqrt(d)``; Transformer-XL: ``(u . k + (q + v) . p_r) / sqrt(d)``
  (``u . k`` does not depend on ``r``); DeBERTa: c2p + p2c.
- Rotary: ``(R_i q) . (R_j k) / sqrt(d) - q . k / sqrt(d)``, which depends on both
  contents: there is no separate position term.

Shapes:
    h: heads; m: number of distances; hidden: model width
"""

from __future__ import annotations

import torch

from ..checks import check_int_tensor
from ..core import SelfAttention


def _check_content(name: str, value: torch.Tensor, hidden_size: int) -> torch.Tensor:
    if not isinstance(value, torch.Tensor) or not value.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor of shape (hidden,)")
    if tuple(value.shape) != (hidden_size,):
        got = tuple(value.shape)
        raise ValueError(
            f"{name} must have shape (hidden,) = ({hidden_size},), got {got}"
        )
    return value


def score_by_distance(
    attention: SelfAttention,
    distances: torch.Tensor,
    query_states: torch.Tensor,
    key_states: torch.Tensor,
    *,
    rel_embeddings: torch.Tensor | None = None,
) -> torch.Tensor:
    """The position contribution to each head's logit at each distance ``r = i - j``.

    The query token (content ``query_states``) sits at position ``r`` and the key
    token (content ``key_states``) at position 0, for each ``r`` in
    ``distances``. Gradients are not tracked. Every attention is treated alike:
    its ``logits`` with positions minus its scaled content logit.

    Args:
        attention: a scheme's self-attention (``relpos.schemes``) or
            ``relpos.DisentangledSelfAttention``: any ``relpos.core.SelfAttention``.
        distances: integer tensor of distances ``i - j``.
        query_states, key_states: the two tokens' hidden states.
        rel_embeddings: the ``(2 * span, hidden)`` table, for the attentions that
            read one (DeBERTa's; ``None``: its own table, as ``forward`` reads);
            ``None`` for the others.

    Shapes:
        distances: ``(m,)``; query_states, key_states: ``(hidden,)``
        rel_embeddings: ``(2 * span, hidden)`` or None
        output: ``(h, m)``
    """
    distances = check_int_tensor("distances", distances)
    if distances.dim() != 1:
        got = tuple(distances.shape)
        raise ValueError(f"distances must have shape (m,), got {got}")
    if not isinstance(attention, SelfAttention):
        raise TypeError(
            "attention must be a relpos.schemes self-attention or a "
            f"relpos.DisentangledSelfAttention, got {type(attention).__name__}"
        )
    _check_content("query_states", query_states, attention.hidden_size)
    _check_content("key_states", key_states, attention.hidden_size)
    inputs = {}
    if attention.input_keywords:  # the table of a scheme that reads one (DeBERTa)
        given = {keyword: rel_embeddings for keyword in attention.input_keywords}
        inputs = attention.read_inputs(given, query_states)
    elif rel_embeddings is not None:
        raise ValueError(
            "rel_embeddings must be None for an attention without a table "
            f"({type(attention).__name__})"
        )
    with torch.no_grad():
        query = attention.split_heads(attention.query_proj(query_states[None]))
        key = attention.split_heads(attention.key_proj(key_states[None]))  # (h, 1, d)
        distances = distances.to(device=query.device, dtype=torch.long)
        m = distances.shape[0]
        queries = query.expand(-1, m, -1)[None]  # (1, h, m, d): one query per distance
        key_position = distances.new_zeros(1)  # (1,)
        logits = attention.logits(queries, key[None], distances, key_position, **inputs)
        content = torch.einsum("hd,hd->h", query[:, 0], key[:, 0])  # (h,)
        content = content * attention.scale
        return logits[0, :, :, 0] - content[:, None]  # (h, m)


__all__ = ["score_by_distance"]
