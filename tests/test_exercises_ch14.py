"""Chapter 14's checks accept the reference answers and refuse the usual mistakes."""

from __future__ import annotations

import pytest
import torch

from relpos.book import results
from relpos.book.exercises import ExerciseError, check
from relpos.book.exercises.ch14 import content_costs, probe_cut_mask


def cut_mask(n, length):
    """The chapter's reference: the key not ahead, and fewer than ``length`` back."""
    positions = torch.arange(n)
    distance = positions[:, None] - positions[None, :]  # (i, j): d = i - j
    return (distance >= 0) & (distance < length)


def test_the_probes_mask_is_the_band_by_hand():
    # n = 5, L = 2: each query reads itself and the byte before it
    expected = torch.tensor([[1, 0, 0, 0, 0],
                             [1, 1, 0, 0, 0],
                             [0, 1, 1, 0, 0],
                             [0, 0, 1, 1, 0],
                             [0, 0, 0, 1, 1]], dtype=torch.bool)
    assert torch.equal(probe_cut_mask(5, 2), expected)
    # a cut at or beyond the window is the causal triangle
    assert torch.equal(probe_cut_mask(6, 6), torch.ones(6, 6, dtype=torch.bool).tril())


def test_ch14_ex1_accepts_the_band(capsys):
    check("ch14-ex1", cut_mask)
    assert capsys.readouterr().out.startswith("ch14-ex1: correct.")


@pytest.mark.parametrize("wrong, hint", [
    (lambda n, L: cut_mask(n, L).T, "transposed"),
    (lambda n, L: cut_mask(n, L + 1), "one key too many"),
    (lambda n, L: cut_mask(n, L) & ~torch.eye(n, dtype=torch.bool), "too few keys"),
    (lambda n, L: (torch.arange(n)[:, None] - torch.arange(n)).abs() < L, "ahead of it"),
    (lambda n, L: cut_mask(n, L)[:, :-1], "must have shape"),
])
def test_ch14_ex1_names_the_usual_mistakes(wrong, hint):
    with pytest.raises(ExerciseError, match=hint):
        check("ch14-ex1", wrong)


def test_ch14_ex2_recomputes_the_probes_costs(capsys):
    gradients = results.load("probes/gradients.json")
    cost = content_costs(gradients)
    stored = gradients["summary"]["arms"]
    for arm, values in cost.items():  # the summary's paired costs, seed by seed
        assert values == pytest.approx(stored[arm]["cost"]["values"], abs=1e-9)
    more = sum(t > d for t, d in zip(cost["tupe"], cost["deberta"]))
    check("ch14-ex2", cost, more)
    out = capsys.readouterr().out
    assert out.startswith("ch14-ex2: correct.") and str(more) not in out
    # what the solution's remark says: every arm pays in every seed, TUPE more than
    # DeBERTa in most of them
    assert all(v > 0 for values in cost.values() for v in values)
    assert more > len(cost["tupe"]) / 2


def test_ch14_ex2_names_the_usual_mistakes():
    cost = content_costs(results.load("probes/gradients.json"))
    more = sum(t > d for t, d in zip(cost["tupe"], cost["deberta"]))
    flipped = {arm: [-v for v in values] for arm, values in cost.items()}
    with pytest.raises(ExerciseError, match="signs are flipped"):
        check("ch14-ex2", flipped, more)
    with pytest.raises(ExerciseError, match="not their mean"):
        check("ch14-ex2", {a: sum(v) / len(v) for a, v in cost.items()}, more)
    with pytest.raises(ExerciseError, match="not in seed order"):
        check("ch14-ex2", {a: sorted(v) for a, v in cost.items()}, more)
    with pytest.raises(ExerciseError, match="missing: tupe"):
        check("ch14-ex2", {a: v for a, v in cost.items() if a != "tupe"}, more)
    with pytest.raises(ExerciseError, match="compared seed by seed"):
        check("ch14-ex2", cost, more - 1)
