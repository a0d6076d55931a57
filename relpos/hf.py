"""relpos's stack as a ``transformers`` model: any scheme, saved, loaded and decoded.

``RelposConfig`` holds every argument of ``relpos.TransformerLM`` as a field (plain
JSON values), and ``RelposForCausalLM`` wraps the ``TransformerLM`` it builds, so
``transformers``' own machinery works on every scheme::

    import relpos.hf  # registers "relpos" with AutoConfig and AutoModelForCausalLM

    config = relpos.hf.RelposConfig(vocab_size=100, scheme="alibi", num_layers=2,
                                    hidden_size=64, num_heads=4)
    model = relpos.hf.RelposForCausalLM(config)
    model.save_pretrained(path)
    model = transformers.AutoModelForCausalLM.from_pretrained(path)
    tokens = model.generate(input_ids, max_new_tokens=8)   # transformers' generate

Decoding caches for real: ``RelposCache`` is relpos's ``KVCache`` behind the
``transformers.Cache`` interface (``get_seq_length`` and the properties
``generate`` reads), created by the first forward call with ``use_cache``, one
per call to ``generate``. Greedy and sampled decoding (temperature, top-k,
top-p) work; beam search and assisted decoding, which reorder or crop a cache,
run with ``use_cache=False`` (the whole sequence again at every step).

Positions. relpos counts a sequence's positions from its first real token, so a
left-padded prompt decodes as it would alone: a 2-D ``attention_mask`` (1 for a
token, 0 for padding, over the cached tokens and the new ones, as ``generate``
passes it) gives each new token the position ``(number of tokens before it)``,
unless ``position_ids`` are given.

This module needs a ``transformers`` whose models take and return ``cache`` (the
5.x name of ``past_key_values``; tested with 5.24); ``import relpos`` does not
import it.

Shape legend:
    b  batch      n  new tokens      t  cached tokens      v  vocabulary
"""

from __future__ import annotations

import json
import numbers
from typing import Any

import torch
import torch.nn.functional as F
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    GenerationMixin,
    PretrainedConfig,
    PreTrainedModel,
)
from transformers.cache_utils import Cache
from transformers.modeling_outputs import CausalLMOutputWithPast

from .backends import BACKENDS
from .cache import KVCache
from .checks import check_bool, check_choice, check_int, check_rate
from .encoder import ACTIVATIONS, NORMS
from .transformer import TransformerLM, stack_schemes

if "cache" not in CausalLMOutputWithPast.__dataclass_fields__:
    raise ImportError(
        "relpos.hf needs a transformers whose models take and return `cache` "
        "(5.x; tested with 5.24): pip install -U transformers"
    )

#: The config fields that are ``TransformerLM``'s arguments, in its order.
LM_FIELDS = (
    "vocab_size", "scheme", "num_layers", "hidden_size", "num_heads",
    "intermediate_size", "causal", "backend", "num_kv_heads", "norm_first", "norm",
    "activation", "dropout", "layer_norm_eps", "attention_settings",
)


