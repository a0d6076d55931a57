"""Disentangled attention against ``transformers``' DeBERTa-v2 and against per-pair loops.

The ``flex`` backend compiles one kernel per shape, dtype and choice of terms
(seconds each on the CPU), so it runs on a reduced grid that still sets every
configuration flag at least once (the long sequence in float64, uncompiled);
``naive`` and ``gather`` run the full grid.
All comparisons with ``transformers`` are made on non-padded positions only:
outputs at padded query rows carry no meaning.
"""

from __future__ import annotations

import itertools

import pytest
import torch
from _deberta import (
    make_module,
    padding_mask,
    random_inputs,
    reference_attention,
    reference_forward,
    with_backend,
)

import relpos
from relpos import (
    DisentangledSelfAttention,
    content_to_position,
    content_to_position_naive,
    position_to_content,
    position_to_content_naive,
    relative_position_index,
)

TOLERANCE = {torch.float32: 2e-5, torch.float64: 1e-6}

# (max_relative_positions, position_buckets): plain clipping, DeBERTa-v3's buckets, small buckets.
SPANS = {
    "clip8": (8, -1),
    "buckets512/256": (512, 256),
    "buckets64/16": (64, 16),
}
POS_ATT_TYPES = [("c2p", "p2c"), ("c2p",), ("p2c",)]


def max_error_vs_reference(
    backend: str,
    span: str,
    pos_att_type: tuple[str, ...],
    share_att_key: bool,
    n: int,
    dtype: torch.dtype,
    *,
    hidden: int = 32,
    heads: int = 4,
    masked: bool = True,
) -> float:
    """Largest |ours - transformers| over the non-padded positions of a 3-sequence batch."""
    max_rel, buckets = SPANS[span]
    torch.manual_seed(n)
    ref = reference_attention(
        hidden=hidden,
        heads=heads,
        max_relative_positions=max_rel,
        position_buckets=buckets,
        pos_att_type=pos_att_type,
        share_att_key=share_att_key,
        dtype=dtype,
    )
    ours = DisentangledSelfAttention.from_transformers(ref, backend=backend)
    assert ours.backend == backend
    x, table = random_inputs(3, n, hidden, ours.span, dtype, seed=n)
    mask = padding_mask(n) if masked else torch.ones(3, n, dtype=torch.long)
    expected = reference_forward(ref, x, table, mask)
    with torch.no_grad():
        out = ours(x, mask if masked else None, rel_embeddings=table)
    assert out.shape == (3, n, hidden)
    assert out.dtype == dtype
    keep = mask.bool()
    assert keep.sum() < keep.numel() or not masked  # the batch really has padding
    return (out[keep] - expected[keep]).abs().max().item()


# -- naive and gather: the full grid -------------------------------------------------

FULL_GRID = list(
    itertools.product(
        ["naive", "gather"],
        list(SPANS),
        POS_ATT_TYPES,
        [True, False],
        [5, 40],
        [torch.float32, torch.float64],
    )
)


@pytest.mark.parametrize("backend, span, pos_att_type, share_att_key, n, dtype", FULL_GRID)
def test_equals_transformers(backend, span, pos_att_type, share_att_key, n, dtype) -> None:
    error = max_error_vs_reference(backend, span, pos_att_type, share_att_key, n, dtype)
    assert error <= TOLERANCE[dtype], f"max abs error {error:.3g}"


# -- flex: every flag at least once; float32 where the kernel is compiled ----------
# The compiled CPU kernel (float32) takes seconds per new kernel: it runs both terms
# at each span and length; c2p or p2c alone, a new kernel each, run in float64
# (torch's uncompiled reference, the same score_mod), as does the call without a mask.

FLEX_GRID = [
    # (span, pos_att_type, share_att_key, n, dtype)
    *[("clip8", ("c2p", "p2c"), share, 5, torch.float32) for share in (True, False)],
    *[("clip8", pos, share, 5, torch.float64)
      for pos in POS_ATT_TYPES[1:] for share in (True, False)],
    ("clip8", ("c2p", "p2c"), True, 40, torch.float32),
    ("clip8", ("c2p", "p2c"), False, 40, torch.float32),
    ("buckets64/16", ("c2p", "p2c"), True, 40, torch.float32),
    ("buckets64/16", ("c2p", "p2c"), False, 40, torch.float32),
    ("clip8", ("c2p", "p2c"), True, 5, torch.float64),
    ("buckets64/16", ("c2p",), False, 40, torch.float64),
    ("buckets64/16", ("p2c",), True, 40, torch.float64),
]


