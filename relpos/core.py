"""The one self-attention every scheme builds on: projections, checks, masking, softmax.

``SelfAttention`` owns what all the position schemes share, once: the query,
key and value projections, the split into heads, the checks of the forward
input (done at the edge, once per call), the masks, the cache, the kernel
(``relpos.backends``) and the returned scores. A scheme changes it in at most
two hooks, each a method a subclass overrides (the default changes nothing):

- ``rotate``: transform queries and keys by their positions before any kernel
  (rotary).
- ``position_terms``: what the scheme adds, as a :class:`relpos.backends.PositionTerms`
  (c2p/p2c rows, a bias per row, a bias function of the distance, relative
  values), which every kernel reads the same way.

With ``q``, ``k``, ``v`` the per-head projections and ``d`` the head width::

    logits[b, h, i, j] = q_i . k_j * scale  +  the scheme's terms at (i, j)
    context[b, h, i]   = sum_j probs[b, h, i, j] (v_j + the scheme's values)

The bare ``SelfAttention`` is attention without any position information.

One call for every scheme::

    attention(hidden_states, attention_mask=None, *, positions=None,
              document_ids=None, cache=None, query_states=None, return_scores=False)

- ``attention_mask``: any convention of ``relpos.masks`` (bool, 0/1, additive,
  ``transformers``' 4-D masks; a key mask ``(b, n)`` or a pair mask).
- ``positions``: ``(n,)`` or per sequence ``(b, n)`` integers (packed sequences,
  left padding), default ``0 .. n - 1`` after the cached ones.
- ``document_ids``: ``(b, n)``: no attention across documents packed in a row.
- ``cache``: a :class:`relpos.KVCache` for causal decoding.

Causal attention. With ``causal=True`` query ``i`` attends to keys ``j <= i``
only (in the order of the sequence, the cached keys first); the keys after it
get a logit of ``-inf`` on every path. A scheme with a causal form of its own
(ALiBi's one-sided bias, T5's one-sided buckets) takes it when built with
``causal=True``.

Query states. ``query_states=x_q`` projects the queries from ``x_q`` and the
keys and values from ``hidden_states`` (DeBERTa's enhanced mask decoder).

Checks and the hot path. ``forward`` checks its input (types, shapes, dtypes,
devices) and reads the mask once (:meth:`SelfAttention.prepare`); ``attend``
does the work without checking again, so an encoder that has checked its input
calls ``attend`` directly. A scheme that reads inputs of its own (DeBERTa's
``rel_embeddings``) names them in ``input_keywords`` and checks them in
``read_inputs``, which a stack calls too.

Shape legend:
    b  batch          n  sequence length      h  heads      d  head width
    i  query          j  key                  t  cached positions
    B  b or 1 (positions per sequence, or shared)
"""

from __future__ import annotations

import importlib
import math
import warnings
from types import ModuleType
from typing import Any, NamedTuple

import torch
from torch import nn

from . import masks
from .backends import BACKENDS, PositionTerms, get_backend
from .backends.terms import explicit_scores, pair_rows
from .cache import KVCache
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
from .scores import AttentionScores, value_term


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
    return query_positions[..., :, None] - key_positions[..., None, :]  # (i, j)


def normalise_mask(
    attention_mask: object, hidden_states: torch.Tensor
) -> torch.Tensor | None:
    """A ``(b, n)`` key mask in any convention of ``relpos.masks``, as bool or None.

    Shapes:
        attention_mask: ``(b, n)`` (or ``transformers``' ``(b, 1, 1, n)``)
        hidden_states: ``(b, n, hidden)``; output: ``(b, n)`` bool, or None
    """
    b, n = hidden_states.shape[0], hidden_states.shape[1]
    keys, pairs = masks.read_mask(attention_mask, b, n, n, hidden_states.device)
    if pairs is not None:
        raise ValueError(
            f"attention_mask must be a key mask of shape (b, n) = {(b, n)} here, got "
            f"a pair mask of shape {tuple(attention_mask.shape)}"
        )
    return keys


