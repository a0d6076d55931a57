"""relpos.schemes against reference code nobody here wrote: the pinned ``transformers``.

Same inputs on both sides; integers must be equal, floats (float64) within 1e-6
unless the reference itself computes in float32, in which case the tolerance
is that of float32 and says so. Shaw et al. have no library reference: a loop
over pairs that reads the paper's equations (and its ``j - i`` index) stands in.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from transformers import LlamaConfig, T5Config, XLNetConfig
from transformers.models.bloom.modeling_bloom import build_alibi_tensor
from transformers.models.llama.modeling_llama import (
    LlamaRotaryEmbedding,
    apply_rotary_pos_emb,
)
from transformers.models.t5.modeling_t5 import T5Attention
from transformers.models.xlnet.modeling_xlnet import XLNetModel, XLNetRelativeAttention

from relpos import relative_positions
from relpos.schemes import (
    ShawSelfAttention,
    T5Bias,
    TransformerXLSelfAttention,
    alibi_bias,
    alibi_slopes,
    relative_distances,
    rotary_angles,
    rotary_frequencies,
    rotate,
    sinusoidal_encoding,
    t5_bucket,
    transformer_xl_terms,
)
from _deberta import padding_mask

F64 = torch.float64
FLOAT32_EPS = torch.finfo(torch.float32).eps  # 2^-23

# -- T5 ------------------------------------------------------------------------------

BUCKET_CONFIGS = [(32, 128), (32, 20), (16, 9), (8, 64), (7, 50), (64, 256), (4, 3)]


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("num_buckets,max_distance", BUCKET_CONFIGS)
def test_t5_bucket_equals_t5attention(num_buckets, max_distance, bidirectional):
    rel = torch.arange(-700, 701)  # i - j; T5 takes memory - query = j - i = -rel
    ours = t5_bucket(
        rel,
        num_buckets=num_buckets,
        max_distance=max_distance,
        bidirectional=bidirectional,
    )
    theirs = T5Attention._relative_position_bucket(
        -rel,
        bidirectional=bidirectional,
        num_buckets=num_buckets,
        max_distance=max_distance,
    )
    assert ours.dtype == torch.long
    assert torch.equal(ours, theirs)


def test_t5_bucket_without_the_sign_flip_differs():
    # The sign matters: feeding T5's function i - j instead of j - i swaps the halves.
    rel = torch.arange(-40, 41)
    theirs_unflipped = T5Attention._relative_position_bucket(rel, bidirectional=True)
    assert not torch.equal(t5_bucket(rel), theirs_unflipped)
    assert torch.equal(t5_bucket(rel), theirs_unflipped.flip(0))


@pytest.mark.parametrize("decoder", [False, True])
def test_t5_bias_equals_compute_bias(decoder):
    config = T5Config(
        d_model=32,
        d_kv=8,
        num_heads=4,
        relative_attention_num_buckets=16,
        relative_attention_max_distance=24,
        is_decoder=decoder,
        dropout_rate=0.0,
    )
    reference = T5Attention(config, has_relative_attention_bias=True, layer_idx=0).to(
        F64
    )
    ours = T5Bias(4, num_buckets=16, max_distance=24, bidirectional=not decoder).to(F64)
    with torch.no_grad():
        ours.embedding.weight.copy_(reference.relative_attention_bias.weight)
        theirs = reference.compute_bias(30, 30)  # (1, h, i, j)
        mine = ours(relative_positions(30))  # (h, i, j)
    assert torch.equal(mine, theirs[0])


# -- ALiBi ---------------------------------------------------------------------------


@pytest.mark.parametrize("num_heads", [1, 2, 3, 5, 6, 7, 8, 12, 16, 20, 24, 32])
def test_alibi_slopes_equal_bloom(num_heads):
    # BLOOM's tensor at key position 1 (all tokens present) is one slope per head.
    ones = torch.ones(1, 2, dtype=torch.long)
    bloom = build_alibi_tensor(ones, num_heads, F64)[:, 0, 1]  # (h,)
    ours = alibi_slopes(num_heads, dtype=F64)
    assert ours.shape == (num_heads,)
    # BLOOM raises a float32 base to the m-th power in float32, so its relative
    # error grows like m * eps32 (3e-7 at 16 heads); absolute errors stay below 1e-7.
    torch.testing.assert_close(ours, bloom, rtol=0.0, atol=1e-7)
    assert (ours[1:] != ours[:-1]).all()  # one slope per head, none repeated


@pytest.mark.parametrize("num_heads", [4, 6])
def test_causal_alibi_gives_bloom_attention(num_heads):
    # BLOOM adds slope * (index of the key among the tokens), the paper
    # -slope * (i - j).
    # They differ by -slope * i per row, so after the causal, padded softmax they agree.
    n = 12
    mask = padding_mask(n)  # (3, n): none, right and left padding
    bloom = build_alibi_tensor(mask, num_heads, F64).view(
        3, num_heads, 1, n
    )  # (b, h, 1, j)
    ours = alibi_bias(
        relative_positions(n), alibi_slopes(num_heads, dtype=F64), causal=True
    )
    logits = torch.randn(3, num_heads, n, n, dtype=F64)
    hidden = (torch.ones(n, n, dtype=torch.bool).triu(1)[None, None]) | (
        mask[:, None, None, :] == 0
    )  # (b, 1, i, j): keys ahead or padded
    hidden = hidden.expand(3, num_heads, n, n)
    keep = ~hidden[:, 0, :, :].all(-1)  # (b, i): queries that see at least one key
    theirs = (logits + bloom).masked_fill(hidden, float("-inf")).softmax(-1)
    mine = (logits + ours[None]).masked_fill(hidden, float("-inf")).softmax(-1)
    keep = keep[:, None, :].expand(3, num_heads, n)
    torch.testing.assert_close(mine[keep], theirs[keep], rtol=0.0, atol=1e-6)
    # Without padding the biases themselves differ by exactly -slope * i on j <= i.
    slopes = alibi_slopes(num_heads, dtype=F64)[:, None, None]  # (h, 1, 1)
    rows = torch.arange(n, dtype=F64)[None, :, None]  # (1, i, 1)
    behind = relative_positions(n) >= 0  # (i, j)
    difference = (ours - bloom[0])[:, behind]
    expected = (-slopes * rows).expand(num_heads, n, n)[:, behind]
    torch.testing.assert_close(difference, expected, rtol=0.0, atol=1e-6)


# -- RoPE ----------------------------------------------------------------------------


def _llama_rotary(head_dim: int, base: float) -> LlamaRotaryEmbedding:
    config = LlamaConfig(
        hidden_size=4 * head_dim,
        num_attention_heads=4,
        head_dim=head_dim,
        rope_theta=base,
    )
    return LlamaRotaryEmbedding(config)


@pytest.mark.parametrize("head_dim,base", [(16, 10000.0), (8, 500.0), (32, 10000.0)])
def test_rotary_frequencies_equal_llama(head_dim, base):
    llama = _llama_rotary(head_dim, base)
    ours = rotary_frequencies(head_dim, base)
    # Llama builds inv_freq in float32.
    torch.testing.assert_close(ours, llama.inv_freq.to(F64), rtol=FLOAT32_EPS, atol=0.0)


@pytest.mark.parametrize("offset", [0, 37])
def test_rotate_equals_apply_rotary_pos_emb(offset):
    head_dim, n = 16, 12
    positions = torch.arange(n) + offset
    g = torch.Generator().manual_seed(1)
    q = torch.randn(2, 4, n, head_dim, generator=g, dtype=F64)
    k = torch.randn(2, 4, n, head_dim, generator=g, dtype=F64)
    angles = rotary_angles(positions, head_dim)  # (n, d/2)
    # The same cos/sin on both sides (float64): the rotation itself, layout included.
    both = torch.cat([angles, angles], dim=-1)[None]  # (1, n, d)
    q_ref, k_ref = apply_rotary_pos_emb(q, k, both.cos(), both.sin())
    torch.testing.assert_close(rotate(q, angles), q_ref, rtol=0.0, atol=1e-12)
    torch.testing.assert_close(rotate(k, angles), k_ref, rtol=0.0, atol=1e-12)
    # Llama's own cos/sin (computed in float32, returned as float64).
    cos, sin = _llama_rotary(head_dim, 10000.0)(q, positions[None])
    torch.testing.assert_close(cos, both.cos(), rtol=0.0, atol=1e-6)
    torch.testing.assert_close(sin, both.sin(), rtol=0.0, atol=1e-6)
    q_llama, _ = apply_rotary_pos_emb(q, k, cos, sin)
    scale = q.abs().max().item()
    torch.testing.assert_close(rotate(q, angles), q_llama, rtol=0.0, atol=1e-6 * scale)


# -- Transformer-XL (XLNet's relative core) --------------------------------------------


def _xlnet_pair(hidden: int = 32, heads: int = 4, seed: int = 0):
    """An XLNet relative attention with random weights, and our module with the same."""
    config = XLNetConfig(d_model=hidden, n_head=heads, d_inner=2 * hidden, dropout=0.0)
    reference = XLNetRelativeAttention(config).to(F64).eval()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in reference.parameters():  # XLNet leaves them uninitialised
            parameter.copy_(torch.randn(parameter.shape, generator=g, dtype=F64) * 0.3)
    ours = TransformerXLSelfAttention(hidden, heads).to(F64).eval()
    with torch.no_grad():
        for proj, weight in [
            (ours.query_proj, reference.q),
            (ours.key_proj, reference.k),
            (ours.value_proj, reference.v),
            (ours.pos_key_proj, reference.r),
        ]:
            proj.weight.copy_(weight.reshape(hidden, hidden).T)  # (out, in)
            if proj.bias is not None:
                proj.bias.zero_()
        ours.content_bias.copy_(reference.r_w_bias)  # u
        ours.position_bias.copy_(reference.r_r_bias)  # v
    return reference, ours


def _xlnet_positions(n: int, hidden: int, batch: int) -> torch.Tensor:
    """XLNet's own R for distances n, n - 1, ..., -n + 1 (bidirectional, no memory)."""
    model = SimpleNamespace(
        d_model=hidden,
        attn_type="bi",
        bi_data=False,
        clamp_len=-1,
        positional_embedding=XLNetModel.positional_embedding,
    )
    return XLNetModel.relative_positional_encoding(model, n, n, bsz=batch)  # (2n, b, D)


