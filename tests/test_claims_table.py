"""The claims table: chapter 1's four claims, each with its probe's verdict."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from relpos.book.experiments.verdicts import probes
from relpos.book.results import claims_table, ledger

BOOK = Path(__file__).resolve().parents[1] / "book"
CHAPTER_1 = BOOK / "01_absolute_to_relative.ipynb"


def _records() -> list[dict]:
    found = [probes.pending(p) for p in probes.PROBES]
    found[2] = {**found[2], "verdict": "fails", "seeds": 10,
                "interval": [-0.1087, -0.0005]}
    found.append({"id": "text-length", "verdict": "holds", "seeds": 3})
    return found


def test_one_row_per_claim_in_chapter_1s_words_and_order():
    rows = claims_table.claims_rows(_records())
    assert [r["claim"] for r in rows] == [
        claims_table.CLAIM_WORDS[name] for name in ledger.SEED_CLAIMS]
    assert [r["verdict"] for r in rows] == ["untested", "untested", "fails",
                                             "untested"]
    assert [r["probe"] for r in rows] == [p.id for p in probes.PROBES]
    assert rows[2]["seeds"] == 10
    assert rows[2]["interval"] == (
        "[-0.109, -0.001]: " + probes.interval_of("probe-alignment"))
    assert rows[0]["interval"] == "none yet: the probe has not finished"


def test_the_table_renders_the_rows_and_refuses_a_missing_claim():
    text = claims_table.claims_table(_records())
    lines = text.splitlines()
    assert lines[0] == "| claim | verdict | probe | seeds | interval |"
    assert len(lines) == 6 and "| **fails** | probe-alignment | 10 |" in lines[4]
    with pytest.raises(ValueError, match="missing \\['length'\\]"):
        claims_table.claims_rows([r for r in _records()
                                  if r.get("seed_claim") != "length"])


def test_the_words_are_chapter_1s_and_the_committed_rows_the_ledgers():
    prose = " ".join(c.source for c in nbformat.read(CHAPTER_1, as_version=4).cells
                     if c.cell_type == "markdown")
    prose = re.sub(r"\s+", " ", prose)
    for words in claims_table.CLAIM_WORDS.values():
        assert f"Claim: {words[0].lower()}{words[1:]}" in prose
    records = ledger.load_ledger()
    by_id = {r["id"]: r["verdict"] for r in records}
    for row in claims_table.claims_rows():
        assert row["verdict"] == by_id[row["probe"]]


def test_a_probes_section_renders_its_design_then_its_result():
    design = claims_table.probe_design("probe-alignment", {"OFFSET_TOLERANCE": 0.05})
    assert design.startswith("**Prediction.** If grammar")
    assert "OFFSET_TOLERANCE" not in design and "under 0.05" in design
    assert "**Falsifier.**" in design
    records = _records()
    waiting = claims_table.probe_result("probe-length", records)
    assert "The sweep is under way" in waiting
    records[2]["mechanism"] = "Brackets: fails. " + probes.PROBES[2].mechanism
    shown = claims_table.probe_result("probe-alignment", records)
    assert shown.startswith("**Result: fails**, 10 seeds; interval [-0.109, -0.001]")
    assert shown.endswith("Brackets: fails.")  # the design's mechanism left out
    with pytest.raises(ValueError, match="record_id"):
        claims_table.probe_design("text-length")
