"""load_sweep, the one reader of a sweep's JSON: schemas 2-3 as they are, 1 upgraded.

Any other schema, or a JSON without its schema's fields, is refused with a
ValueError that says what to rerun. Every reader of a sweep (the figures, the
report, the exercise checks, the results chart) goes through it, so each one
reads a schema-1 file and refuses a foreign JSON the same way.
"""

from __future__ import annotations

import json
import statistics

import numpy as np
import pytest

from relpos.book import plot, results
from relpos.book.exercises import check
from relpos.book.exercises.ch10 import causal_gain
from relpos.book.experiments import format_table, load_sweep
from relpos.book.interactive.results import explorer_rows

SCHEMES = ["a", "b"]
SIZES = [4, 16]
SEEDS = [0, 1, 2]
LENGTHS = [8, 16]
RATE = 0.003


def accuracy(scheme: str, size: int, length: int, seed: int) -> float:
    """A different number for every cell and seed."""
    return round(0.2 + 0.3 * (scheme == "b") + size / 100 - length / 200 + seed / 40, 4)


def schema_1(with_accuracies: bool = True) -> dict:
    """A sweep in the first committed layout: one rate, no setting, no seed values."""
    runs, summary = [], []
    for scheme in SCHEMES:
        for size in SIZES:
            for seed in SEEDS:
                run = {"task": "relative", "scheme": scheme, "train_size": size,
                       "seed": seed, "band": None, "attention_peaks": None}
                if with_accuracies:
                    run["accuracy"] = {
                        str(n): accuracy(scheme, size, n, seed) for n in LENGTHS
                    }
                runs.append(run)
            for n in LENGTHS:
                values = [accuracy(scheme, size, n, seed) for seed in SEEDS]
                summary.append({
                    "task": "relative", "scheme": scheme, "train_size": size,
                    "length": n, "mean": statistics.fmean(values),
                    "std": statistics.stdev(values), "min": min(values),
                    "max": max(values), "n": len(values),
                })
    return {
        "schema": 1,
        "command": "python -m relpos.book.experiments --steps 10",
        "settings": {"train_length": 8, "test_lengths": LENGTHS, "steps": 10,
                     "learning_rate": RATE},
        "tasks": {"relative": {"description": "copy 3 back", "chance": 1 / 16}},
        "schemes": SCHEMES,
        "train_sizes": SIZES,
        "seeds": SEEDS,
        "runs": runs,
        "summary": summary,
    }


def test_the_committed_sweeps_are_schema_2_or_3_and_come_back_as_they_are():
    names = [
        n for n in results.names()
        if n.rpartition("/")[2].startswith("sweep") and n.endswith(".json")
    ]
    assert {"protocol/sweep.json", "first_pass/sweep.json"} <= set(names)
    assert len(names) >= 12
    for name in names:
        stored = results.load(name)
        assert stored["schema"] in (2, 3), name
        assert load_sweep(results.path(name)) == stored  # read from its path
        assert load_sweep(stored) == stored


def test_schema_1_is_upgraded_to_an_encoder_sweep(tmp_path):
    old = schema_1()
    new = load_sweep(old)
    assert new["schema"] == 2 and old["schema"] == 1  # the argument is not changed
    assert new["grid"] == {"setting": ["encoder"], "task": ["relative"],
                           "scheme": SCHEMES, "train_size": SIZES, "seed": SEEDS}
    assert new["config"] == {"train_length": 8, "test_lengths": LENGTHS, "steps": 10}
    assert {r["setting"] for r in new["runs"] + new["summary"]} == {"encoder"}
    assert {r["learning_rate"] for r in new["runs"]} == {RATE}
    assert {c["learning_rate"] for c in new["tuning"]["chosen"]} == {RATE}
    for row in new["summary"]:  # every seed's accuracy, from the runs, seed order
        cell = (row["scheme"], row["train_size"], row["length"])
        assert row["values"] == [accuracy(*cell, seed) for seed in SEEDS]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    assert load_sweep(path) == load_sweep(str(path)) == new


def test_schema_1_without_the_runs_accuracies_gets_no_values():
    new = load_sweep(schema_1(with_accuracies=False))
    assert new["summary"] and not any("values" in row for row in new["summary"])


@pytest.mark.parametrize(
    "bad, match",
    [
        ({**schema_1(), "schema": 4}, "schema 1, 2 or 3, got schema 4"),
        ({k: v for k, v in schema_1().items() if k != "schema"}, "got schema None"),
        ({**schema_1(), "schema": True}, "got schema True"),
        ({"schema": 1}, r"\(schema 1\) has no 'summary'"),
        ({"schema": 2, "summary": []}, r"\(schema 2\) has no 'grid'"),
    ],
)
def test_other_json_is_refused_with_what_to_rerun(bad, match):
    with pytest.raises(ValueError, match=match) as error:
        load_sweep(bad)
    assert "rerun python -m relpos.book.experiments" in str(error.value)


def test_the_messages_name_the_argument_and_what_the_reader_needs():
    with pytest.raises(TypeError, match="sweep must be a sweep's JSON"):
        load_sweep([1, 2], name="sweep")
    with pytest.raises(ValueError, match="sweep has no 'coverage', which this"):
        load_sweep(schema_1(), needs=("config", "coverage"), name="sweep")
    assert load_sweep(schema_1(), needs=("config", "runs"))["config"]


FOREIGN = {"schema": 4, "grid": {}, "summary": []}
READERS = {
    "experiment_sweep": lambda s: plot.experiment_sweep(s),
    "table_bands": lambda s: plot.table_bands(s),
    "accuracy_grid": lambda s: plot.accuracy_grid(s),
    "data_efficiency": lambda s: plot.data_efficiency(s),
    "seed_points": lambda s: plot.seed_points(s, task="relative", schemes=SCHEMES),
    "band_profiles": lambda s: plot.band_profiles(s, schemes=SCHEMES),
    "format_table": format_table,
    "ch9-ex2": lambda s: check("ch9-ex2", {}, sweep=s),
    "ch10-ex1": lambda s: check("ch10-ex1", {}, sweep=s),
    "causal_gain": lambda s: causal_gain(s, s),
    "explorer_rows": lambda s: explorer_rows([s]),
}


@pytest.mark.parametrize("reader", READERS)
def test_every_reader_refuses_a_foreign_schema_the_same_way(reader):
    with pytest.raises(ValueError, match="schema 1, 2 or 3, got schema 4"):
        READERS[reader](FOREIGN)


def test_the_figures_and_the_report_read_a_schema_1_sweep():
    old = schema_1()
    grid = plot.accuracy_grid(old)  # refused schema 1 before load_sweep
    drawn = np.asarray(grid.axes[0].images[0].get_array())
    expected = [[statistics.fmean(accuracy(m, 16, n, s) for s in SEEDS)
                 for n in LENGTHS] for m in SCHEMES]
    assert drawn == pytest.approx(np.array(expected))
    dots = plot.data_efficiency(old).axes[1]  # scheme b: one dot per (size, seed)
    points = np.concatenate([c.get_offsets() for c in dots.collections]).tolist()
    assert sorted(map(tuple, points)) == sorted(
        (size, accuracy("b", size, 8, s)) for size in SIZES for s in SEEDS
    )
    assert "encoder, relative: copy 3 back" in format_table(old)
    rows = explorer_rows([old])
    assert {(r["setting"], r["scheme"], r["size"]) for r in rows} == {
        ("encoder", m, size) for m in SCHEMES for size in SIZES
    }