@pytest.mark.parametrize("span, pos_att_type, share_att_key, n, dtype", FLEX_GRID)
def test_flex_equals_transformers(span, pos_att_type, share_att_key, n, dtype) -> None:
    error = max_error_vs_reference("flex", span, pos_att_type, share_att_key, n, dtype)
    assert error <= TOLERANCE[dtype], f"max abs error {error:.3g}"


@pytest.mark.parametrize("backend", tuple(relpos.BACKENDS))
def test_equals_transformers_without_mask(backend: str) -> None:
    dtype = torch.float64 if backend == "flex" else torch.float32  # see FLEX_GRID
    error = max_error_vs_reference(
        backend, "clip8", ("c2p", "p2c"), True, 5, dtype, masked=False
    )
    assert error <= TOLERANCE[dtype], f"max abs error {error:.3g}"


@pytest.mark.parametrize("backend", tuple(relpos.BACKENDS))
def test_equals_transformers_long_sequence_log_buckets(backend: str) -> None:
    # n = 600 > max_relative_positions = 512: the log buckets and their saturation are exercised.
    # flex in float64 (torch's uncompiled reference, the same score_mod): the claim is
    # the buckets' arithmetic, not the kernel, whose log buckets in float32 are
    # compiled above (buckets64/16 at n = 40) and, saturated past
    # max_relative_positions, in test_encoder.py's flex test (n = 70, k = 32); a
    # kernel of 608 cost about 6 s of CPU.
    dtype = torch.float64 if backend == "flex" else torch.float32
    error = max_error_vs_reference(
        backend, "buckets512/256", ("c2p", "p2c"), True, 600, dtype, hidden=16, heads=2
    )
    assert error <= TOLERANCE[dtype], f"max abs error {error:.3g}"


@pytest.mark.parametrize("backend", ["naive", "gather"])
def test_equals_transformers_v3_order_of_terms(backend: str) -> None:
    # deberta-v3 lists the terms as ["p2c", "c2p"]; the order must not matter.
    error = max_error_vs_reference(backend, "buckets64/16", ("p2c", "c2p"), True, 40, torch.float32)
    assert error <= TOLERANCE[torch.float32], f"max abs error {error:.3g}"


# -- the backends against each other -------------------------------------------------

DIRECT_GRID = [
    # (span, pos_att_type, share_att_key, n): shapes shared with the flex grid above.
    *[("clip8", pos, False, 5) for pos in POS_ATT_TYPES],
    ("clip8", ("c2p", "p2c"), True, 40),
    ("buckets64/16", ("c2p", "p2c"), False, 40),
]


@pytest.mark.parametrize("span, pos_att_type, share_att_key, n", DIRECT_GRID)
def test_naive_gather_flex_agree(span, pos_att_type, share_att_key, n) -> None:
    max_rel, buckets = SPANS[span]
    naive = make_module(
        "naive",
        max_relative_positions=max_rel,
        position_buckets=buckets,
        pos_att_type=pos_att_type,
        share_att_key=share_att_key,
    )
    # One term alone in float64, as in FLEX_GRID: the kernels compiled are both terms'.
    dtype = torch.float64 if len(pos_att_type) == 1 else torch.float32
    naive = naive.to(dtype)
    gather, flex = with_backend(naive, "gather"), with_backend(naive, "flex")
    x, table = random_inputs(3, n, 32, naive.span, dtype, seed=7)
    mask = padding_mask(n)
    with torch.no_grad():
        out_naive = naive(x, mask, rel_embeddings=table)
        out_gather = gather(x, mask, rel_embeddings=table)
        out_flex = flex(x, mask, rel_embeddings=table)
    keep = mask.bool()
    torch.testing.assert_close(out_gather[keep], out_naive[keep], atol=1e-5, rtol=0)
    torch.testing.assert_close(out_flex[keep], out_gather[keep], atol=1e-5, rtol=0)
    torch.testing.assert_close(out_flex[keep], out_naive[keep], atol=1e-5, rtol=0)


