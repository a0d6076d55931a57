"""The encoder equals transformers' DebertaV2Encoder; dropout, gradients, bad input."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from _deberta import (
    padding_mask,
    random_inputs,
    reference_encoder,
    reference_encoder_forward,
)
from torch import nn
from transformers import DebertaConfig, DebertaV2Config, DebertaV2Model
from transformers.models.deberta.modeling_deberta import DebertaEncoder

from relpos import (
    DisentangledEncoder,
    DisentangledEncoderLayer,
    EncoderLayer,
)

TOLERANCE = {torch.float32: 5e-5, torch.float64: 1e-6}

# (layers, max_relative_positions, position_buckets, pos_att_type, share_att_key,
#  norm_rel_ebd, n): n runs from below the span (8, or the bucket count) to far above
# it, and with buckets to far above max_relative_positions.
BOTH = ("c2p", "p2c")
LN = "layer_norm"
CASES = [
    pytest.param(1, 8, -1, BOTH, True, LN, 5, id="1-layer-clip-both-n5"),
    pytest.param(2, 8, -1, ("c2p",), False, LN, 40, id="2-layers-clip-c2p-n40"),
    pytest.param(3, 32, 8, ("p2c",), True, "none", 70, id="3-layers-buckets-p2c-n70"),
    pytest.param(4, 16, 4, BOTH, False, LN, 37, id="4-layers-buckets-n37"),
    pytest.param(2, 8, -1, (), True, LN, 12, id="2-layers-no-position-terms"),
    pytest.param(2, 8, -1, ("p2c", "c2p"), False, "none", 2, id="2-layers-n2"),
]


def _compare(
    ref: nn.Module, ours: DisentangledEncoder, n: int, dtype: torch.dtype
) -> float:
    """Max abs difference on the non-padded positions; no, right and left padding."""
    x, _ = random_inputs(3, n, ours.hidden_size, ours.span, dtype=dtype, seed=n)
    mask = padding_mask(n)  # (3, n)
    with torch.no_grad():
        expected = reference_encoder_forward(ref, x, mask)
        got = ours(x, mask)
    keep = mask.bool()
    assert torch.isfinite(got).all()
    return (got[keep] - expected[keep]).abs().max().item()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["fp32", "fp64"])
@pytest.mark.parametrize("backend", ["naive", "gather"])
@pytest.mark.parametrize("layers, k, buckets, terms, share, norm, n", CASES)
def test_equals_transformers(layers, k, buckets, terms, share, norm, n, backend, dtype):
    ref = reference_encoder(
        layers=layers,
        max_relative_positions=k,
        position_buckets=buckets,
        pos_att_type=terms,
        share_att_key=share,
        norm_rel_ebd=norm,
        dtype=dtype,
    )
    ours = DisentangledEncoder.from_transformers(ref, backend=backend)
    assert _compare(ref, ours, n, dtype) <= TOLERANCE[dtype]


def test_flex_equals_transformers() -> None:
    """One float32 case (each new shape compiles for seconds on the CPU): log buckets,
    n far above max_relative_positions, left and right padding."""
    ref = reference_encoder(layers=2, max_relative_positions=32, position_buckets=8)
    ours = DisentangledEncoder.from_transformers(ref, backend="flex")
    assert _compare(ref, ours, 70, torch.float32) <= TOLERANCE[torch.float32]


def test_position_terms_matter() -> None:
    """The comparison above can fail: dropping a term or its table breaks equality."""
    ref = reference_encoder(layers=2, pos_att_type=("c2p", "p2c"), dtype=torch.float64)
    ours = DisentangledEncoder.from_transformers(ref)
    with torch.no_grad():
        ours.table.weight.add_(0.1 * torch.randn_like(ours.table.weight))
    assert _compare(ref, ours, 12, torch.float64) > 1e-3


# -- from_transformers --------------------------------------------------------------


def test_from_transformers_on_a_model() -> None:
    """A DebertaV2Model's encoder: ours on its embeddings equals the model's output."""
    config = DebertaV2Config(
        vocab_size=50,
        hidden_size=32,
        num_attention_heads=4,
        intermediate_size=64,
        num_hidden_layers=2,
        relative_attention=True,
        position_buckets=16,
        max_relative_positions=64,
        pos_att_type=["p2c", "c2p"],
        share_att_key=True,
        norm_rel_ebd="layer_norm",
        position_biased_input=False,
    )
    model = DebertaV2Model(config).double().eval()
    ours = DisentangledEncoder.from_transformers(model)
    assert ours.num_layers == 2 and ours.span == 16 and ours.norm_rel_ebd
    ids = torch.randint(1, 50, (3, 30))
    mask = padding_mask(30)
    with torch.no_grad():
        expected = model(input_ids=ids, attention_mask=mask).last_hidden_state
        embedded = model.embeddings(input_ids=ids, mask=mask)  # (b, n, hidden)
        got = ours(embedded, mask)
    keep = mask.bool()
    assert (got[keep] - expected[keep]).abs().max().item() <= 1e-6


def test_from_transformers_copies_everything() -> None:
    ref = reference_encoder(layers=3, share_att_key=False, dtype=torch.float64)
    ours = DisentangledEncoder.from_transformers(ref)
    assert ours.table.weight.dtype == torch.float64
    ref_params = dict(ref.named_parameters())
    assert sum(p.numel() for p in ours.parameters()) == sum(
        p.numel() for p in ref_params.values()
    )
    # Copies, not shared storage: changing ours leaves the reference alone.
    ref_storage = {p.data_ptr() for p in ref_params.values()}
    assert not any(p.data_ptr() in ref_storage for p in ours.parameters())
    before = ref.rel_embeddings.weight.clone()
    with torch.no_grad():
        ours.table.weight.zero_()
    assert torch.equal(ref.rel_embeddings.weight, before)
    torch.testing.assert_close(
        ours.layers[1].output_norm.weight, ref.layer[1].output.LayerNorm.weight
    )
    assert ours.layers[0].output_norm.eps == ref.layer[0].output.LayerNorm.eps == 1e-7


def test_from_transformers_follows_mode_and_dropouts() -> None:
    ref = reference_encoder(dropout=0.2, attention_dropout=0.3).train()
    ours = DisentangledEncoder.from_transformers(ref)
    assert ours.training and all(m.training for m in ours.modules())
    assert ours.table_dropout.p == 0.2
    assert ours.layers[1].dropout_p == 0.2
    assert ours.layers[1].attention.dropout_p == 0.3
    assert not DisentangledEncoder.from_transformers(ref.eval()).training


@pytest.mark.parametrize(
    "setting, config",
    [
        ("conv_kernel_size", dict(conv_kernel_size=3)),
        ("relative_attention", dict(relative_attention=False)),
        ("norm_rel_ebd", dict(norm_rel_ebd="layer_norm|batch_norm")),
        ("hidden_act", dict(hidden_act="relu")),
        ("hidden_act", dict(hidden_act="gelu_new")),
        ("attention_head_size", dict(attention_head_size=4)),
        ("num_hidden_layers", dict(layers=0)),
        ("pos_att_type", dict(pos_att_type=("c2p", "p2p"))),
    ],
)
def test_from_transformers_refuses_what_relpos_lacks(setting: str, config: dict):
    ref = reference_encoder(**config)
    with pytest.raises(ValueError, match=setting):
        DisentangledEncoder.from_transformers(ref)


def test_from_transformers_rejects_other_types() -> None:
    with pytest.raises(TypeError, match="module"):
        DisentangledEncoder.from_transformers(nn.Linear(32, 32))
    v1 = DebertaEncoder(
        DebertaConfig(hidden_size=32, num_attention_heads=4, num_hidden_layers=1)
    )
    with pytest.raises(TypeError, match="DebertaV2Encoder"):
        DisentangledEncoder.from_transformers(v1)


# -- training: dropout on the table, gradients ---------------------------------------


def test_training_reproduces_transformers_with_the_same_seed() -> None:
    """All three dropouts in the same places: equal random draws give equal outputs."""
    ref = reference_encoder(layers=3, dropout=0.2, attention_dropout=0.3).train()
    ours = DisentangledEncoder.from_transformers(ref, backend="naive")
    x, _ = random_inputs(3, 12, 32, 8)
    mask = padding_mask(12)
    keep = mask.bool()
    torch.manual_seed(1)
    expected = reference_encoder_forward(ref, x, mask)
    torch.manual_seed(1)
    got = ours(x, mask)
    torch.testing.assert_close(got[keep], expected[keep], atol=5e-5, rtol=0)
    torch.manual_seed(2)
    assert (ours(x, mask)[keep] - expected[keep]).abs().max() > 1e-2


def _encoder(dropout: float = 0.0, **kwargs) -> DisentangledEncoder:
    torch.manual_seed(0)
    return DisentangledEncoder(
        3, 32, 4, 64, max_relative_positions=8, dropout=dropout, **kwargs
    )


def test_table_dropout_is_applied_once_per_layer_in_training() -> None:
    encoder = _encoder(dropout=0.0)
    encoder.table_dropout.p = 0.5  # only the table is dropped out
    seen: list[torch.Tensor] = []
    encoder.table_dropout.register_forward_hook(lambda m, i, out: seen.append(out))
    x, _ = random_inputs(2, 10, 32, 8)
    with torch.no_grad():
        evaluated = encoder.eval()(x)
        assert len(seen) == 3
        assert all(torch.equal(t, encoder.rel_embeddings()) for t in seen)
        seen.clear()
        trained = encoder.train()(x)
    assert len(seen) == 3
    assert not torch.equal(seen[0], seen[1]) and not torch.equal(seen[1], seen[2])
    assert (trained - evaluated).abs().max() > 1e-3
    encoder.table_dropout.p = 0.0
    with torch.no_grad():
        torch.testing.assert_close(encoder(x), evaluated, atol=1e-6, rtol=0)


def test_train_differs_from_eval_with_dropout() -> None:
    encoder = _encoder(dropout=0.1)
    x, _ = random_inputs(2, 10, 32, 8)
    with torch.no_grad():
        assert (encoder.train()(x) - encoder.eval()(x)).abs().max() > 1e-3


def test_eval_does_not_depend_on_dropout() -> None:
    plain, dropped = _encoder(dropout=0.0), _encoder(dropout=0.4, attention_dropout=0.2)
    dropped.load_state_dict(plain.state_dict())
    x, _ = random_inputs(2, 10, 32, 8)
    mask = padding_mask(10)[:2]
    with torch.no_grad():
        assert torch.equal(plain.eval()(x, mask), dropped.eval()(x, mask))


@pytest.mark.parametrize("backend", ["naive", "gather"])
@pytest.mark.parametrize("training", [False, True], ids=["eval", "train"])
def test_gradient_reaches_the_table(backend: str, training: bool) -> None:
    encoder = _encoder(dropout=0.1, backend=backend).train(training)
    x, _ = random_inputs(2, 12, 32, 8)
    encoder(x, padding_mask(12)[1:]).square().sum().backward()
    for param in (encoder.table.weight, encoder.table_norm.weight):
        assert param.grad is not None and torch.isfinite(param.grad).all()
        assert param.grad.abs().max() > 0


def test_no_position_terms_leave_the_table_unused() -> None:
    encoder = _encoder(pos_att_type=())
    assert not any("pos_" in name for name, _ in encoder.named_parameters())
    x, _ = random_inputs(2, 12, 32, 8)
    encoder(x).sum().backward()
    assert encoder.table.weight.grad is None


# -- EncoderLayer around any attention ---------------------------------------------


class _Recorder(nn.Module):
    """A stand-in attention: a Linear map that records the keywords it was given."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.hidden_size = hidden
        self.proj = nn.Linear(hidden, hidden)
        self.calls: list[dict] = []

    def forward(self, hidden_states, attention_mask=None, **kwargs):
        self.calls.append(dict(attention_mask=attention_mask, **kwargs))
        return self.proj(hidden_states)


