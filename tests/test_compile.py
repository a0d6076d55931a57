"""``torch.compile(..., fullgraph=True)`` takes the attention and the encoder whole.

A host sync on the hot path (``bool(tensor)``, ``int(tensor)``, ``.item()``)
breaks the graph; with ``fullgraph=True`` that is an error, so these tests fail
on any such read inside the layers or kernels. Compiling on the CPU takes tens
of seconds per configuration with inductor: the registry-wide tests use the
``aot_eager`` backend (dynamo and autograd tracing, no kernel generation), which
fails on the same graph breaks; a few configurations run inductor. All ``slow``.

flex: inside a compiled module on the CPU, flex runs its gather formulation
(torch 2.13's CPU lowering of flex_attention fails on a symbolic length and on
Transformer-XL's captured tensors; see ``relpos.backends.flex``), so a flex
module compiles with inductor at any length and with ``dynamic=True``, equal to
eager; on a GPU the kernel becomes part of the graph.

The eager side of a flex comparison is the same weights on ``gather``: eager flex
in float32 would compile its own CPU kernel per shape (seconds each) and check
nothing about ``torch.compile``; that eager flex equals gather is checked on the
compiled kernel in ``test_attention_reference.py``, ``test_causal.py`` and
``test_flex_lengths.py``.
"""

from __future__ import annotations

import copy

import pytest
import torch

import relpos
from _schemes import build, padded, scheme_names, shifted_positions

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
    reference = copy.deepcopy(module)
    reference.backend = "gather"  # eagerly (see the module docstring)
    with torch.no_grad():  # the call of every relpos attention
        expected = reference(x, mask, rel_embeddings=table)
        got = compiled(x, mask, rel_embeddings=table)
    torch.testing.assert_close(got[:, :4], expected[:, :4], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got[0], expected[0], rtol=1e-5, atol=1e-5)


# aot_eager: dynamo's capture and autograd's trace of forward and backward, which is
# where a graph break or a host read would show; inductor's code generation of the
# two-layer backward alone took 40 s of CPU (inductor runs the attention above, and
# flex below).
@pytest.mark.parametrize("backend, compiler", [("naive", "aot_eager"), ("gather", "aot_eager")])
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


def _compiled_equals_eager(
    module, kwargs, *, grad: bool, compiler="aot_eager", eager_backend=None
):
    """The compiled module equals the module run eagerly (on ``eager_backend``).
    """
    x = kwargs.pop("x")
    x.requires_grad_(grad)
    compiled = torch.compile(module, fullgraph=True, backend=compiler)
    reference = module
    if eager_backend is not None:  # the same weights on another kernel
        reference = copy.deepcopy(module)
        reference.backend = eager_backend
    with torch.set_grad_enabled(grad):
        expected = reference(x, **kwargs)
        got = compiled(x, **kwargs)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    if grad:
        (grad_expected,) = torch.autograd.grad(expected.sum(), x)
        (grad_got,) = torch.autograd.grad(got.sum(), x)
        torch.testing.assert_close(grad_got, grad_expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("causal", [False, True], ids=["padded", "causal"])
@pytest.mark.parametrize("backend", ["naive", "gather"])
@pytest.mark.parametrize("name", scheme_names())
def test_every_scheme_compiles_as_one_graph(name, backend, causal):
    # Padded and per-sequence positions; causal with padding and default positions.
    torch._dynamo.reset()
    module = build(name, backend, causal)
    x, mask = padded(2, 6)
    kwargs = dict(x=x, attention_mask=mask)
    if not causal:
        kwargs["positions"] = shifted_positions(2, 6)
    _compiled_equals_eager(module, kwargs, grad=True)


@pytest.mark.parametrize("name", scheme_names())
def test_every_scheme_compiles_on_flex_for_inference(name):
    torch._dynamo.reset()
    # Padded; DeBERTa causal too (its c2p and p2c tables with the causal mask).
    # Compared with gather eagerly: compiling flex's own eager kernel takes long.
    module = build(name, "flex", causal=name.startswith("deberta"))
    x, mask = padded(2, 6)
    _compiled_equals_eager(
        module, dict(x=x, attention_mask=mask), grad=False, eager_backend="gather"
    )


@pytest.mark.parametrize("name", ["alibi", "deberta-buckets", "transformer_xl"])
def test_flex_compiles_with_inductor_on_the_cpu(name):
    torch._dynamo.reset()
    x, mask = padded(2, 6)
    module = build(name, "flex")
    _compiled_equals_eager(
        module, dict(x=x, attention_mask=mask), grad=False, compiler="inductor",
        eager_backend="gather",
    )


@pytest.mark.parametrize("dynamic", [True, None], ids=["dynamic", "default"])
@pytest.mark.parametrize("name", ["alibi", "deberta"])
def test_flex_compiles_for_every_length(name, dynamic):
    # dynamic=True, or the default's recompile with symbolic lengths when a second
    # length arrives: inductor's CPU flex template fails on those, the module does
    # not (the gather formulation runs in the graph).
    torch._dynamo.reset()
    module = build(name, "flex").eval()
    compiled = torch.compile(module, dynamic=dynamic)
    reference = copy.deepcopy(module)
    reference.backend = "gather"  # eagerly (see the module docstring)
    for n in (6, 11, 24):
        x, mask = padded(2, n)
        with torch.no_grad():
            got = compiled(x, attention_mask=mask)
            want = reference(x, attention_mask=mask)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_transformer_xl_refuses_compiled_positions_wider_than_its_reach():
    # Compiled, Transformer-XL encodes distances up to max(i, j) - 1 (from the
    # shapes, no value read); positions further apart fail a run-time check.
    torch._dynamo.reset()
    module = build("transformer_xl", "gather")
    compiled = torch.compile(module, fullgraph=True, backend="aot_eager")
    x = torch.randn(2, 6, 16)
    wide = shifted_positions(2, 6)
    wide[0, -1] = 40
    torch.testing.assert_close(compiled(x), module(x))
    with pytest.raises(RuntimeError, match="covers distances up to max"):
        compiled(x, positions=wide)
    assert module(x, positions=wide).isfinite().all()  # eager: any positions