@pytest.mark.parametrize("span", list(SPANS))
@pytest.mark.parametrize("pos_att_type", POS_ATT_TYPES)
def test_naive_equals_gather_float64_tight(span: str, pos_att_type: tuple[str, ...]) -> None:
    max_rel, buckets = SPANS[span]
    naive = make_module(
        "naive", max_relative_positions=max_rel, position_buckets=buckets,
        pos_att_type=pos_att_type, share_att_key=False, dtype=torch.float64,
    )
    gather = with_backend(naive, "gather")
    x, table = random_inputs(3, 40, 32, naive.span, torch.float64, seed=3)
    mask = padding_mask(40)
    with torch.no_grad():
        keep = mask.bool()
        got = gather(x, mask, rel_embeddings=table)[keep]
        expected = naive(x, mask, rel_embeddings=table)[keep]
        torch.testing.assert_close(got, expected, atol=1e-12, rtol=0)


# -- padding: relative positions make the real tokens independent of it -------------


@pytest.mark.parametrize(
    "backend, span, n",
    [("naive", "clip8", 5), ("gather", "clip8", 5), ("flex", "clip8", 5),
     ("naive", "buckets64/16", 40), ("gather", "buckets64/16", 40)],
)
def test_padding_does_not_change_real_tokens(backend: str, span: str, n: int) -> None:
    # Right padding keeps positions; left padding shifts them all by the same amount,
    # which leaves every i - j among the real tokens unchanged.
    max_rel, buckets = SPANS[span]
    module = make_module(backend, max_relative_positions=max_rel, position_buckets=buckets)
    # flex in float64: the same score_mod uncompiled (its compiled kernel is checked
    # with padding in FLEX_GRID); one kernel per row length would take seconds each.
    dtype = torch.float64 if backend == "flex" else torch.float32
    module = module.to(dtype)
    x, table = random_inputs(3, n, 32, module.span, dtype, seed=11)
    mask = padding_mask(n)
    with torch.no_grad():
        batched = module(x, mask, rel_embeddings=table)
        for row in (1, 2):
            keep = mask[row].bool()
            alone = module(x[row, keep][None], rel_embeddings=table)[0]
            torch.testing.assert_close(batched[row, keep], alone, atol=1e-5, rtol=0)


# -- unequal query and key lengths, against a per-pair loop ---------------------------