class RelposConfig(PretrainedConfig):
    """Every argument of ``relpos.TransformerLM``, checked, as JSON-serialisable fields.

    The fields ``vocab_size``, ``scheme``, ``num_layers``, ``hidden_size``,
    ``num_heads``, ``intermediate_size``, ``causal``, ``backend``,
    ``num_kv_heads``, ``norm_first``, ``norm``, ``activation``, ``dropout``,
    ``layer_norm_eps`` and ``attention_settings`` are as for
    ``relpos.TransformerLM`` (``attention_settings``: a dict of plain JSON
    values, so that a saved config loads back equal).

    Args:
        use_cache: whether a forward call returns a ``RelposCache`` by default
            (default: ``causal``; a bidirectional model has no cache).
        kwargs: ``transformers``' own (``eos_token_id``, ``pad_token_id``, ...).

    A bad value raises ``ValueError`` (``TypeError`` for a wrong type) naming its
    field. ``transformers``' usual names read the same fields:
    ``num_hidden_layers``, ``num_attention_heads``, ``num_key_value_heads``.
    """

    model_type = "relpos"
    attribute_map = {
        "num_hidden_layers": "num_layers",
        "num_attention_heads": "num_heads",
        "num_key_value_heads": "num_kv_heads",
    }

    def __init__(
        self,
        vocab_size: int = 256,
        scheme: str = "alibi",
        num_layers: int = 2,
        hidden_size: int = 64,
        num_heads: int = 4,
        intermediate_size: int | None = None,
        causal: bool = True,
        backend: str = "gather",
        num_kv_heads: int | None = None,
        norm_first: bool = False,
        norm: str = "layer",
        activation: str = "gelu",
        dropout: float = 0.0,
        layer_norm_eps: float = 1e-7,
        attention_settings: dict[str, Any] | None = None,
        use_cache: bool | None = None,
        **kwargs: Any,
    ) -> None:
        self.vocab_size = check_int("vocab_size", vocab_size, minimum=1)
        self.scheme = check_choice("scheme", scheme, tuple(stack_schemes()))
        self.num_layers = check_int("num_layers", num_layers, minimum=1)
        self.hidden_size = check_int("hidden_size", hidden_size, minimum=1)
        self.num_heads = check_int("num_heads", num_heads, minimum=1)
        if self.hidden_size % self.num_heads:
            raise ValueError(
                f"hidden_size must be a multiple of num_heads, got hidden_size="
                f"{hidden_size} and num_heads={num_heads}"
            )
        self.intermediate_size = None
        if intermediate_size is not None:
            self.intermediate_size = check_int(
                "intermediate_size", intermediate_size, minimum=1
            )
        self.causal = check_bool("causal", causal)
        self.backend = check_choice("backend", backend, BACKENDS)
        self.num_kv_heads = None
        if num_kv_heads is not None:
            self.num_kv_heads = check_int("num_kv_heads", num_kv_heads, minimum=1)
            if self.num_heads % self.num_kv_heads:
                raise ValueError(
                    f"num_kv_heads must divide num_heads, got num_kv_heads="
                    f"{num_kv_heads} and num_heads={num_heads}"
                )
        self.norm_first = check_bool("norm_first", norm_first)
        self.norm = check_choice("norm", norm, NORMS)
        self.activation = check_choice("activation", activation, ACTIVATIONS)
        self.dropout = check_rate("dropout", dropout)
        self.layer_norm_eps = _check_eps(layer_norm_eps)
        self.attention_settings = _check_settings(attention_settings)
        if use_cache is None:
            use_cache = self.causal
        self.use_cache = check_bool("use_cache", use_cache)
        if self.use_cache and not self.causal:
            raise ValueError(
                "use_cache must be False when causal is False: a cache is for a "
                "decoder"
            )
        kwargs.setdefault("tie_word_embeddings", False)  # the head has its own
        super().__init__(**kwargs)

    def lm_arguments(self) -> dict[str, Any]:
        """The keyword arguments of ``relpos.TransformerLM`` this config holds."""
        arguments = {name: getattr(self, name) for name in LM_FIELDS}
        if arguments["attention_settings"] is not None:  # the model's own copy
            arguments["attention_settings"] = dict(arguments["attention_settings"])
        return arguments


def _check_eps(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"layer_norm_eps must be a float > 0, got {value!r}")
    if not value > 0:
        raise ValueError(f"layer_norm_eps must be a float > 0, got {value!r}")
    return float(value)


def _check_settings(settings: object) -> dict[str, Any] | None:
    """``attention_settings`` as a dict that a JSON round trip leaves equal."""
    if settings is None:
        return None
    if not isinstance(settings, dict):
        raise TypeError(
            "attention_settings must be a dict of the attention's constructor "
            f"arguments, got {type(settings).__name__}"
        )
    try:
        same = json.loads(json.dumps(settings)) == settings
    except (TypeError, ValueError):
        same = False
    if not same:
        raise ValueError(
            "attention_settings must hold plain JSON values (str keys; numbers, "
            f"strings, bools, None, lists, dicts) to be saved, got {settings!r}"
        )
    return dict(settings)


