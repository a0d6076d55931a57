"""Causal attention: one flag, every scheme, every kernel.

- Future independence: with ``causal=True`` the output at positions ``<= i``
  does not move when the hidden states after ``i`` change (and it does move
  without the flag, so the check can fail).
- The kernels agree: naive == gather == flex, in float64 and in float32 (the
  compiled CPU flex kernel, padded to a multiple of 16 at n = 8 and 24), with and
  without padding, on every position (a fully padded causal query spreads its
  weight over keys ``0 .. i`` on every kernel).
- The probabilities are exactly 0 above the diagonal; the logits are those before
  masking: causal ALiBi's are ``alibi_bias(causal=True)`` plus the content, causal
  T5's read the one-sided buckets ``t5_bucket(bidirectional=False)``.
- A whole encoder built from ``AttentionConfig(causal=True)`` is future-independent.
- A registered kernel is handed the causal rule inside its ``mask``.
"""

from __future__ import annotations

import pytest
import torch

from _every import COMPILED

import relpos
from relpos import (
    AttentionConfig,
    DisentangledEncoder,
    DisentangledEncoderLayer,
    DisentangledSelfAttention,
    EncoderLayer,
)
from relpos.backends import get_backend, register_backend
from relpos.backends.registry import _REGISTRY
from relpos.core import SelfAttention
from relpos.schemes import (
    ATTENTIONS,
    REGISTRY,
    alibi_bias,
    relative_distances,
    t5_bucket,
)

F64 = torch.float64
HIDDEN, HEADS = 16, 2
BACKENDS = tuple(relpos.BACKENDS)
LENGTHS = (5, 8, 24)  # flex's CPU kernel is padded at 8 and 24 (8 mod 16)
# The kernels' agreement in each dtype, at the lengths and paddings it is checked:
# float64 at every length, with and without padding (flex runs torch's uncompiled
# reference there, on the same score_mod and mask); float32 at 24 with padding
# alone: the compiled CPU kernel, one compile (seconds) per module and shape. 5, 8
# and 24 all pad to a multiple of 16, so 24 covers the padded kernel, and it spans
# two blocks; the padded batch reads every term the unpadded one does, and the mask.
AGREE = [(F64, n, masked) for n in LENGTHS for masked in (False, True)]
AGREE += [(torch.float32, 24, True)]
#: The schemes of the every-scheme agreement: those with no input shared by a
#: stack (DeBERTa's table has its own test, over its spans, with the table passed).
PLAIN = [name for name, r in REGISTRY.items() if r.shared is None]
# DeBERTa without and with log buckets: (max_relative_positions, position_buckets).
DEBERTA_SPANS = {"clip4": (4, -1), "buckets16/4": (16, 4)}


