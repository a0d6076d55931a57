"""``torch.compile(..., fullgraph=True)`` takes the attention and the encoder whole.

A host sync on the hot path (``bool(tensor)``, ``int(tensor)``, ``.item()``)
breaks the graph; with ``fullgraph=True`` that is an error, so these tests fail
on any such read inside the layers or kernels. Compiling on the CPU takes tens
of seconds per configuration: few and tiny configurations, marked ``slow``.

flex: inductor's CPU lowering of FlexAttention inside a larger graph fails in
this torch ("NoValidChoicesError"), so the flex test traces the whole module
into one graph with the ``aot_eager`` backend (dynamo and autograd tracing, no
kernel generation): it still fails on any graph break. With gradients on the
CPU, flex recomputes its backward with ``torch.autograd.grad`` (the CPU kernel
has none), which dynamo does not trace: flex is compiled for inference only.
"""

from __future__ import annotations

import pytest
import torch

import relpos

pytestmark = pytest.mark.slow

HIDDEN, HEADS, K = 16, 2, 4


def _inputs():
    x = torch.randn(2, 6, HIDDEN)  # (b, n, hidden)
    mask = torch.ones(2, 6)
    mask[1, 4:] = 0  # padding in the second sequence
    return x, mask


@pytest.mark.parametrize(
    "backend, compiler", [("gather", "inductor"), ("flex", "aot_eager")]
)
def test_the_attention_compiles_as_one_graph(backend, compiler):
    module = relpos.DisentangledSelfAttention(
        HIDDEN, HEADS, max_relative_positions=K, backend=backend
    ).eval()
    x, mask = _inputs()
    table = torch.randn(2 * K, HIDDEN)  # (2k, hidden)
    compiled = torch.compile(module, fullgraph=True, backend=compiler)
    with torch.no_grad():
        expected = module(x, table, mask)
        got = compiled(x, table, mask)
    torch.testing.assert_close(got[:, :4], expected[:, :4], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got[0], expected[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "backend, compiler", [("naive", "inductor"), ("gather", "aot_eager")]
)
def test_the_encoder_compiles_as_one_graph_with_gradients(backend, compiler):
    torch.manual_seed(0)
    encoder = relpos.DisentangledEncoder(
        2, HIDDEN, HEADS, 32, max_relative_positions=K, backend=backend
    ).eval()
    x, mask = _inputs()
    compiled = torch.compile(encoder, fullgraph=True, backend=compiler)
    expected = encoder(x, mask)
    got = compiled(x, mask)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    (grad_expected,) = torch.autograd.grad(expected.sum(), encoder.table.weight)
    (grad_got,) = torch.autograd.grad(got.sum(), encoder.table.weight)
    torch.testing.assert_close(grad_got, grad_expected, rtol=1e-5, atol=1e-5)
