"""Chapter 13's task records: each rule reads the task sweep and moves its verdict
with the numbers it reads."""

from __future__ import annotations

import copy
import json

from relpos.book import results
from relpos.book.experiments.verdicts import tasks
from relpos.book.results import ledger


def _folder(tmp_path, change=None):
    """A results folder holding the task sweep, optionally changed first."""
    sweep = results.load(f"{tasks.FOLDER}/{tasks.TASKS_SWEEP}")
    if change is not None:
        sweep = copy.deepcopy(sweep)
        change(sweep)
    (tmp_path / tasks.FOLDER).mkdir(parents=True)
    (tmp_path / tasks.FOLDER / tasks.TASKS_SWEEP).write_text(json.dumps(sweep))
    return tmp_path


def _by_id(folder):
    return {r["id"]: r for r in tasks.records(folder)}


def test_without_the_task_sweep_there_is_no_record(tmp_path):
    assert tasks.records(tmp_path) == []


def test_every_rule_gives_a_checked_record_of_chapter_13_with_ten_seeds(tmp_path):
    found = tasks.records(_folder(tmp_path))
    assert len(found) == len(tasks.RULES) == len({r["id"] for r in found})
    for record in found:
        assert ledger.check_record(record) is record
        assert record["chapter"] == tasks.CHAPTER and record["seeds"] == 10
        assert record["evidence"]["file"] == "protocol/sweep_tasks.json"


def test_one_exactly_right_sequence_at_2l_turns_the_exact_match_verdict(tmp_path):
    assert _by_id(_folder(tmp_path / "a"))["tasks-exact-beyond-l"]["verdict"] == "holds"

    def one_right(sweep):
        row = next(r for r in sweep["exact"] if (r["task"], r["scheme"], r["length"])
                   == ("reverse", "none", 32))
        row["values"][3] = 1 / 64

    changed = _by_id(_folder(tmp_path / "b", one_right))
    assert changed["tasks-exact-beyond-l"]["verdict"] == "fails"


def test_a_plain_seed_above_a_randomised_one_weakens_the_randomised_verdict(tmp_path):
    assert _by_id(_folder(tmp_path / "a"))["tasks-randomised"]["verdict"] == "holds"

    def plain_seed_high(sweep):
        row = next(r for r in sweep["summary"] if (r["task"], r["scheme"], r["length"])
                   == ("copy", "absolute", 32))
        row["values"][0] = 0.99

    changed = _by_id(_folder(tmp_path / "b", plain_seed_high))
    assert changed["tasks-randomised"]["verdict"] == "qualified"