def test_encoder_layer_is_the_post_layernorm_block() -> None:
    attention = _Recorder(16).double()
    layer = EncoderLayer(attention, 16, 40, layer_norm_eps=1e-5).double().eval()
    with torch.no_grad():
        for norm in (layer.attention_norm, layer.output_norm):
            norm.weight.normal_()
            norm.bias.normal_()
    x = torch.randn(2, 7, 16, dtype=torch.float64)
    mask = torch.ones(2, 7)
    bias = torch.randn(4, 7, 7)
    with torch.no_grad():
        got = layer(x, mask, bias=bias)
        a = F.layer_norm(
            x + layer.attention_output(attention.proj(x)),
            (16,),
            layer.attention_norm.weight,
            layer.attention_norm.bias,
            1e-5,
        )
        inner = F.gelu(layer.intermediate(a))
        expected = F.layer_norm(
            a + layer.output(inner),
            (16,),
            layer.output_norm.weight,
            layer.output_norm.bias,
            1e-5,
        )
    torch.testing.assert_close(got, expected, atol=1e-12, rtol=0)
    assert attention.calls[-1]["attention_mask"] is mask
    assert attention.calls[-1]["bias"] is bias


def test_disentangled_layer_is_an_encoder_layer_around_the_attention() -> None:
    layer = DisentangledEncoderLayer(32, 4, 64, max_relative_positions=8).eval()
    generic = EncoderLayer(layer.attention, 32, 64).eval()
    generic.load_state_dict(layer.state_dict())
    x, table = random_inputs(2, 9, 32, 8)
    mask = padding_mask(9)[1:]
    with torch.no_grad():
        expected = generic(x, mask, rel_embeddings=table)
        got = layer(x, mask, rel_embeddings=table)
        torch.testing.assert_close(got, expected, atol=0, rtol=0)