def _xlnet_core(reference, x, mask, pos_emb):
    """XLNet's projections and rel_attn_core on (b, n, hidden) inputs, in our layout."""
    h = x.transpose(0, 1)  # (i, b, hidden)
    q_head = torch.einsum("ibh,hnd->ibnd", h, reference.q)
    k_head = torch.einsum("ibh,hnd->ibnd", h, reference.k)
    v_head = torch.einsum("ibh,hnd->ibnd", h, reference.v)
    k_head_r = torch.einsum("ibh,hnd->ibnd", pos_emb, reference.r)
    n = x.shape[1]
    attn_mask = (
        (1.0 - mask.to(F64)).T[None, :, :, None].expand(n, n, -1, 1)
    )  # (i, j, b, 1)
    with torch.no_grad():
        vec, prob = reference.rel_attn_core(
            q_head,
            k_head,
            v_head,
            k_head_r,
            attn_mask=attn_mask,
            output_attentions=True,
        )
    context = vec.permute(1, 0, 2, 3).flatten(-2)  # (b, i, hidden)
    return (
        context,
        prob.permute(2, 3, 0, 1),
        (q_head, k_head, v_head),
    )  # probs (b, h, i, j)


def test_xlnet_rel_shift_is_our_gather_with_memory():
    # rel_shift_bnij turns scores against XLNet's distance list (klen, ..., -qlen + 1)
    # into scores per pair; with mlen memory tokens before the qlen queries, pair
    # (i, j) gets distance (i + mlen) - j: query minus key, the book's sign.
    qlen, mlen = 5, 3
    klen = qlen + mlen
    distances = torch.arange(klen, -qlen, -1)  # XLNet's pos_seq, (klen + qlen,)
    scores = torch.randn(2, 4, qlen, klen + qlen, dtype=F64)
    shifted = XLNetRelativeAttention.rel_shift_bnij(scores, klen=klen)  # (b, h, i, j)
    rel = relative_distances(torch.arange(qlen) + mlen, torch.arange(klen))  # (i, j)
    index = klen - rel  # the row of distance rel in XLNet's list
    assert torch.equal(distances[index], rel)
    gathered = scores.gather(-1, index.expand(2, 4, qlen, klen))
    assert torch.equal(shifted, gathered)


