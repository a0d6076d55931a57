"""The chapters read as a book: prose on the subject, code that fits, citations.

- The text of a chapter speaks of the subject, not of the project's tooling or
  machines (the instructors' page is where the tooling is explained).
- No code line is longer than 88 characters; nbval is steered by cell tags, never
  by ``# NBVAL_*`` comments a reader would see.
- The first mention of a cited work in a chapter carries its citation.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "book").glob("*.ipynb"))
# The numbered chapters; an appendix page may speak of how its numbers were made.
NUMBERED = [path for path in CHAPTERS if path.name[:2].isdigit()]
MAX_LINE = 88

# Tooling talk that has no place in a chapter's text (case-insensitive).
TOOLING = [
    r"\bour notes\b",
    r"\bfact sheet\b",
    r"\bthis machine\b",
    r"\bthese machines\b",
    r"\bbook's machines\b",
    r"\bthe machines that build\b",
    r"\bnbval\b",
    r"\bthe tests\b",
    r"\bthe book's tests\b",
    r"\btest suite\b",
    r"\bthe library's tests\b",
    r"\bmake test\b",
    r"\bcommitted\b",
]

# The first mention of each work in a chapter's text must cite it in the same cell.
WORKS = {
    r"\bBERT\b": "devlin2019bert",
    r"`transformers`": "wolf2020transformers",
    r"microsoft/DeBERTa": "microsoft2020deberta",
    r"\bFlexAttention\b": "dong2024flexattention",
    r"\bT5\b": "raffel2020t5",
    r"\bTransformer-XL\b": "dai2019transformerxl",
    r"\bALiBi\b": "press2022alibi",
    r"\bRoFormer\b|\brotary\b": "su2021roformer",
    r"\bShaw\b": "shaw2018relative",
    r"\boriginal Transformer\b": "vaswani2017attention",
    r"\bDeBERTa paper\b": "he2021deberta",
}
CITATION = re.compile(r"\{cite(?::[pt])?\}`([\w:.-]+(?:,\s*[\w:.-]+)*)`")


def markdown_cells(path: Path) -> list[str]:
    notebook = nbformat.read(path, as_version=4)
    return [cell.source for cell in notebook.cells if cell.cell_type == "markdown"]


def code_cells(path: Path) -> list[nbformat.NotebookNode]:
    notebook = nbformat.read(path, as_version=4)
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def _text(markdown: str) -> str:
    """Prose only: without math, links' targets and citation keys."""
    markdown = re.sub(r"\$\$.*?\$\$", " ", markdown, flags=re.DOTALL)
    markdown = re.sub(r"\$[^$\n]*\$", " ", markdown)
    markdown = re.sub(r"\]\([^)]*\)", "]", markdown)
    return CITATION.sub(" ", markdown)


def tooling_talk(markdown: str) -> list[str]:
    """The tooling phrases in a markdown cell's prose."""
    text = _text(markdown)
    return [
        found.group(0)
        for pattern in TOOLING
        if (found := re.search(pattern, text, flags=re.IGNORECASE))
    ]


def cited_keys(markdown: str) -> set[str]:
    return {k.strip() for keys in CITATION.findall(markdown) for k in keys.split(",")}


def uncited_first_mentions(cells: list[str]) -> list[str]:
    """The works whose first mention (the first cell naming them) does not cite them."""
    missing = []
    for pattern, key in WORKS.items():
        first = next((c for c in cells if re.search(pattern, _text(c))), None)
        if first is not None and key not in cited_keys(first):
            missing.append(f"{key}: {first[:300]}")
    return missing


@pytest.mark.parametrize("path", NUMBERED, ids=lambda p: p.stem)
def test_chapter_text_speaks_of_the_subject(path):
    for number, source in enumerate(markdown_cells(path)):
        found = tooling_talk(source)
        assert not found, f"{path.name}, markdown cell {number}: {found}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_code_lines_fit_the_page(path):
    for number, cell in enumerate(code_cells(path)):
        for line in cell.source.splitlines():
            assert len(line) <= MAX_LINE, f"{path.name}, code cell {number}: {line!r}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_nbval_is_steered_by_tags_not_comments(path):
    allowed = {"nbval-ignore-output", "nbval-skip", "nbval-raises-exception"}
    for number, cell in enumerate(code_cells(path)):
        assert "NBVAL_" not in cell.source, f"{path.name}, code cell {number}"
        tags = set(cell.metadata.get("tags", []))
        unknown = {t for t in tags if t.startswith("nbval")} - allowed
        assert not unknown, f"{path.name}, code cell {number}: {unknown}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_first_mention_of_a_work_cites_it(path):
    missing = uncited_first_mentions(markdown_cells(path))
    assert not missing, f"{path.name}: a first mention without its citation:\n" + (
        "\n".join(missing)
    )


def test_the_rules_catch_what_they_are_for():
    """Each rule trips on a planted cell and lets the same cell, put right, pass."""
    planted = "As **our notes** show, nbval runs it."
    assert tooling_talk(planted) == ["our notes", "nbval"]
    assert tooling_talk("$our notes$ is math, [a](our_notes.md) a link.") == []
    cells = ["Unlike BERT, the model reads $i - j$.", "BERT {cite:p}`devlin2019bert`."]
    assert uncited_first_mentions(cells) == [f"devlin2019bert: {cells[0]}"]
    cited = ["Unlike BERT {cite:p}`vaswani2017attention, devlin2019bert`.", "BERT."]
    assert uncited_first_mentions(cited) == []
    assert cited_keys("{cite:t}`a2020, b.c-2` and {cite}`d`") == {"a2020", "b.c-2", "d"}


def test_every_work_is_mentioned_and_citations_are_found():
    """The citation rules have something to check: each work appears in a chapter."""
    mentioned = {
        key
        for path in CHAPTERS
        for source in markdown_cells(path)
        for pattern, key in WORKS.items()
        if re.search(pattern, _text(source))
    }
    assert mentioned == set(WORKS.values())
    assert sum(len(CITATION.findall(path.read_text())) for path in CHAPTERS) >= 20


def test_every_citation_is_in_the_bibliography():
    entries = set(
        re.findall(
            r"^@\w+\{([^,]+),",
            (ROOT / "book" / "references.bib").read_text(),
            flags=re.MULTILINE,
        )
    )
    assert set(WORKS.values()) <= entries
    pages = [p for p in CHAPTERS] + sorted((ROOT / "book").glob("*.md"))
    for path in pages:
        text = path.read_text()
        for keys in CITATION.findall(text):
            for key in keys.split(","):
                assert key.strip() in entries, f"{path.name} cites unknown {key!r}"
