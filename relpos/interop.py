"""Interoperability with ``transformers``' DeBERTa (an optional dependency).

``DisentangledSelfAttention.from_transformers`` copies a DeBERTa-v2/v3 or a
DeBERTa (v1) attention layer; ``DisentangledEncoder.from_transformers`` copies a
DeBERTa-v2/v3 encoder and ``DisentangledModel.from_transformers`` a whole
``DebertaV2Model`` (embeddings and encoder). The other way,
``to_transformers`` builds a ``DebertaV2Encoder`` or ``DebertaV2Model`` (and its
``DebertaV2Config``) from a relpos encoder or model, so that a relpos model can be
saved with ``save_pretrained`` and loaded with ``from_pretrained``. Both
directions copy along one list of matching modules (``_encoder_pairs``,
``_embedding_pairs``). ``transformers`` is imported only inside these functions.

v1 vs v2/v3. DeBERTa v1 (``transformers.models.deberta``) and v2/v3
(``transformers.models.deberta_v2``) compute the same attention score,
``(c2c + c2p + p2c) / sqrt(d * s)``, and both read p2c at the same table row as
c2p, ``delta(i, j)``. What differs is how the weights are laid out and what
surrounds the score:

- Content projections. v1 has one fused ``in_proj`` (``3 * hidden`` outputs, no
  bias) whose rows are interleaved per head (query, key, value of head 0, then of
  head 1, ...), plus separate ``q_bias`` and ``v_bias`` vectors: its keys have no
  bias. v2 has three ``Linear`` layers with biases.
- Position projections. v1 always projects the table with its own ``pos_proj``
  (for c2p, no bias) and ``pos_q_proj`` (for p2c, with bias). v2 adds
  ``share_att_key``, which v3 turns on: the content key and query projections
  are reused for the table.
- Distances. v1 only clips ``i - j`` to ``[-k, k - 1]`` (a ``2k``-row table, of
  which each call slices the central ``2 * min(n, k)`` rows, the same rows
  clipping picks). v2 adds log buckets (``position_buckets``).
- The table. v2 can put it through a LayerNorm before use
  (``norm_rel_ebd="layer_norm"``, as v3 does); v1 uses it as it is.
- Scale. v1 divides the queries (and p2c's position queries) by ``sqrt(d * s)``
  before the products instead of dividing the scores: the same numbers up to
  rounding. Its ``s`` is ``1 + len(pos_att_type)``, counting every entry of the
  list; v2 counts only ``c2p`` and ``p2c``.
- Extras. v1 can mix heads before and after the softmax ("talking heads",
  ``head_logits_proj`` and ``head_weights_proj``); v2 cannot. v2 can add a
  convolution after the first layer (``conv_kernel_size``); v1 cannot. v1's
  LayerNorm normalises in float32 whatever the model's dtype; v2 uses torch's.

What relpos does with v1: without talking heads its attention is relpos's with
``share_att_key=False`` and no buckets, and ``from_transformers`` converts it
exactly: ``in_proj`` is split into the query, key and value weights, ``q_bias``
and ``v_bias`` become the query and value biases (the key bias is zero),
``pos_proj`` becomes ``pos_key_proj`` with a zero bias and ``pos_q_proj``
becomes ``pos_query_proj``. Talking heads, and a ``pos_att_type`` with entries
that relpos would count differently in ``s``, are refused.

Both versions apply dropout to the table inside each attention layer
(``pos_dropout``, with ``hidden_dropout_prob``). relpos's attention takes the
table as given; ``DisentangledEncoder`` applies that dropout, once per layer.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

import torch
from torch import nn

from .config import POS_ATT_TYPES
from .attention import DisentangledSelfAttention
from .encoder import EncoderLayer
from .transformer import DisentangledEncoder
from .model import DisentangledModel

# The top layer of the core: it imports the modules it converts, and they load it
# only when a user converts (inside from_transformers / to_transformers), so no
# core module imports it at import time. The classes to build are passed in
# (``cls``), so a subclass converts to itself.
A = TypeVar("A", bound=nn.Module)
E = TypeVar("E", bound=nn.Module)
M = TypeVar("M", bound=nn.Module)
#: A relpos module and the ``transformers`` module that holds the same weights.
Pair = tuple[nn.Module, nn.Module]

_WEIGHTS = ("query_proj", "key_proj", "value_proj", "pos_key_proj", "pos_query_proj")
# transformers' names for the exact (erf) GELU that relpos uses.
_GELU_NAMES = ("gelu", "gelu_python")
_NORM_REL_EBD = ("layer_norm", "none")


def _transformers_module(version: str):
    """``transformers``' modeling module of DeBERTa ``"v1"`` or ``"v2"``."""
    try:
        if version == "v1":
            from transformers.models.deberta import modeling_deberta as modeling
        else:
            from transformers.models.deberta_v2 import modeling_deberta_v2 as modeling
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "from_transformers needs the optional dependency transformers: "
            "pip install 'relpos[interop]'"
        ) from exc
    return modeling


