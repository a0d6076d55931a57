"""The rules behind chapters 9 and 10's records, and the ledger's table helpers.

The shared rules are checked on hand cases; a record's rule is checked to move
its verdict when the sweep's numbers move (a copy of the sweep, edited), so no
verdict is typed in; with ten seeds a record carries the bootstrap interval.
"""

from __future__ import annotations

import json
import shutil

import pytest

from relpos.book import results
from relpos.book.experiments import verdicts
from relpos.book.experiments.verdicts import chapter9, chapter10, protocol
from relpos.book.experiments.verdicts.rules import (
    Sweeps,
    combine,
    every,
    length_verdict,
    make_record,
    separation,
    under_bound,
)
from relpos.book.results import ledger
from relpos.book.stats import bootstrap_interval


def test_length_verdict_reads_every_seed_then_the_mean():
    assert length_verdict([1.0, 1.0], [0.95, 0.92]) == "holds"
    assert length_verdict([1.0, 1.0], [1.0, 0.8]) == "qualified"  # one seed falls
    assert length_verdict([1.0, 1.0], [0.5, 0.6]) == "fails"
    assert length_verdict([0.5, 0.5], [0.5, 0.5]) == "fails"  # never learned at L
    with pytest.raises(ValueError, match="one value per seed"):
        length_verdict([1.0], [1.0, 1.0])


def test_combine_separation_and_bounds():
    assert combine(["holds", "holds"]) == "holds"
    assert combine(["fails", "fails"]) == "fails"
    assert combine(["holds", "fails"]) == "qualified"
    assert separation([0.9, 0.8], [0.7, 0.6]) == "holds"
    assert separation([0.9, 0.6], [0.7, 0.5]) == "qualified"  # the seeds overlap
    assert separation([0.5, 0.6], [0.7, 0.5]) == "fails"
    # three binomial standard errors of 2000 labels at 0.2: about 0.027
    assert under_bound([0.19, 0.22], 0.2, 2000)
    assert not under_bound([0.19, 0.23], 0.2, 2000)


def test_a_record_counts_its_seeds_and_gives_ten_an_interval():
    five = make_record("x", 9, "a claim", "holds", "why", ("sweep.json", ["summary"]),
                       [0.9, 1.0, 0.8, 1.0, 0.95])
    assert five["seeds"] == 5 and "interval" not in five
    values = [0.9, 1.0, 0.8, 1.0, 0.95, 0.7, 0.85, 1.0, 0.9, 0.99]
    ten = make_record("x", 9, "a claim", "holds", "why", ("sweep.json", ["summary"]),
                      values, intervention="changed one thing")
    assert ten["seeds"] == 10 and ten["interval"] == bootstrap_interval(values)
    assert ten["intervention"] == "changed one thing"
    with pytest.raises(ValueError, match="verdict must be one of"):
        make_record("x", 9, "a claim", "maybe", "why", ("s.json", []), [1.0])


def test_every_rule_gives_one_record_of_chapter_9_or_10_from_the_protocol():
    assert len(verdicts.RULES) == len({f.__name__ for f in verdicts.RULES})
    records = verdicts.records(results.path("claims.json").parent)
    # the four mechanism rules are answered by chapter 12's interventions
    assert len(records) == len(verdicts.RULES) - len(protocol.TESTED_ELSEWHERE)
    assert {r["chapter"] for r in records} == {9, 10}
    assert not {r["id"] for r in records} & set(protocol.TESTED_ELSEWHERE)
    assert all(r["verdict"] != "untested" for r in records)
    assert all(r["evidence"]["file"].startswith("protocol/") for r in records)
    assert {r["seeds"] for r in records} == {10}


def edited(tmp_path, name: str, cells: dict[tuple, list[float]]) -> Sweeps:
    """The protocol's sweeps with some summary cells' seeds replaced, each cell
    named by (setting, task, scheme, train size, length)."""
    for file in ("sweep.json", name):
        shutil.copy(results.path(f"protocol/{file}"), tmp_path / file)
    data = json.loads((tmp_path / name).read_text())
    for row in data["summary"]:
        key = (row["setting"], row["task"], row["scheme"], row["train_size"],
               row["length"])
        if key in cells:
            values = cells[key]
            row["values"], row["mean"] = values, sum(values) / len(values)
            row["min"], row["max"] = min(values), max(values)
    (tmp_path / name).write_text(json.dumps(data))
    return Sweeps(tmp_path)