def test_transformer_xl_terms_equal_rel_attn_core_on_xlnet_positions():
    hidden, heads, n = 32, 4, 9
    reference, ours = _xlnet_pair(hidden, heads)
    mask = padding_mask(n)
    x = torch.randn(3, n, hidden, dtype=F64)
    pos_emb = _xlnet_positions(n, hidden, 3).to(F64)  # (2n, b, D), XLNet's float32 R
    context_ref, probs_ref, (q_head, k_head, v_head) = _xlnet_core(
        reference, x, mask, pos_emb
    )
    # Our pure function on XLNet's very q, k and projected R (rows n .. -n + 1).
    query = q_head.permute(1, 2, 0, 3)  # (b, h, i, d)
    key = k_head.permute(1, 2, 0, 3)  # (b, h, j, d)
    value = v_head.permute(1, 2, 0, 3)  # (b, h, j, d)
    pos_key = torch.einsum("rh,hnd->nrd", pos_emb[:, 0], reference.r)  # (h, 2n, d)
    index = n - relative_positions(n)  # (i, j): the row of i - j
    with torch.no_grad():
        terms = transformer_xl_terms(
            query, key, pos_key, index, reference.r_w_bias, reference.r_r_bias
        )
    logits = (torch.einsum("bhid,bhjd->bhij", query, key) + terms) * reference.scale
    logits = logits.masked_fill(mask[:, None, None, :] == 0, float("-inf"))
    probs = logits.softmax(-1)
    torch.testing.assert_close(probs, probs_ref, rtol=0.0, atol=1e-6)
    context = (probs @ value).transpose(1, 2).flatten(-2)  # (b, i, hidden)
    torch.testing.assert_close(context, context_ref, rtol=0.0, atol=1e-6)


