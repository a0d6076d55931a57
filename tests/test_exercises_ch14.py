"""Chapter 14's checks accept the reference answers and refuse the usual mistakes."""

from __future__ import annotations

import pytest
import torch

from relpos.book import results
from relpos.book.exercises import ExerciseError, check
from relpos.book.exercises.ch14 import (
    content_costs,
    kept_pairs,
    probe_cut_mask,
    seeds_paying_more,
)


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


def test_the_pairs_kept_by_hand():
    # the first L queries keep 1 + 2 + .. + L keys, every later one L:
    # n L - L (L - 1) / 2 in all
    assert kept_pairs(64, 16) == 16 * 17 // 2 + 48 * 16 == 64 * 16 - 16 * 15 // 2 == 904
    assert kept_pairs(8, 8) == 8 * 9 // 2  # no cut: the triangle


def test_ch14_ex1_accepts_the_band(capsys):
    check("ch14-ex1", cut_mask, 904)
    assert capsys.readouterr().out.startswith("ch14-ex1: correct.")
    check("ch14-ex1", cut_mask, 40 * 12 - 66, n=40, length=12)  # a student's numbers
    with pytest.raises(ExerciseError, match="uncut triangle"):
        check("ch14-ex1", cut_mask, 64 * 65 // 2)
    with pytest.raises(ExerciseError, match="True entries of cut_mask\\(40, 12\\)"):
        check("ch14-ex1", cut_mask, 904, n=40, length=12)  # another student's


@pytest.mark.parametrize("wrong, hint", [
    (lambda n, L: cut_mask(n, L).T, "transposed"),
    (lambda n, L: cut_mask(n, L + 1), "one key too many"),
    (lambda n, L: cut_mask(n, L) & ~torch.eye(n, dtype=torch.bool), "too few keys"),
    (lambda n, L: (torch.arange(n)[:, None] - torch.arange(n)).abs() < L,
     "ahead of it"),
    (lambda n, L: cut_mask(n, L)[:, :-1], "must have shape"),
])
def test_ch14_ex1_names_the_usual_mistakes(wrong, hint):
    with pytest.raises(ExerciseError, match=hint):
        check("ch14-ex1", wrong, 904)


def test_ch14_ex2_recomputes_the_probes_costs(capsys):
    gradients = results.load("probes/gradients.json")
    cost = content_costs(gradients)
    stored = gradients["summary"]["arms"]
    for arm, values in cost.items():  # the summary's paired costs, seed by seed
        assert values == pytest.approx(stored[arm]["cost"]["values"], abs=1e-9)
    more = sum(t > d * 1.1 for t, d in zip(cost["tupe"], cost["deberta"]))
    assert more == seeds_paying_more(cost, 10)
    check("ch14-ex2", cost, more)
    out = capsys.readouterr().out
    assert out.startswith("ch14-ex2: correct.") and str(more) not in out
    # what the solution's remark says: every arm pays in every seed, TUPE well over
    # DeBERTa's cost in most of them
    assert all(v > 0 for values in cost.values() for v in values)
    assert more > len(cost["tupe"]) / 2
    # a student's share: the count moves with it
    check("ch14-ex2", cost, seeds_paying_more(cost, 50), percent=50)
    assert seeds_paying_more(cost, 50) != more


def test_ch14_ex2_names_the_usual_mistakes():
    cost = content_costs(results.load("probes/gradients.json"))
    more = seeds_paying_more(cost, 10)
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
