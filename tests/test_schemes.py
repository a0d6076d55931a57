"""Properties of relpos.schemes: relative scores, buckets, masks, gradients, errors."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from transformers.models.t5.modeling_t5 import T5Attention

import relpos
from relpos import relative_positions
from relpos.schemes import (
    ATTENTIONS,
    REGISTRY,
    AlibiBias,
    AlibiSelfAttention,
    BiasSelfAttention,
    RotarySelfAttention,
    SchemeSelfAttention,
    ShawSelfAttention,
    T5Bias,
    T5SelfAttention,
    TransformerXLSelfAttention,
    alibi_bias,
    alibi_slopes,
    relative_value_sum,
    rotary_angles,
    rotate,
    score_by_distance,
    shaw_index,
    sinusoidal_encoding,
    t5_bucket,
    t5_exact_limit,
)
from _deberta import padding_mask

F64 = torch.float64
HIDDEN, HEADS, N = 16, 2, 9
SCHEMES = sorted(ATTENTIONS)
#: The schemes whose position part depends on i - j alone (FIRE reads i as well).
RELATIVE = [name for name in SCHEMES if REGISTRY[name].relative]


def _module(name: str, seed: int = 0) -> SchemeSelfAttention:
    torch.manual_seed(seed)
    extra = {
        "shaw": {"max_relative_positions": 3},
        "t5": {"num_buckets": 8, "max_distance": 6},
    }
    module = ATTENTIONS[name](HIDDEN, HEADS, **extra.get(name, {}))
    with torch.no_grad():  # make the position parameters count as much as the content
        for parameter_name, parameter in module.named_parameters():
            if not parameter_name.endswith(("_proj.weight", "_proj.bias")):
                parameter.normal_(0.0, 1.0)
    return module.to(F64).eval()


MODULES = {name: _module(name) for name in SCHEMES}


class QueriesOnlyRotary(RotarySelfAttention):
    """A broken rotary that turns the queries only: absolute, not relative."""

    def rotate(self, query, key, query_positions, key_positions):
        angles = rotary_angles(query_positions, self.head_size)  # (B, i, d/2)
        return rotate(query, angles[:, None]), key


def _inputs(seed: int = 0, n: int = N) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(3, n, HIDDEN, generator=g, dtype=F64), padding_mask(n)


# -- relative means relative -----------------------------------------------------------


@pytest.mark.parametrize("name", RELATIVE)
@given(shift=st.integers(-5000, 5000), seed=st.integers(0, 2**16))
def test_scores_are_translation_invariant(name, shift, seed):
    module = MODULES[name]
    x, mask = _inputs(seed)
    positions = torch.arange(N)
    with torch.no_grad():
        context, scores = module(x, mask, positions=positions, return_scores=True)
        moved, moved_scores = module(
            x, mask, positions=positions + shift, return_scores=True
        )
    torch.testing.assert_close(moved_scores.logits, scores.logits, rtol=0.0, atol=1e-9)
    torch.testing.assert_close(moved, context, rtol=0.0, atol=1e-9)


def test_translation_test_catches_an_absolute_scheme():
    torch.manual_seed(0)
    broken = QueriesOnlyRotary(HIDDEN, HEADS).to(F64).eval()
    x, mask = _inputs()
    with torch.no_grad():
        _, scores = broken(x, mask, return_scores=True)
        _, moved = broken(x, mask, positions=torch.arange(N) + 3, return_scores=True)
    assert (moved.logits - scores.logits).abs().max() > 1e-3


@given(
    m=st.integers(-3000, 3000),
    n=st.integers(-3000, 3000),
    shift=st.integers(-3000, 3000),
    seed=st.integers(0, 2**16),
)
def test_rotary_dot_product_depends_on_i_minus_j_only(m, n, shift, seed):
    d = 8
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, 1, d, generator=g, dtype=F64)  # (1, d) each: one position

    def angles(p: int) -> torch.Tensor:
        return rotary_angles(torch.tensor([p]), d)  # (1, d/2)

    score = (rotate(q, angles(m)) * rotate(k, angles(n))).sum()
    moved = (rotate(q, angles(m + shift)) * rotate(k, angles(n + shift))).sum()
    relative = (
        rotate(q, angles(m - n)) * k
    ).sum()  # (R_m q) . (R_n k) = (R_{m-n} q) . k
    assert math.isclose(moved.item(), score.item(), abs_tol=1e-9)
    assert math.isclose(relative.item(), score.item(), abs_tol=1e-9)


def test_rotation_keeps_lengths_and_is_undone_by_the_opposite_angle():
    x = torch.randn(2, 5, 8, dtype=F64)
    angles = rotary_angles(torch.arange(5) * 7 - 11, 8)
    turned = rotate(x, angles)
    torch.testing.assert_close(turned.norm(dim=-1), x.norm(dim=-1))
    torch.testing.assert_close(rotate(turned, -angles), x)
    assert (turned - x).abs().max() > 0.1


# -- T5 buckets ------------------------------------------------------------------------


@st.composite
def bucket_configs(draw):
    bidirectional = draw(st.booleans())
    num_buckets = draw(st.integers(4 if bidirectional else 2, 80))
    max_exact = t5_exact_limit(num_buckets, bidirectional=bidirectional)
    max_distance = draw(st.integers(max_exact + 1, 400))
    return num_buckets, max_distance, bidirectional


@given(config=bucket_configs())
def test_t5_buckets_monotone_exact_and_saturating(config):
    num_buckets, max_distance, bidirectional = config
    kwargs = dict(num_buckets=num_buckets, max_distance=max_distance)
    exact = t5_exact_limit(num_buckets, bidirectional=bidirectional)
    per_side = num_buckets // 2 if bidirectional else num_buckets
    magnitude = torch.arange(0, 3 * max_distance)
    behind = t5_bucket(
        magnitude, bidirectional=bidirectional, **kwargs
    )  # r = i - j >= 0
    ahead = t5_bucket(-magnitude, bidirectional=bidirectional, **kwargs)  # r <= 0
    for side in (behind, ahead[1:]):
        assert (side[1:] >= side[:-1]).all()  # monotone in |r|
    assert ((behind >= 0) & (behind < num_buckets)).all()
    # Exact below the limit: one bucket per distance, the distance itself.
    assert torch.equal(behind[:exact], magnitude[:exact])
    assert (
        behind[max_distance:].eq(per_side - 1).all()
    )  # saturated from max_distance on
    if bidirectional:
        assert exact == num_buckets // 4
        assert torch.equal(ahead[1:exact], magnitude[1:exact] + per_side)
        assert ahead[max_distance:].eq(2 * per_side - 1).all()
        # the two halves never share a bucket
        assert set(behind.tolist()).isdisjoint(ahead[1:].tolist())
    else:
        assert exact == num_buckets // 2
        assert ahead.eq(0).all()  # keys ahead: bucket 0, hidden by the causal mask


def test_t5_exact_range_is_exactly_num_buckets_over_4_with_the_defaults():
    # Below 8 every distance has its own bucket; 8 and 9 already share one.
    buckets = t5_bucket(torch.arange(0, 12))
    assert len(set(buckets[:8].tolist())) == 8
    assert buckets[8] == buckets[9] == 8
    causal = t5_bucket(torch.arange(0, 20), bidirectional=False)
    assert len(set(causal[:16].tolist())) == 16 and causal[16] == causal[17]


def test_t5_bias_reads_one_scalar_per_bucket_and_head():
    bias = T5Bias(3, num_buckets=8, max_distance=10)
    rel = relative_positions(12)
    values = bias(rel)
    assert values.shape == (3, 12, 12)
    # By hand, 8 buckets, 4 a side, max_distance 10: |i - j| = 0, 1 exact, then
    # floor(2 + 2 * log(|i - j| / 2) / log(5)) up to 3; keys ahead (i < j) add 4.
    by_distance = [0, 1, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3]
    buckets = torch.tensor(
        [[by_distance[abs(i - j)] + 4 * (i < j) for j in range(12)] for i in range(12)]
    )
    expected = bias.embedding.weight[buckets]  # (i, j, h)
    torch.testing.assert_close(values, expected.permute(2, 0, 1), rtol=0, atol=0)


# -- ALiBi ---------------------------------------------------------------------------


@pytest.mark.parametrize("num_heads", [1, 2, 4, 8, 16])
def test_alibi_slopes_are_the_papers_geometric_series(num_heads):
    slopes = alibi_slopes(num_heads, dtype=F64)
    expected = [2.0 ** (-8.0 * (m + 1) / num_heads) for m in range(num_heads)]
    torch.testing.assert_close(
        slopes, torch.tensor(expected, dtype=F64), rtol=1e-14, atol=0
    )


def test_alibi_slopes_for_six_heads_interleave_the_series_of_eight():
    # The series of 4 (2^-2 ... 2^-8), then the odd powers of the series of 8.
    expected = [2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8, 2.0**-1, 2.0**-3]
    assert alibi_slopes(6, dtype=F64).tolist() == expected


def test_alibi_bidirectional_and_causal_forms():
    slopes = alibi_slopes(4, dtype=F64)
    rel = relative_positions(7)
    both = alibi_bias(rel, slopes)
    causal = alibi_bias(rel, slopes, causal=True)
    assert torch.equal(both, both.transpose(1, 2))  # |i - j|: left and right alike
    behind = rel >= 0
    assert torch.equal(both[:, behind], causal[:, behind])
    assert torch.isneginf(causal[:, ~behind]).all()
    # By hand for n = 3 and one slope 1/4: -|i - j| / 4, -inf for keys ahead.
    small = relative_positions(3)
    one = torch.tensor([0.25], dtype=F64)
    inf = float("inf")
    assert alibi_bias(small, one).tolist() == [
        [[0.0, -0.25, -0.5], [-0.25, 0.0, -0.25], [-0.5, -0.25, 0.0]]
    ]
    assert alibi_bias(small, one, causal=True).tolist() == [
        [[0.0, -inf, -inf], [-0.25, 0.0, -inf], [-0.5, -0.25, 0.0]]
    ]


# -- Shaw ------------------------------------------------------------------------------


def test_shaw_index_clips_to_2k_plus_1_rows():
    rel = torch.arange(-9, 10)
    rows = shaw_index(rel, 3)
    assert rows.min() == 0 and rows.max() == 6
    assert torch.equal(rows[rel.abs() <= 3], rel[rel.abs() <= 3] + 3)
    assert rows[rel <= -3].eq(0).all() and rows[rel >= 3].eq(6).all()


def test_relative_value_sum_equals_the_per_pair_table():
    probs = torch.rand(2, 3, 5, 6, dtype=F64).softmax(-1)
    table = torch.randn(7, 4, dtype=F64)
    index = shaw_index(relative_positions(5, 6), 3)
    per_pair = torch.einsum("bhij,ijd->bhid", probs, table[index])
    torch.testing.assert_close(relative_value_sum(probs, table, index), per_pair)


def test_shaw_without_relative_values_has_no_value_table():
    k, head_size = 4, HIDDEN // HEADS
    torch.manual_seed(0)
    with_values = ShawSelfAttention(HIDDEN, HEADS, k).to(F64).eval()
    without = ShawSelfAttention(HIDDEN, HEADS, k, relative_values=False).to(F64).eval()
    count = lambda module: sum(p.numel() for p in module.parameters())  # noqa: E731
    assert count(with_values) - count(without) == (2 * k + 1) * head_size
    # Same weights otherwise: it computes what the other does with a zero value table.
    without.load_state_dict(
        {n: t for n, t in with_values.state_dict().items() if n != "value_table"}
    )
    with torch.no_grad():
        with_values.value_table.zero_()
    x = torch.randn(2, 7, HIDDEN, dtype=F64)
    with torch.no_grad():
        torch.testing.assert_close(without(x), with_values(x), rtol=0, atol=1e-12)


# -- Transformer-XL --------------------------------------------------------------------


def test_sinusoidal_encoding_is_sines_then_cosines():
    enc = sinusoidal_encoding(torch.tensor([0, 3, -3]), 8, dtype=F64)
    assert torch.equal(enc[0], torch.tensor([0.0] * 4 + [1.0] * 4, dtype=F64))
    torch.testing.assert_close(enc[1, :4], -enc[2, :4])  # sines odd
    torch.testing.assert_close(enc[1, 4:], enc[2, 4:])  # cosines even
    assert math.isclose(enc[1, 0].item(), math.sin(3.0))
    assert math.isclose(enc[1, 5].item(), math.cos(3.0 / 10000 ** (2 / 8)))


# -- the modules: masks, gradients, the landscape --------------------------------------


@pytest.mark.parametrize("name", SCHEMES)
def test_padded_keys_change_nothing(name):
    module = MODULES[name]
    x, mask = _inputs(1)
    noise = torch.randn_like(x) * (mask[..., None] == 0)  # only at padded positions
    with torch.no_grad():
        context, scores = module(x, mask, return_scores=True)
        other = module(x + noise, mask)
    assert context.shape == (3, N, HIDDEN) and context.isfinite().all()
    assert noise.abs().sum() > 0
    tokens = mask.bool()
    torch.testing.assert_close(other[tokens], context[tokens], rtol=0.0, atol=1e-12)
    assert scores.probs.masked_select(mask[:, None, None, :] == 0).eq(0).all()
    torch.testing.assert_close(scores.probs.sum(-1), torch.ones(3, HEADS, N, dtype=F64))
    # A mask without padding is the same as no mask.
    with torch.no_grad():
        torch.testing.assert_close(module(x, torch.ones(3, N)), module(x))


@pytest.mark.parametrize("name", SCHEMES)
def test_gradients_reach_every_parameter(name):
    module = _module(name, seed=2).train()
    x, mask = _inputs(2)
    x.requires_grad_(True)
    module(x, mask).pow(2).sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    for parameter_name, parameter in module.named_parameters():
        assert parameter.grad is not None, parameter_name
        assert (
            parameter.grad.isfinite().all() and parameter.grad.abs().sum() > 0
        ), parameter_name


@pytest.mark.parametrize("name", SCHEMES)
def test_gradcheck(name):
    torch.manual_seed(0)
    kwargs = {
        "shaw": {"max_relative_positions": 2},
        "t5": {"num_buckets": 4, "max_distance": 3},
    }
    module = ATTENTIONS[name](8, 2, **kwargs.get(name, {})).to(F64)
    x = torch.randn(1, 4, 8, dtype=F64, requires_grad=True)
    mask = torch.tensor([[1, 1, 1, 0]])
    assert torch.autograd.gradcheck(lambda h: module(h, mask), (x,))


def test_dropout_acts_in_training_only():
    module = AlibiSelfAttention(HIDDEN, HEADS, dropout=0.5).to(F64)
    x, mask = _inputs(3)
    torch.manual_seed(1)
    first = module(x, mask)
    second = module(x, mask)
    assert (first - second).abs().max() > 1e-6
    module.eval()
    torch.testing.assert_close(module(x, mask), module(x, mask), rtol=0.0, atol=0.0)


@pytest.mark.parametrize("name", RELATIVE)
def test_score_by_distance_is_what_forward_adds(name):
    # Put the query token at i and the key token at j: the logit of (i, j) minus the
    # content logit is score_by_distance at r = i - j.
    module = MODULES[name]
    x, _ = _inputs(4)
    x = x[:1]
    distances = torch.arange(-(N - 1), N)
    landscape = score_by_distance(module, distances, x[0, 0], x[0, 1])  # (h, 2n - 1)
    assert landscape.shape == (HEADS, 2 * N - 1)
    for i, j in [(5, 2), (2, 7), (8, 0), (0, 8), (4, 5)]:
        sequence = x.clone()
        sequence[0, i], sequence[0, j] = x[0, 0], x[0, 1]
        with torch.no_grad():
            _, scores = module(sequence, return_scores=True)
            q = module.split_heads(module.query_proj(x[0, :1]))  # (h, 1, d)
            k = module.split_heads(module.key_proj(x[0, 1:2]))  # (h, 1, d)
        content = (q * k).sum(-1) * module.scale  # (h, 1)
        expected = scores.logits[0, :, i, j] - content[:, 0]
        torch.testing.assert_close(
            landscape[:, i - j + N - 1], expected, rtol=0.0, atol=1e-12
        )


def test_score_by_distance_of_the_bias_schemes_is_the_bias():
    distances = torch.arange(-20, 21)
    x = torch.randn(HIDDEN, dtype=F64)
    alibi = score_by_distance(MODULES["alibi"], distances, x, -x)
    slopes = alibi_slopes(HEADS, dtype=F64)
    torch.testing.assert_close(alibi, -slopes[:, None] * distances.abs().to(F64))
    t5 = MODULES["t5"]  # 8 buckets, max_distance 6
    # transformers' T5 buckets of j - i (relpos's distance is i - j).
    buckets = T5Attention._relative_position_bucket(
        -distances, bidirectional=True, num_buckets=8, max_distance=6
    )
    expected = t5.position_bias.embedding.weight[buckets].T  # (h, m)
    torch.testing.assert_close(score_by_distance(t5, distances, x, x), expected)
    rotary = score_by_distance(MODULES["rotary"], distances, x, -x)
    assert rotary[:, 20].abs().max() < 1e-12  # no contribution at distance 0
    shaw = score_by_distance(MODULES["shaw"], distances, x, x)  # k = 3
    assert torch.equal(shaw[:, :18], shaw[:, :1].expand(-1, 18))  # clipped ahead
    assert torch.equal(shaw[:, 23:], shaw[:, -1:].expand(-1, 18))  # clipped behind


def test_score_by_distance_of_deberta_is_c2p_plus_p2c():
    torch.manual_seed(0)
    module = relpos.DisentangledSelfAttention(HIDDEN, HEADS, max_relative_positions=4)
    module = module.to(F64).eval()
    table = torch.randn(8, HIDDEN, dtype=F64)
    x, _ = _inputs(5)
    sequence = x[:1].clone()
    landscape = score_by_distance(
        module,
        torch.arange(-(N - 1), N),
        sequence[0, 3],
        sequence[0, 6],
        rel_embeddings=table,
    )
    with torch.no_grad():
        _, scores = module(sequence, return_scores=True, rel_embeddings=table)
    expected = scores.c2p[0, :, 3, 6] + scores.p2c[0, :, 3, 6]
    torch.testing.assert_close(
        landscape[:, 3 - 6 + N - 1], expected, rtol=0.0, atol=1e-12
    )


@pytest.mark.parametrize("name", SCHEMES)
def test_every_attention_is_a_scheme_self_attention(name):
    torch.manual_seed(0)
    module = ATTENTIONS[name](HIDDEN, HEADS).to(F64).eval()
    x = torch.randn(2, 5, HIDDEN, dtype=F64)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    with torch.no_grad():
        out = module(x)
        context, scores = module(x, mask, return_scores=True)
        # Relative schemes: shifting every position by 3 changes nothing.
        shifted = module(x, mask, positions=torch.arange(5) + 3)
    assert out.shape == context.shape == (2, 5, HIDDEN)
    if REGISTRY[name].relative or name == "fire":  # FIRE: relative before its L=512
        torch.testing.assert_close(shifted, context, rtol=0, atol=1e-12)
    else:  # TUPE reads the absolute positions: a shift changes the context
        assert not torch.allclose(shifted, context, rtol=0, atol=1e-6)
    probs = scores.probs  # (b, h, i, j)
    keep = mask.bool()[:, None, None, :]  # (b, 1, 1, j)
    torch.testing.assert_close(probs.sum(-1), torch.ones(2, HEADS, 5, dtype=F64))
    assert probs.masked_select(~keep).abs().max() == 0
    # Without padding, the scores come from the same forward as the plain call.
    torch.testing.assert_close(context[0], out[0], rtol=0, atol=1e-12)


def test_alibi_learns_nothing_but_its_projections():
    # Its bias is fixed: a gradient step moves only the projections.
    module = AlibiSelfAttention(HIDDEN, HEADS)
    module(torch.randn(2, 5, HIDDEN)).square().sum().backward()
    for parameter_name, parameter in module.named_parameters():
        assert parameter_name.endswith(("_proj.weight", "_proj.bias")), parameter_name
        assert parameter.grad is not None and parameter.grad.any(), parameter_name


# -- bad input -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: t5_bucket(torch.tensor([1.0])), TypeError, "rel"),
        (
            lambda: t5_bucket(torch.tensor([1]), num_buckets=3),
            ValueError,
            "num_buckets",
        ),
        (
            lambda: t5_bucket(torch.tensor([1]), num_buckets=8, max_distance=2),
            ValueError,
            "max_distance",
        ),
        (
            lambda: t5_bucket(torch.tensor([1]), bidirectional=1),
            TypeError,
            "bidirectional",
        ),
        (lambda: t5_exact_limit(2.5), TypeError, "num_buckets"),
        (lambda: T5Bias(0), ValueError, "num_heads"),
        (lambda: alibi_slopes(0), ValueError, "num_heads"),
        (lambda: alibi_slopes(True), TypeError, "num_heads"),
        (lambda: alibi_bias(torch.tensor([1]), torch.ones(2, 2)), ValueError, "slopes"),
        (
            lambda: alibi_bias(torch.tensor([1]), torch.ones(2, dtype=torch.long)),
            TypeError,
            "slopes",
        ),
        (
            lambda: alibi_bias(torch.tensor([1]), torch.ones(2), causal="yes"),
            TypeError,
            "causal",
        ),
        (
            lambda: shaw_index(torch.tensor([1]), 0),
            ValueError,
            "max_relative_positions",
        ),
        (
            lambda: ShawSelfAttention(HIDDEN, HEADS, relative_values=None),
            TypeError,
            "relative_values",
        ),
        (lambda: rotary_angles(torch.tensor([1]), 7), ValueError, "head_size"),
        (lambda: rotary_angles(torch.tensor([1.5]), 8), TypeError, "positions"),
        (lambda: rotary_angles(torch.tensor([1]), 8, base=1.0), ValueError, "base"),
        (lambda: rotate(torch.randn(3, 8), torch.randn(3, 3)), ValueError, "angles"),
        (
            lambda: rotate(torch.ones(3, 8, dtype=torch.long), torch.randn(3, 4)),
            TypeError,
            "x",
        ),
        (lambda: RotarySelfAttention(20, 4), ValueError, "even"),
        (lambda: TransformerXLSelfAttention(15, 3), ValueError, "hidden_size"),
        (lambda: sinusoidal_encoding(torch.tensor([1]), 7), ValueError, "hidden_size"),
        (lambda: ShawSelfAttention(HIDDEN, 3), ValueError, "divisible"),
        (lambda: T5SelfAttention(HIDDEN, HEADS, dropout=1.0), ValueError, "dropout"),
        (
            lambda: BiasSelfAttention(HIDDEN, HEADS, AlibiBias(3)),
            ValueError,
            "position_bias",
        ),
        (lambda: BiasSelfAttention(HIDDEN, HEADS, "alibi"), TypeError, "position_bias"),
    ],
)
def test_bad_arguments_raise_naming_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize("name", SCHEMES)
def test_bad_forward_input_raises_naming_the_argument(name):
    module = MODULES[name]
    x, mask = _inputs()
    with pytest.raises(TypeError, match="hidden_states"):
        module(x.long())
    with pytest.raises(ValueError, match="hidden_states"):
        module(x[..., :-1])
    if module.min_length:  # DeBERTa, as transformers, takes an empty sequence
        with pytest.raises(ValueError, match="hidden_states"):
            module(x[:, :0])
    with pytest.raises(ValueError, match="attention_mask"):
        module(x, mask[:, :-1])
    with pytest.raises(TypeError, match="positions"):
        module(x, positions=torch.arange(N, dtype=F64))
    with pytest.raises(ValueError, match="positions"):
        module(x, positions=torch.arange(N + 1))


def test_score_by_distance_bad_input():
    x = torch.randn(HIDDEN, dtype=F64)
    module = MODULES["alibi"]
    with pytest.raises(TypeError, match="distances"):
        score_by_distance(module, torch.tensor([0.5]), x, x)
    with pytest.raises(ValueError, match="distances"):
        score_by_distance(module, torch.zeros(2, 2, dtype=torch.long), x, x)
    with pytest.raises(ValueError, match="query_states"):
        score_by_distance(module, torch.arange(3), x[:-1], x)
    with pytest.raises(TypeError, match="attention"):
        score_by_distance(torch.nn.Linear(2, 2), torch.arange(3), x, x)
    with pytest.raises(ValueError, match="rel_embeddings"):
        score_by_distance(
            module, torch.arange(3), x, x, rel_embeddings=torch.zeros(4, HIDDEN)
        )
    deberta = relpos.DisentangledSelfAttention(
        HIDDEN, HEADS, max_relative_positions=4, own_table=False
    )  # no table of its own, none given
    with pytest.raises(ValueError, match="rel_embeddings"):
        score_by_distance(deberta, torch.arange(3), x.float(), x.float())


# -- in the experiment model ---------------------------------------------------------


@pytest.mark.slow  # a training run: 1-18 s a scheme on a busy two-core CPU
@pytest.mark.parametrize("name", SCHEMES)
def test_scheme_trains_in_the_experiment_model(name):
    from relpos.book.experiments.config import Config
    from relpos.book.experiments.train import initial_model, train

    config = Config(
        scheme=name,
        steps=30,
        train_size=64,
        batch_size=16,
        train_length=16,
        test_lengths=(16, 24),
    )
    before = initial_model(config)
    trained = train(config)
    attentions = [layer.attention for layer in trained.model.encoder.layers]
    assert attentions and all(type(a) is ATTENTIONS[name] for a in attentions)
    assert trained.model.input_positions is None  # position enters in attention only
    losses = torch.tensor(trained.losses)
    assert len(losses) == config.steps and losses.isfinite().all()
    assert losses[-5:].mean() < losses[:5].mean() - 0.05
    initial = dict(before.named_parameters())
    for parameter_name, parameter in trained.model.encoder.named_parameters():
        initial_value = initial[f"encoder.{parameter_name}"]
        assert not torch.equal(parameter, initial_value), parameter_name
    with torch.no_grad():  # longer than training: relative schemes take any length
        logits = trained.model(torch.randint(0, 4, (2, 24)))
    assert logits.shape[:2] == (2, 24) and logits.isfinite().all()
