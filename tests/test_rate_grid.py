"""The learning-rate grid of relpos.book.text: extended until it brackets the best.

A fake objective (a parabola in log rate, no training) stands in for the
validation loss.
"""

from __future__ import annotations

import math

import pytest

from relpos.book.experiments.rate_grid import grid_step, is_bracketed, tune_rates

GRID = [1e-3, 3.16e-3, 1e-2]


def parabola(best_of: dict[str, float]):
    calls: list[list] = []

    def measure(jobs):
        calls.append(list(jobs))
        return [
            (math.log10(rate) - math.log10(best_of[cell])) ** 2 for cell, rate in jobs
        ]

    return measure, calls


def test_the_grid_extends_past_the_edge_holding_the_best_rate():
    measure, calls = parabola({"high": 0.2, "low": 1e-4, "inside": 3e-3})
    chosen = tune_rates(["high", "low", "inside"], GRID, measure)
    assert chosen["high"]["rates"] == [1e-3, 3.16e-3, 1e-2, 3.16e-2, 0.1, 0.316, 1.0]
    assert chosen["high"]["chosen"] == 0.316 and chosen["high"]["bracketed"]
    assert chosen["low"]["rates"] == [3.16e-5, 1e-4, 3.16e-4, 1e-3, 3.16e-3, 1e-2]
    assert chosen["low"]["chosen"] == 1e-4 and chosen["low"]["bracketed"]
    assert chosen["inside"] == {
        "rates": GRID,
        "scores": chosen["inside"]["scores"],
        "chosen": 3.16e-3,
        "bracketed": True,
    }
    assert len(calls[0]) == 9  # the whole grid for every cell first
    assert all(len(jobs) <= 2 for jobs in calls[1:])  # then one rate per open cell
    assert len(chosen["high"]["scores"]) == len(chosen["high"]["rates"])


def test_the_grid_stops_at_max_rates_and_says_it_is_not_bracketed():
    measure, _ = parabola({"far": 100.0})
    chosen = tune_rates(["far"], GRID, measure, max_rates=5)
    assert len(chosen["far"]["rates"]) == 5
    assert chosen["far"]["chosen"] == max(chosen["far"]["rates"])
    assert chosen["far"]["bracketed"] is False


def test_diverged_runs_count_as_worst_and_push_the_grid_down():
    def measure(jobs):  # every rate >= 1e-3 diverges
        return [
            None if rate >= 1e-3 else 1.0 + abs(math.log10(rate) + 4)
            for _, rate in jobs
        ]

    chosen = tune_rates(["x"], GRID, measure)
    assert chosen["x"]["chosen"] == 1e-4 and chosen["x"]["bracketed"]
    assert chosen["x"]["scores"][-1] is None


def test_bad_grids_and_helpers():
    assert grid_step(GRID) == pytest.approx(math.sqrt(10))
    assert is_bracketed({1.0: 2.0, 2.0: 1.0, 3.0: 2.0})
    assert not is_bracketed({1.0: 2.0, 2.0: 1.0})
    with pytest.raises(ValueError, match="two or more distinct positive"):
        tune_rates(["x"], [1e-3], lambda jobs: [0.0] * len(jobs))
    with pytest.raises(ValueError, match="max_rates must be >="):
        tune_rates(["x"], GRID, lambda jobs: [0.0] * len(jobs), max_rates=2)
    with pytest.raises(ValueError, match="one score per job"):
        tune_rates(["x"], GRID, lambda jobs: [0.0])
