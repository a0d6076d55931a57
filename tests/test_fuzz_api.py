"""The fuzz of the public API: generated wrong arguments, and generated valid input
checked against a reference.

- Every name of ``relpos.__all__`` that takes arguments (and every function of
  ``relpos.masks``, and the forward of each module) has a valid call written out
  in ``API`` (``test_helper_arguments.CALLS`` holds the low-level helpers). One
  argument at a time is replaced by a generated wrong value (wrong types, shapes,
  dtypes, signs, int64's extremes inside tensors, NaN): the call either succeeds
  or raises a ``TypeError``/``ValueError`` whose message names the argument.
- No wrong result: the explicit kernels (``content_to_position``,
  ``position_to_content``) equal their per-pair references; every scheme of the
  registry, built the registry's way (``build_attention``), and every stack
  (``relpos.Transformer``), gives the same output on the ``naive`` and
  ``gather`` kernels.

A fixed number of examples, derandomized: the same inputs on every run.
"""

from __future__ import annotations

import inspect
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import relpos
from relpos import masks
from relpos.backends.registry import _REGISTRY, get_backend
from relpos.book.experiments import Config
from relpos.schemes.registry import build_attention, scheme_names
from relpos.transformer import stack_schemes
from test_helper_arguments import CALLS

F64 = torch.float64
HIDDEN, HEADS, N = 8, 2, 5
BIG = torch.iinfo(torch.int64).max
SMALL = torch.iinfo(torch.int64).min


def _lm() -> relpos.TransformerLM:
    torch.manual_seed(0)
    return relpos.TransformerLM(11, "none", 1, HIDDEN, HEADS).eval()


def _x(n: int = N) -> torch.Tensor:
    return torch.randn(2, n, HIDDEN, generator=torch.Generator().manual_seed(0))


def _attend(query, key, value, terms, mask, scale, dropout_p=0.0, training=False):
    return get_backend("gather").attend(
        query, key, value, terms, mask, scale, dropout_p, training
    )


Q = torch.randn(2, HEADS, N, 4)  # (b, h, i, d)
ROWS = torch.randn(HEADS, 8, 4)  # (h, r, d)
INDEX = relpos.relative_position_index(N, max_relative_positions=4)  # (i, j)
PAIRS = ROWS[:, INDEX].permute(1, 2, 0, 3)  # (i, j, h, d)
C2C = torch.randn(2, HEADS, N, N)  # (b, h, i, j)
DEVICE = torch.device("cpu")