def _padding(n: int) -> torch.Tensor:
    """No padding, right padding, left padding (its first queries see only padding).

    Shapes:
        output: (3, n)
    """
    mask = torch.ones(3, n, dtype=torch.long)
    pad = max(1, n // 3)
    mask[1, n - pad :] = 0
    mask[2, :pad] = 0
    return mask


def _scheme(name: str, causal: bool = True, dtype=F64, seed: int = 0) -> SelfAttention:
    torch.manual_seed(seed)
    return ATTENTIONS[name](HIDDEN, HEADS, causal=causal).to(dtype).eval()


def _deberta(span: str, backend: str, causal: bool = True, dtype=F64, seed: int = 0):
    max_rel, buckets = DEBERTA_SPANS[span]
    torch.manual_seed(seed)
    module = DisentangledSelfAttention(
        HIDDEN,
        HEADS,
        max_relative_positions=max_rel,
        position_buckets=buckets,
        backend=backend,
        causal=causal,
    )
    return module.to(dtype).eval()


def _table(module: DisentangledSelfAttention, dtype=F64, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(2 * module.span, HIDDEN, generator=g, dtype=F64).to(dtype)


def _inputs(b: int, n: int, dtype=F64, seed: int = 2) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(b, n, HIDDEN, generator=g, dtype=F64).to(dtype)


def _run(module: SelfAttention, x, mask=None, table=None, **kwargs):
    with torch.no_grad():
        if isinstance(module, DisentangledSelfAttention):
            return module(x, mask, rel_embeddings=table, **kwargs)
        return module(x, mask, **kwargs)


# Every attention that can be causal: each scheme of the registry on every kernel
# (none, no positions, among them), and DeBERTa with and without buckets.
CASES = [
    *[("scheme", name, backend) for name in ATTENTIONS for backend in BACKENDS],
    *[("deberta", span, backend) for span in DEBERTA_SPANS for backend in BACKENDS],
]


def _build(kind: str, name: str, backend: str, causal: bool = True, dtype=F64):
    if kind == "deberta":
        module = _deberta(name, backend, causal, dtype)
        return module, _table(module, dtype)
    torch.manual_seed(0)
    # FIRE's MLP at 4 hidden units: it compiles one unit at a time on flex.
    sizes = {"width": 4} if name == "fire" else {}
    module = ATTENTIONS[name](HIDDEN, HEADS, causal=causal, backend=backend, **sizes)
    return module.to(dtype).eval(), None


def test_every_scheme_takes_the_flag_and_stores_it():
    # every registered scheme, the book's among them
    book = {"shaw", "transformer_xl", "t5", "alibi", "rotary", "fire", "kerple"}
    assert book <= set(ATTENTIONS)
    for name in ATTENTIONS:
        assert _scheme(name).causal is True
        assert _scheme(name, causal=False).causal is False
        with pytest.raises(TypeError, match="causal"):
            ATTENTIONS[name](HIDDEN, HEADS, causal="yes")
    assert DisentangledSelfAttention(HIDDEN, HEADS, causal=True).causal is True
    assert DisentangledSelfAttention(HIDDEN, HEADS).config.causal is False
    with pytest.raises(TypeError, match="causal"):
        AttentionConfig(HIDDEN, HEADS, causal=1)
    with pytest.raises(TypeError, match="causal"):
        SelfAttention(HIDDEN, HEADS, causal=None)


@pytest.mark.parametrize("kind, name, backend", CASES)
@pytest.mark.parametrize("n", LENGTHS)
def test_the_output_up_to_i_ignores_what_comes_after_i(kind, name, backend, n):
    module, table = _build(kind, name, backend)
    bidirectional, _ = _build(kind, name, backend, causal=False)
    x = _inputs(3, n)
    i = n // 2
    changed = x.clone()
    changed[:, i + 1 :] += _inputs(3, n - i - 1, seed=3)
    before, after = _run(module, x, table=table), _run(module, changed, table=table)
    torch.testing.assert_close(after[:, : i + 1], before[:, : i + 1], atol=1e-12, rtol=0)
    assert (after[:, i + 1 :] - before[:, i + 1 :]).abs().max() > 1e-3
    # The same weights without the flag do read the future: the check can fail.
    moved = _run(bidirectional, changed, table=table) - _run(bidirectional, x, table=table)
    assert moved[:, : i + 1].abs().max() > 1e-3
    # Causal attention over a prefix is causal attention over the whole, cut.
    prefix = _run(module, x[:, : i + 1], table=table)
    torch.testing.assert_close(prefix, before[:, : i + 1], atol=1e-12, rtol=0)


@pytest.mark.parametrize("span", DEBERTA_SPANS)
@pytest.mark.parametrize("dtype, n, masked", AGREE)
def test_naive_gather_flex_agree_for_causal_deberta(span, n, masked, dtype):
    x = _inputs(3, n, dtype)
    mask = _padding(n) if masked else None
    outputs = {}
    for backend in BACKENDS:
        module = _deberta(span, backend, dtype=dtype)
        outputs[backend] = _run(module, x, mask, _table(module, dtype))
    atol = 1e-12 if dtype == F64 else 1e-5
    # Every position, padded ones included: all kernels spread a fully padded
    # causal query over the same keys.
    torch.testing.assert_close(outputs["gather"], outputs["naive"], atol=atol, rtol=0)
    torch.testing.assert_close(outputs["flex"], outputs["naive"], atol=atol, rtol=0)
    # And causal is not bidirectional here.
    bidirectional = _deberta(span, "naive", causal=False, dtype=dtype)
    other = _run(bidirectional, x, mask, _table(bidirectional, dtype))
    assert (other - outputs["naive"]).abs().max() > 1e-3


# float32 (the compiled kernel) on one module per way positions reach it
# (_every.COMPILED): its score_mod reads only those; float64 on every module.
EVERY_AGREE = [
    (kind, dtype, n, masked)
    for kind in PLAIN
    for dtype, n, masked in AGREE
    if dtype == F64 or kind in COMPILED
]


@pytest.mark.parametrize("kind, dtype, n, masked", EVERY_AGREE)
def test_naive_gather_flex_agree_for_every_scheme(kind, n, masked, dtype):
    x = _inputs(3, n, dtype)
    mask = _padding(n) if masked else None
    outputs = {}
    for backend in BACKENDS:
        module, _ = _build("scheme", kind, backend, dtype=dtype)
        outputs[backend] = _run(module, x, mask)
    atol = 1e-12 if dtype == F64 else 1e-5
    torch.testing.assert_close(outputs["gather"], outputs["naive"], atol=atol, rtol=0)
    torch.testing.assert_close(outputs["flex"], outputs["naive"], atol=atol, rtol=0)


def _causal_scores(kind, name, backend, n, masked):
    module, table = _build(kind, name, backend)
    x = _inputs(3, n)
    mask = _padding(n) if masked else None
    _, scores = _run(module, x, mask, table, return_scores=True)
    return module, x, scores


@pytest.mark.parametrize("kind, name, backend", CASES)
@pytest.mark.parametrize("masked", [False, True])
def test_probabilities_are_exactly_zero_above_the_diagonal(kind, name, backend, masked):
    n = 8
    _, _, scores = _causal_scores(kind, name, backend, n, masked)
    future = torch.ones(n, n, dtype=torch.bool).triu(1)
    probs = scores.probs  # (b, h, i, j)
    assert torch.all(probs[..., future] == 0)
    torch.testing.assert_close(probs.sum(-1), torch.ones_like(probs[..., 0]))
    # Unpadded keys at or before the query do get weight.
    visible = ~future if not masked else ~future & _padding(n).bool()[:, None, None, :]
    assert torch.all(probs[visible.expand_as(probs)] > 0)
    # The logits are those before masking: finite above the diagonal, except
    # causal ALiBi's bias, which is -inf there by its definition.
    above = scores.logits[..., future]
    if name == "alibi":
        assert torch.all(above == float("-inf"))
    else:
        assert torch.all(torch.isfinite(above))


def test_a_fully_padded_causal_query_spreads_over_keys_up_to_itself():
    n = 6
    mask = _padding(n)  # row 2: keys 0, 1 padded; queries 0 and 1 see only padding
    module, table = _build("deberta", "clip4", "naive")
    _, scores = _run(module, _inputs(3, n), mask, table, return_scores=True)
    torch.testing.assert_close(scores.probs[2, :, 0, 0], torch.ones(HEADS, dtype=F64))
    torch.testing.assert_close(scores.probs[2, :, 1, :2], torch.full((HEADS, 2), 0.5,
                                                                     dtype=F64))
    assert torch.all(scores.probs[2, :, 1, 2:] == 0)


def _content_logits(module: SelfAttention, x: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        query = module.split_heads(module.query_proj(x))  # (b, h, i, d)
        key = module.split_heads(module.key_proj(x))  # (b, h, j, d)
        return query @ key.transpose(-1, -2) * module.scale  # (b, h, i, j)


def test_causal_alibi_logits_are_the_causal_bias_plus_the_content():
    n = 7
    module, x, scores = _causal_scores("scheme", "alibi", "naive", n, masked=False)
    assert module.position_bias.causal is True
    rel = relative_distances(torch.arange(n), torch.arange(n))  # (i, j)
    bias = alibi_bias(rel, module.position_bias.slopes.to(F64), causal=True)
    expected = _content_logits(module, x) + bias  # (b, h, i, j)
    torch.testing.assert_close(scores.logits, expected, atol=1e-12, rtol=0)
    assert torch.isinf(bias).any()  # the causal bias, not -slope * |i - j|
    # The encoder's ALiBi keeps the two-sided bias.
    assert _scheme("alibi", causal=False).position_bias.causal is False


def test_causal_t5_reads_the_one_sided_buckets():
    n = 24
    module, x, scores = _causal_scores("scheme", "t5", "naive", n, masked=False)
    bias_module = module.position_bias
    assert bias_module.bidirectional is False
    rel = relative_distances(torch.arange(n), torch.arange(n))  # (i, j)
    buckets = t5_bucket(
        rel,
        num_buckets=bias_module.num_buckets,
        max_distance=bias_module.max_distance,
        bidirectional=False,
    )  # (i, j)
    bias = bias_module.embedding.weight[buckets].movedim(-1, 0)  # (h, i, j)
    expected = _content_logits(module, x) + bias.detach()
    torch.testing.assert_close(scores.logits, expected, atol=1e-12, rtol=0)
    # One-sided buckets differ from the two-sided ones at these distances.
    two_sided = t5_bucket(rel, num_buckets=bias_module.num_buckets,
                          max_distance=bias_module.max_distance)
    assert not torch.equal(buckets[rel >= 0], two_sided[rel >= 0])
    # Told otherwise, causal T5 keeps the two-sided buckets; the encoder's is two-sided.
    told = ATTENTIONS["t5"](HIDDEN, HEADS, causal=True, bidirectional=True)
    assert told.causal and told.position_bias.bidirectional
    assert _scheme("t5", causal=False).position_bias.bidirectional


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("span", DEBERTA_SPANS)
def test_a_causal_encoder_is_future_independent_end_to_end(backend, span):
    max_rel, buckets = DEBERTA_SPANS[span]
    config = AttentionConfig(HIDDEN, HEADS, max_relative_positions=max_rel,
                             position_buckets=buckets, backend=backend, causal=True)
    torch.manual_seed(0)
    encoder = DisentangledEncoder(2, intermediate_size=32, config=config).to(F64).eval()
    assert all(layer.attention.causal for layer in encoder.layers)
    n, i = 24, 9
    x = _inputs(3, n)
    changed = x.clone()
    changed[:, i + 1 :] = _inputs(3, n - i - 1, seed=5)
    mask = _padding(n)
    with torch.no_grad():
        before, after = encoder(x, mask), encoder(changed, mask)
        bidirectional = DisentangledEncoder(
            2, intermediate_size=32, config=config.replace(causal=False)
        ).to(F64).eval()
        bidirectional.load_state_dict(encoder.state_dict())
        moved = bidirectional(changed, mask) - bidirectional(x, mask)
    torch.testing.assert_close(after[:, : i + 1], before[:, : i + 1], atol=1e-12, rtol=0)
    assert (after[:, i + 1 :] - before[:, i + 1 :]).abs().max() > 1e-3
    assert moved[:, : i + 1].abs().max() > 1e-3


def test_causal_layers_take_it_through_the_config_or_an_argument():
    layer = DisentangledEncoderLayer(HIDDEN, HEADS, 32, causal=True)
    assert layer.attention.causal and layer.attention.config.causal
    encoder = DisentangledEncoder(1, HIDDEN, HEADS, 32, causal=True)
    assert encoder.config.causal and encoder.layers[0].attention.causal
    with pytest.raises(ValueError, match="causal"):
        DisentangledEncoderLayer(intermediate_size=32, causal=True,
                                 config=AttentionConfig(HIDDEN, HEADS))


@pytest.mark.parametrize("name", sorted(ATTENTIONS))
def test_a_scheme_block_is_future_independent(name):
    torch.manual_seed(0)
    layer = EncoderLayer(ATTENTIONS[name](HIDDEN, HEADS, causal=True), HIDDEN, 32)
    layer = layer.to(F64).eval()
    n, i = 8, 3
    x = _inputs(2, n)
    changed = x.clone()
    changed[:, i + 1 :] = 0.0
    with torch.no_grad():
        before, after = layer(x), layer(changed)
    torch.testing.assert_close(after[:, : i + 1], before[:, : i + 1], atol=1e-12, rtol=0)


def test_causal_flex_gradients_equal_gather_on_the_cpu():
    # flex's CPU backward recomputes the gather form: it must be causal too.
    n = 8
    x = _inputs(2, n, torch.float32)
    grads = {}
    for backend in ("gather", "flex"):
        module = _deberta("clip4", backend, dtype=torch.float32)
        table = _table(module, torch.float32).requires_grad_()
        inputs = x.clone().requires_grad_()
        out = module(inputs, _padding(n)[:2], rel_embeddings=table)
        (out * torch.arange(n, dtype=torch.float32)[:, None]).sum().backward()
        grads[backend] = (inputs.grad, table.grad, module.query_proj.weight.grad)
    for got, expected in zip(grads["flex"], grads["gather"]):
        torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    # The gradient is causal too: the first output's reaches no later input.
    module = _deberta("clip4", "flex", dtype=torch.float32)
    inputs = x.clone().requires_grad_()
    module(inputs, rel_embeddings=_table(module, torch.float32))[:, 0].sum().backward()
    assert torch.all(inputs.grad[:, 1:] == 0) and inputs.grad[:, 0].abs().max() > 0


@pytest.fixture
def registry():
    saved = dict(_REGISTRY)
    yield
    _REGISTRY.clear()
    _REGISTRY.update(saved)


def test_a_registered_kernel_is_handed_the_causal_rule_in_its_mask(registry):
    seen = []

    def recording(query, key, value, terms, mask, scale, dropout_p):
        seen.append(None if mask is None else mask.causal)
        return get_backend("gather").attend(
            query, key, value, terms, mask, scale, dropout_p
        )

    register_backend("recording", recording)
    x = _inputs(2, 6)
    table = _table(_deberta("clip4", "gather"))
    causal = _run(_deberta("clip4", "recording"), x, table=table)
    torch.testing.assert_close(causal, _run(_deberta("clip4", "gather"), x, table=table))
    _run(_deberta("clip4", "recording", causal=False), x, table=table)
    assert seen == [True, None]
    assert relpos.BACKENDS[-1] == "recording"


@pytest.mark.slow
@pytest.mark.parametrize(
    "backend, compiler", [("gather", "aot_eager"), ("flex", "aot_eager")]
)
def test_causal_attention_compiles_as_one_graph(backend, compiler):
    # No host sync on the causal path either (see tests/test_compile.py): dynamo's
    # capture with fullgraph=True fails on one whatever the backend, so aot_eager
    # (no kernel generation) checks it; inductor's code generation for this module
    # is checked in test_compile.py (gather, and flex's gather formulation), and
    # the causal rule adds one elementwise where to it (a 3 s compile). The eager
    # side is the same weights on gather: eager flex in float32 would compile its own
    # kernel (seconds) to check nothing about torch.compile; the compiled causal
    # kernel equals naive in test_naive_gather_flex_agree_for_causal_deberta.
    module = _deberta("clip4", backend, dtype=torch.float32)
    x, mask = _inputs(3, 6, torch.float32), _padding(6)
    table = _table(module, torch.float32)
    compiled = torch.compile(module, fullgraph=True, backend=compiler)
    with torch.no_grad():
        reference = _deberta("clip4", "gather", dtype=torch.float32)
        expected = reference(x, mask, rel_embeddings=table)
        got = compiled(x, mask, rel_embeddings=table)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