class RelposCache(Cache):
    """relpos's ``KVCache`` behind the ``transformers.Cache`` interface.

    ``generate`` reads a cache's length and properties; the model reads and
    writes ``kv``. Reordering, cropping and repeating (beam search, assisted
    decoding) are refused: decode those with ``use_cache=False``.

    Attributes:
        kv: the ``relpos.KVCache`` every layer of the stack reads and writes.
    """

    is_compileable = False  # generate must not build a static mask for it

    def __init__(self, kv: KVCache | None = None) -> None:
        super().__init__(layers=[])
        if kv is not None and not isinstance(kv, KVCache):
            raise TypeError(f"kv must be a relpos.KVCache, got {type(kv).__name__}")
        self.kv = KVCache() if kv is None else kv

    def __repr__(self) -> str:
        return f"RelposCache({self.kv!r})"

    def __len__(self) -> int:
        return len(self.kv._layers)  # transformers' reading: the layers held

    def get_seq_length(self, layer_idx: int = 0) -> int:
        """The number of cached positions (every layer holds the same)."""
        return self.kv.length

    def get_max_length(self, layer_idx: int | None = None) -> int:
        return self.kv.length

    @property
    def is_croppable(self) -> bool:
        return False

    @property
    def is_linear(self) -> list[bool]:
        return [False]  # attention keys and values, not a recurrent state

    @property
    def is_sliding(self) -> list[bool]:
        return [False]

    @property
    def is_dummy(self) -> list[bool]:
        return [False]

    def reset(self) -> None:
        self.kv.reset()

    def crop(self, tokens_to_remove: int) -> None:
        if tokens_to_remove:
            self._refuse("crop")

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        self._refuse("reorder_cache (beam search)")

    def batch_repeat_interleave(self, repeats: int) -> None:
        self._refuse("batch_repeat_interleave")

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        self._refuse("batch_select_indices")

    def _refuse(self, what: str) -> None:
        raise ValueError(
            f"RelposCache does not support {what}: run generate(..., "
            "use_cache=False) to recompute every step instead"
        )


class RelposForCausalLM(PreTrainedModel, GenerationMixin):
    """A ``relpos.TransformerLM`` as a ``transformers`` causal language model.

    Attributes:
        model: the wrapped ``relpos.TransformerLM`` (``relpos.generate(model.model,
            ...)`` decodes it with relpos's own loop).

    Shapes:
        input_ids: ``(b, n)``; attention_mask: ``(b, t + n)`` or ``(b, n)``;
        logits: ``(b, n, v)``
    """

    config_class = RelposConfig
    base_model_prefix = "model"
    main_input_name = "input_ids"

    def __init__(self, config: RelposConfig) -> None:
        if not isinstance(config, RelposConfig):
            raise TypeError(
                f"config must be a relpos.hf.RelposConfig, got {type(config).__name__}"
            )
        super().__init__(config)
        self.model = TransformerLM(**config.lm_arguments())
        self.post_init()

    def _init_weights(self, module: torch.nn.Module) -> None:
        """Nothing: relpos's modules initialise themselves when built."""

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        return False  # forward makes a RelposCache, not a DynamicCache

    @classmethod
    def from_pretrained(cls, *args: Any, **kwargs: Any):
        """``PreTrainedModel.from_pretrained``, then the buffers that are not saved.

        ``transformers`` builds the model on the meta device and loads the saved
        weights; the schemes' unsaved buffers (ALiBi's slopes, the lookup tables
        of buckets) are computed again from the config.
        """
        loaded = super().from_pretrained(*args, **kwargs)
        model = loaded[0] if isinstance(loaded, tuple) else loaded
        model._restore_buffers()
        return loaded

    def _restore_buffers(self) -> None:
        """The non-persistent buffers of a freshly built model of this config."""
        with torch.random.fork_rng(devices=[]), torch.device("cpu"):
            fresh = TransformerLM(**self.config.lm_arguments())
        fresh_modules = dict(fresh.named_modules())
        for name, module in self.model.named_modules():
            for key in module._non_persistent_buffers_set:
                old = module._buffers[key]
                new = fresh_modules[name]._buffers[key]
                if old is not None and new is not None:
                    new = new.to(device=old.device, dtype=old.dtype)
                module._buffers[key] = new

    def get_input_embeddings(self) -> torch.nn.Module:
        return self.model.embed

    def set_input_embeddings(self, value: torch.nn.Module) -> None:
        self.model.embed = value

    def get_output_embeddings(self) -> torch.nn.Module:
        return self.model.head

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.LongTensor | None = None,
        cache: RelposCache | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        past_key_values: RelposCache | None = None,
        return_dict: bool | None = None,
        **kwargs: Any,
    ) -> CausalLMOutputWithPast | tuple:
        """Logits (and the loss with ``labels``) of the new tokens, with a cache.

        ``past_key_values`` is ``cache``'s older name. ``labels`` are shifted
        inside: position ``i`` predicts ``labels[:, i + 1]``; ``-100`` is ignored.

        Shapes:
            input_ids: ``(b, n)``; attention_mask: ``(b, t + n)`` or ``(b, n)``;
            position_ids: ``(b, n)``; labels: ``(b, n)``; logits: ``(b, n, v)``
        """
        cache = _one_cache(cache, past_key_values)
        _check_extra(kwargs)
        if input_ids is None:
            raise ValueError("input_ids must be given")
        use_cache = self.config.use_cache if use_cache is None else use_cache
        use_cache = check_bool("use_cache", use_cache) or cache is not None
        if use_cache and not self.config.causal:
            raise ValueError(
                "use_cache must be False (and cache None) for a model with "
                "causal=False: a cache is for a decoder"
            )
        if use_cache and cache is None:
            cache = RelposCache()
        kv = cache.kv if use_cache else None
        past = 0 if kv is None else kv.length
        mask, positions = _mask_and_positions(attention_mask, input_ids, past)
        if position_ids is not None:
            positions = position_ids
        logits = self.model(input_ids, mask, positions=positions, cache=kv)  # (b, n, v)
        loss = None
        if labels is not None:
            loss = causal_lm_loss(logits, labels, kwargs.get("num_items_in_batch"))
        output = CausalLMOutputWithPast(
            loss=loss, logits=logits, cache=cache if use_cache else None
        )
        return output if return_dict is not False else output.to_tuple()