# -- attention -----------------------------------------------------------------------


def from_transformers(
    cls: type[A],
    module: nn.Module,
    *,
    backend: str = "gather",
) -> A:
    """Copy a ``transformers`` DeBERTa (v2/v3 or v1) attention layer into ``cls``.

    The configuration (heads, span, buckets, position terms, shared keys, dropout)
    is read from the module itself; the weights are copied, not shared. The new
    module lives on the same device and dtype as ``module`` and has its
    train/eval mode. For v1 see the module docstring.
    """
    v2 = _transformers_module("v2").DisentangledSelfAttention
    v1 = _transformers_module("v1").DisentangledSelfAttention
    if isinstance(module, v2):
        return _from_v2(cls, module, backend=backend)
    if isinstance(module, v1):
        return _from_v1(cls, module, backend=backend)
    raise TypeError(
        "module must be a transformers DeBERTa-v2 or DeBERTa (v1) "
        f"DisentangledSelfAttention, got {type(module).__name__}"
    )


def _check_v2_attention(module: nn.Module) -> None:
    """Refuse a v2 attention configuration that relpos does not implement."""
    if not getattr(module, "relative_attention", False):
        raise ValueError(
            "module must use relative attention (config.relative_attention=True); "
            "this one has no relative-position terms to copy"
        )
    hidden_size = module.query_proj.in_features
    if module.all_head_size != hidden_size:
        raise ValueError(
            "module must have attention_head_size * num_attention_heads == hidden_size "
            f"(config.attention_head_size), got {module.all_head_size} != {hidden_size}"
        )


def _from_v2(
    cls: type[A], module: nn.Module, *, backend: str
) -> A:
    _check_v2_attention(module)
    weight = module.query_proj.weight
    ours = cls(
        hidden_size=module.query_proj.in_features,
        num_heads=module.num_attention_heads,
        max_relative_positions=module.max_relative_positions,
        position_buckets=module.position_buckets,
        pos_att_type=tuple(module.pos_att_type),
        share_att_key=module.share_att_key,
        dropout=module.dropout.p,
        backend=backend,
        own_table=False,  # the table lives in transformers' encoder
    ).to(device=weight.device, dtype=weight.dtype)
    _copy(_attention_pairs(ours, module))
    return ours.train(module.training)