def test_sinusoidal_encoding_equals_xlnet():
    n, hidden = 40, 32
    theirs = _xlnet_positions(n, hidden, None)[:, 0]  # (2n, D), float32
    ours = sinusoidal_encoding(torch.arange(n, -n, -1), hidden, dtype=F64)
    # XLNet computes the angles in float32: error up to about |r| * eps32.
    torch.testing.assert_close(ours, theirs.to(F64), rtol=0.0, atol=n * FLOAT32_EPS)


def test_transformer_xl_module_equals_xlnet_core():
    hidden, heads, n = 32, 4, 11
    reference, ours = _xlnet_pair(hidden, heads, seed=3)
    mask = padding_mask(n)
    x = torch.randn(3, n, hidden, dtype=F64)
    # Feed XLNet our float64 R in its own layout (distances n .. -n + 1).
    pos_emb = sinusoidal_encoding(torch.arange(n, -n, -1), hidden, dtype=F64)
    pos_emb = pos_emb[:, None].expand(-1, 3, -1)  # (2n, b, D)
    context_ref, probs_ref, _ = _xlnet_core(reference, x, mask, pos_emb)
    with torch.no_grad():
        context, scores = ours(x, mask, return_scores=True)
    torch.testing.assert_close(scores.probs, probs_ref, rtol=0.0, atol=1e-6)
    torch.testing.assert_close(context, context_ref, rtol=0.0, atol=1e-6)


# -- Shaw et al.: a loop over pairs reading the paper ----------------------------------


@pytest.mark.parametrize("relative_values", [True, False])
@pytest.mark.parametrize("k", [1, 3, 20])
def test_shaw_equals_per_pair_loop_of_the_paper(k, relative_values):
    hidden, heads, n = 16, 2, 7
    torch.manual_seed(k)
    module = ShawSelfAttention(hidden, heads, k, relative_values=relative_values)
    module = module.to(F64).eval()
    mask = padding_mask(n)
    x = torch.randn(3, n, hidden, dtype=F64)
    with torch.no_grad():
        ours = module(x, mask)
        q = module.split_heads(module.query_proj(x))  # (b, h, i, d)
        kk = module.split_heads(module.key_proj(x))  # (b, h, j, d)
        v = module.split_heads(module.value_proj(x))  # (b, h, j, d)
    # The paper's tables are indexed by clip(j - i, k) + k: ours upside down.
    w_key = module.key_table.detach().flip(0)
    w_value = (
        None if module.value_table is None else module.value_table.detach().flip(0)
    )
    d = hidden // heads
    expected = torch.zeros(3, heads, n, d, dtype=F64)
    for b in range(3):
        for h in range(heads):
            for i in range(n):
                keys = [j for j in range(n) if mask[b, j]]
                e = {}
                for j in keys:
                    a_key = w_key[max(-k, min(k, j - i)) + k]
                    e[j] = q[b, h, i] @ (kk[b, h, j] + a_key) / d**0.5
                top = max(e.values())
                total = sum(torch.exp(e[j] - top) for j in keys)
                for j in keys:
                    alpha = torch.exp(e[j] - top) / total
                    value = v[b, h, j]
                    if w_value is not None:
                        value = value + w_value[max(-k, min(k, j - i)) + k]
                    expected[b, h, i] += alpha * value
    expected = expected.transpose(1, 2).flatten(-2)  # (b, n, hidden)
    torch.testing.assert_close(ours, expected, rtol=0.0, atol=1e-12)


@pytest.mark.parametrize("bidirectional", [True, False])
def test_t5_buckets_stay_in_range_at_the_int64_extremes(bidirectional):
    info = torch.iinfo(torch.int64)
    rel = torch.tensor([info.min, info.min + 1, -(2**62), -129, 129, 2**62, info.max])
    buckets = t5_bucket(
        rel, num_buckets=32, max_distance=128, bidirectional=bidirectional
    )
    assert ((buckets >= 0) & (buckets < 32)).all(), buckets
    # Far behind and far ahead read their side's last bucket, as 128 does.
    edge = t5_bucket(torch.tensor([-128, 128]), num_buckets=32, max_distance=128,
                     bidirectional=bidirectional)
    assert buckets[0] == buckets[3] == edge[0] and buckets[-1] == buckets[4] == edge[1]
