"""The ``2k``-row relative-position table and its literal per-pair lookup."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from relpos import (
    RelativePositionEmbedding,
    delta,
    per_pair_memory_bytes,
    sinusoidal_table,
    table_memory_bytes,
)


def test_shapes() -> None:
    emb = RelativePositionEmbedding(max_relative_positions=4, hidden_size=64)
    assert emb.weight.shape == (8, 64)
    assert emb(6).shape == (6, 6, 64)
    assert emb(0).shape == (0, 0, 64)
    default = RelativePositionEmbedding()
    assert default.weight.shape == (2 * 512, 768)
    assert default(6).shape == (6, 6, 768)


def test_the_table_is_learned() -> None:
    # One optimiser step on a loss of the pairs changes what the module returns.
    torch.manual_seed(0)
    emb = RelativePositionEmbedding(max_relative_positions=4, hidden_size=8)
    before = emb(6).detach().clone()
    optimiser = torch.optim.SGD(emb.parameters(), lr=0.1)
    emb(6).pow(2).sum().backward()
    optimiser.step()
    after = emb(6).detach()
    assert not torch.equal(before, after)
    # Each pair's vector shrank by the step on its row: (1 - 2 * lr * uses) times.
    assert bool((after.norm(dim=-1) < before.norm(dim=-1)).all())


@pytest.mark.parametrize("k, n, hidden", [(3, 9, 5), (8, 6, 64), (1, 4, 2), (16, 5, 3)])
def test_forward_is_weight_at_delta_per_pair(k: int, n: int, hidden: int) -> None:
    emb = RelativePositionEmbedding(max_relative_positions=k, hidden_size=hidden)
    pairs = emb(n)
    for i in range(n):
        for j in range(n):
            assert torch.equal(pairs[i, j], emb.weight[delta(i - j, k)]), (i, j)


def test_forward_gradient_counts_row_uses() -> None:
    # d(sum of all pairs)/d(weight[r]) is the number of pairs (i, j) that read row r.
    k, n = 3, 10
    emb = RelativePositionEmbedding(max_relative_positions=k, hidden_size=4)
    emb(n).sum().backward()
    # Count by hand: pair (i, j) reads row clamp(i - j, -k, k - 1) + k.
    uses = torch.zeros(2 * k, dtype=torch.long)
    for i in range(n):
        for j in range(n):
            uses[min(max(i - j, -k), k - 1) + k] += 1
    assert torch.equal(emb.weight.grad, uses[:, None].float().expand(2 * k, 4))
    # Clipping piles the far pairs onto the two end rows.
    assert uses[0] == sum(n - d for d in range(k, n))
    assert uses[2 * k - 1] == sum(n - d for d in range(k - 1, n))


@pytest.mark.parametrize("k, hidden", [(4, 64), (8, 7), (1, 2), (512, 768)])
def test_sinusoidal_init_equals_table(k: int, hidden: int) -> None:
    emb = RelativePositionEmbedding(max_relative_positions=k, hidden_size=hidden, init="sinusoidal")
    assert emb.init == "sinusoidal"
    assert torch.equal(emb.weight.data, sinusoidal_table(k, hidden))
    # reset_parameters fills the same table again.
    with torch.no_grad():
        emb.weight.zero_()
    emb.reset_parameters()
    assert torch.equal(emb.weight.data, sinusoidal_table(k, hidden))


def test_sinusoidal_table_values() -> None:
    k, hidden = 5, 6
    table = sinusoidal_table(k, hidden)
    assert table.shape == (2 * k, hidden)
    assert table.dtype == torch.get_default_dtype()
    for row in range(2 * k):
        dist = row - k
        for m in range(hidden // 2):
            angle = dist / 10000 ** (2 * m / hidden)
            assert table[row, 2 * m].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert table[row, 2 * m + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)
    # Row k is distance 0: every sine 0, every cosine 1.
    assert torch.equal(table[k, 0::2], torch.zeros(hidden // 2))
    assert torch.equal(table[k, 1::2], torch.ones(hidden // 2))


@pytest.mark.parametrize("k, hidden", [(16, 32), (64, 64), (8, 2)])
def test_sinusoidal_dot_products_depend_only_on_distance_difference(k: int, hidden: int) -> None:
    table = sinusoidal_table(k, hidden).double()
    gram = table @ table.T  # (2k, 2k)
    # Constant along every diagonal: the dot product of rows r1, r2 depends on r1 - r2 only.
    torch.testing.assert_close(gram[1:, 1:], gram[:-1, :-1], atol=1e-5, rtol=0)
    # And equals sum_m cos(w_m * (r1 - r2)).
    freqs = 1.0 / torch.pow(10000.0, torch.arange(0, hidden, 2, dtype=torch.float64) / hidden)
    diff = (torch.arange(2 * k)[:, None] - torch.arange(2 * k)[None, :]).double()  # (r1, r2)
    expected = torch.cos(diff[..., None] * freqs).sum(-1)
    torch.testing.assert_close(gram, expected, atol=1e-5, rtol=0)


def test_normal_init_std_seeded() -> None:
    torch.manual_seed(1234)
    emb = RelativePositionEmbedding(max_relative_positions=512, hidden_size=768)
    assert emb.init == "normal"
    weight = emb.weight.detach()
    assert abs(weight.std().item() - 0.02) < 5e-4
    assert abs(weight.mean().item()) < 5e-4
    # Seeded: the same seed gives the same table, another seed another one.
    torch.manual_seed(1234)
    again = RelativePositionEmbedding(max_relative_positions=512, hidden_size=768).weight.detach()
    assert torch.equal(weight, again)
    torch.manual_seed(4321)
    other = RelativePositionEmbedding(max_relative_positions=512, hidden_size=768).weight.detach()
    assert not torch.equal(weight, other)


@given(st.integers(0, 40), st.integers(1, 64), st.integers(1, 32))
def test_memory_helpers_match_real_tensors(n: int, hidden: int, k: int) -> None:
    emb = RelativePositionEmbedding(max_relative_positions=k, hidden_size=hidden)
    pairs = emb(n)
    assert per_pair_memory_bytes(n, hidden) == pairs.numel() * pairs.element_size()
    assert table_memory_bytes(k, hidden) == emb.weight.numel() * emb.weight.element_size()
    assert per_pair_memory_bytes(n, hidden, element_size=2) * 2 == per_pair_memory_bytes(n, hidden)
    assert table_memory_bytes(k, hidden, element_size=8) == 2 * table_memory_bytes(k, hidden)


def test_extra_repr_names_the_configuration() -> None:
    text = repr(RelativePositionEmbedding(max_relative_positions=3, hidden_size=5, init="sinusoidal"))
    assert "max_relative_positions=3" in text
    assert "hidden_size=5" in text
    assert "sinusoidal" in text