# -- bad input ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, error, name",
    [
        (dict(num_layers=0), ValueError, "num_layers"),
        (dict(num_layers=1.5), TypeError, "num_layers"),
        (dict(intermediate_size=0), ValueError, "intermediate_size"),
        (dict(hidden_size=30), ValueError, "hidden_size"),
        (dict(dropout=1.0), ValueError, "dropout"),
        (dict(dropout="0.1"), TypeError, "dropout"),
        (dict(attention_dropout=-0.1), ValueError, "attention_dropout"),
        (dict(layer_norm_eps=0.0), ValueError, "layer_norm_eps"),
        (dict(norm_rel_ebd="layer_norm"), TypeError, "norm_rel_ebd"),
        (dict(backend="fast"), ValueError, "backend"),
        (dict(pos_att_type="c2p"), TypeError, "pos_att_type"),
    ],
)
def test_bad_constructor_arguments(kwargs: dict, error: type, name: str) -> None:
    arguments = dict(num_layers=2, hidden_size=32, num_heads=4, intermediate_size=64)
    arguments.update(kwargs)
    with pytest.raises(error, match=name):
        DisentangledEncoder(**arguments)


def test_bad_encoder_layer_arguments() -> None:
    with pytest.raises(TypeError, match="attention"):
        EncoderLayer(lambda x: x, 16, 32)
    with pytest.raises(ValueError, match="hidden_size"):
        EncoderLayer(_Recorder(16), 32, 64)