def interop() -> ModuleType:
    """``relpos.interop``, the core's top layer (conversion to and from
    ``transformers``), loaded when a user converts: the one entry point through
    which the modules it converts reach it, so no core module imports it at
    import time.
    """
    return importlib.import_module("relpos.interop")


class Prepared(NamedTuple):
    """The checked input of one call: the mask and the positions, read once.

    Shapes:
        mask.keys: ``(b, t + n)``; query_positions: ``(B, n)``
        key_positions: ``(B, t + n)``; keys, documents: ``(b, t + n)`` or None
    """

    mask: masks.Mask | None
    query_positions: torch.Tensor
    key_positions: torch.Tensor
    cache: KVCache | None = None


def _batched_positions(positions: torch.Tensor) -> torch.Tensor:
    return positions if positions.dim() == 2 else positions[None]  # (B, n)


class SelfAttention(nn.Module):
    """Multi-head self-attention with the two hooks a position scheme may override.

    On its own (no hook overridden) it is attention without any position
    information. The output is the context before any output projection.

    Args:
        hidden_size: model width; must be divisible by ``num_heads``.
        num_heads: number of attention heads.
        dropout: dropout on the attention probabilities (training only).
        backend: the kernel (a name in ``relpos.BACKENDS``): ``"naive"``,
            ``"gather"`` (every module's default), ``"flex"`` or any registered
            one; every scheme runs on every kernel.
        causal: query ``i`` attends to keys ``j <= i`` only (a decoder).
        num_kv_heads: ``g``, the key/value heads of grouped-query attention
            (Ainslie et al. 2023; 1 is multi-query attention): each serves
            ``h / g`` query heads, and a cache keeps only ``g``. Default ``h``.

    Shapes:
        hidden_states: ``(b, n, hidden)``
        attention_mask: ``(b, n)`` key mask or ``(b, n, n)`` pair mask, any
            convention of ``relpos.masks``; with a cache ``(b, t + n)`` or ``(b, n)``
        positions: ``(n,)`` or ``(b, n)`` integers, default ``t, ..., t + n - 1``
        document_ids: ``(b, n)`` integers
        query_states: ``(b, n, hidden)``, the queries' input (default hidden_states)
        output: ``(b, n, hidden)``
    """

    #: The shortest sequence ``forward`` accepts.
    min_length = 1
    #: The ``forward`` keywords of the scheme's own inputs (DeBERTa:
    #: ``("rel_embeddings",)``), which ``read_inputs`` checks.
    input_keywords: tuple[str, ...] = ()

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        dropout: float = 0.0,
        *,
        backend: str = "gather",
        causal: bool = False,
        num_kv_heads: int | None = None,
    ) -> None:
        super().__init__()
        self.hidden_size = check_int("hidden_size", hidden_size, minimum=1)
        self.num_heads = check_int("num_heads", num_heads, minimum=1)
        if self.hidden_size % self.num_heads:
            raise ValueError(
                "hidden_size must be divisible by num_heads, got "
                f"hidden_size={hidden_size} and num_heads={num_heads}"
            )
        self.num_kv_heads = self.num_heads
        if num_kv_heads is not None:
            self.num_kv_heads = check_int("num_kv_heads", num_kv_heads, minimum=1)
        if self.num_heads % self.num_kv_heads:
            raise ValueError(
                "num_kv_heads must divide num_heads, got "
                f"num_kv_heads={num_kv_heads} and num_heads={num_heads}"
            )
        self.head_size = self.hidden_size // self.num_heads
        self.dropout_p = check_rate("dropout", dropout)
        self.backend = check_choice("backend", backend, BACKENDS)
        self.causal = check_bool("causal", causal)
        kv_width = self.num_kv_heads * self.head_size
        self.query_proj = nn.Linear(self.hidden_size, self.hidden_size)
        self.key_proj = nn.Linear(self.hidden_size, kv_width)
        self.value_proj = nn.Linear(self.hidden_size, kv_width)
        self.dropout = nn.Dropout(self.dropout_p)
        #: Which entry of a ``KVCache`` this module reads and writes: the layers
        #: sharing a cache need distinct ones (a stack numbers its layers).
        self.cache_index = 0

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
        """Split the last dimension into heads (``h`` of them, or ``g`` key/value
        heads for the keys and values of grouped-query attention).

        Shapes:
            x: ``(*, n, h * d)`` or ``(*, n, g * d)``
            output: ``(*, h, n, d)`` or ``(*, g, n, d)``
        """
        x = x.unflatten(-1, (-1, self.head_size))  # (*, n, h, d)
        return x.transpose(-3, -2)  # (*, h, n, d)

    def repeat_kv(self, x: torch.Tensor) -> torch.Tensor:
        """Grouped-query attention's key/value heads, each repeated for the
        ``h / g`` query heads of its group (head ``q`` reads group ``q // (h / g)``).

        Shapes:
            x: ``(*, g, n, d)``; output: ``(*, h, n, d)``
        """
        groups = self.num_heads // self.num_kv_heads
        if groups == 1:
            return x
        return x.repeat_interleave(groups, dim=-3)  # (*, h, n, d)

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
            query_positions: ``(B, i)``; key_positions: ``(B, j)``
            output: ``(query, key)`` with the same shapes
        """
        return query, key

    def position_terms(
        self,
        query_positions: torch.Tensor,
        key_positions: torch.Tensor,
        **inputs: Any,
    ) -> PositionTerms | None:
        """What the scheme adds to the logits and values (default: nothing).

        Shapes:
            query_positions: ``(B, i)``; key_positions: ``(B, j)``
            output: ``PositionTerms`` or None
        """
        return None

    # -- the explicit scores ----------------------------------------------------------

    def logits(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        query_positions: torch.Tensor,
        key_positions: torch.Tensor,
        **inputs: Any,
    ) -> torch.Tensor:
        """Scaled content logits plus the scheme's terms, before masking.

        Shapes:
            query: ``(b, h, i, d)``; key: ``(b, h, j, d)``
            query_positions: ``(i,)`` or ``(B, i)``; key_positions: ``(j,)`` or
            ``(B, j)``; output: ``(b, h, i, j)``
        """
        qpos = _batched_positions(query_positions)
        kpos = _batched_positions(key_positions)
        query, key = self.rotate(query, key, qpos, kpos)
        terms = self.position_terms(qpos, kpos, **inputs)
        return explicit_scores(query, key, terms, None, self.scale).logits

    def position_logits(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        query_positions: torch.Tensor,
        key_positions: torch.Tensor,
        **inputs: Any,
    ) -> torch.Tensor | None:
        """The scheme's terms alone (the logits less ``q . k * scale``), or None.

        Rotary has no separate term: None.

        Shapes:
            query: ``(b, h, i, d)``; key: ``(b, h, j, d)``; output: ``(b, h, i, j)``
        """
        qpos = _batched_positions(query_positions)
        kpos = _batched_positions(key_positions)
        terms = self.position_terms(qpos, kpos, **inputs)
        if terms is None or not terms.has_logit_terms:
            return None
        scores = explicit_scores(query, key, terms, None, self.scale)
        return scores.logits - scores.c2c

    def scores(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        mask: masks.Mask | None,
        query_positions: torch.Tensor,
        key_positions: torch.Tensor,
        **inputs: Any,
    ) -> AttentionScores:
        """Every term and the masked softmax (the backend's ``scores``, else gather).

        The queries and keys are turned already (``rotate``).

        Shapes:
            query: ``(b, h, i, d)``; key: ``(b, h, j, d)``
            query_positions: ``(B, i)``; key_positions: ``(B, j)``
            output: ``AttentionScores`` of ``(b, h, i, j)`` tensors
        """
        terms = self.position_terms(query_positions, key_positions, **inputs)
        scores = get_backend(self.backend).scores or explicit_scores
        return scores(query, key, terms, mask, self.scale)

    # -- the shared path --------------------------------------------------------------

    def read_inputs(
        self, inputs: dict[str, Any], hidden_states: torch.Tensor
    ) -> dict[str, Any]:
        """The scheme's own inputs (``input_keywords``), checked and completed.

        The bare attention reads none: any keyword is a ``TypeError`` naming it.

        Shapes:
            hidden_states: ``(b, n, hidden)``; output: the inputs ``attend`` reads
        """
        unknown = sorted(set(inputs) - set(self.input_keywords))
        if unknown:
            accepted = ", ".join(self.input_keywords) or "none"
            raise TypeError(
                f"{type(self).__name__} got unexpected keyword arguments {unknown}; "
                f"its own keywords: {accepted}"
            )
        return dict(inputs)

    def attend(
        self,
        hidden_states: torch.Tensor,
        prepared: Prepared,
        return_scores: bool = False,
        *,
        query_states: torch.Tensor | None = None,
        **inputs: Any,
    ) -> torch.Tensor | tuple[torch.Tensor, AttentionScores]:
        """``forward`` after the checks (:meth:`prepare`, :meth:`read_inputs`):
        nothing is checked again.

        Shapes:
            hidden_states, query_states: ``(b, n, hidden)``; output: ``(b, n, hidden)``
        """
        if query_states is None:
            query_states = hidden_states
        qpos, kpos = prepared.query_positions, prepared.key_positions
        query = self.split_heads(self.query_proj(query_states))  # (b, h, i, d)
        key = self.split_heads(self.key_proj(hidden_states))  # (b, g, n, d)
        value = self.split_heads(self.value_proj(hidden_states))  # (b, g, n, d)
        query, key = self.rotate(query, key, qpos, kpos[:, -key.shape[-2]:])
        if prepared.cache is not None:
            past = kpos.shape[-1] - key.shape[-2]
            key, value = prepared.cache.extend(
                self.cache_index, key, value, owner=self, past=past
            )
            # key, value: (b, g, t + n, d): the cache keeps the g heads only
        key, value = self.repeat_kv(key), self.repeat_kv(value)  # (b, h, j, d)
        terms = self.position_terms(qpos, kpos, **inputs)
        scores = None
        if return_scores:
            scores = self.scores(query, key, prepared.mask, qpos, kpos, **inputs)
            weights = self.dropout(scores.probs)  # (b, h, i, j)
            context = weights @ value  # (b, h, i, d)
            if terms is not None and terms.value_rows is not None:
                rows = pair_rows(terms)  # (B, i, j)
                context = context + value_term(weights, terms.value_rows, rows)
        else:
            dropout_p = self.dropout_p if self.training else 0.0
            attend = get_backend(self.backend).attend
            context = attend(
                query, key, value, terms, prepared.mask, self.scale, dropout_p
            )  # (b, h, i, d)
        context = context.transpose(1, 2)  # (b, n, h, d)
        if torch.compiler.is_compiling():
            # A copy first: torch.export records reshape/flatten as a view where the
            # traced layout allows it, and ONNX's decompositions can lay a fused
            # kernel's output out otherwise, where it does not (a clone stays one).
            context = context.clone(memory_format=torch.contiguous_format)
        context = context.flatten(-2)  # (b, n, hidden)
        return (context, scores) if return_scores else context

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        positions: torch.Tensor | None = None,
        document_ids: torch.Tensor | None = None,
        cache: KVCache | None = None,
        query_states: torch.Tensor | None = None,
        return_scores: bool = False,
        key_padding_mask: torch.Tensor | None = None,
        attn_mask: torch.Tensor | None = None,
    ) -> torch.Tensor | tuple[torch.Tensor, AttentionScores]:
        """Attend over ``hidden_states``; masked keys get no weight, nor, when
        ``causal``, the keys after each query.

        ``key_padding_mask`` (``(b, n)``, True for padding) and ``attn_mask``
        (``(n, n)`` or ``(b * h, n, n)``, True where not allowed) take torch's
        ``nn.MultiheadAttention`` conventions by name (``relpos.masks``); every
        mask given applies.

        Returns:
            The context ``(b, n, hidden)``; with ``return_scores=True`` also the
            ``AttentionScores`` (each term, the probabilities after masking).

        Shapes:
            hidden_states: ``(b, n, hidden)``; attention_mask: see the class
            positions: ``(n,)`` or ``(b, n)``; document_ids: ``(b, n)``
            query_states: ``(b, n, hidden)``; output: ``(b, n, hidden)``
        """
        prepared = self.prepare(
            hidden_states, attention_mask, positions=positions,
            document_ids=document_ids, cache=cache,
            key_padding_mask=key_padding_mask, attn_mask=attn_mask,
        )
        query_states = self.check_query_states(query_states, hidden_states)
        check_bool("return_scores", return_scores)
        out = self.attend(
            hidden_states, prepared, return_scores, query_states=query_states
        )
        self.finish(prepared)
        return out

    # -- the checks at the edge -------------------------------------------------------

    def prepare(
        self,
        hidden_states: object,
        attention_mask: object = None,
        *,
        positions: object = None,
        document_ids: object = None,
        cache: object = None,
        key_padding_mask: object = None,
        attn_mask: object = None,
    ) -> Prepared:
        """Check the input once and read the masks, positions, documents and cache.

        ``hidden_states`` must be a floating-point ``(b, n, hidden)`` tensor with
        the dtype and device of the module's weights. ``key_padding_mask`` and
        ``attn_mask`` are torch's conventions (``relpos.masks``); every mask
        given is applied.

        Shapes:
            hidden_states: ``(b, n, hidden)``; output: ``Prepared``
        """
        self.check_hidden_states(hidden_states)
        b, n = hidden_states.shape[:2]
        device = hidden_states.device
        if cache is not None and not isinstance(cache, KVCache):
            raise TypeError(
                f"cache must be a relpos.KVCache or None, got {type(cache).__name__}"
            )
        if cache is not None and not self.causal:
            raise ValueError(
                "cache is for causal attention (a decoder): build the module with "
                "causal=True"
            )
        past = 0 if cache is None else cache.past(self.cache_index, n)
        new_positions = self.check_positions(positions, hidden_states, past)  # (B, n)
        documents = masks.read_documents(document_ids, b, n, device)  # (b, n)
        keys, pairs = self._read_mask(attention_mask, b, n, past, device)
        keys = _both(keys, masks.read_key_padding_mask(
            key_padding_mask, b, (n, past + n), device
        ))  # (b, n or t + n)
        pairs = _both(pairs, masks.read_attn_mask(
            attn_mask, b, self.num_heads, n, past + n, device
        ))  # (b, i, j) or (b, h, i, j)
        key_positions = new_positions
        key_documents = documents
        if past:
            past_positions, past_keys, past_documents = cache.history(past)
            key_positions = _join_positions(past_positions, new_positions)
            key_documents = _join_documents(past_documents, documents, b, past, n)
            keys = _join_keys(past_keys, keys, b, past, n, device)
        mask = masks.Mask(
            keys=keys,
            pairs=pairs,
            query_documents=documents if key_documents is not None else None,
            key_documents=key_documents,
            causal=self.causal,
        )
        mask = None if mask.empty else mask
        return Prepared(mask, new_positions, key_positions, cache)

    def finish(self, prepared: Prepared) -> None:
        """After a call with a cache: record the new tokens as cached keys."""
        if prepared.cache is not None:
            mask = prepared.mask or masks.Mask()
            prepared.cache.advance(
                prepared.key_positions, mask.keys, mask.key_documents
            )

    def _read_mask(self, attention_mask, b, n, past, device):
        total = past + n
        if (
            past
            and isinstance(attention_mask, torch.Tensor)
            and tuple(attention_mask.shape) == (b, n)
        ):
            return masks.read_mask(attention_mask, b, n, n, device)[0], None
        return masks.read_mask(attention_mask, b, n, total, device)

    def check_hidden_states(self, hidden_states: object) -> torch.Tensor:
        """A floating ``(b, n, hidden)`` tensor with the weights' dtype and device.

        Shapes:
            hidden_states: ``(b, n, hidden)``
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
        return hidden_states

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
        positions: object, hidden_states: torch.Tensor, past: int = 0
    ) -> torch.Tensor:
        """The positions as ``(B, n)`` long integers (default ``past, past + 1, ...``).

        Shapes:
            positions: ``(n,)`` or ``(b, n)``; hidden_states: ``(b, n, hidden)``
            output: ``(1, n)`` or ``(b, n)``
        """
        b, n = hidden_states.shape[:2]
        device = hidden_states.device
        if positions is None:
            return torch.arange(past, past + n, device=device)[None]  # (1, n)
        positions = check_int_tensor("positions", positions)
        # The rank first: comparing (b, n) with (n,) would compare b with n, which
        # torch.export records as a guard (n != b) on a dynamic length.
        shape = (positions.dim(), tuple(positions.shape))
        if shape not in ((1, (n,)), (2, (b, n))):
            got = tuple(positions.shape)
            raise ValueError(
                f"positions must have shape (n,) = ({n},) or (b, n) = {(b, n)}, "
                f"got {got}"
            )
        return _batched_positions(positions.to(device=device, dtype=torch.long))

    def extra_repr(self) -> str:
        causal = ", causal=True" if self.causal else ""
        return (
            f"hidden_size={self.hidden_size}, num_heads={self.num_heads}, "
            f"backend={self.backend!r}{causal}"
        )


