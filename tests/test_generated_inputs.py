"""Generated input over the public API (hypothesis).

Valid input gives finite output and the backends agree; invalid input gives a
``TypeError``/``ValueError`` that names the argument. Sizes stay tiny so the
whole file runs in seconds; flex is compared in float64, where torch runs its
uncompiled reference on the CPU (a float32 kernel compiles per shape; the
parity tests cover it).
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import relpos
from relpos import schemes

TOLERANCE = {torch.float32: 1e-5, torch.float64: 1e-10}


@st.composite
def attention_settings(draw):
    heads = draw(st.sampled_from([1, 2]))
    hidden = heads * draw(st.sampled_from([2, 4]))
    k = draw(st.integers(1, 8))
    buckets = -1
    if k >= 4 and draw(st.booleans()):
        buckets = draw(st.integers(2, min(k, 2 * (k - 2) - 1)))
    terms = draw(st.sampled_from([(), ("c2p",), ("p2c",), ("c2p", "p2c")]))
    return dict(
        hidden_size=hidden,
        num_heads=heads,
        max_relative_positions=k,
        position_buckets=buckets,
        pos_att_type=terms,
        share_att_key=draw(st.booleans()),
    )


@st.composite
def inputs(draw, hidden, span, dtype):
    b, n = draw(st.integers(0, 2)), draw(st.integers(0, 7))
    # Every random number comes from hypothesis (a seed, the mask's bits), so that a
    # failing example replays exactly.
    generator = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    x = torch.randn(b, n, hidden, dtype=dtype, generator=generator)
    table = torch.randn(2 * span, hidden, dtype=dtype, generator=generator)
    mask = None
    if draw(st.booleans()):
        bits = draw(st.lists(st.booleans(), min_size=b * n, max_size=b * n))
        mask = torch.tensor(bits, dtype=torch.bool).reshape(b, n)
        mask_dtype = draw(st.sampled_from([torch.bool, torch.long, torch.float32]))
        mask = mask.to(mask_dtype)
    return x, table, mask


def kept(mask: torch.Tensor | None, shape: torch.Size) -> torch.Tensor:
    """The keys a mask keeps: 0/1 and bool as written; a float mask of zeros alone
    is additive, "no padding" (relpos.masks).

    Shapes:
        mask: ``(b, n)`` or None; output: ``(b, n)`` bool
    """
    if mask is None or (mask.is_floating_point() and not mask.any()):
        return torch.ones(shape, dtype=torch.bool)
    return mask != 0


def _modules(config: dict, dtype: torch.dtype, backends) -> dict:
    reference = relpos.DisentangledSelfAttention(**config, backend="naive").to(dtype)
    modules = {}
    for backend in backends:
        module = relpos.DisentangledSelfAttention(**config, backend=backend).to(dtype)
        module.load_state_dict(reference.state_dict())
        modules[backend] = module.eval()
    return modules


@settings(max_examples=25)
@given(config=attention_settings(), dtype=st.sampled_from([torch.float32, torch.float64]),
       data=st.data())
def test_valid_input_is_finite_and_the_backends_agree(config, dtype, data):
    backends = tuple(relpos.BACKENDS)
    if dtype != torch.float64:  # flex in float32 compiles: too slow for 25 examples
        backends = tuple(b for b in backends if b != "flex")
    modules = _modules(config, dtype, backends)
    span = modules["naive"].span
    x, table, mask = data.draw(inputs(config["hidden_size"], span, dtype))
    with torch.no_grad():
        outputs = {
            name: module(x, mask, rel_embeddings=table)
            for name, module in modules.items()
        }
        _, scores = modules["gather"](
            x, mask, rel_embeddings=table, return_scores=True
        )
    rows = kept(mask, x.shape[:2])
    expected = outputs["naive"]
    assert expected.shape == x.shape and torch.isfinite(expected).all()
    assert torch.isfinite(scores.probs).all()
    for name, out in outputs.items():
        torch.testing.assert_close(
            out[rows], expected[rows], rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype],
            msg=lambda m: f"{name} differs from naive: {m}",
        )


@settings(max_examples=20)
@given(name=st.sampled_from(sorted(schemes.ATTENTIONS)), b=st.integers(1, 2),
       n=st.integers(1, 7), shift=st.integers(-50, 50))
def test_every_scheme_gives_finite_output(name, b, n, shift):
    module = schemes.ATTENTIONS[name](8, 2).double().eval()
    x = torch.randn(b, n, 8, dtype=torch.float64)
    mask = torch.rand(b, n) > 0.3
    with torch.no_grad():
        out, scores = module(x, mask, positions=torch.arange(n) + shift, return_scores=True)
        unshifted = module(x, mask)
    assert out.shape == x.shape and torch.isfinite(out).all()
    # Relative positions: the same output wherever the sequence starts (TUPE's
    # absolute term is not relative; FIRE's is, below its threshold of 512).
    if schemes.REGISTRY[name].relative or name == "fire":
        torch.testing.assert_close(out, unshifted, rtol=0, atol=1e-9)
    # Every query's weights sum to 1; padded keys get none where a real key exists.
    probs = scores.probs  # (b, h, i, j)
    ones = torch.ones(probs.shape[:-1], dtype=probs.dtype)
    torch.testing.assert_close(probs.sum(-1), ones)
    has_real = mask.any(-1)  # (b,)
    padded = (~mask & has_real[:, None])[:, None, None, :].expand_as(probs)
    assert probs[padded].abs().sum() == 0


# -- invalid input ----------------------------------------------------------------------

_X = torch.randn(2, 5, 8)
_TABLE = torch.randn(8, 8)


def _attention(**changes):
    return relpos.DisentangledSelfAttention(8, 2, max_relative_positions=4, **changes)


BAD_CALLS = {
    "hidden_states": (
        TypeError, lambda: _attention()(_X.double(), rel_embeddings=_TABLE)
    ),
    "rel_embeddings": (
        TypeError, lambda: _attention()(_X, rel_embeddings=_TABLE.double())
    ),
    "attention_mask": (
        ValueError,
        lambda: _attention()(_X, torch.ones(2, 4), rel_embeddings=_TABLE),
    ),
    "share_att_key": (TypeError, lambda: _attention(share_att_key="False")),
    "position_buckets": (ValueError, lambda: _attention(position_buckets=-5)),
    "rel": (TypeError, lambda: relpos.delta(torch.tensor([1.5]), 4)),
    "index": (
        ValueError,
        lambda: relpos.content_to_position(
            torch.randn(1, 2, 3, 4), torch.randn(2, 6, 4), torch.full((3, 3), 6)
        ),
    ),
    "pos_key": (
        ValueError,
        lambda: relpos.content_to_position(
            torch.randn(1, 2, 3, 4), torch.randn(3, 6, 4), torch.zeros(3, 3, dtype=torch.long)
        ),
    ),
    "key_mask": (
        TypeError,
        lambda: schemes.masked_softmax(torch.randn(1, 1, 2, 2), torch.ones(1, 2)),
    ),
    "query_positions": (
        TypeError,
        lambda: schemes.relative_distances(torch.arange(3.0), torch.arange(3)),
    ),
}


@settings(max_examples=30)
@given(argument=st.sampled_from(sorted(BAD_CALLS)))
def test_invalid_input_names_the_argument(argument):
    error, call = BAD_CALLS[argument]
    with pytest.raises(error, match=argument):
        call()


@settings(max_examples=30)
@given(rel=st.lists(st.floats(-10, 10, allow_nan=False), min_size=1, max_size=5),
       which=st.sampled_from(["delta", "shaw_index", "t5_bucket", "alibi_bias",
                              "position_index"]))
def test_float_distances_are_refused_not_truncated(rel, which):
    rel = torch.tensor(rel)
    calls = {
        "delta": lambda: relpos.delta(rel, 4),
        "shaw_index": lambda: schemes.shaw_index(rel, 4),
        "t5_bucket": lambda: schemes.t5_bucket(rel, num_buckets=8, max_distance=16),
        "alibi_bias": lambda: schemes.alibi_bias(rel, schemes.alibi_slopes(2)),
        "position_index": lambda: relpos.position_index(rel, max_relative_positions=4),
    }
    with pytest.raises(TypeError, match="rel"):
        calls[which]()