def test_attention_must_return_the_context() -> None:
    class Pair(_Recorder):
        def forward(self, hidden_states, attention_mask=None, **kwargs):
            return hidden_states, None

    class Narrow(_Recorder):
        def forward(self, hidden_states, attention_mask=None, **kwargs):
            return hidden_states[..., :8]

    with pytest.raises(TypeError, match="attention must return"):
        EncoderLayer(Pair(16), 16, 32)(torch.randn(2, 3, 16))
    with pytest.raises(ValueError, match="attention must return"):
        EncoderLayer(Narrow(16), 16, 32)(torch.randn(2, 3, 16))


@pytest.mark.parametrize(
    "hidden_states, mask, error, name",
    [
        (torch.randn(2, 5, 16), None, ValueError, "hidden_states"),
        (torch.randn(5, 32), None, ValueError, "hidden_states"),
        (torch.ones(2, 5, 32, dtype=torch.long), None, TypeError, "hidden_states"),
        (torch.randn(2, 5, 32), torch.ones(2, 4), ValueError, "attention_mask"),
        (torch.randn(2, 5, 32), torch.ones(2, 5, 6), ValueError, "attention_mask"),
        (torch.randn(2, 5, 32), [[1] * 5] * 2, TypeError, "attention_mask"),
    ],
)
def test_bad_forward_input(hidden_states, mask, error, name) -> None:
    with pytest.raises(error, match=name):
        _encoder()(hidden_states, mask)
