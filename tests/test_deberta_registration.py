"""DeBERTa registered like every scheme: its names, variants, stack and kernels."""

from __future__ import annotations

import pytest
import torch

import relpos
from relpos.book.experiments.config import Config
from relpos.schemes import REGISTRY, SharedInput
from relpos.schemes.registry import build_attention, resolve, scheme_names

VARIANTS = ("deberta-buckets", "deberta-emd", "deberta-sinusoidal", "deberta-c2p",
            "deberta-p2c", "deberta-no-norm", "deberta-separate-keys")


def test_the_registry_lists_deberta_first_and_its_book_variants():
    assert list(REGISTRY)[0] == "deberta"
    assert scheme_names()[: 1 + len(VARIANTS)] == ["deberta", *VARIANTS]
    assert REGISTRY["deberta"].attention is relpos.DisentangledSelfAttention
    assert isinstance(REGISTRY["deberta"].shared, SharedInput)


def test_deberta_buckets_from_the_registry_equals_the_hand_build():
    config = Config(scheme="deberta-buckets")
    torch.manual_seed(0)
    built = build_attention("deberta-buckets", config)
    torch.manual_seed(0)
    hand = relpos.DisentangledSelfAttention(
        config.hidden_size, config.num_heads,
        max_relative_positions=config.bucket_max_position,
        position_buckets=config.position_buckets,
    )
    assert built.extra_repr() == hand.extra_repr()
    for (n1, p1), (n2, p2) in zip(built.state_dict().items(), hand.state_dict().items()):
        assert n1 == n2 and torch.equal(p1, p2)


@pytest.mark.parametrize("backend", relpos.BACKENDS)
@pytest.mark.parametrize("name", ["deberta", *VARIANTS])
def test_each_variant_builds_and_runs_on_every_kernel(name, backend):
    config = Config(scheme=name)
    module = build_attention(name, config, backend=backend).double().eval()
    x = torch.randn(2, 6, config.hidden_size, dtype=torch.float64)
    with torch.no_grad():
        out = module(x)
    assert out.shape == x.shape and torch.isfinite(out).all()
    registration, variant = resolve(name)
    changes = registration.variants.get(name, {})
    if "pos_att_type" in changes:
        assert module.pos_att_type == changes["pos_att_type"]


def test_the_model_settings_of_the_variants():
    registration = REGISTRY["deberta"]
    assert registration.model_settings() == {"table_norm": True}
    assert registration.model_settings("deberta-no-norm") == {"table_norm": False}
    stack = relpos.Transformer("deberta-no-norm", 1, 16, 2)
    assert stack.table_norm is None and relpos.Transformer("deberta", 1, 16, 2).table_norm
    assert "deberta-emd" not in relpos.transformer.stack_schemes()


def test_the_disentangled_encoder_is_the_stack():
    torch.manual_seed(0)
    encoder = relpos.DisentangledEncoder(2, 16, 2, 32, max_relative_positions=4)
    torch.manual_seed(0)
    stack = relpos.Transformer(
        "deberta", 2, 16, 2, 32, attention_settings={"max_relative_positions": 4}
    )
    assert isinstance(encoder, relpos.Transformer) and encoder.scheme == "deberta"
    assert list(encoder.state_dict()) == list(stack.state_dict())
    for a, b in zip(encoder.state_dict().values(), stack.state_dict().values()):
        assert torch.equal(a, b)
    x = torch.randn(2, 5, 16)
    torch.testing.assert_close(encoder.eval()(x), stack.eval()(x))


def test_a_bad_model_setting_is_refused_naming_it():
    from relpos.schemes.registry import SchemeRegistration

    with pytest.raises(ValueError, match="model"):
        SchemeRegistration("x", relpos.SelfAttention, model={"x": {"colour": 1}})
    with pytest.raises(ValueError, match="sized"):
        SchemeRegistration("x", relpos.SelfAttention, sized={"y": lambda k: {}})