def _from_v1(
    cls: type[A], module: nn.Module, *, backend: str
) -> A:
    """A v1 attention as relpos's with ``share_att_key=False`` and no buckets."""
    if not getattr(module, "relative_attention", False):
        raise ValueError(
            "module must use relative attention (config.relative_attention=True); "
            "this one has no relative-position terms to copy"
        )
    if module.talking_head or module.head_logits_proj is not None:
        raise ValueError(
            "module uses talking heads (config.talking_head=True: head_logits_proj "
            "and head_weights_proj mix the heads around the softmax); relpos has no "
            "such step"
        )
    pos_att_type = list(module.pos_att_type)
    if len(set(pos_att_type)) != len(pos_att_type) or not set(pos_att_type) <= set(
        POS_ATT_TYPES
    ):
        raise ValueError(
            f"module has pos_att_type={pos_att_type!r}; DeBERTa v1 divides by "
            "sqrt(d * (1 + len(pos_att_type))), so relpos converts only lists of "
            f"distinct entries from {POS_ATT_TYPES}"
        )
    heads, head_size = module.num_attention_heads, module.attention_head_size
    hidden_size = module.in_proj.in_features
    if heads * head_size != hidden_size:
        raise ValueError(
            "module must have attention_head_size * num_attention_heads == "
            f"hidden_size, got {heads * head_size} != {hidden_size}"
        )
    weight = module.in_proj.weight  # (h * 3 * d, hidden)
    ours = cls(
        hidden_size=hidden_size,
        num_heads=heads,
        max_relative_positions=module.max_relative_positions,
        position_buckets=-1,
        pos_att_type=tuple(pos_att_type),
        share_att_key=False,
        dropout=module.dropout.p,
        backend=backend,
        own_table=False,  # the table lives in transformers' encoder
    ).to(device=weight.device, dtype=weight.dtype)
    # in_proj's rows run head by head, each head holding its query, key and value rows.
    per_head = weight.unflatten(0, (heads, 3, head_size))  # (h, 3, d, hidden)
    query, key, value = per_head.unbind(1)  # (h, d, hidden) each
    with torch.no_grad():
        ours.query_proj.weight.copy_(query.flatten(0, 1))  # (hidden, hidden)
        ours.query_proj.bias.copy_(module.q_bias)
        ours.key_proj.weight.copy_(key.flatten(0, 1))  # (hidden, hidden)
        ours.key_proj.bias.zero_()
        ours.value_proj.weight.copy_(value.flatten(0, 1))  # (hidden, hidden)
        ours.value_proj.bias.copy_(module.v_bias)
        if "c2p" in ours.pos_att_type:
            ours.pos_key_proj.weight.copy_(module.pos_proj.weight)
            ours.pos_key_proj.bias.zero_()
        if "p2c" in ours.pos_att_type:
            ours.pos_query_proj.load_state_dict(module.pos_q_proj.state_dict())
    return ours.train(module.training)


# -- encoder -------------------------------------------------------------------------


def _transformers_encoder(module: nn.Module) -> nn.Module:
    """``module`` as a ``DebertaV2Encoder`` (a model's ``.encoder``), else TypeError."""
    modeling = _transformers_module("v2")
    if isinstance(module, modeling.DebertaV2Model):
        module = module.encoder
    if not isinstance(module, modeling.DebertaV2Encoder):
        raise TypeError(
            "module must be a transformers DebertaV2Encoder or DebertaV2Model, "
            f"got {type(module).__name__}"
        )
    return module


def _encoder_settings(module: nn.Module) -> dict[str, Any]:
    """The ``DisentangledEncoder`` arguments of a ``DebertaV2Encoder``, checked.

    A setting relpos does not implement is a ``ValueError`` naming it.
    """
    if not module.relative_attention:
        raise ValueError(
            "module has relative_attention=False: no relative-position table to copy"
        )
    if module.conv is not None:
        raise ValueError(
            "module has conv_kernel_size > 0 (a ConvLayer after the first layer); "
            "relpos has no such layer"
        )
    unknown = [entry for entry in module.norm_rel_ebd if entry not in _NORM_REL_EBD]
    if unknown:
        raise ValueError(
            f"module has norm_rel_ebd entries {unknown}; relpos implements "
            f"{' and '.join(repr(x) for x in _NORM_REL_EBD)} only"
        )
    if len(module.layer) == 0:
        raise ValueError(
            "module has num_hidden_layers=0; relpos needs at least one layer"
        )
    first = module.layer[0]
    hidden_act = first.output.config.hidden_act
    if not isinstance(hidden_act, str) or hidden_act not in _GELU_NAMES:
        raise ValueError(
            f"module has hidden_act={hidden_act!r}; relpos implements the exact GELU "
            f"only ({' or '.join(repr(x) for x in _GELU_NAMES)})"
        )
    attention = first.attention.self
    _check_v2_attention(attention)
    return dict(
        num_layers=len(module.layer),
        hidden_size=attention.query_proj.in_features,
        num_heads=attention.num_attention_heads,
        intermediate_size=first.intermediate.dense.out_features,
        max_relative_positions=attention.max_relative_positions,
        position_buckets=attention.position_buckets,
        pos_att_type=tuple(attention.pos_att_type),
        share_att_key=attention.share_att_key,
        dropout=first.output.dropout.p,
        attention_dropout=attention.dropout.p,
        layer_norm_eps=first.output.LayerNorm.eps,
        norm_rel_ebd="layer_norm" in module.norm_rel_ebd,
    )