#: name -> (the callable, a valid call's keyword arguments). Modules are built
#: once here; their ``forward`` is called with each wrong argument.
API = {
    "AttentionConfig": (relpos.AttentionConfig, dict(
        hidden_size=HIDDEN, num_heads=HEADS, max_relative_positions=4,
        position_buckets=-1, pos_att_type=("c2p", "p2c"), share_att_key=True,
        dropout=0.0, backend="gather", causal=False, num_kv_heads=None)),
    "DisentangledEncoder": (relpos.DisentangledEncoder, dict(
        num_layers=1, hidden_size=HIDDEN, num_heads=HEADS, intermediate_size=16,
        dropout=0.0, attention_dropout=None, layer_norm_eps=1e-7, norm_rel_ebd=True,
        max_relative_positions=4)),
    "DisentangledEncoderLayer": (relpos.DisentangledEncoderLayer, dict(
        hidden_size=HIDDEN, num_heads=HEADS, intermediate_size=16, dropout=0.0,
        attention_dropout=None, layer_norm_eps=1e-7, own_table=True,
        max_relative_positions=4)),
    "DisentangledModel": (relpos.DisentangledModel, dict(
        vocab_size=11, num_layers=1, hidden_size=HIDDEN, num_heads=HEADS,
        intermediate_size=16, embedding_size=None, position_biased_input=False,
        max_position_embeddings=16, type_vocab_size=0, pad_token_id=0, dropout=0.0,
        attention_dropout=None, layer_norm_eps=1e-7, norm_rel_ebd=True,
        max_relative_positions=4)),
    "DisentangledSelfAttention": (relpos.DisentangledSelfAttention, dict(
        hidden_size=HIDDEN, num_heads=HEADS, max_relative_positions=4,
        position_buckets=-1, pos_att_type=("c2p", "p2c"), share_att_key=True,
        dropout=0.0, backend="gather", causal=False, num_kv_heads=None,
        own_table=True)),
    "Embeddings": (relpos.Embeddings, dict(
        vocab_size=11, hidden_size=HIDDEN, embedding_size=None,
        position_biased_input=False, max_position_embeddings=16, type_vocab_size=0,
        pad_token_id=0, layer_norm_eps=1e-7, dropout=0.0)),
    "EncoderLayer": (relpos.EncoderLayer, dict(
        attention=relpos.SelfAttention(HIDDEN, HEADS), hidden_size=HIDDEN,
        intermediate_size=16, dropout=0.0, layer_norm_eps=1e-7, norm_first=False,
        norm="layer", activation="gelu")),
    "PositionTerms": (relpos.PositionTerms, dict(
        query_positions=torch.arange(N)[None], key_positions=torch.arange(N)[None],
        lookup=INDEX, key_rows=ROWS)),
    "RelativePositionEmbedding": (relpos.RelativePositionEmbedding, dict(
        max_relative_positions=4, hidden_size=HIDDEN, init="normal")),
    "SelfAttention": (relpos.SelfAttention, dict(
        hidden_size=HIDDEN, num_heads=HEADS, dropout=0.0, backend="gather",
        causal=False, num_kv_heads=None)),
    "Transformer": (relpos.Transformer, dict(
        scheme="none", num_layers=1, hidden_size=HIDDEN, num_heads=HEADS,
        intermediate_size=16, causal=False, backend="gather", num_kv_heads=None,
        norm_first=False, norm="layer", activation="gelu", dropout=0.0,
        layer_norm_eps=1e-7, attention_settings=None)),
    "TransformerLM": (relpos.TransformerLM, dict(
        vocab_size=11, scheme="alibi", num_layers=1, hidden_size=HIDDEN,
        num_heads=HEADS, intermediate_size=16, causal=True)),
    "combine_scores": (relpos.combine_scores, dict(
        c2c=C2C, c2p=C2C, p2c=C2C, key_mask=torch.ones(2, N, dtype=torch.bool),
        causal=False)),
    "content_to_position": (relpos.content_to_position, dict(
        query=Q, pos_key=ROWS, index=INDEX)),
    "content_to_position_naive": (relpos.content_to_position_naive, dict(
        query=Q, pos_key_pairs=PAIRS)),
    "gather_scores": (relpos.gather_scores, dict(
        query=Q, key=Q, pos_key=ROWS, pos_query=ROWS, index=INDEX,
        key_mask=None, scale=0.5, causal=False)),
    "generate": (relpos.generate, dict(
        model=_lm(), input_ids=torch.tensor([[1, 2, 3]]), max_new_tokens=2,
        attention_mask=None, do_sample=False, temperature=1.0, top_k=None,
        top_p=None, eos_token_id=None, pad_token_id=None, generator=None,
        use_cache=True)),
    "position_to_content": (relpos.position_to_content, dict(
        key=Q, pos_query=ROWS, index=INDEX)),
    "position_to_content_naive": (relpos.position_to_content_naive, dict(
        key=Q, pos_query_pairs=PAIRS)),
    "register_backend": (relpos.register_backend, dict(
        name="fuzz_backend", attend=_attend, scores=None, replace=True)),
    # forward of each module
    "SelfAttention.forward": (relpos.SelfAttention(HIDDEN, HEADS).eval(), dict(
        hidden_states=_x(), attention_mask=torch.ones(2, N, dtype=torch.long),
        positions=torch.arange(N), document_ids=None, cache=None,
        query_states=None, return_scores=False, key_padding_mask=None,
        attn_mask=None)),
    "DisentangledSelfAttention.forward": (
        relpos.DisentangledSelfAttention(HIDDEN, HEADS, max_relative_positions=4)
        .eval(),
        dict(hidden_states=_x(), attention_mask=torch.ones(2, N), positions=None,
             rel_embeddings=None, query_states=None, return_scores=False)),
    "Transformer.forward": (
        relpos.Transformer("t5", 1, HIDDEN, HEADS, causal=True).eval(),
        dict(hidden_states=_x(), attention_mask=None, positions=torch.arange(N),
             document_ids=torch.zeros(2, N, dtype=torch.long), cache=None,
             key_padding_mask=None, attn_mask=None)),
    "TransformerLM.forward": (_lm(), dict(
        input_ids=torch.tensor([[1, 2, 3]]), attention_mask=None)),
    "DisentangledModel.forward": (
        relpos.DisentangledModel(11, 1, HIDDEN, HEADS, 16, max_relative_positions=4)
        .eval(),
        dict(input_ids=torch.tensor([[1, 2, 3]]), attention_mask=None,
             token_type_ids=None, positions=None)),
    "RelativePositionEmbedding.forward": (
        relpos.RelativePositionEmbedding(4, HIDDEN), dict(seq_len=N)),
    # relpos.masks
    "masks.Mask": (masks.Mask, dict(
        keys=torch.ones(2, N, dtype=torch.bool), pairs=None, query_documents=None,
        key_documents=None, causal=False)),
    "masks.apply": (masks.apply, dict(
        logits=C2C, mask=masks.Mask(keys=torch.ones(2, N, dtype=torch.bool)))),
    "masks.future_keys": (masks.future_keys, dict(
        query_len=N, key_len=N, device=DEVICE)),
    "masks.read_attn_mask": (masks.read_attn_mask, dict(
        attn_mask=torch.zeros(N, N, dtype=torch.bool), batch=2, heads=HEADS,
        query_len=N, key_len=N, device=DEVICE)),
    "masks.read_documents": (masks.read_documents, dict(
        document_ids=torch.zeros(2, N, dtype=torch.long), batch=2, length=N,
        device=DEVICE)),
    "masks.read_key_padding_mask": (masks.read_key_padding_mask, dict(
        key_padding_mask=torch.zeros(2, N, dtype=torch.bool), batch=2,
        key_lens=(N,), device=DEVICE)),
    "masks.read_mask": (masks.read_mask, dict(
        attention_mask=torch.ones(2, N), batch=2, query_len=N, key_len=N,
        device=DEVICE, name="attention_mask")),
}

