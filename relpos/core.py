"""The one self-attention every scheme builds on: projections, checks, masking, softmax.

``SelfAttention`` owns what all the position schemes share, once: the query,
key and value projections, the split into heads, the checks of the forward
input (done at the edge, once per call), the key mask, the softmax, the
dropout on the probabilities, the values and the returned scores. A scheme
changes it in at most three hooks, each a method a subclass overrides (the
default changes nothing):

- ``rotate``: transform queries and keys before the dot product (rotary).
- ``position_logits``: a term added to the scaled content logits, either a
  content-free bias ``(1, h, i, j)`` (T5, ALiBi) or content-dependent terms
  ``(b, h, i, j)`` (Shaw, Transformer-XL, DeBERTa's c2p + p2c).
- ``position_values``: a term added to each query's context (Shaw's values).

With ``q``, ``k``, ``v`` the per-head projections and ``d`` the head width::

    logits[b, h, i, j] = q_i . k_j * scale  +  position_logits[b, h, i, j]
    context[b, h, i]   = sum_j probs[b, h, i, j] v_j  +  position_values[b, h, i]

The bare ``SelfAttention`` is attention without any position information.

Causal attention. With ``causal=True`` query ``i`` attends to keys ``j <= i``
only: the keys after it get no weight (a logit of ``-inf``), on top of the
padding key mask, on every path (the explicit one and every kernel). "After" is
the order of the sequence, row ``i`` and column ``j``, whatever ``positions``
says. The logits of ``return_scores=True`` stay those before masking; the
probabilities are exactly 0 above the diagonal. A scheme with a causal form of
its own (ALiBi's one-sided bias, T5's one-sided buckets) takes it when built
with ``causal=True``.

Query states. ``forward(..., query_states=x_q)`` projects the queries from
``x_q`` and the keys and values from ``hidden_states`` (both ``(b, n, hidden)``),
as DeBERTa's enhanced mask decoder does (``transformers``'
``DebertaV2Attention`` with ``query_states``); ``None`` means ``hidden_states``.

Kernels. A scheme whose position enters only through ``rotate``, or through
the table terms of :class:`relpos.backends.PositionTerms` (DeBERTa, which
gives them in ``position_terms``), runs on any kernel of
``relpos.backends`` (``backend="gather"``, ``"flex"``, ...). A scheme with
its own ``position_logits`` or ``position_values`` runs the explicit path
above, which is also what ``return_scores=True`` computes.

Checks and the hot path. ``forward`` checks its input (types, shapes,
dtypes, devices; no tensor values read) and turns the mask into a bool key
mask once; ``_attend`` does the work without checking again, so an encoder
that has checked its input calls ``_attend`` directly. The one value read,
"is anything padded at all?" (to skip the masking work when nothing is), is
done at the edge, on the CPU in eager mode only: never on an accelerator
(where it would wait for the device) nor under ``torch.compile``.

Shape legend:
    b  batch          n  sequence length      h  heads      d  head width
    i  query          j  key                  hidden  model width, h * d
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import torch
from torch import nn

from .checks import (
    check_bool,
    check_choice,
    check_float_tensor,
    check_int,
    check_int_tensor,
    check_rate,
    check_same_device,
    check_same_dtype,
)
from .backends import BACKENDS, PositionTerms, get_backend
from .scores import SchemeScores, _masked_fill


def relative_distances(
    query_positions: torch.Tensor, key_positions: torch.Tensor
) -> torch.Tensor:
    """The book's relative position ``i - j`` of every (query, key) pair.

    Shapes:
        query_positions: ``(i,)``; key_positions: ``(j,)`` integer tensors
        output: ``(i, j)``
    """
    pairs = (("query_positions", query_positions), ("key_positions", key_positions))
    for name, value in pairs:
        check_int_tensor(name, value)
        if value.dim() != 1:
            raise ValueError(f"{name} must have shape (n,), got {tuple(value.shape)}")
    if query_positions.device != key_positions.device:
        raise ValueError(
            "key_positions must be on the device of query_positions "
            f"({query_positions.device}), got {key_positions.device}"
        )
    return _relative_distances(query_positions, key_positions)


def _relative_distances(query_positions, key_positions):
    return query_positions[:, None] - key_positions[None, :]  # (i, j)


def normalise_mask(
    attention_mask: object, hidden_states: torch.Tensor
) -> torch.Tensor | None:
    """Check ``attention_mask`` and return it as a bool key mask on the input's device.

    ``None`` stays ``None``. A mask is a tensor of shape ``(b, n)``, of any real
    or bool dtype: nonzero for a token, 0 for padding. On the CPU in eager mode
    a mask without any padding is returned as ``None`` (it changes nothing, and
    the kernels skip the masking work); on an accelerator and under
    ``torch.compile`` it is kept, so that no tensor value is read (no host sync).

    Shapes:
        attention_mask: ``(b, n)``; hidden_states: ``(b, n, hidden)``
        output: ``(b, n)`` bool, or None
    """
    if attention_mask is None:
        return None
    b, n = hidden_states.shape[0], hidden_states.shape[1]
    if not isinstance(attention_mask, torch.Tensor):
        raise TypeError(
            f"attention_mask must be a tensor of shape (b, n) = {(b, n)} or None, "
            f"got {type(attention_mask).__name__}"
        )
    if tuple(attention_mask.shape) != (b, n):
        raise ValueError(
            f"attention_mask must have shape (b, n) = {(b, n)}, "
            f"got {tuple(attention_mask.shape)}"
        )
    if attention_mask.is_complex():
        raise TypeError("attention_mask must be a bool, integer or float tensor")
    key_mask = attention_mask.to(device=hidden_states.device) != 0  # (b, n)
    # Reading the mask is free on the CPU; on an accelerator it would wait for the
    # device, and under torch.compile it would break the graph: keep the mask there.
    on_cpu = key_mask.device.type == "cpu"
    if on_cpu and not torch.compiler.is_compiling() and bool(key_mask.all()):
        return None
    return key_mask


class SelfAttention(nn.Module):
    """Multi-head self-attention with the three hooks a position scheme may override.

    On its own (no hook overridden) it is attention without any position
    information. The output is the context before any output projection.

    Args:
        hidden_size: model width; must be divisible by ``num_heads``.
        num_heads: number of attention heads.
        dropout: dropout on the attention probabilities (training only).
        backend: the kernel (a name in ``relpos.BACKENDS``) for schemes that can
            use one (see the module docstring); the others ignore it.
        causal: query ``i`` attends to keys ``j <= i`` only (a decoder).

    Shapes:
        hidden_states: ``(b, n, hidden)``
        attention_mask: ``(b, n)``, 1 for a token and 0 for padding (masked as keys)
        query_states: ``(b, n, hidden)``, the queries' input (default hidden_states)
        positions: ``(n,)`` integers, default ``0, 1, ..., n - 1``
        output: ``(b, n, hidden)``
    """

    #: The shortest sequence ``forward`` accepts.
    min_length = 1

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        dropout: float = 0.0,
        *,
        backend: str = "naive",
        causal: bool = False,
    ) -> None:
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
        self.backend = check_choice("backend", backend, BACKENDS)
        self.causal = check_bool("causal", causal)
        self.query_proj = nn.Linear(self.hidden_size, self.hidden_size)
        self.key_proj = nn.Linear(self.hidden_size, self.hidden_size)
        self.value_proj = nn.Linear(self.hidden_size, self.hidden_size)
        self.dropout = nn.Dropout(self.dropout_p)

    # -- the pieces -------------------------------------------------------------------

    @property
    def scale_factor(self) -> int:
        """``s`` in ``1 / sqrt(d * s)``: 1 here; DeBERTa counts its position terms."""
        return 1

    @property
    def scale(self) -> float:
        """``1 / sqrt(d * s)``, the factor of the content logits."""
        return 1.0 / math.sqrt(self.head_size * self.scale_factor)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """Split the last dimension into heads.

        Shapes:
            x: ``(*, n, hidden)``
            output: ``(*, h, n, d)``
        """
        x = x.unflatten(-1, (self.num_heads, self.head_size))  # (*, n, h, d)
        return x.transpose(-3, -2)  # (*, h, n, d)

    @property
    def uses_kernel(self) -> bool:
        """Whether ``forward`` hands the work to ``backend`` (see the module doc)."""
        cls = type(self)
        return (
            cls.position_logits is SelfAttention.position_logits
            and cls.position_values is SelfAttention.position_values
        ) or cls.position_terms is not SelfAttention.position_terms

    # -- the hooks a scheme overrides -------------------------------------------------

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
        **inputs: Any,
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
        **inputs: Any,
    ) -> torch.Tensor | None:
        """The term added to each query's context (default: none).

        Shapes:
            probs: ``(b, h, i, j)``; query_positions: ``(i,)``; key_positions: ``(j,)``
            output: ``(b, h, i, d)`` or None
        """
        return None

    def position_terms(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        query_positions: torch.Tensor,
        key_positions: torch.Tensor,
        **inputs: Any,
    ) -> PositionTerms | None:
        """The table terms a kernel adds (default: none; DeBERTa gives c2p and p2c).

        Shapes:
            query: ``(b, h, i, d)``; key: ``(b, h, j, d)``
            output: ``PositionTerms`` or None
        """
        return None

    # -- the shared path --------------------------------------------------------------

    def logits(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        query_positions: torch.Tensor,
        key_positions: torch.Tensor,
        **inputs: Any,
    ) -> torch.Tensor:
        """Scaled content logits plus the scheme's position term, before masking.

        Shapes:
            query: ``(b, h, i, d)``; key: ``(b, h, j, d)``
            query_positions: ``(i,)``; key_positions: ``(j,)``
            output: ``(b, h, i, j)``
        """
        query, key = self.rotate(query, key, query_positions, key_positions)
        logits = torch.einsum("bhid,bhjd->bhij", query, key) * self.scale
        positions = (query_positions, key_positions)
        extra = self.position_logits(query, key, *positions, **inputs)
        return logits if extra is None else logits + extra

    def scores(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        key_mask: torch.Tensor | None,
        query_positions: torch.Tensor,
        key_positions: torch.Tensor,
        **inputs: Any,
    ) -> NamedTuple:
        """The logits and the masked softmax (``SchemeScores``), causal if ``causal``.

        Shapes:
            query: ``(b, h, i, d)``; key: ``(b, h, j, d)``; key_mask: ``(b, j)`` bool
            output: ``SchemeScores`` of ``(b, h, i, j)`` tensors
        """
        logits = self.logits(query, key, query_positions, key_positions, **inputs)
        probs = _masked_fill(logits, key_mask, self.causal).softmax(-1)
        return SchemeScores(logits, probs)

    def _attend(
        self,
        hidden_states: torch.Tensor,
        key_mask: torch.Tensor | None,
        positions: torch.Tensor | None = None,
        return_scores: bool = False,
        *,
        query_states: torch.Tensor | None = None,
        **inputs: Any,
    ) -> torch.Tensor | tuple[torch.Tensor, NamedTuple]:
        """``forward`` after the checks: ``key_mask`` is bool ``(b, n)`` or None.

        Shapes:
            hidden_states, query_states: ``(b, n, hidden)``; key_mask: ``(b, n)``
            positions ``(n,)``; output: ``(b, n, hidden)``
        """
        n = hidden_states.shape[1]
        if positions is None:
            positions = torch.arange(n, device=hidden_states.device)  # (n,)
        if query_states is None:
            query_states = hidden_states
        query = self.split_heads(self.query_proj(query_states))  # (b, h, i, d)
        key = self.split_heads(self.key_proj(hidden_states))  # (b, h, j, d)
        value = self.split_heads(self.value_proj(hidden_states))  # (b, h, j, d)
        scores = None
        if return_scores or not self.uses_kernel:
            scores = self.scores(query, key, key_mask, positions, positions, **inputs)
            weights = self.dropout(scores.probs)  # (b, h, i, j)
            context = weights @ value  # (b, h, i, d)
            extra = self.position_values(weights, positions, positions, **inputs)
            if extra is not None:
                context = context + extra
        else:
            query, key = self.rotate(query, key, positions, positions)
            terms = self.position_terms(query, key, positions, positions, **inputs)
            dropout_p = self.dropout_p if self.training else 0.0
            attend = get_backend(self.backend).attend
            # causal only when set: a kernel written without the keyword still works.
            causal = {"causal": True} if self.causal else {}
            context = attend(
                query, key, value, terms, key_mask, self.scale, dropout_p, **causal
            )
        context = context.transpose(1, 2).flatten(-2)  # (b, n, hidden)
        return (context, scores) if return_scores else context

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        query_states: torch.Tensor | None = None,
        positions: torch.Tensor | None = None,
        return_scores: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, NamedTuple]:
        """Attend over ``hidden_states``; padded keys (``attention_mask == 0``) get
        no weight, nor, when ``causal``, the keys after each query.

        ``query_states`` (default ``hidden_states``) is what the queries are
        projected from; keys and values come from ``hidden_states``.

        Returns:
            The context ``(b, n, hidden)``; with ``return_scores=True`` also the
            ``SchemeScores`` (logits before masking, probabilities after it).

        Shapes:
            hidden_states: ``(b, n, hidden)``; attention_mask: ``(b, n)``
            query_states: ``(b, n, hidden)``; positions: ``(n,)``
            output: ``(b, n, hidden)``
        """
        key_mask = self.check_inputs(hidden_states, attention_mask)
        query_states = self.check_query_states(query_states, hidden_states)
        positions = self.check_positions(positions, hidden_states)
        return self._attend(
            hidden_states, key_mask, positions, return_scores,
            query_states=query_states,
        )

    # -- the checks at the edge -------------------------------------------------------

    def check_inputs(
        self, hidden_states: object, attention_mask: object
    ) -> torch.Tensor | None:
        """Check the input and the mask; return the bool key mask (or None).

        ``hidden_states`` must be a floating-point ``(b, n, hidden)`` tensor with
        the dtype and device of the module's weights.

        Shapes:
            hidden_states: ``(b, n, hidden)``; attention_mask: ``(b, n)``
            output: ``(b, n)`` bool or None
        """
        check_float_tensor("hidden_states", hidden_states, "(b, n, hidden)")
        shape = tuple(hidden_states.shape)
        n_ok = len(shape) == 3 and shape[1] >= self.min_length
        if not n_ok or shape[-1] != self.hidden_size:
            at_least = f" with n >= {self.min_length}" if self.min_length else ""
            raise ValueError(
                f"hidden_states must have shape (b, n, {self.hidden_size}){at_least}, "
                f"got {shape}"
            )
        weight = self.query_proj.weight
        weights = "the module's weights"
        check_same_dtype("hidden_states", hidden_states, weights, weight.dtype)
        check_same_device("hidden_states", hidden_states, weights, weight.device)
        return normalise_mask(attention_mask, hidden_states)

    @staticmethod
    def check_query_states(
        query_states: object, hidden_states: torch.Tensor
    ) -> torch.Tensor | None:
        """``None``, or a tensor with the shape, dtype and device of ``hidden_states``.

        Shapes:
            query_states, hidden_states: ``(b, n, hidden)``; output: ``(b, n, hidden)``
        """
        if query_states is None:
            return None
        shape = tuple(hidden_states.shape)
        check_float_tensor("query_states", query_states, f"(b, n, hidden) = {shape}")
        if tuple(query_states.shape) != shape:
            raise ValueError(
                "query_states must have the shape of hidden_states (b, n, hidden) = "
                f"{shape}, got {tuple(query_states.shape)}"
            )
        check_same_dtype("query_states", query_states, "hidden_states",
                         hidden_states.dtype)
        check_same_device("query_states", query_states, "hidden_states",
                          hidden_states.device)
        return query_states

    @staticmethod
    def check_positions(
        positions: object, hidden_states: torch.Tensor
    ) -> torch.Tensor | None:
        """``None`` (``0 .. n - 1``), or ``(n,)`` integers, moved to the input's device.

        Shapes:
            positions: ``(n,)``; hidden_states: ``(b, n, hidden)``; output: ``(n,)``
        """
        if positions is None:
            return None
        n = hidden_states.shape[1]
        positions = check_int_tensor("positions", positions)
        if tuple(positions.shape) != (n,):
            got = tuple(positions.shape)
            raise ValueError(f"positions must have shape (n,) = ({n},), got {got}")
        return positions.to(device=hidden_states.device, dtype=torch.long)

    def extra_repr(self) -> str:
        causal = ", causal=True" if self.causal else ""
        return f"hidden_size={self.hidden_size}, num_heads={self.num_heads}{causal}"


__all__ = ["SelfAttention", "normalise_mask", "relative_distances"]