def causal_lm_loss(
    logits: torch.Tensor,
    labels: torch.Tensor,
    num_items_in_batch: int | torch.Tensor | None = None,
) -> torch.Tensor:
    """The mean next-token cross-entropy: position ``i`` predicts ``labels[:, i+1]``.

    Labels of ``-100`` are ignored (``transformers``' convention). With
    ``num_items_in_batch`` (a ``Trainer`` accumulating gradients passes it) the
    sum is divided by it instead of by this batch's count.

    Shapes:
        logits: ``(b, n, v)``; labels: ``(b, n)``; output: ``()``
    """
    if labels.shape != logits.shape[:2]:
        raise ValueError(
            f"labels must have shape (b, n) = {tuple(logits.shape[:2])}, got "
            f"{tuple(labels.shape)}"
        )
    v = logits.shape[-1]
    predicted = logits[:, :-1].reshape(-1, v).float()  # (b * (n - 1), v)
    target = labels[:, 1:].reshape(-1).to(logits.device)  # (b * (n - 1),)
    if num_items_in_batch is None:
        return F.cross_entropy(predicted, target, ignore_index=-100)
    total = F.cross_entropy(predicted, target, ignore_index=-100, reduction="sum")
    return total / num_items_in_batch


def _one_cache(cache: object, past_key_values: object) -> RelposCache | None:
    if cache is not None and past_key_values is not None:
        raise ValueError("give cache or past_key_values (its older name), not both")
    cache = past_key_values if cache is None else cache
    if cache is not None and not isinstance(cache, RelposCache):
        raise TypeError(
            "cache must be a relpos.hf.RelposCache (or None, to start one), got "
            f"{type(cache).__name__}"
        )
    return cache


#: Keywords transformers may pass that change nothing when off.
_IGNORED_WHEN_OFF = ("output_attentions", "output_hidden_states")


def _check_extra(kwargs: dict[str, Any]) -> None:
    for key, value in kwargs.items():
        if key in _IGNORED_WHEN_OFF and not value:
            continue
        if key == "num_items_in_batch":  # a Trainer's, read by the loss
            continue
        raise TypeError(f"RelposForCausalLM.forward got an unsupported keyword {key!r}")


def _mask_and_positions(
    attention_mask: torch.Tensor | None, input_ids: torch.Tensor, past: int
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """The mask for the stack and, from a 2-D 0/1 mask, the new tokens' positions.

    A 0/1 or bool ``(b, t + n)`` mask (``generate``'s) counts each sequence's
    positions from its first token; so does a ``(b, n)`` one with no cache.
    Any other mask goes to the stack as it is, with relpos's default positions.

    Shapes:
        attention_mask: ``(b, t + n)`` or ``(b, n)``; output: the mask, ``(b, n)``
    """
    if attention_mask is None or attention_mask.dim() != 2:
        return attention_mask, None
    if attention_mask.dtype.is_floating_point or attention_mask.is_complex():
        return attention_mask, None  # relpos reads it (an additive mask, say)
    b, n = input_ids.shape
    if tuple(attention_mask.shape) != (b, past + n):
        return attention_mask, None
    keep = attention_mask != 0  # (b, t + n)
    positions = (keep.cumsum(-1) - 1).clamp(min=0)  # (b, t + n), from a token
    return keep, positions[:, past:]  # (b, n): the new tokens'


AutoConfig.register("relpos", RelposConfig, exist_ok=True)
AutoModelForCausalLM.register(RelposConfig, RelposForCausalLM, exist_ok=True)

__all__ = ["LM_FIELDS", "RelposCache", "RelposConfig", "RelposForCausalLM",
           "causal_lm_loss"]
