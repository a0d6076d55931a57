"""The claims ledger (``results/ledger.py``) and the rules behind its text verdicts."""

from __future__ import annotations

import copy
import json

import pytest

from relpos.book import results
from relpos.book.results.ledger import (
    SEED_CLAIMS,
    check_ledger,
    check_record,
    load_ledger,
    verdict_rows,
)
from relpos.book.results.build import build_ledger
from relpos.book.text.verdicts import kept_advantage, length_gains

RECORD = {
    "id": "x",
    "chapter": 11,
    "claim": "a claim",
    "verdict": "holds",
    "mechanism": "why",
    "evidence": {"file": "text_causal.json", "keys": ["summary"]},
    "seeds": 3,
}


def test_the_committed_ledger_states_the_four_seed_claims():
    records = load_ledger()
    rows = verdict_rows(records)
    assert [r["claim"] for r in rows] == list(SEED_CLAIMS)
    by_claim = {r["seed_claim"]: r for r in records if "seed_claim" in r}
    for row in rows:  # a verdict, or the reason there is none yet
        record = by_claim[row["claim"]]
        assert record["id"].startswith("probe-")
        assert row["verdict"] != "untested" or "Untested" in record["mechanism"]


@pytest.mark.slow  # the shared-entry bounds to n = 256: a few seconds
def test_the_committed_ledger_is_what_the_rules_give_on_the_committed_results():
    assert json.loads(results.path("claims.json").read_text()) == build_ledger()


@pytest.mark.parametrize(
    "change, message",
    [
        ({"verdict": "maybe"}, "verdict must be one of"),
        ({"seed_claim": "speed"}, "seed_claim must be one of"),
        ({"seeds": 12}, "interval must be given exactly when seeds >= 10"),
        ({"interval": [0.1, 0.2]}, "interval must be given exactly"),
        ({"evidence": {"file": "a.json"}}, "evidence must be"),
        ({"chapter": 0}, "chapter must be an int >= 1"),
        ({"claim": " "}, "claim must be a non-empty str"),
        ({"colour": "red"}, "unknown \\['colour'\\]"),
    ],
)
def test_a_record_that_breaks_the_schema_is_refused(change, message):
    with pytest.raises(ValueError, match=message):
        check_record({**RECORD, **change})


def test_ten_seeds_need_an_interval_and_the_ledger_its_evidence(tmp_path):
    check_record({**RECORD, "seeds": 10, "interval": [0.1, 0.3]})
    with pytest.raises(ValueError, match="interval must be \\[low, high\\]"):
        check_record({**RECORD, "seeds": 10, "interval": [0.3, 0.1]})
    twice = {"schema": 1, "claims": [
        {**RECORD, "seed_claim": "length"},
        {**RECORD, "id": "y", "seed_claim": "length"},
    ]}  # fmt: skip
    with pytest.raises(ValueError, match="each seed_claim once"):
        check_ledger(twice)
    (tmp_path / "text_causal.json").write_text('{"runs": []}')
    with pytest.raises(ValueError, match="evidence keys \\['summary'\\]"):
        check_ledger({"schema": 1, "claims": [RECORD]}, tmp_path)


def test_the_rules_read_the_seeds_they_are_given():
    causal = json.loads(results.path("text_causal.json").read_text())
    gains = length_gains(causal)
    assert set(gains) == set(causal["grid"]["scheme"])
    assert all(len(v) == len(causal["grid"]["seed"]) for v in gains.values())
    kept = kept_advantage(causal)
    assert "none" not in kept
    # a scheme that is none's copy keeps exactly nothing and loses nothing
    cloned = copy.deepcopy(causal)
    for run in [r for r in cloned["runs"] if r["scheme"] == "alibi"]:
        twin = next(
            r
            for r in cloned["runs"]
            if r["scheme"] == "none" and r["seed"] == run["seed"]
        )
        run["eval"] = copy.deepcopy(twin["eval"])
        run["eval"]["1024"]["per_position"] = [
            v - 0.1 for v in twin["eval"]["1024"]["per_position"]
        ]
    assert kept_advantage(cloned)["alibi"] == pytest.approx([1.0] * 3)
