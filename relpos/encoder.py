"""A whole encoder: DeBERTa's post-LayerNorm blocks around disentangled attention.

One block (``EncoderLayer``) is the BERT/DeBERTa layer, with any self-attention
inside it::

    a = LayerNorm(x + dropout(W_o attention(x)))               attention sub-layer
    y = LayerNorm(a + dropout(W_2 GELU(W_1 a)))                feed-forward sub-layer

Given ``query_states`` ``x_q`` (DeBERTa's enhanced mask decoder), the queries
are projected from ``x_q`` and the attention sub-layer's residual adds ``x_q``:
``a = LayerNorm(x_q + dropout(W_o attention(x, query_states=x_q)))``, as in
``transformers``' ``DebertaV2Layer``. A causal encoder (a decoder's stack) is
one whose attention is causal: ``AttentionConfig(causal=True)``.

``DisentangledEncoder`` (``relpos.transformer``: the stack with DeBERTa's settings;
``relpos.DisentangledEncoder``) stacks such blocks around ``DisentangledSelfAttention``
and owns the one relative-position table that every layer reads, exactly as
``transformers``' ``DebertaV2Encoder`` does: the table goes through a LayerNorm
(``norm_rel_ebd``) once per forward, and each layer sees its own dropout of it.

Shape legend:
    b  batch      n  sequence length      hidden  model width
    f  feed-forward width (intermediate_size)     r  table row, 0 <= r < 2 * span
"""

from __future__ import annotations

import numbers
from typing import Any

import torch
from torch import nn

from .checks import (
    check_bool,
    check_choice,
    check_int,
    check_no_removed_call,
    check_rate,
)
from .attention import DisentangledSelfAttention
from .config import AttentionConfig, resolve_config
from .cache import KVCache
from .core import Prepared, SelfAttention, interop


