"""The probes' records in the ledger: one per probe, from its result file or
``untested`` with the reason while its sweep has not finished."""

from __future__ import annotations

import shutil

import pytest

from relpos.book import results
from relpos.book.experiments.verdicts import alignment_probe, probes
from relpos.book.results import ledger
from relpos.book.results.build import SOURCES


def _folder(tmp_path, with_alignment: bool):
    (tmp_path / "probes").mkdir()
    if with_alignment:
        shutil.copy(results.path("probes/alignment.json"),
                    tmp_path / "probes" / "alignment.json")
    return tmp_path


def test_without_result_files_every_probe_is_untested_with_its_reason(tmp_path):
    found = probes.records(_folder(tmp_path, with_alignment=False))
    assert [r["seed_claim"] for r in found] == [
        "generalisation", "length", "linguistic", "gradient"]
    for record, probe in zip(found, probes.PROBES):
        assert record["verdict"] == "untested" and record["seeds"] == 0
        assert record["mechanism"].startswith(
            f"Untested: the probe's sweep has not finished: make {probe.target}.")
        assert record["prediction"] == probe.prediction
        assert record["falsifier"] == probe.falsifier
        assert "interval" not in record
    # the ledger accepts a record that awaits its file, and only such a one
    assert ledger.check_ledger({"schema": 1, "claims": found}, tmp_path) == found
    tested = {**found[0], "verdict": "fails", "seeds": 1}
    with pytest.raises(ValueError, match="evidence file probes/positions.json"):
        ledger.check_ledger({"schema": 1, "claims": [tested]}, tmp_path)


def test_a_probe_whose_result_exists_gets_its_rules_record(tmp_path):
    folder = _folder(tmp_path, with_alignment=True)
    found = {r["id"]: r for r in probes.records(folder)}
    record = found[alignment_probe.RECORD_ID]
    result = results.load("probes/alignment.json")
    assert record == alignment_probe.alignment_record(result)
    assert record["seed_claim"] == "linguistic" and record["seeds"] == 10
    assert len(record["interval"]) == 2
    assert "no arm learned agreement at 300 steps" in record["mechanism"]
    others = [r for i, r in found.items() if i != alignment_probe.RECORD_ID]
    assert all(r["verdict"] == "untested" for r in others)
    ledger.check_ledger({"schema": 1, "claims": list(found.values())}, folder)


def test_each_claim_rests_on_its_probe_in_the_committed_ledger():
    records = ledger.load_ledger()
    seeded = {r["seed_claim"]: r["id"] for r in records if "seed_claim" in r}
    assert seeded == {p.seed_claim: p.id for p in probes.PROBES}
    assert probes in SOURCES
    for old in ("text-generalisation", "text-length", "text-linguistic",
                "text-gradient"):
        assert old in {r["id"] for r in records}  # kept, as what it measures
    with pytest.raises(ValueError, match="probe's record"):
        probes.interval_of("text-length")
    assert "minimal pairs" in probes.interval_of("probe-alignment-1000-steps")


@pytest.mark.slow  # the whole ledger built twice: about 20 s
def test_the_whole_build_with_and_without_a_probes_result(tmp_path):
    from relpos.book.results.build import FOLDER, build_ledger

    folder = tmp_path / "results"
    shutil.copytree(FOLDER, folder, ignore=shutil.ignore_patterns("runs", "*.py",
                                                                 "__pycache__"))
    built = {r["id"]: r for r in build_ledger(folder)["claims"]}
    committed = {r["id"]: r for r in ledger.load_ledger()}
    assert built == committed
    (folder / "probes" / "alignment.json").unlink()
    without = {r["id"]: r for r in build_ledger(folder)["claims"]}
    assert without["probe-alignment"]["verdict"] == "untested"
    assert "make probe-alignment" in without["probe-alignment"]["mechanism"]
    assert {i: r for i, r in without.items() if i != "probe-alignment"} == {
        i: r for i, r in built.items() if i != "probe-alignment"}
