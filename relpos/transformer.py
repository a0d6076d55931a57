"""One stack for every scheme: an encoder or a decoder around any attention by name.

``Transformer`` stacks ``EncoderLayer`` blocks around the attention of one scheme,
named as the registry names it (``relpos.schemes.scheme_names()``, ``"none"``
included: content attention, no positions; DeBERTa's layers share one table that
the stack owns, as its registration's ``shared`` declares)::

    stack = relpos.Transformer("alibi", num_layers=2, hidden_size=64, num_heads=4,
                               causal=True, norm_first=True, norm="rms",
                               activation="swiglu")
    hidden = stack(x)                       # (b, n, hidden)

It numbers its layers (``layer.attention.cache_index``), so one ``KVCache``
serves the whole stack. ``TransformerLM`` adds token embeddings and a head over
the vocabulary, and ``generate`` (``relpos.generate``) decodes with a cache.

The constructor arguments of a scheme's attention go in ``attention_settings``
(``{"num_buckets": 32, "max_distance": 128}`` for T5); a variant's name
(``"shaw-keys"``, ``"kerple-power"``) brings its own changes first. Every scheme
runs on ``backend`` (default ``"gather"``, one rule for every scheme).

Shape legend:
    b  batch      n  sequence length      hidden  model width      v  vocabulary
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .backends import BACKENDS
from .cache import KVCache
from .checks import check_bool, check_choice, check_index, check_int
from .config import AttentionConfig
from .core import SelfAttention, interop
from .encoder import EncoderLayer, _attention_config, _norm
from .generate import generate
from .schemes import registry

#: The model settings (a registration's ``model``) the stack builds.
STACK_SETTINGS = ("table_norm",)


def _model_settings(scheme: str) -> dict[str, Any]:
    """The registration's settings of the model around ``scheme``'s attention."""
    found, variant = registry.resolve(scheme)
    return found.model_settings(variant)


def stack_schemes() -> list[str]:
    """Every scheme name ``Transformer`` takes: the registry's schemes and variants
    whose model settings the stack builds (DeBERTa's enhanced mask decoder and
    sinusoidal start are the book's)."""
    return [
        name for name in registry.scheme_names()
        if set(_model_settings(name)) <= set(STACK_SETTINGS)
    ]


def build_scheme_attention(
    scheme: str,
    hidden_size: int,
    num_heads: int,
    *,
    causal: bool = False,
    backend: str = "gather",
    dropout: float = 0.0,
    num_kv_heads: int | None = None,
    attention_settings: dict[str, Any] | None = None,
) -> SelfAttention:
    """The attention of ``scheme`` with its constructor arguments.

    A scheme whose registration declares a ``shared`` input is built without it
    (``shared.detached``: DeBERTa's without a table of its own); its stack owns it.

    Shapes:
        output: a module that maps ``(b, n, hidden)`` to ``(b, n, hidden)``
    """
    common = dict(
        dropout=dropout, causal=causal, backend=backend, num_kv_heads=num_kv_heads
    )
    settings = {**common, **(attention_settings or {})}  # the settings win
    if scheme not in registry.scheme_names():
        raise ValueError(
            f"scheme must be one of {tuple(stack_schemes())}, got {scheme!r}"
        )
    found, variant = registry.resolve(scheme)
    arguments = {} if variant is None else dict(found.variants[variant])
    arguments.update(settings)
    if found.shared is not None:
        arguments.update(found.shared.detached)
    return found.attention(hidden_size, num_heads, **arguments)


class Transformer(nn.Module):
    """``num_layers`` blocks around the attention of ``scheme``, numbered for a cache.

    Args:
        scheme: a name of ``stack_schemes()``.
        num_layers, hidden_size, num_heads: the stack's sizes.
        intermediate_size: the feed-forward width (default ``4 * hidden_size``).
        causal: a decoder (query ``i`` reads keys ``j <= i``); needed for a cache.
        backend: the kernel of every layer (``relpos.BACKENDS``).
        num_kv_heads: grouped-query attention's key/value heads (1: multi-query;
            ``None``: one per head), on every scheme and kernel.
        norm_first, norm, activation, dropout, layer_norm_eps: as for
            ``EncoderLayer``; with ``norm_first`` a last norm ends the stack.
        attention_settings: constructor arguments of the scheme's attention.

    Attributes:
        layers: the ``EncoderLayer`` blocks.
        final_norm: the stack's last norm (pre-norm only), else None.
        shared: the registration's ``SharedInput`` (DeBERTa's table), or None.
        table: the shared input's module (DeBERTa's ``(2 * span, hidden)``
            table), or None.
        table_norm: its LayerNorm, or None: the registration's ``table_norm``
            for the name (``deberta-no-norm`` has none).

    Shapes:
        hidden_states: ``(b, n, hidden)``; attention_mask: any convention of
        ``relpos.masks``; positions: ``(n,)`` or ``(b, n)``; output: ``(b, n, hidden)``
    """

    def __init__(
        self,
        scheme: str,
        num_layers: int,
        hidden_size: int,
        num_heads: int,
        intermediate_size: int | None = None,
        *,
        causal: bool = False,
        backend: str = "gather",
        num_kv_heads: int | None = None,
        norm_first: bool = False,
        norm: str = "layer",
        activation: str = "gelu",
        dropout: float = 0.0,
        layer_norm_eps: float = 1e-7,
        attention_settings: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.scheme = check_choice("scheme", scheme, tuple(stack_schemes()))
        self.num_layers = check_int("num_layers", num_layers, minimum=1)
        self.backend = check_choice("backend", backend, BACKENDS)
        if attention_settings is not None and not isinstance(attention_settings, dict):
            raise TypeError(
                "attention_settings must be a dict of the attention's constructor "
                f"arguments, got {type(attention_settings).__name__}"
            )
        width = 4 * hidden_size if intermediate_size is None else intermediate_size
        self.layers = nn.ModuleList()
        for index in range(self.num_layers):
            attention = build_scheme_attention(
                scheme, hidden_size, num_heads, causal=causal, backend=backend,
                dropout=dropout, num_kv_heads=num_kv_heads,
                attention_settings=attention_settings,
            )
            attention.cache_index = index  # its own entry of a shared cache
            self.layers.append(EncoderLayer(
                attention, hidden_size, width, dropout=dropout,
                layer_norm_eps=layer_norm_eps, norm_first=norm_first, norm=norm,
                activation=activation,
            ))
        first = self.layers[0]
        self.hidden_size, self.causal = first.hidden_size, first.attention.causal
        self.final_norm = (
            _norm(norm, hidden_size, layer_norm_eps) if norm_first else None
        )
        self.shared = registry.resolve(scheme)[0].shared
        self.table = self.table_norm = None
        if self.shared is not None:
            self.table = self.shared.build(first.attention)  # (rows, hidden)
            if _model_settings(scheme)["table_norm"]:
                self.table_norm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.table_dropout = nn.Dropout(first.dropout_p)

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        positions: torch.Tensor | None = None,
        document_ids: torch.Tensor | None = None,
        cache: KVCache | None = None,
        key_padding_mask: torch.Tensor | None = None,
        attn_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Every block in turn (:meth:`run_layers`), then the last norm (pre-norm).

        The masks, ``positions``, ``document_ids`` and ``cache`` are read once, as
        by ``relpos.SelfAttention`` (a cache needs ``causal=True``); each block
        reads and writes its own entry of ``cache``.

        Shapes:
            hidden_states: ``(b, n, hidden)``; attention_mask: ``(b, n)`` or a pair
            mask; positions: ``(n,)`` or ``(b, n)``; document_ids: ``(b, n)``
            output: ``(b, n, hidden)``
        """
        hidden_states = self.run_layers(
            hidden_states, attention_mask, positions=positions,
            document_ids=document_ids, cache=cache,
            key_padding_mask=key_padding_mask, attn_mask=attn_mask,
        )  # (b, n, hidden)
        if self.final_norm is not None:
            hidden_states = self.final_norm(hidden_states)
        return hidden_states

    def run_layers(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        layers: Any = None,
        *,
        positions: torch.Tensor | None = None,
        document_ids: torch.Tensor | None = None,
        cache: KVCache | None = None,
        query_states: torch.Tensor | None = None,
        key_padding_mask: torch.Tensor | None = None,
        attn_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Check the input once, then run ``layers`` (default: all) in turn.

        The one check of the whole stack: the first layer's attention reads the
        masks, positions and cache (``prepare``); the blocks get what it read
        and check nothing again. Each block gets its own dropout of the shared
        input (DeBERTa's table), drawn just before it runs. ``query_states``
        goes to the first of ``layers`` only (DeBERTa's enhanced mask decoder
        runs some of the layers, then its own step). No final norm.

        Shapes:
            hidden_states, query_states: ``(b, n, hidden)``; attention_mask: as
            ``forward``; output: ``(b, n, hidden)``
        """
        layers = self.layers if layers is None else layers
        first = self.layers[0].attention
        prepared = first.prepare(
            hidden_states, attention_mask, positions=positions,
            document_ids=document_ids, cache=cache,
            key_padding_mask=key_padding_mask, attn_mask=attn_mask,
        )
        query_states = first.check_query_states(query_states, hidden_states)
        table = self.shared_input()  # (rows, hidden) or None
        if table is not None:
            first.read_inputs({self.shared.keyword: table}, hidden_states)
        for layer in layers:
            extra = {}
            if table is not None:  # each layer its own dropout of it
                extra[self.shared.keyword] = self.table_dropout(table)
            hidden_states = layer._forward(
                hidden_states, prepared, query_states=query_states, **extra
            )  # (b, n, hidden)
            query_states = None
        first.finish(prepared)
        return hidden_states

    def shared_input(self) -> torch.Tensor | None:
        """The input every layer reads, before dropout: ``table_norm(table.weight)``
        (DeBERTa's LayerNorm-ed table), or None for a scheme that shares none.

        Shapes:
            output: ``(rows, hidden)``
        """
        if self.table is None:
            return None
        weight = self.table.weight  # (rows, hidden)
        return weight if self.table_norm is None else self.table_norm(weight)

    def extra_repr(self) -> str:
        return f"scheme={self.scheme!r}, num_layers={self.num_layers}"


class TransformerLM(nn.Module):
    """Token embeddings, a ``Transformer`` and a linear head over the vocabulary.

    Position information comes from the scheme alone (nothing is added to the
    token embeddings). Causal by default: a language model that ``generate``
    decodes with a cache.

    Args:
        vocab_size: the number of token ids.
        scheme, num_layers, hidden_size, num_heads: as for ``Transformer``.
        causal: ``False`` makes a bidirectional (masked) language model.
        others: as for ``Transformer``.

    Shapes:
        input_ids: ``(b, n)`` long; output: logits ``(b, n, v)``
    """

    def __init__(
        self,
        vocab_size: int,
        scheme: str,
        num_layers: int,
        hidden_size: int,
        num_heads: int,
        intermediate_size: int | None = None,
        *,
        causal: bool = True,
        **stack_arguments: Any,
    ) -> None:
        super().__init__()
        self.vocab_size = check_int("vocab_size", vocab_size, minimum=1)
        check_int("hidden_size", hidden_size, minimum=1)
        self.embed = nn.Embedding(vocab_size, hidden_size)
        self.stack = Transformer(
            scheme, num_layers, hidden_size, num_heads, intermediate_size,
            causal=causal, **stack_arguments,
        )
        self.head = nn.Linear(hidden_size, vocab_size)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        **stack_inputs: Any,
    ) -> torch.Tensor:
        """The logits of every position (``stack_inputs``: as ``Transformer``).

        Shapes:
            input_ids: ``(b, n)``; output: ``(b, n, v)``
        """
        if not isinstance(input_ids, torch.Tensor) or input_ids.dtype != torch.long:
            raise TypeError(
                "input_ids must be a long tensor of shape (b, n), got "
                f"{getattr(input_ids, 'dtype', type(input_ids).__name__)}"
            )
        if input_ids.dim() != 2:
            raise ValueError(
                f"input_ids must have shape (b, n), got {tuple(input_ids.shape)}"
            )
        # the values are read on the CPU in eager mode only (elsewhere the read
        # would wait for the device), as relpos.DisentangledModel reads them
        if input_ids.device.type == "cpu" and not torch.compiler.is_compiling():
            check_index("input_ids", input_ids, self.vocab_size, "(b, n)")
        hidden = self.stack(self.embed(input_ids), attention_mask, **stack_inputs)
        return self.head(hidden)  # (b, n, v)

    def generate(self, input_ids: torch.Tensor, max_new_tokens: int, **options: Any):
        """``relpos.generate(self, input_ids, max_new_tokens, **options)``.

        Shapes:
            input_ids: ``(b, n)``; output: ``(b, n + m)``
        """
        return generate(self, input_ids, max_new_tokens, **options)


class DisentangledEncoder(Transformer):
    """DeBERTa's encoder: ``relpos.Transformer`` with scheme ``"deberta"``, post-LN,
    LayerNorm and GELU, its layers over the one shared table the stack owns.

    Equal to ``transformers``' ``DebertaV2Encoder`` (without its optional
    convolution) on every non-padded position; ``from_transformers`` copies one.

    Args:
        num_layers: number of ``DisentangledEncoderLayer`` blocks.
        norm_rel_ebd: put the table through a LayerNorm before use
            (DeBERTa-v2/v3's ``norm_rel_ebd="layer_norm"``).
        dropout: ``hidden_dropout_prob``: on both sub-layer outputs of every
            layer and on the table (see below).
        attention_dropout: ``attention_probs_dropout_prob``; ``None`` means
            ``dropout``.
        config: the attention settings as one ``relpos.AttentionConfig``; every
            layer's attention is built from it (``encoder.config``).
        others: as for ``DisentangledEncoderLayer`` (the attention settings
            are the fields of ``AttentionConfig``, with its defaults).

    Attributes:
        table: the ``RelativePositionEmbedding`` whose ``weight`` is the shared
            ``(2 * span, hidden)`` table (``span`` is ``position_buckets`` with log
            buckets). Only ``table.weight`` is used; the table's own ``forward``
            (the literal per-pair lookup) knows clipping but not buckets.
        table_norm: the table's LayerNorm, or ``None`` without ``norm_rel_ebd``.
        table_dropout: dropout with probability ``dropout`` on the table.
        layers: the ``DisentangledEncoderLayer`` blocks.

    Its ``forward`` and ``run_layers`` are the stack's (``relpos.Transformer``).
    Where the table dropout sits: ``run_layers`` computes ``rel_embeddings()``
    (the LayerNorm-ed table) once, then hands each layer
    ``table_dropout(rel_embeddings())`` -- a fresh dropout mask per layer, in
    training only. ``transformers`` does the same thing from inside each
    layer's attention (``DisentangledSelfAttention.pos_dropout``, applied to the
    table as the first step of its relative-position branch). Both draw their
    random numbers in the same order (table, attention probabilities, the two
    sub-layer outputs; layer by layer), so with equal seeds the ``naive``
    backend reproduces ``transformers`` in training too (tested on the CPU).
    ``gather`` drops attention probabilities inside torch's fused attention,
    with its own random numbers; ``flex`` refuses attention dropout.

    Initial weights: the table is drawn from N(0, 0.02^2) as in DeBERTa; the
    Linear and LayerNorm layers keep torch's defaults (DeBERTa draws Linear
    weights from N(0, 0.02^2) with zero biases).

    Shapes:
        hidden_states: ``(b, n, hidden)``
        attention_mask: ``(b, n)``, 1 for a token and 0 for padding
        output: ``(b, n, hidden)``; outputs at padded positions are finite but
            carry no meaning
    """

    def __init__(
        self,
        num_layers: int,
        hidden_size: int | None = None,
        num_heads: int | None = None,
        intermediate_size: int | None = None,
        *,
        dropout: float = 0.0,
        attention_dropout: float | None = None,
        layer_norm_eps: float = 1e-7,
        norm_rel_ebd: bool = True,
        config: AttentionConfig | None = None,
        **attention_settings: Any,
    ) -> None:
        self_layers = check_int("num_layers", num_layers, minimum=1)
        check_bool("norm_rel_ebd", norm_rel_ebd)
        settings = dict(
            attention_settings, hidden_size=hidden_size, num_heads=num_heads
        )
        config = _attention_config(config, settings, dropout, attention_dropout)
        if intermediate_size is None:
            raise TypeError("intermediate_size must be an int >= 1, got None")
        super().__init__(
            "deberta", self_layers, config.hidden_size, config.num_heads,
            intermediate_size, causal=config.causal, backend=config.backend,
            num_kv_heads=config.num_kv_heads, dropout=dropout,
            layer_norm_eps=layer_norm_eps,
            # every layer's attention is built from the one config (its dropout
            # is the attention's, not the stack's hidden dropout)
            attention_settings=dict(config=config, dropout=config.dropout),
        )
        self.config = config
        self.span = config.span
        if not norm_rel_ebd:
            self.table_norm = None

    @property
    def norm_rel_ebd(self) -> bool:
        """Whether the table goes through ``table_norm`` before use."""
        return self.table_norm is not None

    def rel_embeddings(self) -> torch.Tensor:
        """The table every layer reads, before dropout: ``table_norm(table.weight)``
        (``shared_input``; ``transformers``' ``DebertaV2Encoder.get_rel_embedding``).

        Shapes:
            output: ``(2 * span, hidden)``
        """
        return self.shared_input()

    @classmethod
    def from_transformers(
        cls, module: nn.Module, *, backend: str = "gather"
    ) -> "DisentangledEncoder":
        """An encoder with the configuration and weights of a ``transformers`` one.

        ``module`` is a ``transformers`` ``DebertaV2Encoder`` or a
        ``DebertaV2Model`` (its ``.encoder`` is copied; the embeddings are not).
        Weights are copied, not shared; the result has the module's device,
        dtype and train/eval mode. Settings relpos does not implement raise a
        ``ValueError`` naming the setting (see ``relpos.interop``).
        """
        return interop().encoder_from_transformers(cls, module, backend=backend)

    def extra_repr(self) -> str:
        return f"num_layers={self.num_layers}, span={self.span}"

    def to_transformers(self) -> nn.Module:
        """This encoder as a ``transformers`` ``DebertaV2Encoder`` (weights copied).

        The ``DebertaV2Config`` is built from this encoder's settings; one that
        ``transformers`` cannot express (``causal=True``, say) raises a
        ``ValueError`` naming it. Same device, dtype and train/eval mode.
        """
        return interop().to_transformers(self)


__all__ = [
    "DisentangledEncoder",
    "Transformer",
    "TransformerLM",
    "build_scheme_attention",
    "stack_schemes",
]
