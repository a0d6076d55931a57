"""Properties of relative positions, the delta index and the log buckets.

Convention under test: the distance of key ``j`` from query ``i`` is ``i - j``.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from transformers.models.deberta_v2.modeling_deberta_v2 import (
    build_relative_position,
    make_log_bucket_position,
)

import relpos
from relpos import (
    attention_span,
    delta,
    exact_bucket_limit,
    log_bucket_position,
    position_index,
    relative_position_index,
    relative_positions,
)

spans = st.integers(min_value=1, max_value=1024)
distances = st.integers(min_value=-(10**6), max_value=10**6)

INT_DTYPES = {
    torch.int8: (-128, 127),
    torch.int16: (-(2**15), 2**15 - 1),
    torch.int32: (-(10**6), 10**6),
    torch.int64: (-(10**12), 10**12),
}


@st.composite
def int_tensors(draw) -> torch.Tensor:
    """An integer tensor of any integer dtype, 0-d to 2-d, values within the dtype's range."""
    dtype = draw(st.sampled_from(list(INT_DTYPES)))
    low, high = INT_DTYPES[dtype]
    shape = draw(st.sampled_from([(), (0,), (7,), (3, 4), (1, 9)]))
    count = 1
    for size in shape:
        count *= size
    values = draw(st.lists(st.integers(low, high), min_size=count, max_size=count))
    return torch.tensor(values, dtype=dtype).reshape(shape)


