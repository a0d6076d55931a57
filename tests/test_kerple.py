"""KERPLE (relpos.schemes.kerple): both kernels by hand and as the reference code
computes them, the positivity constraints, the elementwise bias_at, gradients, bad
input, and a tiny training run of each kernel."""

from __future__ import annotations

import math

import pytest
import torch

from relpos.book.experiments import Config, build_scheme, train
from relpos.book.experiments.train import initial_model
from relpos.schemes import (
    REGISTRY,
    AlibiBias,
    KerpleBias,
    KerpleSelfAttention,
    kerple_log_bias,
    kerple_power_bias,
    score_by_distance,
)

from _tiny import TINY, one_thread  # noqa: F401  (autouse fixture)

F64 = torch.float64


def _grid(n: int) -> torch.Tensor:
    positions = torch.arange(n)
    return positions[:, None] - positions[None, :]  # (i, j)


def test_both_kernels_by_hand_at_a_few_distances():
    r1 = torch.tensor([2.0, 0.5], dtype=F64)
    r2 = torch.tensor([0.5, 1.5], dtype=F64)
    rel = torch.tensor([0, 3, -3, 10])
    log = kerple_log_bias(rel, r1, r2)  # (h, m)
    power = kerple_power_bias(rel, r1, r2)
    for h in range(2):
        a, b = float(r1[h]), float(r2[h])
        for m, r in enumerate(rel.tolist()):
            assert math.isclose(float(log[h, m]), -a * math.log(1 + b * abs(r)),
                                abs_tol=1e-12)
            assert math.isclose(float(power[h, m]), -a * abs(r) ** b, abs_tol=1e-12)
    assert float(log[0, 1]) == pytest.approx(-2 * math.log(2.5))
    assert float(power[1, 3]) == pytest.approx(-0.5 * 10**1.5)


def test_the_reference_codes_numbers():
    # chijames/KERPLE: bias = -p * log(1 + a * diff) (log) and -a * diff^p (power)
    # on diff = tril(i - j), with (p, a) per head; the causal keys are ours.
    p = torch.tensor([1.25, 0.3], dtype=F64)
    a = torch.tensor([0.7, 0.05], dtype=F64)
    diff = _grid(6).tril().to(F64)  # (i, j), 0 above the diagonal
    reference_log = -p[:, None, None] * torch.log(1 + a[:, None, None] * diff)
    reference_power = -a[:, None, None] * diff.pow(p[:, None, None])
    behind = _grid(6) >= 0
    ours_log = kerple_log_bias(_grid(6), p, a)  # r1 = p, r2 = a
    ours_power = kerple_power_bias(_grid(6), a, p)  # r1 = a, r2 = p
    torch.testing.assert_close(ours_log[:, behind], reference_log[:, behind])
    torch.testing.assert_close(ours_power[:, behind], reference_power[:, behind])


def test_alibi_is_the_power_kernel_at_exponent_one():
    alibi = AlibiBias(4)
    rel = _grid(9)
    power = kerple_power_bias(rel, alibi.slopes, torch.ones(4))
    torch.testing.assert_close(power, alibi(rel))


@pytest.mark.parametrize("kernel", ["log", "power"])
def test_parameters_stay_in_their_ranges(kernel):
    torch.manual_seed(0)
    bias = KerpleBias(64, kernel)
    r1, r2 = bias.r1.detach(), bias.r2.detach()
    top1, top2 = (2.0, 1.0) if kernel == "log" else (1.0, 2.0)  # reference's starts
    assert r1.min() >= 0.01 - 1e-6 and r1.max() <= top1 + 1e-6
    assert r2.min() >= 0.01 - 1e-6 and r2.max() <= top2 + 1e-6
    assert r1.std() > 0.1 * top1  # drawn, not constant
    with torch.no_grad():
        bias.raw_r1.fill_(-60.0)
        bias.raw_r2.fill_(60.0)
    assert (bias.r1 > 0).all()
    if kernel == "power":
        assert (bias.r2 > 0).all() and (bias.r2 <= 2).all()
    with torch.no_grad():
        bias.raw_r2.fill_(-60.0)
    assert (bias.r2 > 0).all()


@pytest.mark.parametrize("kernel", ["log", "power"])
def test_bias_at_on_0_dim_tensors_equals_forward_on_grids(kernel):
    torch.manual_seed(1)
    bias = KerpleBias(3, kernel).to(F64)
    n = 6
    rel = _grid(n)
    with torch.no_grad():
        grid = bias(rel)  # (h, i, j)
        expected = (kerple_log_bias if kernel == "log" else kerple_power_bias)(
            rel, bias.r1, bias.r2
        )
        torch.testing.assert_close(grid, expected, rtol=0, atol=0)
        for h in range(3):
            for i in range(n):
                for j in range(n):
                    one = bias.bias_at(torch.tensor(h), torch.tensor(i - j))
                    assert one.dim() == 0
                    assert float(one) == float(grid[h, i, j])
        h, r = torch.meshgrid(torch.arange(3), rel.flatten(), indexing="ij")
        mapped = torch.vmap(lambda h, r, q: bias.bias_at(h, r, q))(
            h.flatten(), r.flatten(), torch.zeros(h.numel(), dtype=torch.long)
        )
    torch.testing.assert_close(mapped.reshape(grid.shape), grid, rtol=0, atol=1e-12)


