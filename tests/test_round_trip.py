"""relpos <-> transformers' DeBERTa-v2, embeddings included, and save_pretrained.

Every configuration runs three ways: relpos -> transformers -> relpos (every tensor
bit-identical), transformers -> relpos (our output equals last_hidden_state on the
tokens, with padding), and relpos -> transformers -> save_pretrained ->
from_pretrained -> relpos. Tiny models (width 16-32, 2 layers, 50 token ids).
"""

from __future__ import annotations

import pytest
import torch
from _deberta import padding_mask
from torch import nn
from transformers import DebertaV2Config, DebertaV2Model
from transformers.models.deberta_v2.modeling_deberta_v2 import DebertaV2Encoder

from relpos import DisentangledEncoder, DisentangledModel, Embeddings
from relpos.interop import model_from_transformers, to_transformers

VOCAB = 50
N = 14  # tokens per sequence (below max_position_embeddings=20)
#: transformers computes its scale ``sqrt(d * s)`` in float32 (``scaled_size_sqrt``):
#: a relative error of up to 6e-8 on every score, so float64 outputs agree to
#: a few 1e-8 (2.7e-8 seen), not to the last bit.
TOLERANCE = {torch.float32: 5e-5, torch.float64: 1e-7}

# One dict per configuration: DisentangledModel's keywords (vocab and layers fixed).
CASES = {
    "v3-like": dict(
        hidden_size=32,
        num_heads=4,
        intermediate_size=64,
        max_relative_positions=16,
        position_buckets=4,
    ),
    "separate-keys-c2p-absolute-types": dict(
        hidden_size=16,
        num_heads=2,
        intermediate_size=32,
        max_relative_positions=8,
        pos_att_type=("c2p",),
        share_att_key=False,
        norm_rel_ebd=False,
        position_biased_input=True,
        type_vocab_size=2,
    ),
    "p2c-buckets-embed-proj": dict(
        hidden_size=16,
        num_heads=4,
        intermediate_size=24,
        max_relative_positions=32,
        position_buckets=8,
        pos_att_type=("p2c",),
        share_att_key=False,
        embedding_size=8,
        position_biased_input=True,
    ),
    "no-position-terms-wide-embeddings": dict(
        hidden_size=16,
        num_heads=2,
        intermediate_size=32,
        max_relative_positions=4,
        pos_att_type=(),
        norm_rel_ebd=False,
        embedding_size=24,
        type_vocab_size=3,
        pad_token_id=None,
    ),
    "shared-keys-both-no-norm-eps": dict(
        hidden_size=24,
        num_heads=3,
        intermediate_size=48,
        max_relative_positions=6,
        norm_rel_ebd=False,
        layer_norm_eps=1e-5,
        pad_token_id=3,
    ),
}
IDS = list(CASES)


def _ours(
    name: str, dtype: torch.dtype = torch.float64, **changes: object
) -> DisentangledModel:
    """A relpos model of configuration ``name`` whose every number is random.

    Noise on every parameter (LayerNorms, biases and the padding row included),
    so that a tensor copied to the wrong place or not at all shows.
    """
    torch.manual_seed(IDS.index(name) if name in CASES else 0)
    settings = dict(CASES[name], max_position_embeddings=20, **changes)
    model = DisentangledModel(VOCAB, 2, **settings).to(dtype).eval()
    with torch.no_grad():
        for param in model.parameters():
            param.add_(0.1 * torch.randn_like(param))
    return model


