"""The one explicit score path: one ``future_keys`` (with the cache offset), one
value term that every kernel and ``return_scores`` use, one ``gather_scores``.

Shape legend:
    b  batch      h  heads      i  query position      j  key position      d  width
"""

from __future__ import annotations

import sys

import pytest
import torch

import relpos
from _every import HIDDEN, KERNELS, build, call, tolerance
from relpos.masks import future_keys
from relpos.schemes import shaw_index
from relpos.scores import value_term


def _core_modules():
    """The modules of the core that ``import relpos`` loads (not the book layer)."""
    for name, module in list(sys.modules.items()):
        if name.startswith("relpos.") and not name.startswith("relpos.book"):
            yield module


def test_future_keys_of_a_cache_step_are_the_last_rows_of_the_causal_mask():
    # 3 new queries after 4 cached keys: the rows of positions 4, 5, 6 of the
    # full causal mask over 7 positions.
    full = future_keys(7, 7)
    assert torch.equal(full, torch.ones(7, 7, dtype=torch.bool).triu(1))
    step = future_keys(3, 7)
    assert torch.equal(step, full[4:])
    # Query 0 of the step (position 4) reads keys 0..4 and not 5, 6.
    assert step[0].tolist() == [False] * 5 + [True] * 2
    # One new token reads every key.
    assert not future_keys(1, 7).any()


def test_gather_scores_causal_with_a_cache_reads_the_same_keys():
    # The public helper's causal mask is the same one: the last 3 queries against
    # all 7 keys give the last 3 rows of the full causal probabilities.
    g = torch.Generator().manual_seed(0)
    query = torch.randn(1, 2, 7, 4, generator=g, dtype=torch.float64)
    key = torch.randn(1, 2, 7, 4, generator=g, dtype=torch.float64)
    rows = torch.randn(2, 5, 4, generator=g, dtype=torch.float64)
    index = torch.randint(0, 5, (7, 7), generator=g)
    full = relpos.gather_scores(query, key, rows, rows, index, None, 0.5, causal=True)
    step = relpos.gather_scores(
        query[:, :, 4:], key, rows, rows, index[4:], None, 0.5, causal=True
    )
    torch.testing.assert_close(step.probs, full.probs[:, :, 4:], rtol=0, atol=0)
    assert (step.probs[..., 0, 5:] == 0).all() and (step.probs[..., 0, :5] > 0).all()


def test_one_future_keys_one_gather_scores_one_value_term():
    assert {"relpos.scores", "relpos.masks", "relpos.backends.flex"} <= {
        module.__name__ for module in _core_modules()
    }
    for name in ("future_keys", "gather_scores", "value_term"):
        found = {
            id(getattr(module, name)): module.__name__
            for module in _core_modules()
            if hasattr(module, name)
        }
        assert len(found) == 1, (name, sorted(found.values()))


def test_value_term_adds_the_weights_of_the_keys_of_each_row():
    # Keys 1 and 2 read row 1, key 0 reads row 0: row weights (0.2, 0.8).
    probs = torch.tensor([0.2, 0.5, 0.3], dtype=torch.float64).view(1, 1, 1, 3)
    rows = torch.tensor([[0, 1, 1]])  # (i, j)
    value_rows = torch.tensor([[[1.0, 0.0], [0.0, 10.0]]], dtype=torch.float64)
    expected = torch.tensor([0.2, 8.0], dtype=torch.float64).view(1, 1, 1, 2)
    assert torch.equal(value_term(probs, value_rows, rows), expected)
    # The same with a batch of rows (B = 1, i, j) and with the weights given (flex).
    assert torch.equal(value_term(probs, value_rows, rows[None]), expected)
    weights = torch.tensor([0.2, 0.8], dtype=torch.float64).view(1, 1, 1, 2)
    assert torch.equal(value_term(weights, value_rows, None), expected)


@pytest.mark.parametrize("backend", KERNELS)
def test_shaw_value_term_is_the_same_on_every_kernel_and_return_scores(backend):
    # By hand: each pair's value row, from the paper's per-pair table.
    module = build("shaw", backend)
    assert module.value_table is not None
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 7, HIDDEN, dtype=torch.float64, generator=g)
    context, scores = call(module, x, return_scores=True)
    with torch.no_grad():
        values = module.split_heads(module.value_proj(x))  # (b, h, j, d)
        positions = torch.arange(7)
        index = shaw_index(positions[:, None] - positions[None, :], 2)  # (i, j)
        pairs = module.value_table[index]  # (i, j, d)
        by_hand = scores.probs @ values + torch.einsum(
            "bhij,ijd->bhid", scores.probs, pairs
        )  # (b, h, i, d)
    expected = by_hand.transpose(1, 2).flatten(-2)  # (b, n, hidden)
    torch.testing.assert_close(context, expected, **tolerance(x.dtype))
    torch.testing.assert_close(call(module, x), expected, **tolerance(x.dtype))
    # The values matter: without the value term the context differs.
    plain = (scores.probs @ values).transpose(1, 2).flatten(-2)
    assert not torch.allclose(plain, expected, atol=1e-3)
