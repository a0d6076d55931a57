"""DeBERTa v1 attention (transformers' models/deberta) converted into relpos."""

from __future__ import annotations

import pytest
import torch
from _deberta import (
    padding_mask,
    random_inputs,
    reference_v1_attention,
    reference_v1_forward,
)
from transformers import DebertaConfig
from transformers.models.deberta.modeling_deberta import DebertaAttention

from relpos import DisentangledSelfAttention

K = 8  # max_relative_positions of every reference here


@pytest.mark.parametrize("backend", ["naive", "gather"])
@pytest.mark.parametrize(
    "n", [5, K, 3 * K + 1], ids=["n-below-k", "n-equals-k", "n-above-k"]
)
@pytest.mark.parametrize(
    "pos_att_type", [("c2p", "p2c"), ("p2c", "c2p"), ("c2p",), ("p2c",), ()], ids=str
)
def test_equals_v1_in_float64(pos_att_type, n: int, backend: str) -> None:
    ref = reference_v1_attention(
        max_relative_positions=K, pos_att_type=pos_att_type, dtype=torch.float64
    )
    ours = DisentangledSelfAttention.from_transformers(ref, backend=backend)
    x, table = random_inputs(3, n, 32, K, dtype=torch.float64, seed=n)
    mask = padding_mask(n)  # no padding, right padding, left padding
    keep = mask.bool()
    with torch.no_grad():
        expected = reference_v1_forward(ref, x, table, mask)
        got = ours(x, mask, rel_embeddings=table)
    assert (got[keep] - expected[keep]).abs().max().item() <= 1e-6


def test_equals_v1_in_float32() -> None:
    ref = reference_v1_attention(max_relative_positions=K)
    ours = DisentangledSelfAttention.from_transformers(ref)
    x, table = random_inputs(3, 20, 32, K)
    mask = padding_mask(20)
    keep = mask.bool()
    with torch.no_grad():
        expected = reference_v1_forward(ref, x, table, mask)
        got = ours(x, mask, rel_embeddings=table)
        assert (got[keep] - expected[keep]).abs().max().item() <= 5e-5


def test_biases_matter() -> None:
    """The comparison can fail: losing v1's q_bias or v_bias breaks it."""
    ref = reference_v1_attention(max_relative_positions=K, dtype=torch.float64)
    x, table = random_inputs(2, 10, 32, K, dtype=torch.float64)
    mask = torch.ones(2, 10, dtype=torch.long)
    expected = reference_v1_forward(ref, x, table, mask)
    for bias in ("query_proj", "value_proj"):
        ours = DisentangledSelfAttention.from_transformers(ref)
        with torch.no_grad():
            getattr(ours, bias).bias.zero_()
            assert (ours(x, mask, rel_embeddings=table) - expected).abs().max() > 1e-3


def test_conversion_layout() -> None:
    """Separate position projections, no buckets; no bias on keys or c2p's pos keys."""
    ref = reference_v1_attention(max_relative_positions=K, dtype=torch.float64)
    ours = DisentangledSelfAttention.from_transformers(ref)
    assert not ours.share_att_key and ours.position_buckets == -1 and ours.span == K
    assert ours.pos_att_type == ("c2p", "p2c")
    assert ours.query_proj.weight.dtype == torch.float64
    assert torch.equal(ours.key_proj.bias, torch.zeros(32, dtype=torch.float64))
    assert torch.equal(ours.pos_key_proj.bias, torch.zeros(32, dtype=torch.float64))
    assert torch.equal(ours.query_proj.bias, ref.q_bias)
    assert torch.equal(ours.value_proj.bias, ref.v_bias)
    # in_proj rows: head 0's query, key, value rows (8 each), then head 1's, ...
    d = 8
    head_1_key = ref.in_proj.weight[4 * d : 5 * d]
    torch.testing.assert_close(ours.key_proj.weight[d : 2 * d], head_1_key)
    # Copies, not shared storage.
    with torch.no_grad():
        ours.query_proj.bias.zero_()
    assert ref.q_bias.abs().max() > 0
    assert not DisentangledSelfAttention.from_transformers(ref).training
    assert DisentangledSelfAttention.from_transformers(ref.train()).training


@pytest.mark.parametrize(
    "setting, kwargs",
    [
        ("talking_head", dict(talking_head=True)),
        ("relative_attention", dict(relative_attention=False)),
        ("pos_att_type", dict(pos_att_type=("c2p", "p2p"))),
        ("pos_att_type", dict(pos_att_type=("c2p", "c2p"))),
    ],
)
def test_refuses_what_relpos_computes_differently(setting: str, kwargs: dict) -> None:
    ref = reference_v1_attention(**kwargs)
    with pytest.raises(ValueError, match=setting):
        DisentangledSelfAttention.from_transformers(ref)


def test_rejects_the_wrapping_layer() -> None:
    config = DebertaConfig(
        hidden_size=32, num_attention_heads=4, relative_attention=True
    )
    with pytest.raises(TypeError, match="DisentangledSelfAttention"):
        DisentangledSelfAttention.from_transformers(DebertaAttention(config))
