"""The sweep figures draw the JSON's numbers: every seed, every cell, labelled axes.

The result is built by hand (schema 2), so each drawn number can be compared
with the one that should be there.
"""

from __future__ import annotations

import statistics

import numpy as np
import pytest

from relpos.book import plot

SCHEMES = ["a", "b"]
LENGTHS = [8, 16]
SIZES = [4, 16]
SEEDS = [0, 1, 2]


def accuracy(scheme: str, size: int, length: int, seed: int) -> float:
    """A different number for every cell and seed."""
    return round(0.1 + 0.4 * (scheme == "b") + size / 100 - length / 200 + seed / 50, 4)


def result() -> dict:
    runs, summary = [], []
    for scheme in SCHEMES:
        for size in SIZES:
            for seed in SEEDS:
                runs.append({
                    "setting": "encoder", "task": "relative", "scheme": scheme,
                    "train_size": size, "seed": seed,
                    "accuracy": {str(n): accuracy(scheme, size, n, seed) for n in LENGTHS},
                    "band": {"trained": [1.0, 0.5 + seed / 10, 0.2],
                             "initial": [1.0, 0.0, 0.1]},
                })
            for n in LENGTHS:
                values = [accuracy(scheme, size, n, seed) for seed in SEEDS]
                summary.append({
                    "setting": "encoder", "task": "relative", "scheme": scheme,
                    "train_size": size, "length": n, "mean": statistics.fmean(values),
                    "std": statistics.stdev(values), "min": min(values),
                    "max": max(values), "n": 3, "values": values,
                })
    return {
        "schema": 2,
        "config": {"train_length": 8, "test_lengths": LENGTHS},
        "grid": {"setting": ["encoder"], "task": ["relative"], "scheme": SCHEMES,
                 "train_size": SIZES, "seed": SEEDS},
        "tasks": {"relative": {"chance": 1 / 16, "description": "d"}},
        "runs": runs,
        "summary": summary,
    }


def labelled(fig) -> None:
    for ax in fig.axes:
        if ax.get_label() == "<colorbar>":
            assert ax.get_ylabel()
        elif ax.images or ax.collections or ax.lines:
            assert ax.get_xlabel(), ax.get_title()


def test_accuracy_grid_draws_means_and_every_seed_range() -> None:
    fig = plot.accuracy_grid(result())
    ax = fig.axes[0]
    drawn = np.asarray(ax.images[0].get_array())
    for a, scheme in enumerate(SCHEMES):
        for b, n in enumerate(LENGTHS):
            values = [accuracy(scheme, 16, n, seed) for seed in SEEDS]
            assert drawn[a, b] == pytest.approx(statistics.fmean(values))
    texts = [t.get_text() for t in ax.texts]
    low, high = accuracy("a", 16, 8, 0), accuracy("a", 16, 8, 2)
    assert f"{100 * low:.0f}-{100 * high:.0f}" in texts[0]
    assert fig.axes[-1].get_ylabel() == "mean accuracy"  # the colour bar
    labelled(fig)


def test_data_efficiency_draws_one_dot_per_seed() -> None:
    fig = plot.data_efficiency(result())
    ax = fig.axes[1]  # task relative, scheme b
    points = np.concatenate([c.get_offsets() for c in ax.collections])
    expected = [(s, accuracy("b", s, 8, seed)) for s in SIZES for seed in SEEDS]
    assert sorted(map(tuple, points.tolist())) == sorted(expected)
    labelled(fig)


def test_seed_points_and_band_profiles_draw_the_runs() -> None:
    fig = plot.seed_points(result(), task="relative", schemes=SCHEMES, train_sizes=[4])
    xs = sorted(np.concatenate([c.get_offsets()[:, 0] for c in fig.axes[0].collections]))
    expected = sorted(accuracy(m, 4, 8, seed) for m in SCHEMES for seed in SEEDS)
    assert xs == pytest.approx(expected)
    labelled(fig)
    fig = plot.band_profiles(result(), schemes=["a"], train_size=16)
    means = [ln for ln in fig.axes[0].lines if ln.get_label() == "a, trained"]
    assert means[0].get_ydata().tolist() == pytest.approx([0.6, 0.2])
    labelled(fig)


def test_sweep_figures_refuse_other_json() -> None:
    with pytest.raises(ValueError, match="schema 3"):
        plot.accuracy_grid({"schema": 1})
    with pytest.raises(ValueError, match="schemes must be drawn"):
        plot.accuracy_grid(result(), schemes=["c"])


def test_seed_figures_draw_each_cells_interval_when_the_sweep_has_one() -> None:
    data = result()
    for row in data["summary"]:
        row["interval"] = [row["mean"] - 0.05, row["mean"] + 0.04]
    cells = {(r["scheme"], r["train_size"], r["length"]): r for r in data["summary"]}
    fig = plot.seed_points(data, task="relative", schemes=SCHEMES, train_sizes=[4])
    bars = [ln for ln in fig.axes[0].lines if ln.get_label() == "95% interval"]
    assert [ln.get_xdata().tolist() for ln in bars] == [
        pytest.approx(cells[m, 4, 8]["interval"]) for m in SCHEMES
    ]
    fig = plot.data_efficiency(data)
    bars = [ln for ln in fig.axes[1].lines if ln.get_label() == "95% interval"]
    assert [ln.get_ydata().tolist() for ln in bars] == [
        pytest.approx(cells["b", s, 8]["interval"]) for s in SIZES
    ]
    labelled(fig)
    # schema 2 rows have no interval: nothing drawn
    fig = plot.data_efficiency(result())
    assert not [ln for ln in fig.axes[1].lines if ln.get_label() == "95% interval"]


def test_accuracy_grid_wraps_its_panels_to_the_page_width() -> None:
    from relpos.book.plot._style import PAGE_WIDTH

    fig = plot.accuracy_grid(result())
    assert fig.get_size_inches()[0] <= PAGE_WIDTH
    config = {**result()["config"], "test_lengths": list(range(9))}
    many = {**result(), "config": config}
    wide = plot.accuracy_grid(many)  # one panel of 9 lengths: wider than a column
    assert wide.get_size_inches()[0] > PAGE_WIDTH  # a single panel is never cut
