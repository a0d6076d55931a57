"""plot.paired_seeds draws each comparison's seeds, means and intervals."""

from __future__ import annotations

import pytest

from relpos.book import plot
from relpos.book.experiments.interventions.common import Side, paired


def comparison() -> dict:
    records = [{"seed": s, "arm": arm, "value": value}
               for s, (b, a) in enumerate([(0.5, 0.9), (0.6, 0.7), (0.4, 0.8)])
               for arm, value in (("b", b), ("a", a))]
    return paired(records, "a - b",
                  Side("changed", {"arm": "a"}, lambda r: r["value"]),
                  Side("as trained", {"arm": "b"}, lambda r: r["value"]))


def test_each_seed_is_a_line_from_its_baseline_to_its_changed_arm():
    c = comparison()
    fig = plot.paired_seeds([c, c], titles=["one", "two"])
    assert len(fig.axes) == 2
    ax = fig.axes[0]
    seeds = [ln for ln in ax.lines if ln.get_color() == "grey"]
    assert [ln.get_ydata().tolist() for ln in seeds] == [
        [0.5, 0.9], [0.6, 0.7], [0.4, 0.8]]
    bars = [ln for ln in ax.lines if ln.get_label() == "_interval"]
    assert [ln.get_ydata().tolist() for ln in bars] == [c["b_interval"],
                                                        c["a_interval"]]
    means = [ln.get_ydata()[0] for ln in ax.lines if ln.get_label() == "_mean"]
    assert means == pytest.approx([0.5, 0.8])
    assert ax.get_title().startswith("one\n+30.0 points")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["as trained", "changed"]
    assert ax.get_ylabel() == "accuracy" and ax.get_xlabel()


def test_what_it_cannot_draw_is_refused():
    with pytest.raises(ValueError, match="at least one"):
        plot.paired_seeds([])
    with pytest.raises(ValueError, match="paired tests"):
        plot.paired_seeds([{"a_values": [1.0]}])
    with pytest.raises(ValueError, match="one entry per comparison"):
        plot.paired_seeds([comparison()], labels=[("x", "y"), ("z", "w")])


def test_many_comparisons_wrap_into_rows_that_fit_the_page():
    from relpos.book.plot._style import PAGE_WIDTH, page_columns

    c = comparison()
    fig = plot.paired_seeds([c] * 6, titles=[str(k) for k in range(6)])
    shown = [ax for ax in fig.axes if ax.get_visible()]
    assert len(shown) == 6 and fig.get_size_inches()[0] <= PAGE_WIDTH
    assert len({round(ax.get_position().y0, 3) for ax in shown}) == 2  # two rows of 3
    assert [ax.get_ylabel() for ax in shown] == ["accuracy", "", "", "accuracy", "", ""]
    assert page_columns(4, 2.5, margin=0.5) == 2  # 4 panels: 2 and 2, not 3 and 1
    assert page_columns(1, 20.0) == 1
    two = plot.paired_seeds([c] * 3, columns=1)
    assert len({round(ax.get_position().x0, 3) for ax in two.axes}) == 1
    with pytest.raises(ValueError, match="columns must be an int"):
        plot.paired_seeds([c], columns=0)
