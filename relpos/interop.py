"""Interoperability with ``transformers``' DeBERTa-v2 attention (an optional dependency)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

if TYPE_CHECKING:  # pragma: no cover
    from .attention import DisentangledSelfAttention

_WEIGHTS = ("query_proj", "key_proj", "value_proj", "pos_key_proj", "pos_query_proj")


def _reference_class() -> type:
    try:
        from transformers.models.deberta_v2.modeling_deberta_v2 import DisentangledSelfAttention
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "from_transformers needs the optional dependency transformers: "
            "pip install 'relpos[interop]'"
        ) from exc
    return DisentangledSelfAttention


def from_transformers(
    cls: type["DisentangledSelfAttention"], module: nn.Module, *, backend: str = "gather"
) -> "DisentangledSelfAttention":
    """Copy a ``transformers`` DeBERTa-v2 ``DisentangledSelfAttention`` into ``cls``.

    The configuration (heads, span, buckets, position terms, shared keys, dropout)
    is read from the module itself; the weights are copied, not shared. The new
    module lives on the same device and dtype as ``module``.

    Shapes:
        (copies weights; no tensors in or out)
    """
    reference = _reference_class()
    if not isinstance(module, reference):
        raise TypeError(
            "module must be a transformers DeBERTa-v2 DisentangledSelfAttention, "
            f"got {type(module).__name__}"
        )
    if not getattr(module, "relative_attention", False):
        raise ValueError(
            "module must use relative attention (config.relative_attention=True); "
            "this one has no relative-position terms to copy"
        )
    hidden_size = module.query_proj.in_features
    if module.all_head_size != hidden_size:
        raise ValueError(
            "module must have attention_head_size * num_attention_heads == hidden_size, "
            f"got {module.all_head_size} != {hidden_size}"
        )
    weight = module.query_proj.weight
    ours = cls(
        hidden_size=hidden_size,
        num_heads=module.num_attention_heads,
        max_relative_positions=module.max_relative_positions,
        position_buckets=module.position_buckets,
        pos_att_type=tuple(module.pos_att_type),
        share_att_key=module.share_att_key,
        dropout=module.dropout.p,
        backend=backend,
    ).to(device=weight.device, dtype=weight.dtype)
    with torch.no_grad():
        for name in _WEIGHTS:
            if hasattr(ours, name):
                getattr(ours, name).load_state_dict(getattr(module, name).state_dict())
    ours.train(module.training)
    return ours


__all__ = ["from_transformers"]
