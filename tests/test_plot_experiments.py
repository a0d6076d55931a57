"""Tests of the sweep figures in relpos.book.plot, through the data they draw.

And of terms_by_distance (a model's score terms averaged at each ``i - j``).

The results dict here is made by hand (no training): two tasks, two schemes,
two sizes, three lengths, with distinct means so that a mix-up shows.
"""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest
from matplotlib.figure import Figure

import torch

from relpos import AttentionScores
from relpos.book.plot import (
    experiment_sweep,
    score_by_distance,
    table_bands,
    terms_by_distance,
)

TASKS = ("relative", "far")
SCHEMES = ("absolute", "deberta")
SIZES = (16, 64)
LENGTHS = (8, 16, 32)


def _mean(t: int, s: int, size: int, n: int) -> float:
    return round(
        0.1 + 0.2 * t + 0.1 * s + 0.05 * SIZES.index(size) + 0.01 * LENGTHS.index(n), 4
    )


def _results() -> dict:
    summary = [
        {
            "task": task,
            "scheme": scheme,
            "train_size": size,
            "length": n,
            "mean": _mean(t, s, size, n),
            "std": 0.001 * (1 + t + s + n),
            "min": 0.0,
            "max": 1.0,
            "n": 3,
        }
        for t, task in enumerate(TASKS)
        for s, scheme in enumerate(SCHEMES)
        for size in SIZES
        for n in LENGTHS
    ]
    runs = [
        {
            "task": task,
            "scheme": "deberta",
            "train_size": size,
            "seed": seed,
            "band": {
                "trained": [1.0, 0.5 + 0.1 * seed, 0.2],
                "initial": [1.0, 0.0, 0.1 * seed],
            },
        }
        for task in TASKS
        for size in SIZES
        for seed in (0, 1)
    ] + [
        {
            "task": "relative",
            "scheme": "absolute",
            "train_size": 64,
            "seed": 0,
            "band": None,
        }
    ]
    return {
        "schema": 1,
        "settings": {"train_length": 8},
        "tasks": {
            "relative": {"description": "copy 3 back", "chance": 0.0625},
            "far": {"description": "copy 12 back", "chance": 0.0625},
        },
        "schemes": list(SCHEMES),
        "train_sizes": list(SIZES),
        "summary": summary,
        "runs": runs,
    }


def _errorbars(ax) -> dict:
    """{scheme: (x, y, half-height of the error bars)} from an axis' errorbars."""
    drawn = {}
    for container in ax.containers:
        line, _, (bars,) = container
        segments = bars.get_segments()
        drawn[container.get_label()] = (
            list(line.get_xdata()),
            list(line.get_ydata()),
            [float(seg[1][1] - seg[0][1]) / 2 for seg in segments],
        )
    return drawn


@functools.cache
def _sweep_figure() -> Figure:
    """experiment_sweep of the hand-made results, drawn once (tests only read it)."""
    return experiment_sweep(_results())


def test_sweep_figure_draws_the_json_means_and_spreads():
    fig = _sweep_figure()
    assert isinstance(fig, Figure)
    axes = np.array(fig.axes).reshape(len(TASKS), 2)
    for t, task in enumerate(TASKS):
        by_length, by_size = _errorbars(axes[t, 0]), _errorbars(axes[t, 1])
        assert set(by_length) == set(by_size) == set(SCHEMES)
        for s, scheme in enumerate(SCHEMES):
            x, y, err = by_length[scheme]
            assert x == list(LENGTHS)  # at the largest training size
            assert y == [_mean(t, s, SIZES[-1], n) for n in LENGTHS]
            assert err == pytest.approx([0.001 * (1 + t + s + n) for n in LENGTHS])
            x, y, _ = by_size[scheme]
            assert x == list(SIZES)  # at the training length
            assert y == [_mean(t, s, size, 8) for size in SIZES]
        chance = [line for line in axes[t, 0].lines if line.get_linestyle() == "--"]
        assert chance and list(chance[0].get_ydata()) == [0.0625, 0.0625]


def test_sweep_figure_other_size_and_length_and_labels():
    fig = experiment_sweep(_results(), train_size=16, length=32)
    axes = np.array(fig.axes).reshape(len(TASKS), 2)
    _, y, _ = _errorbars(axes[1, 0])["deberta"]
    assert y == [_mean(1, 1, 16, n) for n in LENGTHS]
    _, y, _ = _errorbars(axes[0, 1])["absolute"]
    assert y == [_mean(0, 0, size, 32) for size in SIZES]
    for ax in fig.axes:
        assert ax.get_xlabel() and ax.get_ylabel() == "accuracy" and ax.get_title()
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == [*SCHEMES, "chance"]


def test_sweep_figure_reads_a_path(tmp_path):
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(_results()))
    from_file, from_dict = experiment_sweep(path), _sweep_figure()
    assert len(from_file.axes) == 2 * len(TASKS)
    for ax_file, ax_dict in zip(from_file.axes, from_dict.axes, strict=True):
        assert _errorbars(ax_file) == _errorbars(ax_dict)
        assert ax_file.get_title() == ax_dict.get_title()


def test_sweep_figure_errors():
    with pytest.raises(ValueError, match="results must be the JSON"):
        experiment_sweep({"runs": []})
    with pytest.raises(ValueError, match="train_size must be one of"):
        experiment_sweep(_results(), train_size=5)
    with pytest.raises(ValueError, match="length must be one of"):
        experiment_sweep(_results(), length=5)


