"""The self-attention all the schemes share, and the one for content-free biases.

``SchemeSelfAttention`` is ``relpos.core.SelfAttention`` under the name the
schemes chapter uses: projections, checks, masking, softmax and values, with
the three hooks a scheme overrides (``rotate``, ``position_logits``,
``position_values``; see ``relpos.core``). DeBERTa's attention is built on the
same class. ``BiasSelfAttention`` adds a content-free bias made by any module
(T5, ALiBi).

Shape legend:
    b  batch          n  sequence length      h  heads      d  head width
    i  query          j  key                  hidden  model width, h * d
"""

from __future__ import annotations

import torch
from torch import nn

from ..core import SelfAttention, _relative_distances, relative_distances  # noqa: F401
from ..scores import SchemeScores, masked_softmax

#: The base of every scheme's self-attention (``relpos.core.SelfAttention``).
SchemeSelfAttention = SelfAttention


class BiasSelfAttention(SchemeSelfAttention):
    """Self-attention plus a content-free bias ``(h, i, j)`` made by ``position_bias``.

    ``position_bias`` is any module called with the distances ``i - j`` that
    returns one bias per head (``T5Bias``, ``AlibiBias``). As in x-transformers,
    the attention never knows which scheme made the bias; there the bias module
    is called with the query and key lengths, here with the distances so that
    positions may be any integers.

    Args:
        hidden_size, num_heads, dropout, causal: as for ``SchemeSelfAttention``.
        position_bias: a module with ``num_heads`` heads mapping ``(i, j)``
            distances to a ``(h, i, j)`` bias.

    Shapes:
        position_bias(rel): rel ``(i, j)`` -> ``(h, i, j)``
        hidden_states: ``(b, n, hidden)``; attention_mask: ``(b, n)``
        output: ``(b, n, hidden)``
    """

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        position_bias: nn.Module,
        dropout: float = 0.0,
        *,
        causal: bool = False,
    ) -> None:
        super().__init__(hidden_size, num_heads, dropout, causal=causal)
        if not isinstance(position_bias, nn.Module):
            got = type(position_bias).__name__
            raise TypeError(f"position_bias must be an nn.Module, got {got}")
        heads = getattr(position_bias, "num_heads", None)
        if heads != self.num_heads:
            raise ValueError(
                f"position_bias must have num_heads={self.num_heads}, got {heads}"
            )
        self.position_bias = position_bias

    def position_logits(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        query_positions: torch.Tensor,
        key_positions: torch.Tensor,
    ) -> torch.Tensor:
        """The bias of every pair, the same for every batch item.

        Shapes:
            query: ``(b, h, i, d)``; key: ``(b, h, j, d)``
            query_positions: ``(i,)``; key_positions: ``(j,)``
            output: ``(1, h, i, j)``
        """
        rel = _relative_distances(query_positions, key_positions)  # (i, j)
        return self.position_bias(rel).to(query.dtype)[None]  # (1, h, i, j)


__all__ = [
    "BiasSelfAttention",
    "SchemeScores",
    "SchemeSelfAttention",
    "masked_softmax",
    "relative_distances",
]
