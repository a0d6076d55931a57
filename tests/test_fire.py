"""FIRE (relpos.schemes.fire): the formula by hand, the paper's causal form, the
elementwise bias_at, both sides, gradients, bad input, and a tiny training run."""

from __future__ import annotations

import math

import pytest
import torch

from relpos.book.experiments import Config, build_scheme, train
from relpos.book.experiments.train import initial_model
from relpos.schemes import (
    REGISTRY,
    FireBias,
    FireSelfAttention,
    fire_input,
    score_by_distance,
)
from relpos.schemes.fire import EPS

from _tiny import TINY, one_thread  # noqa: F401  (autouse fixture)

F64 = torch.float64


def _bias(causal: bool = False, threshold: float = 4.0, seed: int = 0) -> FireBias:
    torch.manual_seed(seed)
    return FireBias(3, width=8, threshold=threshold, causal=causal).to(F64)


def _grid(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    positions = torch.arange(n)
    return positions[:, None] - positions[None, :], positions  # (i, j), (i,)


def test_input_by_hand_at_a_few_distances():
    c, L = 0.1, 4.0
    cases = [  # (i - j, i, expected)
        (3, 5, math.log(1.3) / (math.log(1.5) + EPS)),  # behind, past L: psi(i)
        (2, 3, math.log(1.2) / (math.log(1.4) + EPS)),  # behind, before L: psi(L)
        (-2, 1, -math.log(1.2) / (math.log(1.4) + EPS)),  # ahead: j = 3 < L
        (-6, 1, -math.log(1.6) / (math.log(1.7) + EPS)),  # ahead: j = 7 > L
        (0, 9, 0.0),
    ]
    for rel, i, expected in cases:
        got = fire_input(torch.tensor(rel), torch.tensor(i), c=c, threshold=L)
        assert math.isclose(float(got), expected, rel_tol=1e-6), (rel, i)
    # causal: keys ahead read distance 0; keys behind as above
    one_sided = dict(c=c, threshold=L, causal=True)
    ahead = fire_input(torch.tensor(-2), torch.tensor(1), **one_sided)
    behind = fire_input(torch.tensor(3), torch.tensor(5), **one_sided)
    assert float(ahead) == 0.0
    assert math.isclose(float(behind), cases[0][2], rel_tol=1e-6)


def test_inputs_stay_in_minus_one_one_at_any_length():
    rel, positions = _grid(300)
    x = fire_input(rel, positions[:, None], c=0.1, threshold=32.0)
    assert x.abs().max() <= 1.0
    assert x.max() > 0.95 and x.min() < -0.95  # both sides reach the ends
    assert torch.equal(torch.sign(x), torch.sign(rel).to(x.dtype))


def test_bias_is_the_mlp_of_the_input_by_hand():
    bias = _bias()
    with torch.no_grad():
        bias.first.weight.copy_(torch.tensor([[1.0], [-2.0]] + [[0.0]] * 6))
        bias.first.bias.copy_(torch.tensor([0.5, 0.25] + [0.0] * 6))
        bias.second.weight.zero_()
        two = torch.tensor([[1.0, 1.0], [2.0, -1.0], [0.0, 3.0]])
        bias.second.weight[:, :2] = two
        bias.second.bias.copy_(torch.tensor([0.0, 1.0, -1.0]))
    c, L = bias.c.detach(), bias.threshold.detach()  # float64
    for rel, i in [(3, 5), (-2, 1), (0, 0)]:
        x = float(fire_input(torch.tensor(rel), torch.tensor(i), c=c, threshold=L))
        hidden = [max(0.0, x + 0.5), max(0.0, -2.0 * x + 0.25)]
        expected = [
            hidden[0] + hidden[1],
            2.0 * hidden[0] - hidden[1] + 1.0,
            3.0 * hidden[1] - 1.0,
        ]
        for head in range(3):
            with torch.no_grad():
                at = (torch.tensor(head), torch.tensor(rel), torch.tensor(i))
                got = bias.bias_at(*at)
            assert math.isclose(float(got), expected[head], abs_tol=1e-12)


def _paper(bias: FireBias, n: int) -> torch.Tensor:
    """The paper's causal formula, written out from its definition for j <= i:
    f(log(c (i - j) + 1) / (log(c max(L, i) + 1) + eps))."""
    out = torch.zeros(bias.num_heads, n, n, dtype=F64)
    c, L = float(bias.c), float(bias.threshold)
    for i in range(n):
        for j in range(i + 1):
            x = math.log(c * (i - j) + 1) / (math.log(c * max(L, i) + 1) + EPS)
            hidden = torch.relu(bias.first.weight[:, 0] * x + bias.first.bias)
            out[:, i, j] = bias.second.weight @ hidden + bias.second.bias
    return out


@pytest.mark.parametrize("causal", [True, False])
def test_keys_behind_get_the_papers_causal_bias(causal):
    n = 10
    bias = _bias(causal)
    rel, positions = _grid(n)
    with torch.no_grad():
        got, expected = bias(rel, positions), _paper(bias, n)
    behind = rel >= 0
    torch.testing.assert_close(got[:, behind], expected[:, behind], rtol=0, atol=1e-12)


def test_causal_keys_ahead_read_distance_zero_and_the_encoder_tells_sides_apart():
    n = 9
    rel, positions = _grid(n)
    with torch.no_grad():
        causal = _bias(causal=True)(rel, positions)
        both = _bias(causal=False)(rel, positions)  # same seed, same weights
    for i in range(n):
        at_zero = causal[:, i, i : i + 1]  # (h, 1)
        assert torch.equal(causal[:, i, i + 1 :], at_zero.expand(-1, n - i - 1))
    # the encoder's keys ahead are not those behind mirrored
    assert (both[:, 2, 5] - both[:, 5, 2]).abs().max() > 1e-6
    assert torch.equal(both[:, rel >= 0], causal[:, rel >= 0])


def test_bias_at_on_0_dim_tensors_equals_forward_on_grids():
    n = 7
    bias = _bias()
    rel, positions = _grid(n)
    with torch.no_grad():
        grid = bias(rel, positions)  # (h, i, j)
        for h in range(bias.num_heads):
            for i in range(n):
                for j in range(n):
                    at = (torch.tensor(h), torch.tensor(i - j), torch.tensor(i))
                    one = bias.bias_at(*at)
                    assert one.dim() == 0
                    assert float(one) == pytest.approx(float(grid[h, i, j]), abs=1e-12)
        # under vmap, as FlexAttention's score_mod is called
        h, i, j = torch.meshgrid(
            torch.arange(bias.num_heads), torch.arange(n), torch.arange(n),
            indexing="ij",
        )
        mapped = torch.vmap(lambda h, r, q: bias.bias_at(h, r, q))(
            h.flatten(), (i - j).flatten(), i.flatten()
        )
    torch.testing.assert_close(mapped.reshape(grid.shape), grid, rtol=0, atol=1e-12)


def test_attention_adds_the_bias_and_score_by_distance_reads_it():
    torch.manual_seed(0)
    attention = FireSelfAttention(16, 2, width=8, threshold=3.0).to(F64).eval()
    x = torch.randn(2, 6, 16, dtype=F64)
    with torch.no_grad():
        _, scores = attention(x, return_scores=True)
        q = attention.split_heads(attention.query_proj(x))
        k = attention.split_heads(attention.key_proj(x))
        content = q @ k.transpose(-1, -2) * attention.scale  # (b, h, i, j)
        rel, positions = _grid(6)
        bias = attention.position_bias(rel, positions)  # (h, i, j)
        torch.testing.assert_close(scores.logits, content + bias, rtol=0, atol=1e-12)
        # the landscape puts the key at 0 and the query at r: the bias of (r, 0)
        distances = torch.arange(-5, 6)
        landscape = score_by_distance(attention, distances, x[0, 0], x[0, 1])
        expected = attention.position_bias.bias_at(
            torch.arange(2)[:, None], distances, distances
        )
        torch.testing.assert_close(landscape, expected, rtol=0, atol=1e-12)
    assert REGISTRY["fire"].content_free and not REGISTRY["fire"].relative


@torch.no_grad()
def test_past_the_threshold_fire_is_not_relative():
    bias = _bias(threshold=4.0)
    near = bias.bias_at(torch.tensor(0), torch.tensor(2), torch.tensor(3))
    far = bias.bias_at(torch.tensor(0), torch.tensor(2), torch.tensor(30))
    assert abs(float(near - far)) > 1e-6
    before = bias.bias_at(torch.tensor(0), torch.tensor(1), torch.tensor(2))
    moved = bias.bias_at(torch.tensor(0), torch.tensor(1), torch.tensor(3))
    assert float(before) == float(moved)  # both queries before L: only i - j counts


def test_gradients_reach_every_parameter():
    torch.manual_seed(1)
    attention = FireSelfAttention(8, 2, width=8, threshold=3.0).to(F64)
    x = torch.randn(2, 7, 8, dtype=F64, requires_grad=True)
    attention(x).pow(2).sum().backward()
    for name, parameter in attention.named_parameters():
        assert parameter.grad is not None, name
        assert parameter.grad.isfinite().all() and parameter.grad.abs().sum() > 0, name
    assert "position_bias.c" in dict(attention.named_parameters())
    assert "position_bias.threshold_scale" in dict(attention.named_parameters())


def test_c_and_threshold_act_through_their_absolute_values():
    bias = _bias()
    rel, positions = _grid(8)
    with torch.no_grad():
        before = bias(rel, positions)
        bias.c.neg_()
        bias.threshold_scale.neg_()
        after = bias(rel, positions)
    torch.testing.assert_close(after, before, rtol=0, atol=0)
    assert float(bias.threshold.detach()) == 4.0


@pytest.mark.parametrize(
    "make, error, argument",
    [
        (lambda: fire_input(torch.tensor([1.0]), torch.tensor([0])), TypeError, "rel"),
        (lambda: fire_input(torch.tensor([1]), torch.tensor([0.5])), TypeError,
         "query_position"),
        (lambda: fire_input(torch.tensor([1]), torch.tensor([0]), threshold=0.0),
         ValueError, "threshold"),
        (lambda: fire_input(torch.tensor([1]), torch.tensor([0]), c="big"), TypeError,
         "c"),
        (lambda: fire_input(torch.ones(3, dtype=torch.long), torch.ones(2,
         dtype=torch.long)), ValueError, "query_position"),
        (lambda: fire_input(torch.tensor(1), torch.tensor(0), causal=1), TypeError,
         "causal"),
        (lambda: FireBias(2)(torch.zeros(3, 3, dtype=torch.long)), ValueError,
         "query_positions"),
        (lambda: FireBias(2)(torch.zeros(3, 3, dtype=torch.long), torch.arange(4)),
         ValueError, "query_positions"),
        (lambda: FireBias(2)(torch.zeros(3, dtype=torch.long), torch.arange(3)),
         ValueError, "rel"),
        (lambda: FireBias(2, width=0), ValueError, "width"),
        (lambda: FireBias(2, c=-0.1), ValueError, "c"),
        (lambda: FireBias(2, threshold=float("inf")), ValueError, "threshold"),
        (lambda: FireSelfAttention(8, 2, causal="yes"), TypeError, "causal"),
        (lambda: FireSelfAttention(8, 0), ValueError, "num_heads"),
    ],
)
def test_bad_input_names_the_argument(make, error, argument):
    with pytest.raises(error, match=argument):
        make()


@pytest.mark.parametrize("setting", ["encoder", "causal"])
def test_trains_in_the_books_experiments(setting):
    config = Config(scheme="fire", setting=setting, **{**TINY, "steps": 6})
    _, encoder = build_scheme("fire", config)
    bias = encoder.layers[0].attention.position_bias
    assert isinstance(bias, FireBias) and bias.causal is (setting == "causal")
    assert float(bias.threshold) == config.train_length  # from the registration
    trained = train(config)
    assert len(trained.losses) == 6 and all(math.isfinite(x) for x in trained.losses)
    learned = trained.model.encoder.layers[0].attention.position_bias
    start = initial_model(config).encoder.layers[0].attention.position_bias
    for name in ("c", "threshold_scale", "first.weight", "second.bias"):
        moved = learned.get_parameter(name) - start.get_parameter(name)
        assert moved.abs().max() > 0, name  # trained from its start
