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

from .._checks import check_int_tensor
from ..attention import DisentangledSelfAttention
from ..positions import position_index
from .attention import SchemeSelfAttention


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
    attention: SchemeSelfAttention | DisentangledSelfAttention,
    distances: torch.Tensor,
    query_states: torch.Tensor,
    key_states: torch.Tensor,
    *,
    rel_embeddings: torch.Tensor | None = None,
) -> torch.Tensor:
    """The position contribution to each head's logit at each distance ``r = i - j``.

    The query token (content ``query_states``) sits at position ``r`` and the key
    token (content ``key_states``) at position 0, for each ``r`` in
    ``distances``. Gradients are not tracked.

    Args:
        attention: a scheme's self-attention (``relpos.schemes``) or
            ``relpos.DisentangledSelfAttention``.
        distances: integer tensor of distances ``i - j``.
        query_states, key_states: the two tokens' hidden states.
        rel_embeddings: the ``(2 * span, hidden)`` table, for DeBERTa only.

    Shapes:
        distances: ``(m,)``; query_states, key_states: ``(hidden,)``
        rel_embeddings: ``(2 * span, hidden)`` or None
        output: ``(h, m)``
    """
    distances = check_int_tensor("distances", distances)
    if distances.dim() != 1:
        got = tuple(distances.shape)
        raise ValueError(f"distances must have shape (m,), got {got}")
    if not isinstance(attention, (SchemeSelfAttention, DisentangledSelfAttention)):
        raise TypeError(
            "attention must be a relpos.schemes self-attention or a "
            f"relpos.DisentangledSelfAttention, got {type(attention).__name__}"
        )
    _check_content("query_states", query_states, attention.hidden_size)
    _check_content("key_states", key_states, attention.hidden_size)
    with torch.no_grad():
        query = attention.split_heads(attention.query_proj(query_states[None]))
        key = attention.split_heads(attention.key_proj(key_states[None]))  # (h, 1, d)
        distances = distances.to(device=query.device, dtype=torch.long)
        if isinstance(attention, DisentangledSelfAttention):
            return _deberta_by_distance(
                attention, distances, query, key, rel_embeddings
            )
        if rel_embeddings is not None:
            raise ValueError(
                "rel_embeddings must be None for a scheme other than DeBERTa"
            )
        m = distances.shape[0]
        queries = query.expand(-1, m, -1)[None]  # (1, h, m, d): one query per distance
        key_position = distances.new_zeros(1)  # (1,)
        logits = attention.logits(queries, key[None], distances, key_position)
        content = torch.einsum("hd,hd->h", query[:, 0], key[:, 0])  # (h,)
        content = content * attention.scale
        return logits[0, :, :, 0] - content[:, None]  # (h, m)


def _deberta_by_distance(
    attention: DisentangledSelfAttention,
    distances: torch.Tensor,
    query: torch.Tensor,
    key: torch.Tensor,
    rel_embeddings: torch.Tensor | None,
) -> torch.Tensor:
    """c2p + p2c at row ``position_index(r)`` of the table, scaled like the module.

    Shapes:
        distances: ``(m,)``; query, key: ``(h, 1, d)``
        output: ``(h, m)``
    """
    expected = (2 * attention.span, attention.hidden_size)
    table = rel_embeddings
    if not isinstance(table, torch.Tensor) or tuple(table.shape) != expected:
        got = getattr(table, "shape", table)
        raise ValueError(
            f"rel_embeddings must have shape (2 * span, hidden) = {expected} for "
            f"DeBERTa, got {got}"
        )
    rows = position_index(
        distances,
        max_relative_positions=attention.max_relative_positions,
        position_buckets=attention.position_buckets,
    )  # (m,)
    pos_key, pos_query = attention.project_table(rel_embeddings)  # (h, r, d) each
    total = query.new_zeros(attention.num_heads, distances.shape[0])  # (h, m)
    if pos_key is not None:
        total = total + torch.einsum("hd,hmd->hm", query[:, 0], pos_key[:, rows])  # c2p
    if pos_query is not None:
        total = total + torch.einsum("hd,hmd->hm", key[:, 0], pos_query[:, rows])  # p2c
    return total * attention.scale


__all__ = ["score_by_distance"]
