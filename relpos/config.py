"""The attention settings, in one frozen dataclass checked in one place.

``DisentangledSelfAttention``, ``DisentangledEncoderLayer`` and
``DisentangledEncoder`` take the same nine settings; they are the fields of
:class:`AttentionConfig`, with their defaults written only here (nanoGPT's
``GPTConfig`` is the model). ``__post_init__`` checks every field and raises a
``TypeError``/``ValueError`` naming it, so a config that exists is valid: the
modules built from it check nothing again. The bucket rule itself lives in
``relpos.positions.check_buckets``, called from here.

Why frozen: a module keeps its config as ``module.config``; a frozen one cannot
drift from the parameters it built. ``dataclasses.replace(config, backend="flex")``
makes a changed copy (and checks it again). Every field has a plain type (int,
float, bool, str, a tuple of str), so a command line can build one argument per
field from ``dataclasses.fields(AttentionConfig)``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from .checks import check_bool, check_choice, check_int, check_rate
from .positions import attention_span, check_buckets

#: The position terms DeBERTa can add, in the order the modules store them.
POS_ATT_TYPES = ("c2p", "p2c")


@dataclass(frozen=True)
class AttentionConfig:
    """The settings of DeBERTa's disentangled self-attention.

    Args:
        hidden_size: model width; must be divisible by ``num_heads``.
        num_heads: number of attention heads.
        max_relative_positions: ``k`` (clipping span), or the ``max_position`` of
            the log buckets when ``position_buckets > 0``.
        position_buckets: log buckets per side (DeBERTa-v2/v3), or -1 for none.
        pos_att_type: which position terms to add: any of ``"c2p"``, ``"p2c"``
            (a list is accepted and stored as a tuple in that order).
        share_att_key: project the table with the content query/key projections
            (DeBERTa-v3) instead of separate ``pos_query_proj``/``pos_key_proj``.
        dropout: dropout on the attention probabilities (training only).
        backend: a name in ``relpos.BACKENDS`` (``"naive"``, ``"gather"``,
            ``"flex"``, or one registered with ``relpos.register_backend``).
        causal: query ``i`` attends to keys ``j <= i`` only (a decoder's
            attention), on every backend; see ``relpos.core``.
        num_kv_heads: key/value heads of grouped-query attention (``None``:
            ``num_heads``); with ``share_att_key`` the position keys are
            grouped as the content keys are.
    """

    hidden_size: int
    num_heads: int
    max_relative_positions: int = 512
    position_buckets: int = -1
    pos_att_type: tuple[str, ...] = POS_ATT_TYPES
    share_att_key: bool = True
    dropout: float = 0.0
    backend: str = "gather"
    causal: bool = False
    num_kv_heads: int | None = None

    def __post_init__(self) -> None:
        from .backends import BACKENDS

        hidden = check_int("hidden_size", self.hidden_size, minimum=1)
        heads = check_int("num_heads", self.num_heads, minimum=1)
        if hidden % heads:
            raise ValueError(
                "hidden_size must be divisible by num_heads, got "
                f"hidden_size={hidden} and num_heads={heads}"
            )
        k = check_int("max_relative_positions", self.max_relative_positions, minimum=1)
        buckets = check_buckets(k, self.position_buckets)
        terms = self.pos_att_type
        if isinstance(terms, str) or not isinstance(terms, (tuple, list)):
            raise TypeError(
                f"pos_att_type must be a tuple or list drawn from {POS_ATT_TYPES}, "
                f"got {terms!r}"
            )
        for term in terms:
            check_choice("pos_att_type entries", term, POS_ATT_TYPES)
        check_bool("share_att_key", self.share_att_key)
        check_bool("causal", self.causal)
        check_choice("backend", self.backend, BACKENDS)
        if self.num_kv_heads is not None:
            groups = check_int("num_kv_heads", self.num_kv_heads, minimum=1)
            if heads % groups:
                raise ValueError(
                    "num_kv_heads must divide num_heads, got "
                    f"num_kv_heads={groups} and num_heads={heads}"
                )
        normal = {
            "hidden_size": hidden,
            "num_heads": heads,
            "max_relative_positions": k,
            "position_buckets": buckets,
            "pos_att_type": tuple(t for t in POS_ATT_TYPES if t in terms),
            "dropout": check_rate("dropout", self.dropout),
        }
        for name, value in normal.items():
            object.__setattr__(self, name, value)

    @property
    def head_size(self) -> int:
        """``d = hidden_size // num_heads``."""
        return self.hidden_size // self.num_heads

    @property
    def span(self) -> int:
        """``k`` of the table: ``position_buckets`` with buckets, else the span."""
        return attention_span(self.max_relative_positions, self.position_buckets)

    @property
    def scale(self) -> float:
        """``1 / sqrt(d * s)``, ``s`` = 1 plus the number of position terms."""
        return 1.0 / math.sqrt(self.head_size * (1 + len(self.pos_att_type)))

    def replace(self, **changes: Any) -> "AttentionConfig":
        """A copy with ``changes`` applied, checked again."""
        return dataclasses.replace(self, **changes)


#: The defaults of the optional fields, read from the dataclass (for signatures).
DEFAULTS: dict[str, Any] = {
    f.name: f.default
    for f in dataclasses.fields(AttentionConfig)
    if f.default is not dataclasses.MISSING
}


def resolve_config(
    config: AttentionConfig | None, settings: dict[str, Any]
) -> AttentionConfig:
    """``config`` itself, or an ``AttentionConfig`` built from ``settings``.

    ``settings`` are the values a constructor received; with a ``config``, each
    must be ``None`` (for ``hidden_size``, ``num_heads``) or its default, else
    the two disagree: a ``ValueError`` naming the setting.
    """
    if config is None:
        return AttentionConfig(**settings)
    if not isinstance(config, AttentionConfig):
        raise TypeError(
            "config must be a relpos.AttentionConfig or None, "
            f"got {type(config).__name__}"
        )
    for name, value in settings.items():
        default = DEFAULTS.get(name)
        given = value is not None and not _equal(value, default)
        if given and not _equal(value, getattr(config, name)):
            raise ValueError(
                f"{name}={value!r} disagrees with config.{name}="
                f"{getattr(config, name)!r}; pass the settings either as config or "
                "as arguments"
            )
    return config


def _equal(a: object, b: object) -> bool:
    if isinstance(a, list):
        a = tuple(a)
    return type(a) is type(b) and a == b


__all__ = ["AttentionConfig", "DEFAULTS", "POS_ATT_TYPES", "resolve_config"]
