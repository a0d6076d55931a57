"""Grouped-query and multi-query attention (``num_kv_heads``) on every scheme and
kernel.

A module with ``g`` key/value heads equals the same module with ``h`` heads whose
key and value projections repeat each group's rows for its ``h / g`` query heads
(head ``q`` reads group ``q // (h / g)``); DeBERTa's position keys, projected by
the content key projection, are grouped the same way. A causal language model
with ``g`` heads decodes with a cache that keeps ``g`` heads only, exactly as by
recomputing.
"""

from __future__ import annotations

import pytest
import torch

import relpos
from _every import SIZES, backend_param, spread
from relpos.transformer import build_scheme_attention, stack_schemes

HIDDEN, HEADS, D = 16, 4, 4

GRID = [
    backend_param(backend, scheme, groups, id=f"{scheme}-g{groups}-{backend}")
    for scheme in stack_schemes()
    for groups in (1, 2)
    for backend in relpos.BACKENDS
]


def build(scheme: str, backend: str, groups: int | None) -> relpos.SelfAttention:
    torch.manual_seed(0)
    module = build_scheme_attention(
        scheme, HIDDEN, HEADS, backend=backend, num_kv_heads=groups,
        attention_settings=SIZES.get(scheme.split("-")[0]),
    )
    return module.double().eval()


def repeated(grouped: relpos.SelfAttention, scheme: str, backend: str):
    """The module with ``h`` key/value heads, each group's rows repeated."""
    full = build(scheme, backend, None)
    groups = grouped.num_kv_heads
    state = {}
    for name, value in grouped.state_dict().items():
        if name.split(".")[0] in ("key_proj", "value_proj"):
            rows = value.unflatten(0, (groups, D))  # (g, d, ...)
            value = rows.repeat_interleave(HEADS // groups, dim=0).flatten(0, 1)
        state[name] = value
    full.load_state_dict(state)
    return full


@pytest.mark.parametrize("scheme, groups, backend", GRID)
def test_grouped_heads_equal_the_same_heads_repeated(scheme, groups, backend):
    grouped = build(scheme, backend, groups)
    spread(grouped)
    assert grouped.key_proj.out_features == groups * D
    full = repeated(grouped, scheme, backend)
    x = torch.randn(2, 7, HIDDEN, dtype=torch.float64)
    keep = torch.ones(2, 7, dtype=torch.bool)
    keep[1, :2] = False
    extra = {}
    if grouped.input_keywords:  # a table its stack owns (DeBERTa's), given here
        extra["rel_embeddings"] = torch.randn(2 * grouped.span, HIDDEN).double()
    with torch.no_grad():
        got, want = grouped(x, keep, **extra), full(x, keep, **extra)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-12)
    # Repeating with the wrong layout (tiled, not interleaved) gives another output.
    if groups == 2:
        tiled = build(scheme, backend, None)
        state = dict(full.state_dict())
        for name in ("key_proj.weight", "value_proj.weight"):
            rows = grouped.state_dict()[name].unflatten(0, (groups, D))
            state[name] = rows.repeat(HEADS // groups, 1, 1).flatten(0, 1)
        tiled.load_state_dict(state)
        with torch.no_grad():
            assert not torch.allclose(tiled(x, keep, **extra), want, atol=1e-6)


@pytest.mark.parametrize("groups", [1, 2])
@pytest.mark.parametrize("scheme", ["deberta", "rotary", "alibi"])
def test_a_grouped_decoder_caches_its_groups_only(scheme, groups):
    torch.manual_seed(0)
    model = relpos.TransformerLM(
        20, scheme, 2, HIDDEN, HEADS, 32, num_kv_heads=groups,
        attention_settings=SIZES.get(scheme),
    )
    spread(model)
    model = model.double().eval()
    prompt = torch.tensor([[1, 5, 7, 3], [2, 2, 9, 4]])
    tokens = model.generate(prompt, 6)
    assert torch.equal(tokens, model.generate(prompt, 6, use_cache=False))
    with torch.no_grad():
        cache = relpos.KVCache()
        model(tokens[:, :4], cache=cache)
    key, value = cache.layer(0)
    assert key.shape == value.shape == (2, groups, 4, D)


def test_bad_num_kv_heads_are_refused_by_name():
    for groups, error in ((3, ValueError), (0, ValueError), (2.0, TypeError)):
        with pytest.raises(error, match="num_kv_heads"):
            relpos.SelfAttention(HIDDEN, HEADS, num_kv_heads=groups)
    with pytest.raises(ValueError, match="num_kv_heads must divide num_heads"):
        relpos.AttentionConfig(HIDDEN, HEADS, num_kv_heads=3)
    with pytest.raises(ValueError, match="num_kv_heads"):
        relpos.Transformer("t5", 1, HIDDEN, HEADS, num_kv_heads=3)


def test_to_transformers_refuses_grouped_heads():
    pytest.importorskip("transformers")
    encoder = relpos.DisentangledEncoder(1, HIDDEN, HEADS, 32, num_kv_heads=2)
    with pytest.raises(ValueError, match="num_kv_heads=2"):
        encoder.to_transformers()