@st.composite
def bucket_configs(draw) -> tuple[int, int]:
    """A valid ``(bucket_size, max_position)``: 2 <= bucket_size <= max_position, log scale defined."""
    bucket_size = draw(st.integers(min_value=2, max_value=300))
    low = max(bucket_size, bucket_size // 2 + 2)
    max_position = draw(st.integers(min_value=low, max_value=4 * bucket_size + 600))
    return bucket_size, max_position


# The pairs named in the issue, plus DeBERTa-v3's (256, 512) and extremes.
REFERENCE_BUCKETS = [(256, 512), (32, 128), (4, 16), (2, 3), (3, 5), (64, 64), (16, 1000)]


# -- delta --------------------------------------------------------------------


@given(distances, spans)
def test_delta_int_range_and_type(r: int, k: int) -> None:
    out = delta(r, k)
    assert type(out) is int
    assert 0 <= out < 2 * k


@given(int_tensors(), spans)
def test_delta_tensor_range_shape_dtype(rel: torch.Tensor, k: int) -> None:
    out = delta(rel, k)
    assert isinstance(out, torch.Tensor)
    assert out.dtype == torch.long
    assert out.shape == rel.shape
    assert bool(((out >= 0) & (out < 2 * k)).all())
    # Elementwise the same as the int version.
    assert out.flatten().tolist() == [delta(int(v), k) for v in rel.flatten().tolist()]


@given(st.data(), spans)
def test_delta_three_cases(data: st.DataObject, k: int) -> None:
    # Most draws near the window (each case often), some far away.
    r = data.draw(st.one_of(st.integers(-2 * k, 2 * k), distances), label="r")
    if r <= -k:
        expected = 0
    elif r >= k:
        expected = 2 * k - 1
    else:
        expected = r + k
    assert delta(r, k) == expected
    assert delta(torch.tensor([r]), k).item() == expected


@pytest.mark.parametrize("k", [1, 2, 3, 8, 256, 512])
def test_delta_boundaries(k: int) -> None:
    assert delta(-k, k) == 0
    assert delta(0, k) == k
    assert delta(k - 1, k) == 2 * k - 1
    # One step past each end saturates.
    assert delta(-k - 1, k) == 0
    assert delta(k, k) == 2 * k - 1
    # One step inside the lower end.
    assert delta(-k + 1, k) == 1
    rel = torch.tensor([-k - 1, -k, 0, k - 1, k])
    assert delta(rel, k).tolist() == [0, 0, k, 2 * k - 1, 2 * k - 1]


@given(st.data(), spans)
def test_delta_mirror_inside_the_window(data: st.DataObject, k: int) -> None:
    # Inside the unclipped window |r| <= k - 1, rows of r and -r are mirrored around k.
    r = data.draw(st.integers(-(k - 1), k - 1), label="r")
    assert delta(r, k) + delta(-r, k) == 2 * k


@given(st.integers(-50, 50), st.integers(-50, 50), spans)
def test_delta_is_monotone(r1: int, r2: int, k: int) -> None:
    low, high = sorted((r1, r2))
    assert delta(low, k) <= delta(high, k)


def test_delta_int_in_int_out_not_tensor() -> None:
    assert delta(3, 4) == 7 and type(delta(3, 4)) is int
    assert type(delta(-100, 4)) is int


# -- relative_positions ----------------------------------------------------------


@given(st.integers(0, 25), st.integers(0, 25))
def test_relative_positions_entries(query_len: int, key_len: int) -> None:
    rel = relative_positions(query_len, key_len)
    assert rel.shape == (query_len, key_len)
    assert rel.dtype == torch.long
    for i in range(query_len):
        for j in range(key_len):
            assert rel[i, j].item() == i - j


@given(st.integers(0, 60))
def test_relative_positions_default_key_len_and_antisymmetry(n: int) -> None:
    rel = relative_positions(n)
    assert rel.shape == (n, n)
    assert torch.equal(rel, relative_positions(n, n))
    assert torch.equal(rel, -rel.T)
    assert bool((rel.diagonal() == 0).all())
    # Lower triangle (key behind the query) positive, upper triangle negative.
    assert bool((rel.tril(-1)[rel.tril(-1) != 0] > 0).all())
    assert bool((rel.triu(1)[rel.triu(1) != 0] < 0).all())


@given(st.integers(1, 30), st.integers(1, 30), st.integers(0, 30))
def test_relative_positions_translation_invariance(m: int, n: int, t: int) -> None:
    # Shifting every query and key position by t leaves i - j unchanged.
    big = relative_positions(m + t, n + t)
    assert torch.equal(big[t:, t:], relative_positions(m, n))
    assert torch.equal(big[1:, 1:], big[:-1, :-1])


# -- relative_position_index -----------------------------------------------------


@given(st.integers(1, 60), st.integers(0, 60), spans)
def test_index_is_toeplitz_and_translation_invariant(n: int, t: int, k: int) -> None:
    index = relative_position_index(n + t, max_relative_positions=k)
    assert torch.equal(index[1:, 1:], index[:-1, :-1])
    assert torch.equal(index[t:, t:], relative_position_index(n, max_relative_positions=k))
    # By hand: i - j clamped into [-k, k - 1], shifted by k.
    positions = torch.arange(n + t)
    expected = (positions[:, None] - positions[None, :]).clamp(-k, k - 1) + k
    assert torch.equal(index, expected)


@given(st.integers(1, 40), st.integers(0, 40), bucket_configs())
def test_bucketed_index_is_toeplitz_and_translation_invariant(
    n: int, t: int, config: tuple[int, int]
) -> None:
    bucket_size, max_position = config
    kwargs = dict(max_relative_positions=max_position, position_buckets=bucket_size)
    index = relative_position_index(n + t, **kwargs)
    assert torch.equal(index[1:, 1:], index[:-1, :-1])
    assert torch.equal(index[t:, t:], relative_position_index(n, **kwargs))


@given(st.integers(0, 300), st.integers(0, 300), bucket_configs())
def test_bucketed_index_range(query_len: int, key_len: int, config: tuple[int, int]) -> None:
    bucket_size, max_position = config
    index = relative_position_index(
        query_len, key_len, max_relative_positions=max_position, position_buckets=bucket_size
    )
    span = attention_span(max_position, bucket_size)
    assert span == bucket_size
    assert index.shape == (query_len, key_len)
    assert index.dtype == torch.long
    if index.numel():
        assert int(index.min()) >= 0
        assert int(index.max()) < 2 * span


@given(st.integers(0, 30), st.integers(0, 30), st.integers(1, 12))
def test_index_unequal_lengths_values(query_len: int, key_len: int, k: int) -> None:
    index = relative_position_index(query_len, key_len, max_relative_positions=k)
    assert index.shape == (query_len, key_len)
    for i in range(query_len):
        for j in range(key_len):
            assert index[i, j].item() == delta(i - j, k)


def test_index_unequal_lengths_with_buckets_matches_transformers_c2p_index() -> None:
    # transformers' c2p index for queries 0..m-1 and keys 0..n-1 is clamp(bucket + span).
    for m, n in [(3, 40), (40, 3), (7, 7), (1, 600)]:
        for bucket_size, max_position in [(16, 64), (4, 16), (256, 512)]:
            index = relative_position_index(
                m, n, max_relative_positions=max_position, position_buckets=bucket_size
            )
            rel = build_relative_position(
                torch.empty(m, 1), torch.empty(n, 1), bucket_size=bucket_size, max_position=max_position
            )[0]
            expected = torch.clamp(rel + bucket_size, 0, 2 * bucket_size - 1)
            assert torch.equal(index, expected), (m, n, bucket_size, max_position)


def test_index_explicit_small_case() -> None:
    # k = 2: distances clipped to [-2, 1], rows 0..3.
    index = relative_position_index(3, 5, max_relative_positions=2)
    assert index.tolist() == [
        [2, 1, 0, 0, 0],
        [3, 2, 1, 0, 0],
        [3, 3, 2, 1, 0],
    ]


def test_position_index_composes_buckets_then_delta() -> None:
    rel = torch.arange(-700, 701)
    without = position_index(rel, max_relative_positions=8)
    assert without.tolist() == [min(max(r, -8), 7) + 8 for r in rel.tolist()]
    with_buckets = position_index(rel, max_relative_positions=512, position_buckets=256)
    # transformers' bucketed distances: queries 0..1400 against key 700 give -700..700;
    # its c2p index clamps bucket + span into [0, 2 * span - 1].
    bucket = build_relative_position(
        torch.empty(1401, 1), torch.empty(701, 1), bucket_size=256, max_position=512
    )[0, :, 700]
    assert torch.equal(with_buckets, torch.clamp(bucket + 256, 0, 511))
    # position_buckets = 0 means "no buckets", like -1.
    assert torch.equal(position_index(rel, max_relative_positions=8, position_buckets=0), without)


def test_attention_span_and_exact_limit() -> None:
    assert attention_span(8) == 8
    assert attention_span(512, 256) == 256
    assert attention_span(512, -1) == 512
    assert attention_span(512, 0) == 512
    assert exact_bucket_limit(256) == 128
    assert exact_bucket_limit(5) == 2


# -- log buckets -----------------------------------------------------------------


@given(bucket_configs())
def test_log_bucket_exact_region(config: tuple[int, int]) -> None:
    bucket_size, max_position = config
    mid = exact_bucket_limit(bucket_size)
    rel = torch.arange(-mid, mid + 1)
    assert torch.equal(log_bucket_position(rel, bucket_size, max_position), rel)


@given(bucket_configs())
def test_log_bucket_monotone_and_odd(config: tuple[int, int]) -> None:
    bucket_size, max_position = config
    mid = bucket_size // 2
    rel = torch.arange(-3 * max_position, 3 * max_position + 1)
    bucket = log_bucket_position(rel, bucket_size, max_position)
    assert bucket.dtype == torch.long
    assert bool((bucket.diff() >= 0).all()), "not monotone non-decreasing"
    assert torch.equal(bucket.flip(0), -bucket), "not odd"
    # Past the exact region the magnitude never drops below mid, and keeps the sign.
    far = rel.abs() > mid
    assert bool((bucket[far].abs() >= mid).all())
    assert torch.equal(bucket[far].sign(), rel[far].sign())


@given(bucket_configs())
def test_log_bucket_last_bucket_at_max_position(config: tuple[int, int]) -> None:
    bucket_size, max_position = config
    mid = bucket_size // 2
    rel = torch.tensor([max_position - 1, -(max_position - 1)])
    assert log_bucket_position(rel, bucket_size, max_position).tolist() == [2 * mid - 1, -(2 * mid - 1)]


@pytest.mark.parametrize("bucket_size, max_position", REFERENCE_BUCKETS)
def test_log_bucket_equals_transformers_wide_range(bucket_size: int, max_position: int) -> None:
    rel = torch.arange(-5000, 5001)
    expected = make_log_bucket_position(rel, bucket_size, max_position).long()
    assert torch.equal(log_bucket_position(rel, bucket_size, max_position), expected)


@given(bucket_configs())
def test_log_bucket_equals_transformers_random_configs(config: tuple[int, int]) -> None:
    bucket_size, max_position = config
    rel = torch.arange(-3000, 3001)
    expected = make_log_bucket_position(rel, bucket_size, max_position).long()
    assert torch.equal(log_bucket_position(rel, bucket_size, max_position), expected)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int16])
