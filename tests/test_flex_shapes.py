"""The compiled flex kernel keeps its shapes while a sequence grows
(``relpos.backends.flex_shapes``): decoding with a cache compiles one kernel per
bucket of 16 positions, not one per step, and the padding changes no row that a
distance reads.
"""

from __future__ import annotations

import pytest
import torch
from torch._dynamo.utils import counters

import relpos
from relpos.backends.flex_shapes import BUCKET, extend_lookup, pad_to, round_up


def test_round_up_and_pad_to():
    assert [round_up(n) for n in (0, 1, 16, 17, 33)] == [0, 16, 16, 32, 48]
    t = torch.ones(2, 3, dtype=torch.bool)
    padded = pad_to(t, -1, 5)
    assert padded.shape == (2, 5) and padded.dtype == torch.bool
    assert padded[:, :3].all() and not padded[:, 3:].any()
    assert pad_to(None, -1, 5) is None
    rows = torch.randn(2, 3, 4)
    assert torch.equal(pad_to(rows, -2, 8)[:, :3], rows)
    assert pad_to(rows, -2, 8).shape == (2, 8, 4)


@pytest.mark.parametrize("k", [1, 4, 16])
def test_an_extended_lookup_reads_the_same_row_at_every_distance(k):
    lookup = relpos.distance_lookup(2 * k, max_relative_positions=k)
    reach = (lookup.shape[0] - 1) // 2
    wider = extend_lookup(lookup, round_up(reach) + BUCKET)
    far = (wider.shape[0] - 1) // 2
    for rel in range(-far, far + 1):
        before = lookup[max(-reach, min(reach, rel)) + reach]
        assert wider[rel + far] == before, rel


def _decode(module, x, schedule):
    cache, outputs, start = relpos.KVCache(), [], 0
    with torch.no_grad():
        for size in schedule:
            outputs.append(module(x[:, start:start + size], cache=cache))
            start += size
    return torch.cat(outputs, dim=1)


@pytest.mark.slow
def test_decoding_with_a_cache_compiles_one_kernel_per_bucket():
    torch.manual_seed(0)
    module = relpos.DisentangledSelfAttention(
        16, 2, max_relative_positions=4, backend="flex", causal=True
    ).eval()
    x = torch.randn(1, 20, 16)
    with torch.no_grad():
        full = module(x)
    torch._dynamo.reset()
    counters.clear()
    # A prompt of 5, then one token at a time to 16: one bucket of keys.
    first = _decode(module, x[:, :16], (5,) + (1,) * 11)
    assert counters["stats"]["unique_graphs"] == 1
    torch.testing.assert_close(first, full[:, :16], atol=2e-5, rtol=2e-5)
    # Past 16 keys: a second bucket, so one more kernel, for every step to 20.
    got = _decode(module, x, (5,) + (1,) * 15)
    assert counters["stats"]["unique_graphs"] == 2
    torch.testing.assert_close(got, full, atol=2e-5, rtol=2e-5)


@pytest.mark.slow
def test_every_length_of_a_bucket_shares_its_kernel():
    # 16 included: there nothing is padded, and the query and key positions are one
    # tensor unless copied, which torch would guard on.
    torch.manual_seed(0)
    module = relpos.DisentangledSelfAttention(
        32, 4, max_relative_positions=8, backend="flex"
    ).eval()
    torch._dynamo.reset()
    counters.clear()
    seen = []
    with torch.no_grad():
        for n in (5, 8, 16, 12, 24, 32):
            module(torch.randn(2, n, 32))
            seen.append(counters["stats"]["unique_graphs"])
    assert seen == [1, 1, 1, 1, 2, 2]