def _theirs(name: str, dtype: torch.dtype = torch.float64) -> DebertaV2Model:
    """A ``transformers`` model of configuration ``name``, random weights, eval mode."""
    settings = dict(CASES[name])
    fields = dict(
        vocab_size=VOCAB,
        num_hidden_layers=2,
        num_attention_heads=settings.pop("num_heads"),
        relative_attention=True,
        max_position_embeddings=20,
        pos_att_type=list(settings.pop("pos_att_type", ("c2p", "p2c"))),
        share_att_key=settings.pop("share_att_key", True),
        norm_rel_ebd="layer_norm" if settings.pop("norm_rel_ebd", True) else "none",
        position_biased_input=settings.pop("position_biased_input", False),
        position_buckets=settings.pop("position_buckets", -1),
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    torch.manual_seed(100 + IDS.index(name))
    model = DebertaV2Model(DebertaV2Config(**settings, **fields))
    with torch.no_grad():
        for param in model.parameters():
            param.add_(0.1 * torch.randn_like(param))
    return model.to(dtype).eval()


def _inputs(model: DisentangledModel) -> dict[str, torch.Tensor]:
    """Token ids with no, right and left padding, types when the model has them."""
    g = torch.Generator().manual_seed(7)
    inputs = dict(
        input_ids=torch.randint(VOCAB, (3, N), generator=g),
        attention_mask=padding_mask(N),
    )
    types = model.embeddings.type_vocab_size
    if types:
        inputs["token_type_ids"] = torch.randint(types, (3, N), generator=g)
    return inputs


def _run(model: nn.Module, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    """The last hidden states of a relpos or a transformers model."""
    with torch.no_grad():
        if isinstance(model, DisentangledModel):
            mask = inputs["attention_mask"]
            others = {k: v for k, v in inputs.items() if k != "attention_mask"}
            return model(others.pop("input_ids"), mask, **others)
        return model(**inputs).last_hidden_state


def _assert_same_state(ours: nn.Module, back: nn.Module) -> None:
    """Same names, dtypes, devices and bits in both state dicts."""
    mine, theirs = ours.state_dict(), back.state_dict()
    assert list(mine) == list(theirs)
    for key, value in mine.items():
        assert value.dtype == theirs[key].dtype, key
        assert value.device == theirs[key].device, key
        assert torch.equal(value, theirs[key]), key


def _max_error(got: torch.Tensor, expected: torch.Tensor, mask: torch.Tensor) -> float:
    keep = mask.bool()
    return (got[keep] - expected[keep]).abs().max().item()


# -- relpos -> transformers -> relpos ------------------------------------------------


@pytest.mark.parametrize("name", IDS)
def test_relpos_to_transformers_and_back(name: str) -> None:
    ours = _ours(name)
    theirs = ours.to_transformers()
    assert isinstance(theirs, DebertaV2Model) and not theirs.training
    assert sum(p.numel() for p in theirs.parameters()) == sum(
        p.numel() for p in ours.parameters()
    )
    back = DisentangledModel.from_transformers(theirs, backend=ours.config.backend)
    _assert_same_state(ours, back)
    assert back.config == ours.config
    inputs = _inputs(ours)
    expected = _run(ours, inputs)
    assert torch.equal(_run(back, inputs), expected)
    # transformers runs the same model: equal on the tokens.
    mask = inputs["attention_mask"]
    error = _max_error(_run(theirs, inputs), expected, mask)
    assert error <= TOLERANCE[torch.float64]


def test_the_config_carries_every_setting() -> None:
    ours = _ours("p2c-buckets-embed-proj")
    config = ours.to_transformers().config
    assert (config.hidden_size, config.embedding_size, config.vocab_size) == (16, 8, 50)
    assert (config.max_relative_positions, config.position_buckets) == (32, 8)
    assert config.pos_att_type == ["p2c"] and config.share_att_key is False
    assert config.norm_rel_ebd == "layer_norm" and config.relative_attention
    assert config.position_biased_input and config.max_position_embeddings == 20
    assert config.hidden_act == "gelu" and config.layer_norm_eps == 1e-7


def test_to_transformers_copies_and_keeps_dtype_and_mode() -> None:
    ours = _ours("v3-like", torch.float32, dropout=0.1, attention_dropout=0.2).train()
    theirs = ours.to_transformers()
    assert theirs.training and all(m.training for m in theirs.modules())
    assert {p.dtype for p in theirs.parameters()} == {torch.float32}
    assert theirs.config.hidden_dropout_prob == 0.1
    assert theirs.config.attention_probs_dropout_prob == 0.2
    # Copies, not shared storage.
    storage = {p.data_ptr() for p in ours.parameters()}
    assert not any(p.data_ptr() in storage for p in theirs.parameters())
    before = ours.embeddings.word_embeddings.weight.clone()
    with torch.no_grad():
        theirs.embeddings.word_embeddings.weight.zero_()
    assert torch.equal(ours.embeddings.word_embeddings.weight, before)


def test_encoder_round_trip() -> None:
    """A DisentangledEncoder becomes a DebertaV2Encoder with the same output."""
    encoder = _ours("separate-keys-c2p-absolute-types").encoder
    theirs = encoder.to_transformers()
    assert isinstance(theirs, DebertaV2Encoder)
    back = DisentangledEncoder.from_transformers(theirs)
    _assert_same_state(encoder, back)
    x = torch.randn(3, N, encoder.hidden_size, dtype=torch.float64)
    mask = padding_mask(N)
    with torch.no_grad():
        expected = encoder(x, mask)
        got = theirs(x, mask, output_hidden_states=False).last_hidden_state
        again = back(x, mask)
    assert torch.equal(again, expected)
    assert _max_error(got, expected, mask) <= TOLERANCE[torch.float64]


# -- transformers -> relpos ----------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["fp32", "fp64"])
@pytest.mark.parametrize("backend", ["naive", "gather"])
@pytest.mark.parametrize("name", IDS)
def test_transformers_to_relpos_equals_last_hidden_state(
    name: str, backend: str, dtype: torch.dtype
) -> None:
    theirs = _theirs(name, dtype)
    ours = model_from_transformers(DisentangledModel, theirs, backend=backend)
    assert not ours.training and ours.config.backend == backend
    assert {p.dtype for p in ours.parameters()} == {dtype}
    inputs = _inputs(ours)
    got = _run(ours, inputs)
    assert torch.isfinite(got).all()
    expected = _run(theirs, inputs)
    assert _max_error(got, expected, inputs["attention_mask"]) <= TOLERANCE[dtype]
    # Converting back gives the very same tensors.
    _assert_same_state(theirs, to_transformers(ours))


def test_positions_are_transformers_position_ids() -> None:
    theirs = _theirs("separate-keys-c2p-absolute-types")
    ours = DisentangledModel.from_transformers(theirs)
    inputs = _inputs(ours)
    shifted = torch.arange(N).flip(0) + 3  # (n,), any positions below 20
    with torch.no_grad():
        expected = theirs(**inputs, position_ids=shifted[None]).last_hidden_state
        got = ours(
            inputs["input_ids"],
            inputs["attention_mask"],
            token_type_ids=inputs["token_type_ids"],
            positions=shifted,
        )
        unshifted = ours(inputs["input_ids"], inputs["attention_mask"])
    mask = inputs["attention_mask"]
    assert _max_error(got, expected, mask) <= TOLERANCE[torch.float64]
    assert _max_error(got, unshifted, mask) > 1e-3  # the positions matter


def test_training_reproduces_transformers_with_the_same_seed() -> None:
    """Embedding dropout first, then the encoder's: equal seeds, equal outputs."""
    ours = _ours("v3-like", dropout=0.1, attention_dropout=0.1, backend="naive")
    theirs = ours.to_transformers()
    ours.train(), theirs.train()
    inputs = _inputs(ours)
    torch.manual_seed(3)
    got = _run(ours, inputs)
    torch.manual_seed(3)
    expected = _run(theirs, inputs)
    mask = inputs["attention_mask"]
    assert _max_error(got, expected, mask) <= TOLERANCE[torch.float64]
    assert _max_error(got, _run(ours.eval(), inputs), mask) > 1e-3


# -- save_pretrained / from_pretrained -----------------------------------------------


@pytest.mark.parametrize("name", IDS)
def test_save_pretrained_and_back(name: str, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    ours = _ours(name)
    ours.to_transformers().save_pretrained(tmp_path)
    loaded = DebertaV2Model.from_pretrained(tmp_path, local_files_only=True)
    assert {p.dtype for p in loaded.parameters()} == {torch.float64}
    back = DisentangledModel.from_transformers(loaded)
    _assert_same_state(ours, back)
    inputs = _inputs(ours)
    assert torch.equal(_run(back, inputs), _run(ours, inputs))


# -- what transformers cannot express, and bad input ---------------------------------


def _set(module: nn.Module, path: str, value: object) -> None:
    *parents, last = path.split(".")
    for part in parents:
        module = getattr(module, part)
    setattr(module, last, value)


@pytest.mark.parametrize(
    "path, value, setting",
    [
        ("embeddings.norm.eps", 1e-5, "layer_norm_eps"),
        ("encoder.layers.1.output_norm.eps", 1e-5, "layer_norm_eps"),
        ("embeddings.dropout.p", 0.3, "hidden_dropout_prob"),
        ("encoder.table_dropout.p", 0.3, "hidden_dropout_prob"),
        ("encoder.layers.0.activation", nn.GELU("tanh"), "activation"),
        ("encoder.layers.1.activation", nn.ReLU(), "activation"),
    ],
)
def test_to_transformers_refuses_what_a_config_cannot_hold(
    path: str, value: object, setting: str
) -> None:
    ours = _ours("v3-like")
    _set(ours, path, value)
    with pytest.raises(ValueError, match=setting):
        ours.to_transformers()


def test_to_transformers_refuses_causal_attention() -> None:
    ours = _ours("v3-like", causal=True)
    with pytest.raises(ValueError, match="causal=True"):
        ours.to_transformers()
    with pytest.raises(ValueError, match="causal=True"):
        ours.encoder.to_transformers()


def test_to_transformers_drops_the_backend() -> None:
    """The backend is how relpos computes, not part of the model: no refusal."""
    ours = _ours("v3-like", backend="naive")
    back = DisentangledModel.from_transformers(ours.to_transformers())
    assert back.config == ours.config.replace(backend="gather")


def test_to_transformers_refuses_layers_that_disagree() -> None:
    ours = _ours("v3-like")
    other = DisentangledModel(VOCAB, 1, 32, 4, 64, max_relative_positions=8)
    ours.encoder.layers[1] = other.encoder.layers[0]
    with pytest.raises(ValueError, match="encoder.config"):
        ours.to_transformers()


def test_conversions_reject_other_types() -> None:
    with pytest.raises(TypeError, match="DisentangledModel or DisentangledEncoder"):
        to_transformers(nn.Linear(4, 4))
    encoder = _theirs("v3-like").encoder
    with pytest.raises(TypeError, match="DebertaV2Model"):
        DisentangledModel.from_transformers(encoder)


def test_from_transformers_refuses_z_steps() -> None:
    theirs = _theirs("v3-like")
    theirs.z_steps = 2
    with pytest.raises(ValueError, match="z_steps"):
        DisentangledModel.from_transformers(theirs)


def test_from_transformers_refuses_the_encoder_settings() -> None:
    """The encoder's refusals hold for a whole model too (one example)."""
    config = DebertaV2Config(
        vocab_size=VOCAB,
        hidden_size=16,
        num_attention_heads=2,
        intermediate_size=32,
        num_hidden_layers=1,
        relative_attention=True,
        conv_kernel_size=3,
    )
    with pytest.raises(ValueError, match="conv_kernel_size"):
        DisentangledModel.from_transformers(DebertaV2Model(config))


# -- Embeddings on its own -----------------------------------------------------------


def test_embeddings_zero_the_padding() -> None:
    embeddings = Embeddings(VOCAB, 16, embedding_size=8, type_vocab_size=2)
    with torch.no_grad():
        embeddings.norm.bias.normal_()  # a LayerNorm alone would not give zeros
    ids = torch.randint(VOCAB, (3, N))
    mask = padding_mask(N)
    out = embeddings(ids, mask)
    assert out.shape == (3, N, 16)
    assert torch.equal(out[~mask.bool()], torch.zeros_like(out[~mask.bool()]))
    assert out[mask.bool()].abs().sum(-1).min() > 0
    assert embeddings.word_embeddings.weight[0].abs().sum() == 0  # the padding row


@pytest.mark.parametrize(
    "kwargs, error, name",
    [
        (dict(input_ids=torch.full((2, 3), VOCAB)), ValueError, "input_ids"),
        (dict(input_ids=torch.zeros(2, 3)), TypeError, "input_ids"),
        (dict(input_ids=torch.zeros(6, dtype=torch.long)), ValueError, "input_ids"),
        (dict(input_ids=torch.zeros(1, 21, dtype=torch.long)), ValueError, "n=21"),
        (dict(positions=torch.tensor([0, 1, 20])), ValueError, "positions"),
        (dict(positions=torch.tensor([0, 1])), ValueError, "positions"),
        (dict(token_type_ids=torch.full((2, 3), 2)), ValueError, "token_type_ids"),
        (dict(token_type_ids=torch.zeros(2, 4, dtype=torch.long)), ValueError,
         "token_type_ids"),
        (dict(attention_mask=torch.ones(2, 4)), ValueError, "attention_mask"),
    ],
)
def test_embeddings_bad_input(kwargs: dict, error: type, name: str) -> None:
    embeddings = Embeddings(
        VOCAB, 16, position_biased_input=True, max_position_embeddings=20,
        type_vocab_size=2,
    )
    inputs = {"input_ids": torch.zeros(2, 3, dtype=torch.long), **kwargs}
    ids = inputs.pop("input_ids")
    with pytest.raises(error, match=name):
        embeddings(ids, inputs.pop("attention_mask", None), **inputs)


def test_embeddings_refuse_inputs_they_would_ignore() -> None:
    embeddings = Embeddings(VOCAB, 16)  # no absolute positions, no token types
    ids = torch.zeros(2, 3, dtype=torch.long)
    with pytest.raises(ValueError, match="positions"):
        embeddings(ids, positions=torch.arange(3))
    with pytest.raises(ValueError, match="token_type_ids"):
        embeddings(ids, token_type_ids=torch.zeros_like(ids))


@pytest.mark.parametrize(
    "kwargs, error, name",
    [
        (dict(vocab_size=0), ValueError, "vocab_size"),
        (dict(embedding_size=1.5), TypeError, "embedding_size"),
        (dict(pad_token_id=VOCAB), ValueError, "pad_token_id"),
        (dict(type_vocab_size=-1), ValueError, "type_vocab_size"),
        (dict(position_biased_input=1), TypeError, "position_biased_input"),
        (dict(layer_norm_eps=0.0), ValueError, "layer_norm_eps"),
        (dict(dropout=1.0), ValueError, "dropout"),
    ],
)
def test_embeddings_bad_arguments(kwargs: dict, error: type, name: str) -> None:
    settings = {"vocab_size": VOCAB, "hidden_size": 16, **kwargs}
    with pytest.raises(error, match=name):
        Embeddings(**settings)