#: The name of ``attend`` before 0.4 (kept for callers outside the core).
SelfAttention._attend = SelfAttention.attend  # type: ignore[attr-defined]


def _both(a: torch.Tensor | None, b: torch.Tensor | None) -> torch.Tensor | None:
    """Two bool masks as one (what both allow), either possibly None."""
    if a is None or b is None:
        return b if a is None else a
    if a.shape[-1] != b.shape[-1]:  # a key mask of the new tokens, one of every key
        short, long = (a, b) if a.shape[-1] < b.shape[-1] else (b, a)
        past = long.shape[-1] - short.shape[-1]
        short = torch.cat([long.new_ones(long.shape[0], past), short], dim=-1)
        a, b = short, long
    if a.dim() != b.dim():  # (b, i, j) and (b, h, i, j)
        a, b = (a[:, None], b) if a.dim() < b.dim() else (a, b[:, None])
    return a & b


def _join_positions(past: torch.Tensor, new: torch.Tensor) -> torch.Tensor:
    if past.shape[0] != new.shape[0]:
        batch = max(past.shape[0], new.shape[0])
        past = past.expand(batch, -1)
        new = new.expand(batch, -1)
    return torch.cat([past, new], dim=-1)  # (B, t + n)


def _join_documents(past, new, b, t, n):
    if past is None and new is None:
        return None
    if past is None or new is None:
        raise ValueError(
            "document_ids must be given in every call with a cache, or in none"
        )
    return torch.cat([past, new], dim=-1)  # (b, t + n)


def _join_keys(past, new, b, t, n, device):
    if new is not None and new.shape[-1] == t + n:
        return new  # a mask over every key, cached ones included
    if past is None and new is None:
        return None
    if past is None:
        past = torch.ones(b, t, dtype=torch.bool, device=device)
    if new is None:
        new = torch.ones(b, n, dtype=torch.bool, device=device)
    return torch.cat([past, new], dim=-1)  # (b, t + n)


__all__ = [
    "Prepared",
    "SelfAttention",
    "normalise_mask",
    "relative_distances",
]
