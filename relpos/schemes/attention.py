"""The self-attention all the schemes share: projections, masking, softmax, values.

A scheme changes the attention in at most three places, each a method that a
subclass overrides (the default changes nothing):

- ``rotate``: transform queries and keys before the dot product (rotary).
- ``position_logits``: a term added to the scaled content logits, either a
  content-free bias ``(1, h, i, j)`` (T5, ALiBi) or content-dependent terms
  ``(b, h, i, j)`` (Shaw, Transformer-XL).
- ``position_values``: a term added to each query's context (Shaw's values).

With ``q``, ``k``, ``v`` the per-head projections and ``d`` the head width::

    logits[b, h, i, j] = q_i . k_j / sqrt(d)  +  position_logits[b, h, i, j]
    context[b, h, i]   = sum_j probs[b, h, i, j] v_j  +  position_values[b, h, i]

Every hook receives the positions of the queries and of the keys, so a scheme
sees absolute positions and decides itself what it makes of them; the relative
ones use only ``i - j`` (``relative_distances``).

Shape legend:
    b  batch          n  sequence length      h  heads      d  head width
    i  query          j  key                  hidden  model width, h * d
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import nn

from .._checks import check_int, check_int_tensor, check_rate


class SchemeScores(NamedTuple):
    """The logits (scaled, position terms included, before masking) and probabilities.

    Shapes:
        logits, probs: ``(b, h, i, j)``
    """

    logits: torch.Tensor
    probs: torch.Tensor


def relative_distances(
    query_positions: torch.Tensor, key_positions: torch.Tensor
) -> torch.Tensor:
    """The book's relative position ``i - j`` of every (query, key) pair.

    Shapes:
        query_positions: ``(i,)``; key_positions: ``(j,)``
        output: ``(i, j)``
    """
    return query_positions[:, None] - key_positions[None, :]  # (i, j)


def masked_softmax(logits: torch.Tensor, key_mask: torch.Tensor | None) -> torch.Tensor:
    """Softmax over the keys, padded keys removed (given the dtype's minimum).

    A query whose keys are all padding gets uniform weights, not NaN.

    Shapes:
        logits: ``(b, h, i, j)``; key_mask: ``(b, j)`` bool (True = token) or None
        output: ``(b, h, i, j)``
    """
    if key_mask is not None:
        padded = ~key_mask[:, None, None, :]  # (b, 1, 1, j)
        logits = logits.masked_fill(padded, torch.finfo(logits.dtype).min)
    return logits.softmax(-1)


class SchemeSelfAttention(nn.Module):
    """Multi-head self-attention with the three hooks a position scheme may override.

    On its own (no hook overridden) it is attention without any position
    information. The output is the context before any output projection, as for
    ``relpos.DisentangledSelfAttention``.

    Args:
        hidden_size: model width; must be divisible by ``num_heads``.
        num_heads: number of attention heads.
        dropout: dropout on the attention probabilities (training only).

    Shapes:
        hidden_states: ``(b, n, hidden)``
        attention_mask: ``(b, n)``, 1 for a token and 0 for padding (masked as keys)
        positions: ``(n,)`` integers, default ``0, 1, ..., n - 1``
        output: ``(b, n, hidden)``
    """

    def __init__(self, hidden_size: int, num_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.hidden_size = check_int("hidden_size", hidden_size, minimum=1)
        self.num_heads = check_int("num_heads", num_heads, minimum=1)
        if self.hidden_size % self.num_heads:
            raise ValueError(
                "hidden_size must be divisible by num_heads, got "
                f"hidden_size={hidden_size} and num_heads={num_heads}"
            )
        self.head_size = self.hidden_size // self.num_heads
        self.dropout_p = check_rate("dropout", dropout)
        self.query_proj = nn.Linear(self.hidden_size, self.hidden_size)
        self.key_proj = nn.Linear(self.hidden_size, self.hidden_size)
        self.value_proj = nn.Linear(self.hidden_size, self.hidden_size)
        self.dropout = nn.Dropout(self.dropout_p)

    @property
    def scale(self) -> float:
        """``1 / sqrt(d)``, the factor of the content logits."""
        return 1.0 / math.sqrt(self.head_size)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """Split the last dimension into heads.

        Shapes:
            x: ``(*, n, hidden)``
            output: ``(*, h, n, d)``
        """
        x = x.unflatten(-1, (self.num_heads, self.head_size))  # (*, n, h, d)
        return x.transpose(-3, -2)  # (*, h, n, d)

    # -- the hooks a scheme overrides --------------------------------------------

    def rotate(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        query_positions: torch.Tensor,
        key_positions: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Transform queries and keys by their positions (default: unchanged).

        Shapes:
            query: ``(b, h, i, d)``; key: ``(b, h, j, d)``
            query_positions: ``(i,)``; key_positions: ``(j,)``
            output: ``(query, key)`` with the same shapes
        """
        return query, key

    def position_logits(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        query_positions: torch.Tensor,
        key_positions: torch.Tensor,
    ) -> torch.Tensor | None:
        """The term added to the scaled content logits (default: none).

        Shapes:
            query: ``(b, h, i, d)``; key: ``(b, h, j, d)``
            query_positions: ``(i,)``; key_positions: ``(j,)``
            output: ``(b, h, i, j)`` or ``(1, h, i, j)``, or None
        """
        return None

    def position_values(
        self,
        probs: torch.Tensor,
        query_positions: torch.Tensor,
        key_positions: torch.Tensor,
    ) -> torch.Tensor | None:
        """The term added to each query's context (default: none).

        Shapes:
            probs: ``(b, h, i, j)``; query_positions: ``(i,)``; key_positions: ``(j,)``
            output: ``(b, h, i, d)`` or None
        """
        return None

    # -- the shared path --------------------------------------------------------------

    def logits(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        query_positions: torch.Tensor,
        key_positions: torch.Tensor,
    ) -> torch.Tensor:
        """Scaled content logits plus the scheme's position term, before masking.

        Shapes:
            query: ``(b, h, i, d)``; key: ``(b, h, j, d)``
            query_positions: ``(i,)``; key_positions: ``(j,)``
            output: ``(b, h, i, j)``
        """
        query, key = self.rotate(query, key, query_positions, key_positions)
        logits = torch.einsum("bhid,bhjd->bhij", query, key) * self.scale
        extra = self.position_logits(query, key, query_positions, key_positions)
        return logits if extra is None else logits + extra

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        positions: torch.Tensor | None = None,
        return_scores: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, SchemeScores]:
        """Attend over ``hidden_states``; padded keys (``attention_mask == 0``) get
        no weight.

        Returns:
            The context ``(b, n, hidden)``; with ``return_scores=True`` also the
            ``SchemeScores`` (logits before masking, probabilities after it).

        Shapes:
            hidden_states: ``(b, n, hidden)``; attention_mask: ``(b, n)``
            positions: ``(n,)``
            output: ``(b, n, hidden)``
        """
        key_mask, positions = self._check_inputs(
            hidden_states, attention_mask, positions
        )
        query = self.split_heads(self.query_proj(hidden_states))  # (b, h, i, d)
        key = self.split_heads(self.key_proj(hidden_states))  # (b, h, j, d)
        value = self.split_heads(self.value_proj(hidden_states))  # (b, h, j, d)
        logits = self.logits(query, key, positions, positions)  # (b, h, i, j)
        probs = masked_softmax(logits, key_mask)  # (b, h, i, j)
        weights = self.dropout(probs)
        context = weights @ value  # (b, h, i, d)
        extra = self.position_values(weights, positions, positions)
        if extra is not None:
            context = context + extra
        context = context.transpose(1, 2).flatten(-2)  # (b, n, hidden)
        return (context, SchemeScores(logits, probs)) if return_scores else context

    def _check_inputs(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None,
        positions: torch.Tensor | None,
    ) -> tuple[torch.Tensor | None, torch.Tensor]:
        """Validate the forward arguments; return the bool key mask (None if nothing
        is padded) and the positions."""
        states = hidden_states
        if not isinstance(states, torch.Tensor) or not states.is_floating_point():
            got = getattr(states, "dtype", type(states).__name__)
            raise TypeError(
                "hidden_states must be a floating-point tensor of shape "
                f"(b, n, hidden), got {got}"
            )
        shape = tuple(hidden_states.shape)
        if hidden_states.dim() != 3 or shape[-1] != self.hidden_size or shape[1] < 1:
            raise ValueError(
                f"hidden_states must have shape (b, n, {self.hidden_size}) with "
                f"n >= 1, got {shape}"
            )
        b, n, _ = shape
        device = hidden_states.device
        if positions is None:
            positions = torch.arange(n, device=device)
        else:
            positions = check_int_tensor("positions", positions)
            if tuple(positions.shape) != (n,):
                got = tuple(positions.shape)
                raise ValueError(f"positions must have shape (n,) = ({n},), got {got}")
            positions = positions.to(device=device, dtype=torch.long)
        if attention_mask is None:
            return None, positions
        mask = attention_mask
        if not isinstance(mask, torch.Tensor) or tuple(mask.shape) != (b, n):
            got = tuple(mask.shape) if isinstance(mask, torch.Tensor) else mask
            raise ValueError(
                f"attention_mask must have shape (b, n) = {(b, n)}, got {got}"
            )
        key_mask = attention_mask.to(device=device) != 0  # (b, j)
        return (None if bool(key_mask.all()) else key_mask), positions

    def extra_repr(self) -> str:
        return f"hidden_size={self.hidden_size}, num_heads={self.num_heads}"


class BiasSelfAttention(SchemeSelfAttention):
    """Self-attention plus a content-free bias ``(h, i, j)`` made by ``position_bias``.

    ``position_bias`` is any module called with the distances ``i - j`` that
    returns one bias per head (``T5Bias``, ``AlibiBias``). As in x-transformers,
    the attention never knows which scheme made the bias; there the bias module
    is called with the query and key lengths, here with the distances so that
    positions may be any integers.

    Args:
        hidden_size, num_heads, dropout: as for ``SchemeSelfAttention``.
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
    ) -> None:
        super().__init__(hidden_size, num_heads, dropout)
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
        rel = relative_distances(query_positions, key_positions)  # (i, j)
        return self.position_bias(rel).to(query.dtype)[None]  # (1, h, i, j)


__all__ = [
    "BiasSelfAttention",
    "SchemeScores",
    "SchemeSelfAttention",
    "masked_softmax",
    "relative_distances",
]
