"""plot.rate_curves draws every tuned cell's validation curve from the JSON itself."""

from __future__ import annotations

import pytest

from relpos.book import plot
from relpos.book.experiments.tuning import interior_share


def chosen(scheme, size, rates, scores, best, bracketed):
    return {"setting": "encoder", "task": "relative", "scheme": scheme,
            "train_size": size, "learning_rate": best, "rates": rates,
            "scores": scores, "valid_accuracy": 0.5, "bracketed": bracketed}


def result() -> dict:
    cells = [
        chosen("a", 8, [1e-3, 3e-3, 1e-2], [0.9, 0.5, 0.7], 3e-3, True),
        chosen("b", 8, [1e-3, 3e-3, 1e-2], [0.9, None, 0.8], 1e-2, False),
        chosen("a", 64, [3e-4, 1e-3, 3e-3], [0.6, 0.4, 0.45], 1e-3, True),
        chosen("b", 64, [1e-3, 3e-3, 1e-2], [0.3, 0.2, 0.25], 3e-3, True),
    ]
    return {"schema": 3, "grid": {"setting": ["encoder"], "task": ["relative"],
                                  "scheme": ["a", "b"], "train_size": [8, 64],
                                  "seed": [0, 1]},
            "summary": [], "tuning": {"chosen": cells}}


def test_each_panel_draws_its_cells_curve_and_the_chosen_rate():
    fig = plot.rate_curves(result())
    assert [ax.get_title() for ax in fig.axes[:2]] == [
        "encoder, relative, 8 seqs", "encoder, relative, 64 seqs"]
    curves = [ln for ln in fig.axes[0].lines if ln.get_label() in ("a", "b")]
    a, b = curves
    assert a.get_xdata().tolist() == [1e-3, 3e-3, 1e-2]
    assert a.get_ydata().tolist() == [0.9, 0.5, 0.7]
    assert b.get_xdata().tolist() == [1e-3, 1e-2]  # the diverged rate left out
    assert (a.get_linestyle(), b.get_linestyle()) == ("-", "--")  # b: at an edge
    filled = [ln for ln in fig.axes[0].lines if ln.get_linestyle() == "None"]
    assert [(ln.get_xdata()[0], ln.get_ydata()[0]) for ln in filled] == [
        (3e-3, 0.5), (1e-2, 0.8)]
    for ax in fig.axes[:2]:
        assert ax.get_xlabel() and ax.get_ylabel()


def test_interior_share_counts_the_bracketed_cells():
    assert interior_share([result()]) == (3, 4)


def test_a_sweep_without_curves_is_refused():
    old = {**result(), "tuning": {"chosen": [{"scheme": "a"}]}}
    with pytest.raises(ValueError, match="schema 3"):
        plot.rate_curves(old)
    with pytest.raises(ValueError, match="schemes must be drawn"):
        plot.rate_curves(result(), schemes=["c"])
