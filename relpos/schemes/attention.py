"""The self-attention all the schemes share, and the one for content-free biases.

``SchemeSelfAttention`` is ``relpos.core.SelfAttention`` under the name the
schemes chapter uses: projections, checks, masking, softmax and values, with
the two hooks a scheme overrides (``rotate`` and ``position_terms``; see
``relpos.core``). DeBERTa's attention is built on the
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
from ..backends import PositionTerms
from ..scores import SchemeScores, masked_softmax

#: The base of every scheme's self-attention (``relpos.core.SelfAttention``).
SchemeSelfAttention = SelfAttention


class BiasSelfAttention(SchemeSelfAttention):
    """Self-attention plus a content-free bias made by ``position_bias``.

    ``position_bias`` is any module with ``num_heads`` heads and a method
    ``bias_at(head, rel, query_position)`` that gives the bias of a head at a
    distance ``rel = i - j`` with elementwise operations only, so that every
    kernel reads it the same way (FlexAttention on single entries, the others on
    grids). As in x-transformers, the attention never knows which scheme made
    the bias. A bias that is a number per bucket (T5) may also give ``lookup``
    (the bucket of each distance, ``relpos.backends.PositionTerms``) and
    ``row_bias()`` (``(h, buckets)``), which the kernels then read by row. A
    module whose ``bias_at`` never reads ``query_position`` may say so with a
    class attribute ``distance_only = True`` (ALiBi, KERPLE): the ``gather``
    kernel then reads it once per distance (``relpos.backends.strided``).

    Args:
        hidden_size, num_heads, dropout, causal: as for ``SchemeSelfAttention``.
        position_bias: the bias module (``T5Bias``, ``AlibiBias``, ...).
        backend: the kernel (``relpos.BACKENDS``).

    Shapes:
        position_bias.bias_at(head, rel, query_position): broadcastable tensors
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
        backend: str = "gather",
        num_kv_heads: int | None = None,
    ) -> None:
        super().__init__(
            hidden_size, num_heads, dropout, backend=backend, causal=causal,
            num_kv_heads=num_kv_heads,
        )
        if not isinstance(position_bias, nn.Module):
            got = type(position_bias).__name__
            raise TypeError(f"position_bias must be an nn.Module, got {got}")
        if not callable(getattr(position_bias, "bias_at", None)):
            raise TypeError(
                "position_bias must have a method bias_at(head, rel, query_position) "
                "giving the bias elementwise (as relpos.schemes.T5Bias and AlibiBias), "
                f"got {type(position_bias).__name__}"
            )
        heads = getattr(position_bias, "num_heads", None)
        if heads != self.num_heads:
            raise ValueError(
                f"position_bias must have num_heads={self.num_heads}, got {heads}"
            )
        self.position_bias = position_bias

    def position_terms(
        self,
        query_positions: torch.Tensor,
        key_positions: torch.Tensor,
    ) -> PositionTerms:
        """The bias, as a bias per row (``lookup`` and ``row_bias()``) or ``bias_at``.

        Shapes:
            query_positions: ``(B, i)``; key_positions: ``(B, j)``
        """
        bias = self.position_bias
        lookup = getattr(bias, "lookup", None)
        if isinstance(lookup, torch.Tensor) and hasattr(bias, "row_bias"):
            return PositionTerms(
                query_positions, key_positions, lookup, row_bias=bias.row_bias()
            )
        return PositionTerms(
            query_positions, key_positions, bias=bias.bias_at,
            distance_only=bool(getattr(bias, "distance_only", False)),
        )


__all__ = [
    "BiasSelfAttention",
    "SchemeScores",
    "SchemeSelfAttention",
    "masked_softmax",
    "relative_distances",
]
