"""The figures of the text sweeps draw the numbers of the results they are given."""

from __future__ import annotations

import statistics

import pytest

from relpos.book import plot

LENGTHS = [8, 16, 32]


def fake_result(schemes=("none", "deberta"), seeds=(0, 1)) -> dict:
    """A text sweep's results in miniature, each number a function of its place."""
    runs, summary, cells = [], [], []
    for k, scheme in enumerate(schemes):
        for seed in seeds:
            runs.append({
                "scheme": scheme, "seed": seed,
                "eval": {str(n): {"bpb": 3.0 + k + seed / 10 + n / 100}
                         for n in LENGTHS},
            })  # fmt: skip
        for n in LENGTHS:
            curve = [float(k + p) for p in range(n)]
            summary.append({"scheme": scheme, "length": n, "per_position": curve})
        cells.append({
            "scheme": scheme, "rates": [1e-3, 3e-3, 1e-2],
            "valid_bpb": [2.0 + k, 1.5 + k, None], "chosen": 3e-3,
        })  # fmt: skip
    return {
        "config": {"train_length": 8, "eval_lengths": LENGTHS},
        "grid": {"scheme": list(schemes), "seed": list(seeds)},
        "runs": runs,
        "summary": summary,
        "tuning": {"cells": cells},
    }


def labelled(ax) -> dict:
    return {line.get_label(): line for line in ax.lines
            if not line.get_label().startswith("_")}  # fmt: skip


def test_bits_by_length_draws_the_seed_means_and_every_seed():
    result = fake_result()
    figure = plot.bits_by_length({"causal": result, "masked": result})
    assert len(figure.axes) == 2
    for ax in figure.axes:
        lines = labelled(ax)
        assert list(lines) == ["none", "deberta"]
        expected = [statistics.fmean([4.0 + n / 100, 4.1 + n / 100]) for n in LENGTHS]
        assert list(lines["deberta"].get_ydata()) == pytest.approx(expected)
        dots = [line for line in ax.lines if line.get_linestyle() == "None"]
        assert sum(len(line.get_xdata()) for line in dots) == 2 * 2 * len(LENGTHS)
        assert ax.get_xlabel() and ax.get_title()
    assert figure.axes[0].get_ylabel()


def test_a_scheme_keeps_its_colour_in_panels_of_different_schemes():
    figure = plot.bits_by_length({
        "causal": fake_result(("none", "shaw", "deberta")),
        "masked": fake_result(("deberta", "none")),
    })
    causal, masked = (labelled(ax) for ax in figure.axes)
    for scheme in ("none", "deberta"):
        assert causal[scheme].get_color() == masked[scheme].get_color()
        assert causal[scheme].get_marker() == masked[scheme].get_marker()
    legend = [t.get_text() for t in figure.axes[-1].get_legend().get_texts()]
    assert legend == ["none", "shaw", "deberta"]  # every scheme of any panel, once


def test_bits_by_length_keeps_schemes_apart_beyond_ten_colours():
    names = [f"s{k}" for k in range(12)]
    figure = plot.bits_by_length({"causal": fake_result(names)})
    styles = {(line.get_color(), line.get_marker(), line.get_linestyle())
              for line in labelled(figure.axes[0]).values()}  # fmt: skip
    assert len(styles) == 12


def test_loss_by_position_averages_over_groups_of_positions():
    figure = plot.loss_by_position(fake_result(), smooth=4)
    line = labelled(figure.axes[0])["deberta"]
    # positions 0..31 plus 1, in groups of four: means 2.5, 6.5, ...
    assert list(line.get_ydata()) == pytest.approx([1 + 4 * g + 1.5 for g in range(8)])
    assert list(line.get_xdata()) == pytest.approx([4 * g + 2 for g in range(8)])
    assert figure.axes[0].get_xlabel() and figure.axes[0].get_ylabel()


def test_tuning_curves_leave_out_a_diverged_rate_and_mark_the_chosen():
    figure = plot.tuning_curves({"causal": fake_result()})
    ax = figure.axes[0]
    line = labelled(ax)["none"]
    assert list(line.get_xdata()) == [1e-3, 3e-3]  # 1e-2 diverged
    chosen = [ln for ln in ax.lines if ln.get_linestyle() == "None"]
    assert [(list(c.get_xdata()), list(c.get_ydata())) for c in chosen] == [
        ([3e-3], [1.5]), ([3e-3], [2.5])]


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda r: plot.bits_by_length({}), "results must hold"),
        (lambda r: plot.bits_by_length({"c": r}, schemes=["t5"]), "schemes must"),
        (lambda r: plot.loss_by_position(r, length=10), "length must be one of"),
        (lambda r: plot.loss_by_position(r, smooth=0), "smooth must be"),
    ],
)
def test_bad_arguments_are_named(call, message):
    with pytest.raises(ValueError, match=message):
        call(fake_result())


def test_bits_by_length_gives_thirteen_schemes_thirteen_colours_within_the_page():
    names = [f"s{k}" for k in range(13)]
    both = {"causal": fake_result(names), "masked": fake_result(names)}
    figure = plot.bits_by_length(both)
    colours = {line.get_color() for line in labelled(figure.axes[0]).values()}
    assert len(colours) == 13
    assert figure.get_size_inches()[0] <= plot._style.PAGE_WIDTH