#: The public names that take no argument, or are values rather than calls.
NOT_CALLED = {
    "BACKENDS", "INITS", "POS_ATT_TYPES", "masks",  # values and a module
    "KVCache",  # KVCache(): no arguments; the cache tests fill it
    "AttentionScores",  # a record of tensors the kernels return, unchecked by design
}

#: Arguments that the attention fills from its own tensors, not the user: the
#: sizes and device ``relpos.masks``' readers check a user's mask against (under
#: torch.compile they are symbolic), and the name they report it under.
INTERNAL = {
    (f"masks.{reader}", argument)
    for reader in ("read_attn_mask", "read_documents", "read_key_padding_mask",
                   "read_mask")
    for argument in ("batch", "heads", "query_len", "key_len", "length", "key_lens",
                     "device", "name")
}

#: Every (name, argument) the fuzz replaces, helpers of test_helper_arguments too.
CASES = [
    (name, argument)
    for table in (API, CALLS)
    for name, (_, valid) in table.items()
    for argument in valid
    if (name, argument) not in INTERNAL
]


def _call(name: str, arguments: dict):
    call, _ = {**CALLS, **API}[name]
    if isinstance(call, torch.nn.Module):
        with torch.no_grad():
            return call(**arguments)
    return call(**arguments)


@pytest.fixture(autouse=True)
def _backends_restored():
    saved = dict(_REGISTRY)
    yield
    _REGISTRY.clear()
    _REGISTRY.update(saved)


def test_every_public_name_that_takes_arguments_is_fuzzed():
    called = {name.split(".")[0] for name in [*API, *CALLS]}
    public = set(relpos.__all__) - NOT_CALLED
    assert public <= called, sorted(public - called)
    functions = {
        f"masks.{name}" for name in masks.__all__ if callable(getattr(masks, name))
    }
    assert functions <= set(API), sorted(functions - set(API))
    assert not inspect.signature(relpos.KVCache).parameters


@pytest.mark.parametrize("name", sorted({**CALLS, **API}))
def test_each_valid_call_runs(name):
    _call(name, dict({**CALLS, **API}[name][1]))


def _tensors() -> st.SearchStrategy:
    """Tensors of a few shapes and dtypes, with int64's extremes among the values."""
    shape = st.lists(st.integers(0, 3), max_size=3)
    dtype = st.sampled_from([torch.float32, F64, torch.float16, torch.long,
                             torch.int32, torch.bool])
    fill = st.sampled_from([0, 1, -1, 7, SMALL, BIG, math.nan, math.inf])

    def build(size, kind, value):
        if kind == torch.bool:
            return torch.full(size, bool(value == value and value), dtype=kind)
        if not kind.is_floating_point and not isinstance(value, int):
            value = -1
        if kind.is_floating_point and isinstance(value, int) and abs(value) > 2**15:
            value = math.copysign(math.inf, value)  # int64's extremes, as a float
        if kind == torch.int32 and isinstance(value, int):
            value = max(min(value, 2**31 - 1), -(2**31))
        return torch.full(size, value, dtype=kind)

    return st.builds(build, shape, dtype, fill)


