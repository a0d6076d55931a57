"""``query_states``: queries from one input, keys and values from another.

DeBERTa's enhanced mask decoder attends with queries from ``query_states`` over
keys and values from ``hidden_states``; ``transformers``' DebertaV2 modules take
the argument, and relpos's must compute what they compute:

- ``DisentangledSelfAttention`` with ``query_states`` equals ``transformers``'
  ``DisentangledSelfAttention``; its layer equals ``DebertaV2Layer`` and the
  layer's attention sub-layer ``DebertaV2Attention`` (whose residual adds
  ``query_states``), on every kernel, with and without log buckets, with padding.
- ``query_states=None`` is ``query_states=hidden_states``, bit for bit, for every
  attention and layer.
- The queries, and only they, come from ``query_states``: changing its row ``i``
  moves the output at ``i`` alone.
- Bad ``query_states`` is refused with an error that names it.
"""

from __future__ import annotations

import pytest
import torch

import relpos
from _deberta import padding_mask, reference_encoder

from relpos import (
    DisentangledEncoder,
    DisentangledEncoderLayer,
    DisentangledSelfAttention,
    EncoderLayer,
)
from relpos.core import SelfAttention
from relpos.schemes import ATTENTIONS

TOLERANCE = {torch.float32: 5e-5, torch.float64: 1e-6}
HIDDEN, HEADS = 32, 4
# (max_relative_positions, position_buckets): plain clipping, small log buckets.
SPANS = {"clip8": (8, -1), "buckets64/16": (64, 16)}


def _pair(span: str, backend: str, dtype: torch.dtype):
    """A one-layer ``transformers`` encoder and relpos's copy of it."""
    max_rel, buckets = SPANS[span]
    ref = reference_encoder(
        layers=1, hidden=HIDDEN, heads=HEADS, intermediate=64,
        max_relative_positions=max_rel, position_buckets=buckets, dtype=dtype,
    )
    ours = DisentangledEncoder.from_transformers(ref, backend=backend).eval()
    return ref, ours