def c2p_loop(query: torch.Tensor, pos_key: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """out[b, h, i, j] = query[b, h, i] . pos_key[h, index[i, j]], one pair at a time."""
    b, h, m, _ = query.shape
    n = index.shape[1]
    out = torch.empty(b, h, m, n, dtype=query.dtype)
    for bb in range(b):
        for hh in range(h):
            for i in range(m):
                for j in range(n):
                    out[bb, hh, i, j] = torch.dot(query[bb, hh, i], pos_key[hh, index[i, j]])
    return out


def p2c_loop(key: torch.Tensor, pos_query: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """out[b, h, i, j] = key[b, h, j] . pos_query[h, index[i, j]], one pair at a time."""
    b, h, n, _ = key.shape
    m = index.shape[0]
    out = torch.empty(b, h, m, n, dtype=key.dtype)
    for bb in range(b):
        for hh in range(h):
            for i in range(m):
                for j in range(n):
                    out[bb, hh, i, j] = torch.dot(key[bb, hh, j], pos_query[hh, index[i, j]])
    return out


UNEQUAL_CASES = [
    # (query_len, key_len, max_relative_positions, position_buckets)
    (3, 7, 2, -1),
    (7, 3, 2, -1),
    (4, 11, 8, -1),
    (5, 30, 16, 4),  # log buckets: distances up to 29 > max_position 16
    (30, 5, 16, 4),
    (6, 20, 64, 16),
]


@pytest.mark.parametrize("query_len, key_len, max_rel, buckets", UNEQUAL_CASES)
def test_unequal_lengths_against_per_pair_loop(query_len, key_len, max_rel, buckets) -> None:
    g = torch.Generator().manual_seed(query_len * 100 + key_len)
    b, h, d = 2, 2, 4
    index = relative_position_index(
        query_len, key_len, max_relative_positions=max_rel, position_buckets=buckets
    )
    rows = 2 * relpos.attention_span(max_rel, buckets)
    assert index.shape == (query_len, key_len)
    assert int(index.max()) < rows
    query = torch.randn(b, h, query_len, d, generator=g, dtype=torch.float64)
    key = torch.randn(b, h, key_len, d, generator=g, dtype=torch.float64)
    pos_key = torch.randn(h, rows, d, generator=g, dtype=torch.float64)
    pos_query = torch.randn(h, rows, d, generator=g, dtype=torch.float64)

    c2p = content_to_position(query, pos_key, index)
    p2c = position_to_content(key, pos_query, index)
    assert c2p.shape == p2c.shape == (b, h, query_len, key_len)
    torch.testing.assert_close(c2p, c2p_loop(query, pos_key, index), atol=1e-12, rtol=0)
    torch.testing.assert_close(p2c, p2c_loop(key, pos_query, index), atol=1e-12, rtol=0)

    # The per-pair (naive) functions agree, fed the literal (i, j, h, d) tables.
    pos_key_pairs = pos_key[:, index].permute(1, 2, 0, 3)  # (i, j, h, d)
    pos_query_pairs = pos_query[:, index].permute(1, 2, 0, 3)  # (i, j, h, d)
    torch.testing.assert_close(content_to_position_naive(query, pos_key_pairs), c2p, atol=1e-12, rtol=0)
    torch.testing.assert_close(position_to_content_naive(key, pos_query_pairs), p2c, atol=1e-12, rtol=0)


def test_p2c_reads_row_delta_i_minus_j_not_the_papers_delta_j_minus_i() -> None:
    # p2c[i, j] = K_j . Pq[delta(i - j)]: scoring the keys as queries against the
    # transposed index gives it back; the paper's delta(j - i) would be a different matrix.
    g = torch.Generator().manual_seed(0)
    key = torch.randn(1, 2, 9, 4, generator=g, dtype=torch.float64)
    pos_query = torch.randn(2, 6, 4, generator=g, dtype=torch.float64)
    index = relative_position_index(9, max_relative_positions=3)
    p2c = position_to_content(key, pos_query, index)
    as_c2p = content_to_position(key, pos_query, index.T).transpose(-1, -2)
    torch.testing.assert_close(p2c, as_c2p, atol=1e-12, rtol=0)
    papers = content_to_position(key, pos_query, index).transpose(-1, -2)  # K_j . Pq[delta(j - i)]
    assert (p2c - papers).abs().max() > 1e-3


# -- from_transformers -----------------------------------------------------------------


@pytest.mark.parametrize("share_att_key", [True, False])
@pytest.mark.parametrize("pos_att_type", POS_ATT_TYPES)
def test_from_transformers_copies_configuration_and_weights(share_att_key, pos_att_type) -> None:
    ref = reference_attention(
        max_relative_positions=64, position_buckets=16, pos_att_type=pos_att_type,
        share_att_key=share_att_key, dtype=torch.float64,
    )
    ours = DisentangledSelfAttention.from_transformers(ref)
    assert ours.backend == "gather"
    assert (ours.hidden_size, ours.num_heads, ours.span) == (32, 4, 16)
    assert (ours.max_relative_positions, ours.position_buckets) == (64, 16)
    assert ours.pos_att_type == tuple(t for t in ("c2p", "p2c") if t in pos_att_type)
    assert ours.share_att_key == share_att_key
    assert ours.query_proj.weight.dtype == torch.float64
    assert not ours.training
    ref_params = dict(ref.named_parameters())
    for name, param in ours.named_parameters():
        assert name in ref_params, name
        assert torch.equal(param, ref_params[name]), name
        assert param.data_ptr() != ref_params[name].data_ptr(), f"{name} is shared, not copied"
    assert set(dict(ours.named_parameters())) == set(ref_params)


def test_from_transformers_follows_training_mode() -> None:
    ref = reference_attention().train()
    assert DisentangledSelfAttention.from_transformers(ref).training
    assert not DisentangledSelfAttention.from_transformers(ref.eval()).training