def test_table_bands_draws_mean_profiles():
    fig = table_bands(_results())
    assert len(fig.axes) == len(TASKS)
    for ax in fig.axes:
        lines = {
            line.get_label(): list(line.get_ydata())
            for line in ax.lines
            if not line.get_label().startswith("_")
        }
        assert set(lines) == {
            "deberta, trained",
            "deberta, initial",
        }  # absolute has no table
        assert lines["deberta, trained"] == pytest.approx([1.0, 0.55, 0.2])
        assert lines["deberta, initial"] == pytest.approx([1.0, 0.0, 0.05])
        assert ax.get_xlabel() and ax.get_ylabel() and ax.get_title()


def test_table_bands_needs_band_entries():
    results = _results()
    results["runs"] = [r for r in results["runs"] if r["band"] is None]
    with pytest.raises(ValueError, match="no run with a relative table"):
        table_bands(results)


def test_terms_by_distance_draws_diagonal_means():
    n, heads = 5, 2
    rel = (
        torch.arange(n)[:, None] - torch.arange(n)[None, :]
    ).double()  # (i, j) = i - j
    c2p = torch.stack([rel, -rel])[None]  # (1, h, i, j): a function of i - j per head
    c2c = torch.rand(1, heads, n, n, dtype=torch.float64)
    probs = c2c.softmax(-1)
    fig = terms_by_distance(AttentionScores(c2c, c2p, None, probs))
    assert [ax.get_title() for ax in fig.axes] == [
        "c2c",
        "c2p",
        "softmax probabilities",
    ]
    distances = list(range(-(n - 1), n))
    c2p_lines = fig.axes[1].lines
    assert list(c2p_lines[0].get_xdata()) == distances
    assert list(c2p_lines[0].get_ydata()) == pytest.approx(distances)
    assert list(c2p_lines[1].get_ydata()) == pytest.approx([-d for d in distances])
    # Head 0's probabilities averaged over the pairs at each distance, pair by pair.
    pairs: dict[int, list[float]] = {d: [] for d in distances}
    for i in range(n):
        for j in range(n):
            pairs[i - j].append(float(probs[0, 0, i, j]))
    expected = [sum(pairs[d]) / len(pairs[d]) for d in distances]
    assert [len(pairs[d]) for d in (-(n - 1), 0, n - 1)] == [1, n, 1]
    assert list(fig.axes[2].lines[0].get_ydata()) == pytest.approx(expected)
    for ax in fig.axes:
        assert ax.get_xlabel() == "distance i - j" and ax.get_ylabel()
    with pytest.raises(TypeError, match="AttentionScores"):
        terms_by_distance(probs)


def test_the_old_figure_name_warns_and_draws_the_same():
    """plot.score_by_distance is terms_by_distance's old name, for one release."""
    scores = AttentionScores(
        torch.rand(1, 2, 4, 4, dtype=torch.float64), None, None,
        torch.rand(1, 2, 4, 4, dtype=torch.float64).softmax(-1),
    )
    with pytest.warns(DeprecationWarning, match="terms_by_distance"):
        old = score_by_distance(scores, batch=0)
    new = terms_by_distance(scores)
    assert [ax.get_title() for ax in old.axes] == [ax.get_title() for ax in new.axes]
    for ax_old, ax_new in zip(old.axes, new.axes, strict=True):
        for line_old, line_new in zip(ax_old.lines, ax_new.lines, strict=True):
            assert list(line_old.get_ydata()) == list(line_new.get_ydata())


def _schema_2(settings=("encoder", "causal")) -> dict:
    """The hand-made results in schema 2: the causal rows are the encoder's + 0.5."""
    old = _results()
    summary = [
        {**row, "setting": setting, "mean": row["mean"] + 0.5 * s}
        for s, setting in enumerate(settings)
        for row in old["summary"]
    ]
    runs = [
        {**run, "setting": setting}
        for setting in settings
        for run in old["runs"]
        if setting == "encoder" or run["train_size"] == 16
    ]
    return {
        "schema": 2,
        "config": {"train_length": 8},
        "grid": {
            "setting": list(settings),
            "task": list(TASKS),
            "scheme": list(SCHEMES),
            "train_size": list(SIZES),
            "seed": [0, 1],
        },
        "tasks": old["tasks"],
        "summary": summary,
        "runs": runs,
    }


def test_sweep_figure_reads_schema_2_one_setting_at_a_time():
    results = _schema_2()
    encoder = experiment_sweep(results)
    causal = experiment_sweep(results, setting="causal")
    for ax_encoder, ax_old, ax_causal in zip(
        encoder.axes, _sweep_figure().axes, causal.axes, strict=True
    ):
        drawn, old = _errorbars(ax_encoder), _errorbars(ax_old)
        assert drawn == old  # schema 1 is read as an encoder sweep
        for scheme, (x, y, err) in _errorbars(ax_causal).items():
            assert x == old[scheme][0] and err == pytest.approx(old[scheme][2])
            assert y == pytest.approx([v + 0.5 for v in old[scheme][1]])
        assert ax_causal.get_title().startswith("causal, ")
    with pytest.raises(ValueError, match="setting must be one of"):
        experiment_sweep(results, setting="decoder")


def test_table_bands_reads_schema_2_one_setting_at_a_time():
    results = _schema_2()  # the causal runs have one size, 16
    for setting, size in (("encoder", 64), ("causal", 16)):
        fig = table_bands(results, setting=setting)
        assert len(fig.axes) == len(TASKS)
        for ax in fig.axes:
            assert f"{size} training sequences" in ax.get_title()
            lines = {
                line.get_label(): list(line.get_ydata())
                for line in ax.lines
                if not line.get_label().startswith("_")
            }
            assert lines["deberta, trained"] == pytest.approx([1.0, 0.55, 0.2])
    with pytest.raises(ValueError, match="setting must be one of"):
        table_bands(results, setting="decoder")
