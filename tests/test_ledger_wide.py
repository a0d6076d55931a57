"""Chapter 13's second-scale records: the same thresholds as the first scale's rules.

Run on the first scale's own sweeps, the second scale's rules must reach the
verdicts the first scale's records state (they restate the same claims); the
table pairs each record with its twin and marks a change.
"""

from __future__ import annotations

import shutil

from relpos.book import results
from relpos.book.experiments.verdicts import wide
from relpos.book.experiments.verdicts.rules import Sweeps
from relpos.book.results import ledger


def folder_sweeps(folder):
    return Sweeps(folder / wide.FOLDER)


def _first_scale(tmp_path):
    """A results folder whose ``wide/`` holds the first scale's two sweeps."""
    (tmp_path / wide.FOLDER).mkdir()
    for name in (wide.SWEEP, wide.CAUSAL):
        shutil.copy(results.path(f"protocol/{name}"), tmp_path / wide.FOLDER / name)
    return tmp_path


def test_without_the_second_scale_sweeps_there_is_no_record(tmp_path):
    assert wide.records(tmp_path) == []


def test_with_the_encoder_sweep_alone_only_its_rules_give_records(tmp_path):
    folder = _first_scale(tmp_path)
    (folder / wide.FOLDER / wide.CAUSAL).unlink()
    found = [r["id"] for r in wide.records(folder)]
    assert found == [rule(folder_sweeps(folder))["id"] for rule in wide.ENCODER_RULES]


def test_on_the_first_scale_the_rules_reach_the_first_scale_verdicts(tmp_path):
    records = wide.records(_first_scale(tmp_path))
    assert [r["id"] for r in records] == list(wide.TWINS)
    first = {r["id"]: r for r in ledger.load_ledger()}
    for record in records:
        twin = first[wide.TWINS[record["id"]]]
        assert twin["seeds"] == 10
        assert record["verdict"] == twin["verdict"], record["id"]
        assert record["seeds"] == 10 and len(record["interval"]) == 2
        assert record["chapter"] == wide.CHAPTER


def test_the_table_pairs_each_record_with_its_twin_and_marks_a_change(tmp_path):
    records = wide.records(_first_scale(tmp_path))
    changed = dict(records[0], verdict="fails")
    twin = {**records[0], "id": wide.TWINS[records[0]["id"]], "chapter": 9}
    rows = wide.scale_rows([twin, changed, records[1]])
    assert len(rows) == 1  # records[1] has no twin in the list
    assert rows[0]["id"] == twin["id"] and rows[0]["changed"]
    assert rows[0]["width 32, one layer"].startswith(twin["verdict"])
    assert rows[0]["width 128, two layers"] == "fails (10 seeds)"