def _attention_pairs(ours: nn.Module, theirs: nn.Module) -> Iterator[Pair]:
    """The projections of a relpos attention and a v2 one, name by name."""
    for name in _WEIGHTS:
        if hasattr(ours, name):
            yield getattr(ours, name), getattr(theirs, name)


def _encoder_pairs(ours: nn.Module, theirs: nn.Module) -> Iterator[Pair]:
    """Every (relpos module, ``transformers`` module) of two encoders that match.

    The one place that says which module of ``DisentangledEncoder`` is which
    module of ``DebertaV2Encoder``; both directions of the conversion copy along it.
    """
    if ours.table.weight.shape != theirs.rel_embeddings.weight.shape:
        raise ValueError(
            f"module has a table of shape {tuple(theirs.rel_embeddings.weight.shape)} "
            f"but its attention's span needs {tuple(ours.table.weight.shape)} "
            "(max_relative_positions, position_buckets)"
        )
    yield ours.table, theirs.rel_embeddings  # both hold the table as .weight
    if ours.table_norm is not None:
        yield ours.table_norm, theirs.LayerNorm
    for mine, layer in zip(ours.layers, theirs.layer, strict=True):
        yield from _attention_pairs(mine.attention, layer.attention.self)
        yield mine.attention_output, layer.attention.output.dense
        yield mine.attention_norm, layer.attention.output.LayerNorm
        yield mine.intermediate, layer.intermediate.dense
        yield mine.output, layer.output.dense
        yield mine.output_norm, layer.output.LayerNorm


def _copy(pairs: Iterable[Pair], *, to_transformers: bool = False) -> None:
    """Copy each pair's state: ``transformers`` into relpos, or the other way."""
    with torch.no_grad():
        for ours, theirs in pairs:
            target, source = (theirs, ours) if to_transformers else (ours, theirs)
            target.load_state_dict(source.state_dict())


def encoder_from_transformers(
    cls: type[E], module: nn.Module, *, backend: str = "gather"
) -> E:
    """Copy a ``transformers`` ``DebertaV2Encoder`` (or a model's) into ``cls``.

    Refused with a ``ValueError`` naming the setting: ``relative_attention=False``,
    ``conv_kernel_size > 0``, a ``norm_rel_ebd`` other than ``"layer_norm"`` or
    ``"none"``, a ``hidden_act`` other than the exact GELU, an
    ``attention_head_size`` that does not multiply out to ``hidden_size``, no
    layers. A v1 ``DebertaEncoder`` is a ``TypeError`` (convert its attention
    layers one by one).
    """
    module = _transformers_encoder(module)
    settings = _encoder_settings(module)
    weight = module.rel_embeddings.weight
    ours = cls(**settings, backend=backend).to(device=weight.device, dtype=weight.dtype)
    _copy(_encoder_pairs(ours, module))
    return ours.train(module.training)


# -- whole model ---------------------------------------------------------------------


def _embedding_settings(module: nn.Module) -> dict[str, Any]:
    """The ``Embeddings`` arguments of a ``DebertaV2Embeddings``."""
    words = module.word_embeddings
    types = module.token_type_embeddings
    return dict(
        vocab_size=words.num_embeddings,
        embedding_size=words.embedding_dim,
        position_biased_input=module.position_embeddings is not None,
        max_position_embeddings=module.position_ids.shape[-1],
        type_vocab_size=0 if types is None else types.num_embeddings,
        pad_token_id=words.padding_idx,
    )


