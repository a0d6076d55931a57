"""Chapters 9, 10, 12 and 13 state only verdicts the ledger holds, and cite theirs.

A paragraph that states a trained verdict is followed by a hidden cell (tagged
``remove-cell``) with ``assert not ledger.disagreements({"record-id": "verdict",
...})``: the chapter's own word for each record it rests on. Read here without
running the notebooks:

- every cited id is a record of the ledger, and its verdict is the one stated;
- each citing cell follows the paragraph it vouches for, and every explicit
  verdict word of that paragraph (confirmed, refuted, qualified, untested, not
  isolated, never measured) is the verdict of one of the records it cites;
- every record of chapter 9, 10, 12 or 13 is cited in its own chapter (chapter 12
  also cites the first-pass records it sets its own beside);
- each chapter's verdict table (a ``remove-input`` cell calling ``verdict_rows``
  for the chapter) is stored with an output that gives every record of the
  chapter its ledger verdict.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest

from relpos.book.results.ledger import load_ledger

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = {
    9: ROOT / "book" / "09_relative_positions_at_work.ipynb",
    10: ROOT / "book" / "10_testing_debertas_design.ipynb",
    12: ROOT / "book" / "12_verdicts_that_survive.ipynb",
    13: ROOT / "book" / "13_distances_that_grow.ipynb",
}
#: Words that state a verdict outright, and the verdict each states.
EXPLICIT = {
    r"\bconfirmed\b": "holds",
    r"\brefuted\b": "fails",
    r"\bqualified\b": "qualified",
    r"\buntested\b": "untested",
    r"\bnot (?:yet )?isolated\b": "untested",
    r"\bnever measured\b": "untested",
}


def stated(source: str) -> dict[str, str] | None:
    """The ``{id: verdict}`` a cell passes to ``disagreements``, or None."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", getattr(node.func, "id", None))
            if name == "disagreements":
                return ast.literal_eval(node.args[0])
    return None


def citations(path: Path) -> list[tuple[str, dict[str, str], list[str]]]:
    """Per citing cell: the markdown before it, its ``{id: verdict}``, its tags."""
    cells = nbformat.read(path, as_version=4).cells
    found = []
    for before, cell in zip(cells, cells[1:]):
        if cell.cell_type != "code" or "disagreements(" not in cell.source:
            continue
        text = before.source if before.cell_type == "markdown" else ""
        found.append((text, stated(cell.source), cell.metadata.get("tags", [])))
    return found


def explicit_verdicts(markdown: str) -> set[str]:
    """The verdicts a paragraph states in so many words."""
    text = markdown.lower()
    return {verdict for word, verdict in EXPLICIT.items() if re.search(word, text)}


def wrong_citations(
    found: list[tuple[str, dict[str, str], list[str]]], records: list[dict]
) -> list[str]:
    """What is wrong with a chapter's ``citations`` (empty: nothing)."""
    verdicts = {r["id"]: r["verdict"] for r in records}
    problems = []
    for markdown, cited, tags in found:
        if not markdown:
            problems.append(f"a citing cell does not follow a paragraph: {cited}")
        if "remove-cell" not in tags:
            problems.append(f"a citing cell is not hidden: {cited}")
        for record_id, verdict in cited.items():
            if record_id not in verdicts:
                problems.append(f"{record_id}: no such record")
            elif verdicts[record_id] != verdict:
                problems.append(f"{record_id}: the chapter says {verdict}, the "
                                f"ledger {verdicts[record_id]}")
        unbacked = explicit_verdicts(markdown) - set(cited.values())
        if unbacked:
            problems.append(f"a paragraph says {sorted(unbacked)} and cites only "
                            f"{sorted(set(cited.values()))}: {markdown[:60]!r}")
    return problems


@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_every_verdict_a_chapter_cites_is_the_ledgers(chapter):
    found = citations(CHAPTERS[chapter])
    assert found, "the chapter cites no record"
    assert wrong_citations(found, load_ledger()) == []


@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_every_record_of_a_chapter_is_cited_there(chapter):
    cited = {i for _, ids, _ in citations(CHAPTERS[chapter]) for i in ids}
    own = {r["id"] for r in load_ledger() if r["chapter"] == chapter}
    assert own and own <= cited, sorted(own - cited)


@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_the_chapters_verdict_table_is_the_ledgers(chapter):
    cells = nbformat.read(CHAPTERS[chapter], as_version=4).cells
    tables = [
        c for c in cells
        if c.cell_type == "code"
        and re.search(rf"verdict_rows\(.*chapter={chapter}\)", c.source)
    ]
    assert len(tables) == 1 and "remove-input" in tables[0].metadata.get("tags", [])
    shown = "\n".join(
        "".join(output.get("data", {}).get("text/markdown", ""))
        for output in tables[0].outputs
    )
    rows = dict(re.findall(r"^\| `([\w-]+)` \|.*\| \*\*(\w+)\*\* \|", shown, re.M))
    own = {r["id"]: r["verdict"] for r in load_ledger() if r["chapter"] == chapter}
    assert rows == own


def test_the_checks_catch_what_they_are_for():
    records = [{"id": "a", "verdict": "holds"}, {"id": "b", "verdict": "untested"}]
    fine = [("A holds; why is not isolated.", {"a": "holds", "b": "untested"},
             ["remove-cell"])]
    assert wrong_citations(fine, records) == []
    for found, problem in [
        ([("A holds.", {"a": "fails"}, ["remove-cell"])], "the ledger holds"),
        ([("A holds.", {"c": "holds"}, ["remove-cell"])], "no such record"),
        ([("A holds.", {"a": "holds"}, [])], "not hidden"),
        ([("", {"a": "holds"}, ["remove-cell"])], "does not follow a paragraph"),
        ([("Confirmed, and refuted.", {"a": "holds"}, ["remove-cell"])],
         "says ['fails']"),
    ]:
        assert any(problem in p for p in wrong_citations(found, records)), problem
    assert explicit_verdicts("Qualified: confirmed here, not yet isolated there.") == {
        "qualified", "holds", "untested"}
    assert stated('assert not ledger.disagreements({"a": "holds"})') == {"a": "holds"}
    assert stated("x = 1") is None
