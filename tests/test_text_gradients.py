"""Where a position objective and a content objective meet (``text.gradients``)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from relpos.book.text import TextConfig
from relpos.book.text.gradients import (
    gradient_cosines,
    initial_heads,
    objective_losses,
    shared_parameters,
    summarize_interference,
    train_objectives,
)

TINY = dict(
    train_length=8,
    eval_lengths=(8,),
    eval_bytes=64,
    steps=2,
    batch_size=2,
    hidden_size=16,
    num_heads=2,
    num_layers=1,
    max_relative_positions=4,
    position_buckets=4,
    bucket_max_position=16,
    t5_max_distance=16,
)


def heads_of(scheme: str, offset: int = 3):
    return initial_heads(TextConfig(scheme=scheme, **TINY), offset)


def batch(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    windows = torch.randint(256, (2, 9), generator=torch.Generator().manual_seed(seed))
    return windows[:, :-1], windows[:, 1:]


def test_the_position_objective_recalls_the_byte_offset_back():
    heads = heads_of("deberta")
    inputs, targets = batch()
    losses = objective_losses(heads, inputs, targets)
    content, recall = heads(inputs)
    expected = F.cross_entropy(recall[:, 3:].flatten(0, 1), inputs[:, :5].flatten())
    assert losses["position"].item() == pytest.approx(expected.item(), rel=1e-6)
    lm = F.cross_entropy(content.flatten(0, 1), targets.flatten())
    assert losses["content"].item() == pytest.approx(lm.item(), rel=1e-6)
    with pytest.raises(ValueError, match="inputs must be longer than offset=3"):
        objective_losses(heads, inputs[:, :3], targets[:, :3])


def test_a_gradient_has_cosine_one_with_itself_and_minus_one_with_its_negation():
    heads = heads_of("absolute")
    inputs, targets = batch()
    loss = objective_losses(heads, inputs, targets)["content"]
    same = gradient_cosines(heads, {"content": loss, "position": loss})
    opposite = gradient_cosines(heads, {"content": loss, "position": -loss})
    for group in ("projections", "embedding"):
        assert same[group] == pytest.approx(1.0, abs=1e-9)
        assert opposite[group] == pytest.approx(-1.0, abs=1e-9)


def test_deberta_adds_no_position_to_the_content_stream_yet_its_projections_meet():
    """The claim's first half is literal, its second is not: W_q, W_k get both."""
    deberta, absolute = heads_of("deberta"), heads_of("absolute")
    assert deberta.model.input_positions is None  # nothing summed into the tokens
    assert absolute.model.input_positions is not None
    inputs, targets = batch(1)
    losses = objective_losses(deberta, inputs, targets)
    params = shared_parameters(deberta, "projections")
    for name in ("content", "position"):
        grads = torch.autograd.grad(losses[name], params, retain_graph=True)
        assert all(g.abs().sum() > 0 for g in grads)
    cosines = gradient_cosines(deberta, losses)
    assert -1.0 <= cosines["projections"] <= 1.0
    assert cosines["projections"] != 0.0  # the two gradients meet, not orthogonal


def test_bad_groups_and_settings_are_refused():
    with pytest.raises(ValueError, match="group must be one of"):
        shared_parameters(heads_of("alibi"), "values")
    with pytest.raises(ValueError, match="has no parameter of group"):
        shared_parameters(torch.nn.Linear(2, 2), "embedding")
    with pytest.raises(ValueError, match="config.setting must be 'causal'"):
        initial_heads(TextConfig(setting="masked", scheme="alibi", **TINY), 3)


@pytest.mark.slow
def test_a_run_measures_the_cosines_and_both_validation_losses():
    config = TextConfig(scheme="deberta", **TINY)
    record = train_objectives(config, ("position",), measure_every=1, valid_windows=4)
    assert record["steps"] == [0, 1]
    assert all(len(v) == 2 and all(-1 <= c <= 1 for c in v)
               for v in record["cosines"].values())
    assert set(record["valid"]) == {"content", "position"}
    with pytest.raises(ValueError, match="objectives must be a non-empty tuple"):
        train_objectives(config, ("syntax",))


def test_the_summary_subtracts_the_one_objective_runs():
    def run(objectives, seed, content, position):
        return {
            "scheme": "alibi",
            "seed": seed,
            "objectives": list(objectives),
            "cosines": {"projections": [0.2, 0.4], "embedding": [-0.1, 0.1]},
            "valid": {"content": content, "position": position},
        }

    runs = [
        run(("content",), 0, 2.0, 5.0),
        run(("position",), 0, 5.5, 1.0),
        run(("content", "position"), 0, 2.25, 1.5),
    ]
    (row,) = summarize_interference(runs)
    assert row["cost_to_content"] == [pytest.approx(0.25)]
    assert row["cost_to_position"] == [pytest.approx(0.5)]
    assert row["cosine"]["projections"] == [pytest.approx(0.3)]
    assert row["cosine"]["embedding"] == [pytest.approx(0.0)]