def test_log_bucket_accepts_any_integer_dtype(dtype: torch.dtype) -> None:
    rel = torch.arange(-1000, 1001)
    out = log_bucket_position(rel.to(dtype), 32, 128)
    assert out.dtype == torch.long
    assert torch.equal(out, log_bucket_position(rel, 32, 128))


@given(st.integers(0, 200), bucket_configs())
def test_distance_lookup_expands_to_the_index_with_buckets(n: int, config: tuple[int, int]) -> None:
    bucket_size, max_position = config
    kw = dict(max_relative_positions=max_position, position_buckets=bucket_size)
    lookup = relpos.distance_lookup(n, **kw)
    assert lookup.shape == (max(2 * n - 1, 0),)
    assert torch.equal(relpos.index_from_lookup(lookup), relpos.relative_position_index(n, **kw))


@given(st.integers(0, 200), spans)
def test_distance_lookup_expands_to_the_index_with_clipping(n: int, k: int) -> None:
    lookup = relpos.distance_lookup(n, max_relative_positions=k)
    index = relpos.index_from_lookup(lookup)
    assert torch.equal(index, relpos.relative_position_index(n, max_relative_positions=k))
    for r in range(-(n - 1), n):
        assert lookup[r + n - 1].item() == relpos.delta(r, k)