def _embedding_pairs(ours: nn.Module, theirs: nn.Module) -> Iterator[Pair]:
    """Every (relpos module, ``transformers`` module) of two embeddings that match."""
    yield ours.word_embeddings, theirs.word_embeddings
    for name in ("position_embeddings", "token_type_embeddings", "embed_proj"):
        if getattr(ours, name) is not None:
            yield getattr(ours, name), getattr(theirs, name)
    yield ours.norm, theirs.LayerNorm


def model_from_transformers(
    cls: type[M], module: nn.Module, *, backend: str = "gather"
) -> M:
    """Copy a ``transformers`` ``DebertaV2Model`` (embeddings and encoder) into ``cls``.

    The encoder is refused as in ``encoder_from_transformers``; the embeddings
    must use the encoder's LayerNorm epsilon and dropout (one config gives both),
    and the model's ``z_steps`` (the enhanced mask decoder's repeats of the last
    layer) must be at most 1.
    """
    modeling = _transformers_module("v2")
    if not isinstance(module, modeling.DebertaV2Model):
        raise TypeError(
            "module must be a transformers DebertaV2Model (a task model's .deberta), "
            f"got {type(module).__name__}"
        )
    if getattr(module, "z_steps", 0) > 1:
        raise ValueError(
            f"module has z_steps={module.z_steps}: its last layer runs again on its "
            "own output; relpos's model runs each layer once"
        )
    settings = _encoder_settings(module.encoder)
    theirs = module.embeddings
    if theirs.LayerNorm.eps != settings["layer_norm_eps"]:
        raise ValueError(
            f"module has layer_norm_eps={theirs.LayerNorm.eps} in its embeddings but "
            f"{settings['layer_norm_eps']} in its encoder; relpos uses one for both"
        )
    if theirs.dropout.p != settings["dropout"]:
        raise ValueError(
            f"module has hidden_dropout_prob={theirs.dropout.p} in its embeddings but "
            f"{settings['dropout']} in its encoder; relpos uses one for both"
        )
    settings.update(_embedding_settings(theirs))
    weight = module.encoder.rel_embeddings.weight
    ours = cls(**settings, backend=backend).to(device=weight.device, dtype=weight.dtype)
    _copy(_embedding_pairs(ours.embeddings, theirs))
    _copy(_encoder_pairs(ours.encoder, module.encoder))
    return ours.train(module.training)


# -- relpos to transformers ----------------------------------------------------------


def _one(name: str, values: Iterable[object]) -> object:
    """The single value a ``transformers`` setting ``name`` takes, else ValueError."""
    found = list(dict.fromkeys(values))
    if len(found) != 1:
        raise ValueError(
            f"{name} takes the values {found} in different places of this module; "
            "a DebertaV2Config has one value for all of them"
        )
    return found[0]


