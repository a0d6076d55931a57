"""TUPE's untied position term (relpos.schemes.tupe) against a hand computation."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

import relpos
from relpos.schemes import REGISTRY, TupeBias, TupeSelfAttention, build_attention
from relpos.book.experiments import Config, build_scheme

from _tiny import TINY, one_thread  # noqa: F401  (autouse fixture)

F64 = torch.float64
HIDDEN, HEADS, ROWS = 16, 2, 12


def spread(module: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    with torch.no_grad():
        for parameter in module.parameters():
            parameter.add_(0.3 * torch.randn_like(parameter))
    return module.to(F64).eval()


def by_hand(module: TupeSelfAttention, x: torch.Tensor, positions: list[int]):
    """The logits written out: both terms over sqrt(2d), d = 8."""
    b, n, _ = x.shape
    d = HIDDEN // HEADS
    q = module.query_proj(x).view(b, n, HEADS, d).transpose(1, 2)  # (b, h, n, d)
    k = module.key_proj(x).view(b, n, HEADS, d).transpose(1, 2)
    bias = module.position_bias
    p = F.layer_norm(bias.table, (HIDDEN,), bias.norm.weight, bias.norm.bias, 1e-7)
    rows = torch.tensor(positions).clamp(max=ROWS - 1)
    pq = F.linear(p[rows], bias.pos_query.weight, bias.pos_query.bias)  # (n, hidden)
    pk = F.linear(p[rows], bias.pos_key.weight, bias.pos_key.bias)
    pq = pq.view(n, HEADS, d).transpose(0, 1)  # (h, n, d)
    pk = pk.view(n, HEADS, d).transpose(0, 1)
    content = q @ k.transpose(-1, -2) / math.sqrt(2 * d)  # (b, h, n, n)
    return content + (pq @ pk.transpose(-1, -2) / math.sqrt(2 * d))[None]


@pytest.mark.parametrize("causal", [False, True])
def test_the_logits_are_the_content_and_the_untied_position_term_over_sqrt_2d(causal):
    module = spread(TupeSelfAttention(HIDDEN, HEADS, max_length=ROWS, causal=causal))
    x = torch.randn(2, 7, HIDDEN, dtype=F64)
    with torch.no_grad():
        _, scores = module(x, return_scores=True)
        expected = by_hand(module, x, list(range(7)))
    keep = torch.ones(7, 7).tril().bool() if causal else torch.ones(7, 7).bool()
    torch.testing.assert_close(scores.logits.masked_select(keep),
                               expected.masked_select(keep), rtol=0, atol=1e-12)


def test_positions_past_the_table_read_its_last_row_and_a_shift_changes_the_term():
    module = spread(TupeSelfAttention(HIDDEN, HEADS, max_length=ROWS))
    x = torch.randn(1, 5, HIDDEN, dtype=F64)
    positions = [9, 10, 11, 12, 30]  # the last two past the 12 rows
    with torch.no_grad():
        _, far = module(x, positions=torch.tensor(positions), return_scores=True)
        _, near = module(x, return_scores=True)
    torch.testing.assert_close(far.logits, by_hand(module, x, positions), rtol=0,
                               atol=1e-12)
    assert not torch.allclose(far.logits, near.logits)  # not relative
    term = module.position_bias(torch.tensor(positions), torch.tensor(positions))
    assert (term[..., 3] == term[..., 4]).all()  # keys at 12 and 30 read one row


def test_the_term_sends_no_gradient_to_the_content_projections_or_the_states():
    module = spread(TupeSelfAttention(HIDDEN, HEADS, max_length=ROWS))
    x = torch.randn(2, 5, HIDDEN, dtype=F64, requires_grad=True)
    _, scores = module(x, return_scores=True)
    term = scores.logits - by_hand(module, x, list(range(5)))  # zero, with a graph
    position = module.position_bias(torch.arange(5), torch.arange(5))  # (h, i, j)
    grads = torch.autograd.grad(position.square().sum(),
                                [module.query_proj.weight, module.key_proj.weight, x,
                                 module.position_bias.table], allow_unused=True)
    assert grads[0] is None and grads[1] is None and grads[2] is None
    assert grads[3].abs().sum() > 0
    assert term.abs().max() < 1e-12


def test_bias_at_is_the_grid_elementwise():
    bias = spread(TupeBias(HIDDEN, HEADS, max_length=ROWS))
    grid = bias.grid()  # (h, 12, 12)
    head, i, rel = torch.tensor(1), torch.tensor(5), torch.tensor(2)
    assert bias.bias_at(head, rel, i).item() == pytest.approx(grid[1, 5, 3].item())
    torch.testing.assert_close(bias(torch.arange(4), torch.arange(6)),
                               grid[:, :4, :6])
    with pytest.raises(ValueError, match="hidden_size must be divisible by num_heads"):
        TupeBias(10, 4)
    with pytest.raises(ValueError, match="max_length"):
        TupeBias(HIDDEN, HEADS, max_length=0)


@pytest.mark.parametrize("backend", [b for b in relpos.BACKENDS if b != "gather"])
@pytest.mark.parametrize("causal", [False, True])
def test_every_kernel_gives_the_gather_kernels_output(backend, causal):
    reference = spread(TupeSelfAttention(HIDDEN, HEADS, max_length=ROWS, causal=causal))
    other = TupeSelfAttention(HIDDEN, HEADS, max_length=ROWS, causal=causal,
                              backend=backend).to(F64).eval()
    other.load_state_dict(reference.state_dict())
    x = torch.randn(2, 6, HIDDEN, dtype=F64)
    with torch.no_grad():
        torch.testing.assert_close(other(x), reference(x), rtol=1e-10, atol=1e-10)


def test_the_registration_sizes_the_table_and_reads_both_rows():
    registration = REGISTRY["tupe"]
    assert registration.relative is False and registration.content_free is True
    config = Config(scheme="tupe", **TINY)  # test lengths up to 16
    attention = build_attention("tupe", config)
    assert attention.position_bias.max_length == config.table_length == 16
    assert attention.scale == pytest.approx(1 / math.sqrt(2 * attention.head_size))
    rel = torch.arange(4)[:, None] - torch.arange(4)[None, :]
    entries = registration.entries(attention, rel)
    assert entries["query row"].index.tolist() == [[i] * 4 for i in range(4)]
    assert entries["key row"].index.tolist() == [list(range(4))] * 4
    _, encoder = build_scheme("tupe", config.replace(setting="causal"))
    assert encoder.layers[0].attention.causal is True
