"""Test helpers: ``transformers`` DeBERTa references, padding masks, random inputs.

Not a test module (the leading underscore keeps pytest from collecting it).
"""

from __future__ import annotations

import torch
from transformers import DebertaConfig, DebertaV2Config
from transformers.models.deberta.modeling_deberta import (
    DisentangledSelfAttention as ReferenceV1Attention,
)
from transformers.models.deberta.modeling_deberta import (
    build_relative_position as build_v1_relative_position,
)
from transformers.models.deberta_v2.modeling_deberta_v2 import DebertaV2Encoder
from transformers.models.deberta_v2.modeling_deberta_v2 import (
    DisentangledSelfAttention as ReferenceAttention,
)
from transformers.models.deberta_v2.modeling_deberta_v2 import build_relative_position

import relpos


def reference_attention(
    *,
    hidden: int = 32,
    heads: int = 4,
    max_relative_positions: int = 8,
    position_buckets: int = -1,
    pos_att_type: tuple[str, ...] = ("c2p", "p2c"),
    share_att_key: bool = True,
    dtype: torch.dtype = torch.float32,
) -> ReferenceAttention:
    """A ``transformers`` DisentangledSelfAttention with random weights, in eval mode."""
    config = DebertaV2Config(
        hidden_size=hidden,
        num_attention_heads=heads,
        relative_attention=True,
        max_relative_positions=max_relative_positions,
        position_buckets=position_buckets,
        pos_att_type=list(pos_att_type),
        share_att_key=share_att_key,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    return ReferenceAttention(config).to(dtype).eval()


def reference_forward(
    ref: ReferenceAttention, x: torch.Tensor, table: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    """Run the reference with the pairwise mask it expects.

    Shapes:
        x: (b, n, hidden); table: (2 * span, hidden); mask: (b, n)
        output: (b, n, hidden)
    """
    rel = build_relative_position(
        x, x, bucket_size=ref.position_buckets, max_position=ref.max_relative_positions
    )
    pair_mask = mask[:, None, None, :] * mask[:, None, :, None]  # (b, 1, i, j)
    with torch.no_grad():
        return ref(x, pair_mask, relative_pos=rel, rel_embeddings=table)[0]


def padding_mask(n: int, dtype: torch.dtype = torch.long) -> torch.Tensor:
    """A batch of three masks: no padding, right padding, left padding.

    Shapes:
        output: (3, n)
    """
    mask = torch.ones(3, n, dtype=dtype)
    pad = max(1, n // 3) if n > 1 else 0
    if pad:
        mask[1, n - pad :] = 0  # right padding
        mask[2, :pad] = 0  # left padding
    return mask


def random_inputs(
    b: int, n: int, hidden: int, span: int, dtype: torch.dtype = torch.float32, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Hidden states ``(b, n, hidden)`` and a table ``(2 * span, hidden)``."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, n, hidden, generator=g, dtype=torch.float64).to(dtype)
    table = torch.randn(2 * span, hidden, generator=g, dtype=torch.float64).to(dtype)
    return x, table


def make_module(
    backend: str,
    *,
    hidden: int = 32,
    heads: int = 4,
    max_relative_positions: int = 8,
    position_buckets: int = -1,
    pos_att_type: tuple[str, ...] = ("c2p", "p2c"),
    share_att_key: bool = True,
    dtype: torch.dtype = torch.float32,
    seed: int = 0,
) -> relpos.DisentangledSelfAttention:
    """A relpos module with seeded random weights, in eval mode; the tests hand it
    its table (``own_table=False``)."""
    torch.manual_seed(seed)
    module = relpos.DisentangledSelfAttention(
        hidden,
        heads,
        max_relative_positions=max_relative_positions,
        position_buckets=position_buckets,
        pos_att_type=pos_att_type,
        share_att_key=share_att_key,
        backend=backend,
        own_table=False,
    )
    return module.to(dtype).eval()


def with_backend(
    module: relpos.DisentangledSelfAttention, backend: str
) -> relpos.DisentangledSelfAttention:
    """A copy of ``module`` (same weights) that runs ``backend``."""
    clone = relpos.DisentangledSelfAttention(
        module.hidden_size,
        module.num_heads,
        max_relative_positions=module.max_relative_positions,
        position_buckets=module.position_buckets,
        pos_att_type=module.pos_att_type,
        share_att_key=module.share_att_key,
        backend=backend,
        own_table=module.table is not None,
    )
    clone = clone.to(module.query_proj.weight.dtype)
    clone.load_state_dict(module.state_dict())
    return clone.train(module.training)


# -- whole encoders (DeBERTa-v2/v3) ---------------------------------------------------


def reference_encoder(
    *,
    layers: int = 2,
    hidden: int = 32,
    heads: int = 4,
    intermediate: int = 64,
    max_relative_positions: int = 8,
    position_buckets: int = -1,
    pos_att_type: tuple[str, ...] = ("c2p", "p2c"),
    share_att_key: bool = True,
    norm_rel_ebd: str = "layer_norm",
    dropout: float = 0.0,
    attention_dropout: float = 0.0,
    dtype: torch.dtype = torch.float32,
    seed: int = 0,
    **config: object,
) -> DebertaV2Encoder:
    """A ``transformers`` DebertaV2Encoder with seeded random weights, in eval mode.

    The LayerNorm weights and biases are moved off 1 and 0, so that a LayerNorm
    copied wrongly (or not at all) shows in the output. Extra keywords go to the
    DebertaV2Config (for settings relpos refuses).
    """
    torch.manual_seed(seed)
    settings = dict(
        hidden_size=hidden,
        num_attention_heads=heads,
        intermediate_size=intermediate,
        num_hidden_layers=layers,
        relative_attention=True,
        max_relative_positions=max_relative_positions,
        position_buckets=position_buckets,
        pos_att_type=list(pos_att_type),
        share_att_key=share_att_key,
        norm_rel_ebd=norm_rel_ebd,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=attention_dropout,
    )
    settings.update(config)
    ref = DebertaV2Encoder(DebertaV2Config(**settings))
    with torch.no_grad():
        for name, param in ref.named_parameters():
            if "LayerNorm" in name:
                param.add_(0.2 * torch.randn_like(param))
    return ref.to(dtype).eval()


def reference_encoder_forward(
    ref: torch.nn.Module, x: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    """The reference encoder's last hidden state (it builds its own pairwise mask).

    Shapes:
        x: (b, n, hidden); mask: (b, n)
        output: (b, n, hidden)
    """
    return ref(x, mask, output_hidden_states=False).last_hidden_state


# -- DeBERTa v1 attention ------------------------------------------------------------


def reference_v1_attention(
    *,
    hidden: int = 32,
    heads: int = 4,
    max_relative_positions: int = 8,
    pos_att_type: tuple[str, ...] = ("c2p", "p2c"),
    talking_head: bool = False,
    relative_attention: bool = True,
    dtype: torch.dtype = torch.float32,
    seed: int = 0,
) -> ReferenceV1Attention:
    """A ``transformers`` DeBERTa (v1) attention layer, random weights, eval mode.

    ``q_bias`` and ``v_bias`` (zeros when built) are filled with random values so
    that the conversion of the biases is tested.
    """
    torch.manual_seed(seed)
    config = DebertaConfig(
        hidden_size=hidden,
        num_attention_heads=heads,
        relative_attention=relative_attention,
        max_relative_positions=max_relative_positions,
        pos_att_type=list(pos_att_type),
        talking_head=talking_head,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    ref = ReferenceV1Attention(config)
    with torch.no_grad():
        ref.q_bias.normal_()
        ref.v_bias.normal_()
    return ref.to(dtype).eval()


def reference_v1_forward(
    ref: ReferenceV1Attention, x: torch.Tensor, table: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    """Run the v1 reference with the pairwise mask and relative positions it expects.

    Shapes:
        x: (b, n, hidden); table: (2 * max_relative_positions, hidden); mask: (b, n)
        output: (b, n, hidden)
    """
    rel = build_v1_relative_position(x, x)  # (1, i, j)
    pair_mask = mask[:, None, None, :] * mask[:, None, :, None]  # (b, 1, i, j)
    with torch.no_grad():
        return ref(x, pair_mask, relative_pos=rel, rel_embeddings=table)[0]