COMMITTED = results.path("claims.json").parent / "protocol"


def test_a_rule_moves_its_verdict_when_the_numbers_move(tmp_path):
    committed = Sweeps(COMMITTED)
    assert chapter10.ablation_c2p(committed)["verdict"] == "fails"  # p2c fits too
    c2p = ("encoder", "relative", "deberta-c2p", 8, 32)
    p2c = ("encoder", "relative", "deberta-p2c", 8, 32)
    weak = edited(tmp_path, "sweep_ablation.json", {c2p: [0.99] * 10, p2c: [0.5] * 10})
    assert chapter10.ablation_c2p(weak)["verdict"] == "holds"  # c2p alone fits
    some = edited(tmp_path, "sweep_ablation.json",
                  {c2p: [0.99] * 10, p2c: [0.5] * 5 + [0.99] * 5})
    assert chapter10.ablation_c2p(some)["verdict"] == "qualified"
    strong = edited(tmp_path, "sweep_ablation.json", {c2p: [0.99] * 10,
                                                      p2c: [0.99] * 10})
    assert chapter10.ablation_c2p(strong)["verdict"] == "fails"  # either term fits

    assert chapter9.encoder_relative_buckets(committed)["verdict"] == "qualified"
    buckets = ("encoder", "relative", "deberta-buckets", 512, 256)
    kept = edited(tmp_path, "sweep.json", {buckets: [1.0] * 10})
    assert chapter9.encoder_relative_buckets(kept)["verdict"] == "holds"


def test_a_bound_record_fails_when_a_seed_passes_the_bound(tmp_path):
    committed = Sweeps(COMMITTED)
    assert chapter10.causal_none_bound(committed)["verdict"] == "holds"
    cell = ("causal", "relative", "none", 512, 64)
    above = edited(tmp_path, "sweep_causal.json", {cell: [0.16] * 9 + [0.3]})
    assert chapter10.causal_none_bound(above)["verdict"] == "fails"


def test_verdict_rows_tables_and_disagreements():
    records = ledger.load_ledger()
    nine = ledger.verdict_rows(records, chapter=9)
    assert [r["id"] for r in nine] == [r["id"] for r in records if r["chapter"] == 9]
    picked = ledger.verdict_rows(records, ids=["causal-none-bound", "text-length"])
    assert [r["id"] for r in picked] == ["causal-none-bound", "text-length"]
    with pytest.raises(ValueError, match="ids must name records"):
        ledger.verdict_rows(records, ids=["no-such-record"])
    with pytest.raises(ValueError, match="chapter or ids, not both"):
        ledger.verdict_rows(records, chapter=9, ids=["text-length"])
    table = ledger.verdict_table(picked, ("id", "claim", "verdict"))
    assert table.splitlines()[2].startswith("| `causal-none-bound` |")
    assert "| **holds** |" in table.splitlines()[2]
    assert ledger.verdict_table([{"claim": "a|b", "verdict": "holds"}],
                                ("claim",)).endswith("| a\\|b |")
    assert ledger.disagreements({"causal-none-bound": "holds"}) == []
    assert ledger.disagreements({"causal-none-bound": "fails"}, records) == [
        "causal-none-bound: stated fails, the ledger holds holds"]
    with pytest.raises(ValueError, match="must name records"):
        ledger.disagreements({"no-such-record": "holds"}, records)
    with pytest.raises(ValueError, match="must be among"):
        ledger.disagreements({"causal-none-bound": "true"}, records)


def test_relative_verdict():
    assert ledger.relative_verdict({"deberta": True, "t5": True}) == "holds"
    assert ledger.relative_verdict({"deberta": True, "t5": False}) == "qualified"
    assert ledger.relative_verdict({"deberta": False, "t5": True}) == "fails"
    with pytest.raises(ValueError, match="must judge 'deberta'"):
        ledger.relative_verdict({"t5": True})


def test_every_holds_on_all_cases_qualifies_on_some_and_fails_on_none():
    assert every([True, True]) == "holds"
    assert every([True, False]) == "qualified"
    assert every([False, False]) == "fails"
    with pytest.raises(ValueError):
        every([])
