"""Chapter 9's results explorer draws the protocol sweeps' means and seed ranges.

Drawn by the browser's own Vega engine (``evaluate``) at every task, setting and
training size: one point per ticked scheme and test length, holding the sweep
JSON's mean, lowest and highest seed and seed count; a ticked scheme the chosen
sweep did not run draws nothing and gets a "not run" note.
"""

from __future__ import annotations

import itertools
import json
import re

import pytest

from relpos.book import results
from relpos.book.interactive import Interactive, evaluate
from relpos.book.interactive.results import (
    DEFAULT_SCHEMES,
    explorer_rows,
    results_chart,
    results_figure,
)

pytest.importorskip("vl_convert")

SWEEPS = [results.load("protocol/sweep.json"),
          results.load("protocol/sweep_causal.json")]
SCHEMES = SWEEPS[0]["grid"]["scheme"]  # the encoder's: a superset of the causal's
CHART = results_chart()
CELLS = {
    (r["setting"], r["task"], r["scheme"], r["train_size"], r["length"]): r
    for sweep in SWEEPS
    for r in sweep["summary"]
}


def _ticks(schemes) -> dict[str, bool]:
    return {f"show{i}": s in schemes for i, s in enumerate(SCHEMES)}


def _check_drawn(marks, setting, task, size, ticked) -> None:
    points = marks.get("means_0_marks", [])
    expected = {
        (scheme, n): CELLS[setting, task, scheme, size, n]
        for scheme in ticked
        for n in SWEEPS[0]["config"]["test_lengths"]
        if (setting, task, scheme, size, n) in CELLS
    }
    drawn = {(row["scheme"], int(row["test length"])): row for row in points}
    assert sorted(drawn) == sorted(expected)
    for key, cell in expected.items():
        row = drawn[key]
        assert row["mean"] == round(cell["mean"], 4), key
        assert row["lowest seed"] == round(cell["min"], 4), key
        assert row["highest seed"] == round(cell["max"], 4), key
        assert row["seeds"] == cell["n"] == 10, key
    lines = marks.get("lines_0_marks", [])
    assert len(lines) == len(expected)
    ran = {scheme for scheme, _ in expected}
    notes = [row["not run"] for row in marks.get("notes_marks", [])]
    assert len(notes) == len(set(ticked) - ran)
    for scheme in set(ticked) - ran:
        assert any(note.startswith(scheme + " ") for note in notes), (scheme, notes)


def test_the_default_is_deberta_against_two_others():
    marks = evaluate(CHART)
    _check_drawn(marks, "encoder", "relative", 512, DEFAULT_SCHEMES)
    assert "deberta" in DEFAULT_SCHEMES and len(DEFAULT_SCHEMES) == 3
    assert [row["training length"] for row in marks["train_0_marks"]] == [32]


@pytest.mark.parametrize(
    "setting,task,size",
    list(
        itertools.product(
            ["encoder", "causal"], ["relative", "absolute", "far"], [32, 512]
        )
    ),
)
def test_every_cell_draws_the_sweep_json(setting, task, size):
    ticked = SCHEMES  # every scheme ticked: the causal sweep lacks four
    marks = evaluate(CHART, setting=setting, task=task, size=size, **_ticks(ticked))
    _check_drawn(marks, setting, task, size, ticked)


@pytest.mark.parametrize(
    "ticked", [[], ["deberta"], ["none", "rotary", "deberta-emd"], SCHEMES[::2]]
)
def test_a_scheme_is_drawn_exactly_when_ticked(ticked):
    marks = evaluate(CHART, task="far", **_ticks(ticked))
    _check_drawn(marks, "encoder", "far", 512, ticked)
    assert {row["scheme"] for row in marks.get("means_0_marks", [])} == set(ticked)


def test_a_combination_not_run_says_so():
    marks = evaluate(CHART, setting="causal", size=32)
    assert not marks.get("means_0_marks") and not marks.get("lines_0_marks")
    notes = [row["not run"] for row in marks["notes_marks"]]
    assert len(notes) == len(DEFAULT_SCHEMES)
    assert all("not run with 32 sequences" in note for note in notes)
    marks = evaluate(CHART, setting="causal", **_ticks(["sinusoidal", "deberta"]))
    notes = [row["not run"] for row in marks["notes_marks"]]
    assert notes == ["sinusoidal is not in the causal decoder sweep"]
    assert {row["scheme"] for row in marks["means_0_marks"]} == {"deberta"}


def test_rows_cover_the_grid_once():
    rows = explorer_rows(SWEEPS)
    keys = [(r["setting"], r["task"], r["scheme"], r["size"]) for r in rows]
    assert len(keys) == len(set(keys)) == 2 * 3 * 11 * 2
    ran = [r for r in rows if r["n"]]
    assert len(ran) == 3 * 11 * 2 + 3 * 7 * 1
    assert all(("note" in r) == (not r["n"]) for r in rows)


def test_the_json_is_deterministic_and_small():
    first = json.dumps(CHART.to_dict(), sort_keys=True)
    assert first == json.dumps(results_chart(SWEEPS).to_dict(), sort_keys=True)
    assert not re.search(r"\b(param|view)_\d+", first)
    assert len(first) < 80_000


def test_the_figure_keeps_the_chapters_still():
    from relpos.book import plot

    still = plot.accuracy_grid(SWEEPS[0], train_size=512)
    figure = results_figure(SWEEPS, still=still)
    assert isinstance(figure, Interactive) and figure.name == "results"
    assert figure.png.startswith(b"\x89PNG")
    assert "deberta" in figure.alt and "checkbox" in figure.alt


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="task"):
        results_chart(SWEEPS, task="copy")
    with pytest.raises(ValueError, match="setting"):
        results_chart(SWEEPS, setting="decoder")
    with pytest.raises(ValueError, match="train_size"):
        results_chart(SWEEPS, train_size=64)
    with pytest.raises(ValueError, match="shown"):
        results_chart(SWEEPS, shown=["deberta", "bert"])
    with pytest.raises(TypeError, match="shown"):
        results_chart(SWEEPS, shown="deberta")
    with pytest.raises(TypeError, match="sweeps"):
        results_chart(SWEEPS[0])
    with pytest.raises(ValueError, match="sweeps"):
        results_chart([{"schema": 1}])


@pytest.mark.parametrize("at", [32, 64, 128, 256])
def test_the_readout_prints_each_shown_schemes_values(at):
    ticked = ["shaw", "rotary", "deberta-buckets"]
    marks = evaluate(CHART, task="absolute", size=32, at=at, **_ticks(ticked))
    lines = [row["values"] for row in marks["readout_marks"]]
    expected = []
    for scheme in ticked:  # in the order of the sweep's schemes
        cell = CELLS["encoder", "absolute", scheme, 32, at]
        mean, lo, hi = (round(cell[k], 4) for k in ("mean", "min", "max"))
        expected.append(
            f"{scheme} at n = {at}, mean {100 * mean:.1f}%, seeds from "
            f"{100 * lo:.1f}% to {100 * hi:.1f}%"
        )
    assert lines == expected
