"""Gradients of disentangled attention for every backend.

Small sizes throughout (b=2, n=5, hidden 8, 2 heads, k=3): gradcheck perturbs
every input entry. On the CPU the flex backend's backward recomputes the gather
formulation; its forward is still the flex kernel. The one test of the compiled
kernel (float32) uses ``test_attention_reference.py``'s sizes instead, whose kernel
is compiled there already.
"""

from __future__ import annotations

import pytest
import torch

import relpos
from _deberta import make_module, padding_mask, random_inputs, with_backend

BACKENDS = tuple(relpos.BACKENDS)
B, N, HIDDEN, HEADS, K = 2, 5, 8, 2, 3


def small_mask() -> torch.Tensor:
    """Row 0 unpadded, row 1 with two padded keys at the end. Shape (2, 5)."""
    mask = torch.ones(B, N, dtype=torch.long)
    mask[1, -2:] = 0
    return mask


def small_module(backend: str, dtype: torch.dtype, **kwargs) -> torch.nn.Module:
    return make_module(backend, hidden=HIDDEN, heads=HEADS, max_relative_positions=K, dtype=dtype, **kwargs)


# naive's gradcheck (per-pair tables) took about 10 s a case on a busy CPU, flex's
# about 5 s (the kernel per perturbation); gather's stays in the quick loop.
GRADCHECK_BACKENDS = [
    pytest.param(b, marks=pytest.mark.slow) if b != "gather" else b for b in BACKENDS
]


@pytest.mark.parametrize("share_att_key", [True, False])
@pytest.mark.parametrize("backend", GRADCHECK_BACKENDS)
def test_gradcheck_float64(backend: str, share_att_key: bool) -> None:
    module = small_module(backend, torch.float64, share_att_key=share_att_key)
    x, table = random_inputs(B, N, HIDDEN, K, torch.float64, seed=1)
    x.requires_grad_(True)
    table.requires_grad_(True)
    mask = small_mask()

    def attend(hidden_states: torch.Tensor, rel_embeddings: torch.Tensor) -> torch.Tensor:
        return module(hidden_states, mask, rel_embeddings=rel_embeddings)

    assert torch.autograd.gradcheck(attend, (x, table), eps=1e-6, atol=1e-6, rtol=1e-4)


@pytest.mark.parametrize("share_att_key", [True, False])
@pytest.mark.parametrize("backend", BACKENDS)
def test_gradients_reach_inputs_table_and_every_weight(backend: str, share_att_key: bool) -> None:
    module = small_module(backend, torch.float32, share_att_key=share_att_key)
    x, table = random_inputs(B, N, HIDDEN, K, seed=2)
    x.requires_grad_(True)
    table.requires_grad_(True)
    weights = torch.randn(B, N, HIDDEN)
    (module(x, small_mask(), rel_embeddings=table) * weights).sum().backward()
    for name, tensor in [("hidden_states", x), ("rel_embeddings", table), *module.named_parameters()]:
        assert tensor.grad is not None, f"no gradient for {name}"
        assert torch.isfinite(tensor.grad).all(), f"non-finite gradient for {name}"
        assert tensor.grad.abs().max() > 0, f"zero gradient for {name}"
    if not share_att_key:
        # Two more projections (weight and bias) than when sharing, each reached above.
        shared = small_module(backend, torch.float32, share_att_key=True)
        count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
        assert count(module) - count(shared) == 2 * (HIDDEN * HIDDEN + HIDDEN)


def test_gradients_equal_across_naive_and_gather_float64() -> None:
    naive = small_module("naive", torch.float64, share_att_key=False)
    gather = with_backend(naive, "gather")
    grads = {}
    for module in (naive, gather):
        x, table = random_inputs(B, N, HIDDEN, K, torch.float64, seed=3)
        x.requires_grad_(True)
        table.requires_grad_(True)
        (module(x, small_mask(), rel_embeddings=table) ** 2).sum().backward()
        grads[module.backend] = [x.grad, table.grad] + [p.grad for p in module.parameters()]
    for a, b in zip(grads["naive"], grads["gather"]):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=0)


def test_flex_backward_equals_gather_backward_float32() -> None:
    gather = small_module("gather", torch.float32, share_att_key=False)
    flex = with_backend(gather, "flex")
    grads = {}
    for module in (gather, flex):
        x, table = random_inputs(B, N, HIDDEN, K, seed=4)
        x.requires_grad_(True)
        table.requires_grad_(True)
        (module(x, small_mask(), rel_embeddings=table) ** 2).sum().backward()
        grads[module.backend] = [x.grad, table.grad] + [p.grad for p in module.parameters()]
    assert len(grads["flex"]) == len(grads["gather"]) == 2 + 10
    for a, b in zip(grads["flex"], grads["gather"]):
        assert a is not None
        torch.testing.assert_close(a, b, atol=1e-4, rtol=0)


def test_flex_forward_with_grad_enabled_equals_no_grad_forward() -> None:
    # A module's weights require grad, so a plain call (no torch.no_grad) takes the
    # autograd path; it must compute the same context as inference.
    # The compiled kernel (float32) at test_attention_reference's sizes (b=3, n=5,
    # hidden 32, 4 heads, k=8, right and left padding): one kernel compiled there
    # serves both files, and the grad path (gather) is compared with it all the same.
    module = make_module("flex", dtype=torch.float32)
    x, table = random_inputs(3, N, 32, module.span, seed=5)
    mask = padding_mask(N)
    with torch.no_grad():
        expected = module(x, mask, rel_embeddings=table)
    out = module(x, mask, rel_embeddings=table)
    assert out.requires_grad
    torch.testing.assert_close(out, expected, atol=1e-6, rtol=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_padded_tokens_get_no_gradient_from_real_outputs(backend: str) -> None:
    # Padded keys are removed from every query, so real outputs do not depend on them.
    module = small_module(backend, torch.float64)
    x, table = random_inputs(B, N, HIDDEN, K, torch.float64, seed=6)
    x.requires_grad_(True)
    mask = small_mask()
    out = module(x, mask, rel_embeddings=table)
    out[mask.bool()].sum().backward()
    padded = ~mask.bool()
    assert x.grad[padded].abs().max() == 0
    assert x.grad[mask.bool()].abs().max() > 0