def _encoder_config(encoder: nn.Module, embeddings: nn.Module | None) -> dict[str, Any]:
    """The ``DebertaV2Config`` fields of a ``DisentangledEncoder`` (and embeddings).

    A setting that ``transformers`` cannot express raises a ``ValueError``
    naming it; the backend is not part of the model and is dropped.
    """

    layers = list(encoder.layers)
    deberta = [
        isinstance(layer, EncoderLayer)
        and isinstance(layer.attention, DisentangledSelfAttention)
        and (layer.norm_first, layer.norm, layer.activation_name)
        == (False, "layer", "gelu")
        for layer in layers
    ]
    if not all(deberta):
        raise ValueError(
            "encoder.layers must all be post-LN, LayerNorm, GELU blocks around "
            "DisentangledSelfAttention (DebertaV2Layer has disentangled attention "
            "only)"
        )
    config = encoder.config
    for layer in layers:
        theirs = layer.attention.config.replace(backend=config.backend)
        if theirs != config:
            raise ValueError(
                "every layer's attention must have encoder.config (a DebertaV2Config "
                f"has one set of attention settings), got {theirs} and {config}"
            )
    if config.causal:
        raise ValueError(
            "causal=True: transformers' DeBERTa-v2 attention is bidirectional and "
            "has no causal setting"
        )
    if config.num_kv_heads not in (None, config.num_heads):
        raise ValueError(
            f"num_kv_heads={config.num_kv_heads}: transformers' DeBERTa-v2 has one "
            "key/value head per attention head"
        )
    for layer in layers:
        if layer.norm_first or layer.norm != "layer" or layer.gate is not None:
            raise ValueError(
                f"norm_first={layer.norm_first}, norm={layer.norm!r}, "
                f"activation={layer.activation_name!r}: transformers' DeBERTa-v2 "
                "layer is post-LayerNorm with GELU"
            )
        act = layer.activation
        if not isinstance(act, nn.GELU) or act.approximate != "none":
            raise ValueError(
                f"activation={act!r}: transformers' hidden_act='gelu' is the exact "
                "(erf) GELU"
            )
    norms = [m for m in encoder.modules() if isinstance(m, nn.LayerNorm)]
    hidden_dropouts = [layer.dropout for layer in layers] + [encoder.table_dropout]
    if embeddings is not None:
        norms.append(embeddings.norm)
        hidden_dropouts.append(embeddings.dropout)
    fields = dict(
        num_hidden_layers=len(layers),
        hidden_size=config.hidden_size,
        num_attention_heads=config.num_heads,
        intermediate_size=_one(
            "intermediate_size", (layer.intermediate_size for layer in layers)
        ),
        hidden_act="gelu",
        hidden_dropout_prob=_one(
            "dropout (hidden_dropout_prob)", (m.p for m in hidden_dropouts)
        ),
        attention_probs_dropout_prob=config.dropout,
        layer_norm_eps=_one("layer_norm_eps", (m.eps for m in norms)),
        relative_attention=True,
        max_relative_positions=config.max_relative_positions,
        position_buckets=config.position_buckets,
        pos_att_type=list(config.pos_att_type),
        share_att_key=config.share_att_key,
        norm_rel_ebd="layer_norm" if encoder.norm_rel_ebd else "none",
    )
    if embeddings is not None:
        fields.update(
            vocab_size=embeddings.vocab_size,
            embedding_size=embeddings.embedding_size,
            position_biased_input=embeddings.position_biased_input,
            max_position_embeddings=embeddings.max_position_embeddings,
            type_vocab_size=embeddings.type_vocab_size,
            pad_token_id=embeddings.pad_token_id,
        )
    return fields


def to_transformers(module: nn.Module) -> nn.Module:
    """A ``transformers`` DeBERTa-v2 module equal to a relpos one, weights copied.

    A ``DisentangledModel`` becomes a ``DebertaV2Model``, a ``DisentangledEncoder``
    a ``DebertaV2Encoder``; the ``DebertaV2Config`` (``.config`` of the model) is
    built from the relpos settings. Settings that ``transformers`` cannot express
    raise a ``ValueError`` naming the setting: ``causal=True``, LayerNorm epsilons
    or hidden dropouts that differ between places, layers other than
    ``DisentangledEncoderLayer`` or with other settings. The attention backend is
    not a property of the model and is dropped. The result has the module's
    device, dtype and train/eval mode.
    """

    modeling = _transformers_module("v2")
    if isinstance(module, DisentangledModel):
        encoder, embeddings = module.encoder, module.embeddings
    elif isinstance(module, DisentangledEncoder):
        encoder, embeddings = module, None
    else:
        raise TypeError(
            "module must be a relpos DisentangledModel or DisentangledEncoder, "
            f"got {type(module).__name__}"
        )
    config = modeling.DebertaV2Config(**_encoder_config(encoder, embeddings))
    weight = encoder.table.weight
    if embeddings is None:
        theirs = modeling.DebertaV2Encoder(config)
    else:
        theirs = modeling.DebertaV2Model(config)
    theirs = theirs.to(device=weight.device, dtype=weight.dtype)
    if embeddings is not None:
        _copy(_embedding_pairs(embeddings, theirs.embeddings), to_transformers=True)
        encoder_theirs = theirs.encoder
    else:
        encoder_theirs = theirs
    _copy(_encoder_pairs(encoder, encoder_theirs), to_transformers=True)
    return theirs.train(module.training)


__all__ = [
    "from_transformers",
    "encoder_from_transformers",
    "model_from_transformers",
    "to_transformers",
]