def _states(n: int, dtype: torch.dtype, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(3, n, HIDDEN, generator=g, dtype=torch.float64).to(dtype)
    q = torch.randn(3, n, HIDDEN, generator=g, dtype=torch.float64).to(dtype)
    return x, q


# Every backend, span, dtype and length; flex's compiled CPU kernel (float32, seconds
# per new kernel) at one length and span, its float64 (the same score_mod, uncompiled)
# at all of them.
GRID = [
    (backend, span, dtype, n)
    for backend in relpos.BACKENDS
    for span in SPANS
    for dtype in (torch.float32, torch.float64)
    for n in (7, 24)
    if backend != "flex" or dtype == torch.float64 or (span, n) == ("clip8", 24)
]


@pytest.mark.parametrize("backend, span, dtype, n", GRID)
def test_query_states_equal_transformers(backend, span, dtype, n):
    ref, ours = _pair(span, backend, dtype)
    x, q = _states(n, dtype, seed=n)
    mask = padding_mask(n)
    keep = mask.bool()
    pair_mask = ref.get_attention_mask(mask)  # (b, 1, i, j)
    relative_pos = ref.get_rel_pos(x)
    table = ref.get_rel_embedding()  # (2 * span, hidden)
    theirs_layer = ref.layer[0]
    layer = ours.layers[0]
    inputs = dict(query_states=q, relative_pos=relative_pos, rel_embeddings=table)
    with torch.no_grad():
        expected_self = theirs_layer.attention.self(x, pair_mask, **inputs)[0]
        expected_attention = theirs_layer.attention(x, pair_mask, **inputs)[0]
        expected_layer = theirs_layer(x, pair_mask, **inputs)[0]
        got_self = layer.attention(x, mask, query_states=q, rel_embeddings=table)
        got_attention = layer.attention_norm(q + layer.attention_output(got_self))
        got_layer = layer(x, mask, query_states=q, rel_embeddings=table)
    atol = TOLERANCE[dtype]
    torch.testing.assert_close(got_self[keep], expected_self[keep], atol=atol, rtol=0)
    torch.testing.assert_close(
        got_attention[keep], expected_attention[keep], atol=atol, rtol=0
    )
    torch.testing.assert_close(got_layer[keep], expected_layer[keep], atol=atol, rtol=0)
    # The argument matters: without it both sides compute something else.
    with torch.no_grad():
        plain = theirs_layer(x, pair_mask, relative_pos=relative_pos,
                             rel_embeddings=table)[0]
    assert (plain[keep] - expected_layer[keep]).abs().max() > 1e-2


def _attentions() -> dict[str, SelfAttention]:
    torch.manual_seed(0)
    modules = {
        name: cls(HIDDEN, HEADS) for name, cls in ATTENTIONS.items()
    }
    modules["causal-rotary"] = ATTENTIONS["rotary"](HIDDEN, HEADS, causal=True)
    for backend in relpos.BACKENDS:
        modules[f"deberta-{backend}"] = DisentangledSelfAttention(
            HIDDEN, HEADS, max_relative_positions=8, backend=backend
        )
    modules["deberta-causal"] = DisentangledSelfAttention(
        HIDDEN, HEADS, max_relative_positions=8, causal=True
    )
    return {name: m.double().eval() for name, m in modules.items()}


ATTENTION_NAMES = list(_attentions())


def _call(module: SelfAttention, x, mask=None, **kwargs):
    if isinstance(module, DisentangledSelfAttention):
        table = torch.linspace(-1, 1, 2 * module.span * HIDDEN, dtype=x.dtype)
        return module(
            x, mask, rel_embeddings=table.reshape(2 * module.span, HIDDEN), **kwargs
        )
    return module(x, mask, **kwargs)


@pytest.mark.parametrize("name", ATTENTION_NAMES)
def test_no_query_states_is_the_hidden_states(name):
    module = _attentions()[name]
    x, _ = _states(9, torch.float64)
    mask = padding_mask(9)
    with torch.no_grad():
        assert torch.equal(_call(module, x, mask), _call(module, x, mask, query_states=x))
        out, scores = _call(module, x, mask, return_scores=True)
        same, same_scores = _call(module, x, mask, query_states=x, return_scores=True)
    assert torch.equal(out, same) and torch.equal(scores.probs, same_scores.probs)


@pytest.mark.parametrize("name", ATTENTION_NAMES)
def test_query_states_enter_the_queries_only(name):
    module = _attentions()[name]
    n, i = 9, 4
    x, q = _states(n, torch.float64)
    moved_q = q.clone()
    moved_q[:, i] += 1.0
    moved_x = x.clone()
    moved_x[:, 0] += 1.0
    with torch.no_grad():
        out = _call(module, x, query_states=q)
        by_query = _call(module, x, query_states=moved_q) - out
        by_keys = _call(module, moved_x, query_states=q) - out
        without = _call(module, x)
    # A query row changes its own output and no other.
    assert by_query[:, i].abs().max() > 1e-3
    others = [r for r in range(n) if r != i]
    assert torch.all(by_query[:, others] == 0)
    # Keys and values are hidden_states': the first one moves every output (that may
    # read it: all of them, causal or not, since it comes first).
    assert torch.all(by_keys.abs().amax(-1) > 1e-6)
    assert (out - without).abs().max() > 1e-3


def test_a_block_adds_the_query_states_in_its_first_residual():
    seen = {}

    class Silent(torch.nn.Module):
        """An attention that returns zeros and records what it is given."""

        hidden_size = HIDDEN

        def forward(self, hidden_states, attention_mask=None, **kwargs):
            seen.update(kwargs)
            return torch.zeros_like(hidden_states)

    torch.manual_seed(0)
    layer = EncoderLayer(Silent(), HIDDEN, 64).double().eval()
    x, q = _states(5, torch.float64)
    with torch.no_grad():
        # Attention adds nothing, so the block sees query_states where x would be.
        torch.testing.assert_close(layer(x, query_states=q), layer(q), atol=0, rtol=0)
    assert seen["query_states"] is q
    # A relpos attention inside the same block: the residual is query_states too.
    torch.manual_seed(0)
    block = EncoderLayer(SelfAttention(HIDDEN, HEADS), HIDDEN, 64).double().eval()
    with torch.no_grad():
        context = block.attention(x, query_states=q)
        attended = block.attention_norm(q + block.attention_output(context))
        expected = block.output_norm(
            attended + block.output(block.activation(block.intermediate(attended)))
        )
        torch.testing.assert_close(block(x, query_states=q), expected, atol=0, rtol=0)
        assert torch.equal(block(x), block(x, query_states=x))
    layer = DisentangledEncoderLayer(HIDDEN, HEADS, 64).double().eval()
    table = torch.randn(2 * layer.attention.span, HIDDEN, dtype=torch.float64)
    with torch.no_grad():
        plain = layer(x, rel_embeddings=table)
        assert torch.equal(plain, layer(x, rel_embeddings=table, query_states=x))


BAD = [
    ("a list", lambda x: x.tolist(), TypeError),
    ("integers", lambda x: x.long(), TypeError),
    ("float32", lambda x: x.float(), TypeError),
    ("one more position", lambda x: torch.cat([x, x[:, :1]], 1), ValueError),
    ("no batch", lambda x: x[0], ValueError),
    ("another width", lambda x: x[..., :-1], ValueError),
    ("another device", lambda x: x.to("meta"), ValueError),
]


@pytest.mark.parametrize("what, make, error", BAD, ids=[b[0] for b in BAD])
def test_bad_query_states_are_refused_by_name(what, make, error):
    x, _ = _states(5, torch.float64)
    bad = make(x)
    torch.manual_seed(0)
    attention = DisentangledSelfAttention(HIDDEN, HEADS, max_relative_positions=4)
    attention = attention.double()
    table = torch.randn(8, HIDDEN, dtype=torch.float64)
    scheme = ATTENTIONS["shaw"](HIDDEN, HEADS).double()
    block = EncoderLayer(ATTENTIONS["t5"](HIDDEN, HEADS), HIDDEN, 64).double()
    layer = DisentangledEncoderLayer(HIDDEN, HEADS, 64, max_relative_positions=4)
    layer = layer.double()
    calls = [
        lambda: attention(x, query_states=bad, rel_embeddings=table),
        lambda: scheme(x, query_states=bad),
        lambda: block(x, query_states=bad),
        lambda: layer(x, query_states=bad, rel_embeddings=table),
    ]
    for call in calls:
        with pytest.raises(error, match="query_states"):
            call()