def _check_eps(value: object) -> float:
    """A LayerNorm epsilon: a float > 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"layer_norm_eps must be a float > 0, got {type(value).__name__}"
        )
    if not float(value) > 0.0:
        raise ValueError(f"layer_norm_eps must be a float > 0, got {value!r}")
    return float(value)


def _check_hidden_states(hidden_states: object, hidden_size: int) -> torch.Tensor:
    """A floating-point ``(b, n, hidden)`` tensor (for an attention of any kind)."""
    is_tensor = isinstance(hidden_states, torch.Tensor)
    if not is_tensor or not hidden_states.is_floating_point():
        raise TypeError(
            "hidden_states must be a floating-point tensor of shape (b, n, hidden), "
            f"got {type(hidden_states).__name__}"
        )
    if hidden_states.dim() != 3 or hidden_states.shape[-1] != hidden_size:
        raise ValueError(
            f"hidden_states must have shape (b, n, {hidden_size}), "
            f"got {tuple(hidden_states.shape)}"
        )
    return hidden_states


#: The block's normalisation layers, by name.
NORMS = ("layer", "rms")
#: The feed-forward sub-layer's forms, by name: ``W_2 GELU(W_1 a)`` or SwiGLU's
#: ``W_2 (SiLU(W_g a) * W_1 a)`` (Shazeer 2020).
ACTIVATIONS = ("gelu", "swiglu")


def _norm(kind: str, hidden_size: int, eps: float) -> nn.Module:
    if kind == "layer":
        return nn.LayerNorm(hidden_size, eps=eps)
    return nn.RMSNorm(hidden_size, eps=eps)


class EncoderLayer(nn.Module):
    """The block of BERT and DeBERTa (post-LayerNorm), or of a GPT-style decoder
    (pre-norm), around any self-attention.

    ``attention`` is any module whose ``forward(hidden_states, attention_mask=None,
    **kwargs)`` returns the context ``(b, n, hidden)`` *before* an output
    projection (as ``DisentangledSelfAttention`` does); this layer adds the
    output projection and everything after it::

        context = attention(x, attention_mask=attention_mask, **attention_kwargs)
        a = attention_norm(x + dropout(attention_output(context)))
        y = output_norm(a + dropout(output(GELU(intermediate(a)))))

    With ``query_states`` ``x_q`` the attention gets ``query_states=x_q`` and the
    first residual is ``x_q + ...`` instead of ``x + ...``.

    With ``norm_first=True`` each sub-layer normalises its input instead, and the
    residual stream is never normalised (GPT-2, LLaMA; a stack ends with one more
    norm, as ``relpos.Transformer`` does)::

        a = x + dropout(W_o attention(attention_norm(x)))
        y = a + dropout(output(GELU(intermediate(output_norm(a)))))

    ``norm="rms"`` makes both norms ``nn.RMSNorm``; ``activation="swiglu"`` makes
    the feed-forward ``output(SiLU(gate(a)) * intermediate(a))``.

    Keyword arguments given to ``forward`` beyond the mask go to the attention
    unchanged, so a scheme that needs extra input (a table, a bias, rotation
    angles) takes it there. GELU is the exact (erf) GELU that DeBERTa uses.
    The attention's own dropout (on its probabilities) is the attention's
    business; ``dropout`` here is DeBERTa's ``hidden_dropout_prob``, applied
    after the output projection and after the second feed-forward Linear.

    Args:
        attention: the self-attention module.
        hidden_size: model width; the attention must return this width.
        intermediate_size: width of the feed-forward sub-layer.
        dropout: dropout on both sub-layer outputs before the residual sum.
        layer_norm_eps: epsilon of both norms (DeBERTa uses 1e-7).
        norm_first: normalise each sub-layer's input (pre-norm) instead of the
            residual sum (post-norm, BERT's and DeBERTa's).
        norm: ``"layer"`` (LayerNorm) or ``"rms"`` (RMSNorm).
        activation: ``"gelu"`` or ``"swiglu"``.

    Shapes:
        hidden_states: ``(b, n, hidden)``
        attention_mask: ``(b, n)``, 1 for a token and 0 for padding
        query_states: ``(b, n, hidden)``, the queries' input (default hidden_states)
        output: ``(b, n, hidden)``
    """

    def __init__(
        self,
        attention: nn.Module,
        hidden_size: int,
        intermediate_size: int,
        *,
        dropout: float = 0.0,
        layer_norm_eps: float = 1e-7,
        norm_first: bool = False,
        norm: str = "layer",
        activation: str = "gelu",
    ) -> None:
        super().__init__()
        if not isinstance(attention, nn.Module):
            raise TypeError(
                "attention must be an nn.Module whose forward(hidden_states, "
                f"attention_mask=None, **kwargs) returns (b, n, hidden), "
                f"got {type(attention).__name__}"
            )
        self.hidden_size = check_int("hidden_size", hidden_size, minimum=1)
        self.intermediate_size = check_int(
            "intermediate_size", intermediate_size, minimum=1
        )
        own_width = getattr(attention, "hidden_size", hidden_size)
        if own_width != hidden_size:
            raise ValueError(
                f"attention has hidden_size={own_width} but hidden_size={hidden_size}; "
                "they must be equal"
            )
        self.dropout_p = check_rate("dropout", dropout)
        self.layer_norm_eps = _check_eps(layer_norm_eps)
        self.norm_first = check_bool("norm_first", norm_first)
        self.norm = check_choice("norm", norm, NORMS)
        self.activation_name = check_choice("activation", activation, ACTIVATIONS)

        self.attention = attention
        self.attention_output = nn.Linear(hidden_size, hidden_size)
        self.attention_norm = _norm(norm, hidden_size, self.layer_norm_eps)
        self.intermediate = nn.Linear(hidden_size, intermediate_size)
        swiglu = activation == "swiglu"
        self.gate = nn.Linear(hidden_size, intermediate_size) if swiglu else None
        self.activation = nn.GELU() if activation == "gelu" else nn.SiLU()
        self.output = nn.Linear(intermediate_size, hidden_size)
        self.output_norm = _norm(norm, hidden_size, self.layer_norm_eps)
        self.dropout = nn.Dropout(self.dropout_p)

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        query_states: torch.Tensor | None = None,
        positions: torch.Tensor | None = None,
        document_ids: torch.Tensor | None = None,
        cache: KVCache | None = None,
        key_padding_mask: torch.Tensor | None = None,
        attn_mask: torch.Tensor | None = None,
        **attention_kwargs: Any,
    ) -> torch.Tensor:
        """Attention, then feed-forward, each with a residual sum and a LayerNorm.

        ``query_states`` (default ``hidden_states``): the queries' input and the
        first residual; keys and values come from ``hidden_states``. The masks
        (``key_padding_mask`` and ``attn_mask`` in torch's conventions),
        ``positions``, ``document_ids`` and ``cache`` are read as by
        ``relpos.SelfAttention``.

        Shapes:
            hidden_states: ``(b, n, hidden)``; attention_mask: ``(b, n)`` or a pair
            mask; positions: ``(n,)`` or ``(b, n)``; document_ids: ``(b, n)``
            query_states: ``(b, n, hidden)``; output: ``(b, n, hidden)``
        """
        _check_hidden_states(hidden_states, self.hidden_size)
        query_states = SelfAttention.check_query_states(query_states, hidden_states)
        if isinstance(self.attention, SelfAttention):
            prepared = self.attention.prepare(
                hidden_states, attention_mask, positions=positions,
                document_ids=document_ids, cache=cache,
                key_padding_mask=key_padding_mask, attn_mask=attn_mask,
            )
            self._check_attention_kwargs(attention_kwargs, hidden_states)
            out = self._forward(
                hidden_states, prepared, query_states=query_states, **attention_kwargs
            )
            self.attention.finish(prepared)
            return out
        extra = dict(
            positions=positions, document_ids=document_ids, cache=cache,
            key_padding_mask=key_padding_mask, attn_mask=attn_mask,
        )
        attention_kwargs.update({k: v for k, v in extra.items() if v is not None})
        states, queries = self._attention_inputs(hidden_states, query_states)
        if queries is not None:
            attention_kwargs["query_states"] = queries
        context = self.attention(
            states, attention_mask=attention_mask, **attention_kwargs
        )  # (b, n, hidden)
        if not isinstance(context, torch.Tensor):
            raise TypeError(
                "attention must return one tensor shaped like hidden_states "
                f"{tuple(hidden_states.shape)}, got {type(context).__name__}"
            )
        if context.shape != hidden_states.shape:
            raise ValueError(
                "attention must return a context shaped like hidden_states "
                f"{tuple(hidden_states.shape)}, got {tuple(context.shape)}"
            )
        residual = hidden_states if query_states is None else query_states
        return self._block(residual, context)

    def _check_attention_kwargs(
        self, attention_kwargs: dict[str, Any], hidden_states: torch.Tensor
    ) -> None:
        """Only the keywords the attention reads (its ``input_keywords``: for
        DeBERTa, ``rel_embeddings``), checked by the attention."""
        allowed = set(self.attention.input_keywords)
        unknown = sorted(set(attention_kwargs) - allowed)
        if unknown:
            accepted = ", ".join(sorted(allowed)) or "none"
            raise TypeError(
                f"{type(self).__name__}.forward got unexpected keyword arguments "
                f"{unknown}; the attention's own keywords: {accepted}"
            )
        if attention_kwargs:
            self.attention.read_inputs(attention_kwargs, hidden_states)

    def _forward(
        self,
        hidden_states: torch.Tensor,
        prepared: Prepared,
        *,
        query_states: torch.Tensor | None = None,
        **attention_kwargs: Any,
    ) -> torch.Tensor:
        """``forward`` after the checks, for a ``relpos`` attention (``SelfAttention``).

        ``prepared`` is what ``attention.prepare`` read; nothing is checked.

        Shapes:
            hidden_states, query_states: ``(b, n, hidden)``; output: ``(b, n, hidden)``
        """
        inputs = self.attention.read_inputs(attention_kwargs, hidden_states)
        states, queries = self._attention_inputs(hidden_states, query_states)
        context = self.attention.attend(
            states, prepared, query_states=queries, **inputs
        )  # (b, n, hidden)
        residual = hidden_states if query_states is None else query_states
        return self._block(residual, context)

    def _attention_inputs(
        self, hidden_states: torch.Tensor, query_states: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """What the attention reads: the states as given, or normalised (pre-norm).

        Shapes:
            hidden_states, query_states: ``(b, n, hidden)``; output: the same
        """
        if not self.norm_first:
            return hidden_states, query_states
        queries = None if query_states is None else self.attention_norm(query_states)
        return self.attention_norm(hidden_states), queries

    def feed_forward(self, x: torch.Tensor) -> torch.Tensor:
        """The feed-forward sub-layer without its residual: GELU or SwiGLU.

        Shapes:
            x: ``(b, n, hidden)``; output: ``(b, n, hidden)``
        """
        inner = self.intermediate(x)  # (b, n, f)
        if self.gate is None:
            inner = self.activation(inner)
        else:
            inner = self.activation(self.gate(x)) * inner  # (b, n, f)
        return self.output(inner)  # (b, n, hidden)

    def _block(self, residual: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        """Both sub-layers after the attention: ``residual`` is the first residual.

        Shapes:
            residual, context: ``(b, n, hidden)``; output: ``(b, n, hidden)``
        """
        attended = residual + self.dropout(self.attention_output(context))
        if self.norm_first:
            fed = self.feed_forward(self.output_norm(attended))  # (b, n, hidden)
            return attended + self.dropout(fed)
        attended = self.attention_norm(attended)  # (b, n, hidden)
        out = self.output_norm(attended + self.dropout(self.feed_forward(attended)))
        return out  # (b, n, hidden)

    def extra_repr(self) -> str:
        return (
            f"hidden_size={self.hidden_size}, "
            f"intermediate_size={self.intermediate_size}, "
            f"dropout={self.dropout_p}, layer_norm_eps={self.layer_norm_eps}, "
            f"norm_first={self.norm_first}, norm={self.norm!r}, "
            f"activation={self.activation_name!r}"
        )


def _attention_config(
    config: AttentionConfig | None,
    settings: dict[str, Any],
    dropout: float,
    attention_dropout: float | None,
) -> AttentionConfig:
    """The attention's config from the layer's or encoder's arguments.

    ``attention_dropout`` (``None``: ``dropout``, or ``config.dropout`` when a
    config is given) is the config's ``dropout``.
    """
    dropout = check_rate("dropout", dropout)
    if attention_dropout is not None:
        attention_dropout = check_rate("attention_dropout", attention_dropout)
    sizes = ("hidden_size", "num_heads")  # None: left out (taken from config)
    given = {k: v for k, v in settings.items() if k not in sizes or v is not None}
    if config is None:
        rate = dropout if attention_dropout is None else attention_dropout
        return AttentionConfig(**given, dropout=rate)
    if attention_dropout is not None:
        given["dropout"] = attention_dropout
    return resolve_config(config, given)


class DisentangledEncoderLayer(EncoderLayer):
    """An ``EncoderLayer`` whose attention is ``DisentangledSelfAttention``.

    Args:
        hidden_size, num_heads: as for ``DisentangledSelfAttention``.
        intermediate_size, dropout, layer_norm_eps: as for ``EncoderLayer``.
        attention_dropout: dropout on the attention probabilities
            (``attention_probs_dropout_prob``); ``None`` means ``dropout``.
        config: the attention's settings as one ``relpos.AttentionConfig``
            (then ``hidden_size`` and ``num_heads`` may be left out).
        attention_settings: the other fields of ``AttentionConfig``
            (``max_relative_positions``, ``position_buckets``, ``pos_att_type``,
            ``share_att_key``, ``backend``, ``causal``), with its defaults.

        own_table: the attention owns a table (the default); an encoder builds its
            layers without one and hands each the shared table.

    This layer does not drop out the table it is given: ``DisentangledEncoder``
    does that, once per layer, before calling the layer.

    Shapes:
        hidden_states: ``(b, n, hidden)``
        rel_embeddings: ``(2 * span, hidden)``, a table to read instead of the
            attention's own (an encoder's shared one)
        attention_mask: ``(b, n)``, any convention of ``relpos.masks``
        query_states: ``(b, n, hidden)``, the queries' input (default hidden_states)
        output: ``(b, n, hidden)``
    """

    attention: DisentangledSelfAttention

    def __init__(
        self,
        hidden_size: int | None = None,
        num_heads: int | None = None,
        intermediate_size: int | None = None,
        *,
        dropout: float = 0.0,
        attention_dropout: float | None = None,
        layer_norm_eps: float = 1e-7,
        config: AttentionConfig | None = None,
        own_table: bool = True,
        **attention_settings: Any,
    ) -> None:
        settings = dict(
            attention_settings, hidden_size=hidden_size, num_heads=num_heads
        )
        config = _attention_config(config, settings, dropout, attention_dropout)
        super().__init__(
            DisentangledSelfAttention(config=config, own_table=own_table),
            config.hidden_size,
            intermediate_size,
            dropout=dropout,
            layer_norm_eps=layer_norm_eps,
        )

    def forward(  # type: ignore[override]
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *removed: Any,
        rel_embeddings: torch.Tensor | None = None,
        query_states: torch.Tensor | None = None,
        positions: torch.Tensor | None = None,
        document_ids: torch.Tensor | None = None,
        cache: KVCache | None = None,
        key_padding_mask: torch.Tensor | None = None,
        attn_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """One DeBERTa layer: ``layer(hidden_states, attention_mask=None, *, ...)``.

        The table is the attention's own unless ``rel_embeddings`` is given. With
        ``query_states`` this is ``transformers``' ``DebertaV2Layer`` with
        ``query_states``: queries and the first residual from ``query_states``,
        keys and values from ``hidden_states`` (the enhanced mask decoder's step).
        The second positional argument is always the mask; relpos 0.2's
        ``layer(hidden_states, rel_embeddings, attention_mask)`` was removed in 0.4
        (a ``TypeError`` naming ``rel_embeddings=``).

        Shapes:
            hidden_states: ``(b, n, hidden)``; rel_embeddings: ``(2 * span, hidden)``
            attention_mask: ``(b, n)``; query_states: ``(b, n, hidden)``
            output: ``(b, n, hidden)``
        """
        check_no_removed_call(type(self).__name__, removed)
        _check_hidden_states(hidden_states, self.hidden_size)
        extra = {} if rel_embeddings is None else {"rel_embeddings": rel_embeddings}
        return super().forward(
            hidden_states, attention_mask, query_states=query_states,
            positions=positions, document_ids=document_ids, cache=cache,
            key_padding_mask=key_padding_mask, attn_mask=attn_mask, **extra,
        )


__all__ = [
    "ACTIVATIONS",
    "NORMS",
    "EncoderLayer",
    "DisentangledEncoderLayer",
]