#: Generated wrong values: every kind of Python value an argument may meet.
WRONG = st.one_of(
    st.sampled_from([None, "x", "", "cuda:banana", "meta", [1, 2], (), object(),
                     True, False, torch.float16, torch.int64, float("nan"),
                     float("inf"), -1.0, 2.5]),
    st.integers(-5, 40),
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.text(max_size=4),
    _tensors(),
)


@settings(max_examples=400, derandomize=True, deadline=None)
@given(case=st.sampled_from(CASES), wrong=WRONG)
def test_a_generated_wrong_argument_is_named_or_accepted(case, wrong):
    name, argument = case
    valid = {**CALLS, **API}[name][1]
    try:
        _call(name, {**valid, argument: wrong})
    except (TypeError, ValueError) as error:
        assert argument in str(error), (name, argument, wrong, error)


# -- no wrong result ---------------------------------------------------------------

@settings(max_examples=25, derandomize=True, deadline=None)
@given(b=st.integers(1, 2), h=st.integers(1, 3), n=st.integers(1, 7),
       k=st.integers(1, 6), buckets=st.booleans(), seed=st.integers(0, 2**16))
def test_the_explicit_kernels_equal_their_per_pair_references(b, h, n, k, buckets,
                                                              seed):
    generator = torch.Generator().manual_seed(seed)
    span = k if not buckets or k < 4 else k
    index = relpos.relative_position_index(
        n, max_relative_positions=span,
        position_buckets=max(2, span - 1) if buckets and span >= 4 else -1,
    )  # (i, j)
    rows = relpos.attention_span(span, -1) * 2
    query = torch.randn(b, h, n, 3, dtype=F64, generator=generator)
    pos = torch.randn(h, rows, 3, dtype=F64, generator=generator)  # (h, r, d)
    pairs = pos[:, index].permute(1, 2, 0, 3)  # (i, j, h, d)
    torch.testing.assert_close(
        relpos.content_to_position(query, pos, index),
        relpos.content_to_position_naive(query, pairs), atol=1e-12, rtol=0,
    )
    torch.testing.assert_close(
        relpos.position_to_content(query, pos, index),
        relpos.position_to_content_naive(query, pairs), atol=1e-12, rtol=0,
    )


def _kernels_agree(build, x, **inputs) -> None:
    outputs = {}
    for backend in ("naive", "gather"):
        torch.manual_seed(0)
        module = build(backend).to(F64).eval()
        with torch.no_grad():
            for parameter in module.parameters():  # away from the small start
                parameter.add_(0.3 * torch.randn_like(parameter))
            outputs[backend] = module(x, **inputs)
    assert torch.isfinite(outputs["gather"]).all()
    torch.testing.assert_close(outputs["gather"], outputs["naive"], atol=1e-9, rtol=0)


@settings(max_examples=40, derandomize=True, deadline=None)
@given(name=st.sampled_from(scheme_names()), heads=st.sampled_from([1, 2]),
       width=st.sampled_from([2, 4]), n=st.integers(1, 7), causal=st.booleans(),
       masked=st.booleans(), seed=st.integers(0, 2**16))
def test_every_scheme_built_by_the_registry_agrees_across_kernels(
    name, heads, width, n, causal, masked, seed
):
    config = Config(scheme=name, hidden_size=heads * width, num_heads=heads,
                    intermediate_size=8, setting="causal" if causal else "encoder")
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(2, n, heads * width, dtype=F64, generator=generator)
    mask = None
    if masked:
        mask = torch.ones(2, n, dtype=torch.long)
        mask[1, max(1, n - 2):] = 0
    _kernels_agree(
        lambda backend: build_attention(name, config, backend=backend), x,
        attention_mask=mask,
    )


@settings(max_examples=25, derandomize=True, deadline=None)
@given(name=st.sampled_from(stack_schemes()), n=st.integers(1, 6),
       causal=st.booleans(), norm_first=st.booleans(), kv=st.sampled_from([None, 1]),
       seed=st.integers(0, 2**16))
def test_every_stack_agrees_across_kernels(name, n, causal, norm_first, kv, seed):
    x = torch.randn(2, n, HIDDEN, dtype=F64,
                    generator=torch.Generator().manual_seed(seed))
    _kernels_agree(
        lambda backend: relpos.Transformer(
            name, 2, HIDDEN, HEADS, 16, causal=causal, norm_first=norm_first,
            num_kv_heads=kv, backend=backend,
        ),
        x,
    )