@pytest.mark.parametrize("kernel", ["log", "power"])
def test_both_sides_alike_and_causal_is_the_same_bias_masked(kernel):
    torch.manual_seed(2)
    encoder = KerpleSelfAttention(16, 2, kernel).to(F64).eval()
    torch.manual_seed(2)
    causal = KerpleSelfAttention(16, 2, kernel, causal=True).to(F64).eval()
    rel = _grid(7)
    with torch.no_grad():
        bias = encoder.position_bias(rel)
        torch.testing.assert_close(bias, bias.transpose(1, 2), rtol=0, atol=0)
        assert (bias[:, 3, :3] < bias[:, 3, 1:4]).all()  # falls with the distance
        x = torch.randn(2, 7, 16, dtype=F64)
        _, open_scores = encoder(x, return_scores=True)
        _, causal_scores = causal(x, return_scores=True)
        torch.testing.assert_close(causal_scores.logits, open_scores.logits)
        future = torch.ones(7, 7, dtype=torch.bool).triu(1)
        assert (causal_scores.probs[..., future] == 0).all()
        distances = torch.arange(-5, 6)
        landscape = score_by_distance(encoder, distances, x[0, 0], x[0, 1])
        expected = encoder.position_bias(distances[:, None])[..., 0]  # (h, m)
        torch.testing.assert_close(landscape, expected, rtol=0, atol=1e-12)
    assert REGISTRY["kerple"].relative and REGISTRY["kerple"].content_free


@pytest.mark.parametrize("kernel", ["log", "power"])
def test_gradients_reach_both_parameters(kernel):
    torch.manual_seed(3)
    attention = KerpleSelfAttention(8, 2, kernel).to(F64)
    x = torch.randn(2, 6, 8, dtype=F64, requires_grad=True)
    attention(x).pow(2).sum().backward()
    for name in ("position_bias.raw_r1", "position_bias.raw_r2"):
        grad = dict(attention.named_parameters())[name].grad
        assert grad is not None and grad.isfinite().all() and (grad != 0).all(), name


@pytest.mark.parametrize(
    "make, error, argument",
    [
        (lambda: kerple_log_bias(torch.tensor([1.0]), torch.ones(1), torch.ones(1)),
         TypeError, "rel"),
        (lambda: kerple_log_bias(torch.tensor([1]), -torch.ones(1), torch.ones(1)),
         ValueError, "r1"),
        (lambda: kerple_log_bias(torch.tensor([1]), torch.ones(1), torch.zeros(1)),
         ValueError, "r2"),
        (lambda: kerple_power_bias(torch.tensor([1]), torch.ones(1),
                                   torch.full((1,), 3.0)), ValueError, "r2"),
        (lambda: kerple_log_bias(torch.tensor([1]), torch.ones(2), torch.ones(1)),
         ValueError, "r2"),
        (lambda: kerple_log_bias(torch.tensor([1]), [1.0], torch.ones(1)), TypeError,
         "r1"),
        (lambda: KerpleBias(2, "cubic"), ValueError, "kernel"),
        (lambda: KerpleBias(0), ValueError, "num_heads"),
        (lambda: KerpleBias(2)(torch.zeros(3, dtype=torch.long)), ValueError, "rel"),
        (lambda: KerpleSelfAttention(8, 2, causal=1), TypeError, "causal"),
    ],
)
def test_bad_input_names_the_argument(make, error, argument):
    with pytest.raises(error, match=argument):
        make()


@pytest.mark.parametrize(
    "scheme, kernel", [("kerple", "log"), ("kerple-power", "power")]
)
@pytest.mark.parametrize("setting", ["encoder", "causal"])
def test_trains_in_the_books_experiments(scheme, kernel, setting):
    config = Config(scheme=scheme, setting=setting, **{**TINY, "steps": 6})
    _, encoder = build_scheme(scheme, config)
    attention = encoder.layers[0].attention
    assert attention.position_bias.kernel == kernel
    assert attention.causal is (setting == "causal")
    trained = train(config)
    assert len(trained.losses) == 6 and all(math.isfinite(x) for x in trained.losses)
    learned = trained.model.encoder.layers[0].attention.position_bias
    start = initial_model(config).encoder.layers[0].attention.position_bias
    assert not torch.equal(learned.raw_r1, start.raw_r1)  # trained from its start
    assert not torch.equal(learned.raw_r2, start.raw_r2)
