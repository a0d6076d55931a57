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


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_text_speaks_of_the_subject(path):
    for number, source in enumerate(markdown_cells(path)):
        text = _text(source)
        for pattern in TOOLING:
            found = re.search(pattern, text, flags=re.IGNORECASE)
            assert not found, f"{path.name}, markdown cell {number}: {found.group(0)!r}"


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
    cells = markdown_cells(path)
    for pattern, key in WORKS.items():
        for source in cells:
            if re.search(pattern, _text(source)):
                cited = {
                    k.strip()
                    for keys in CITATION.findall(source)
                    for k in keys.split(",")
                }
                assert key in cited, (
                    f"{path.name}: the first cell that mentions {pattern!r} does not "
                    f"cite {key}:\n{source[:300]}"
                )
                break


def test_every_citation_is_in_the_bibliography():
    entries = set(
        re.findall(
            r"^@\w+\{([^,]+),",
            (ROOT / "book" / "references.bib").read_text(),
            flags=re.MULTILINE,
        )
    )
    pages = [p for p in CHAPTERS] + sorted((ROOT / "book").glob("*.md"))
    for path in pages:
        text = path.read_text()
        for keys in CITATION.findall(text):
            for key in keys.split(","):
                assert key.strip() in entries, f"{path.name} cites unknown {key!r}"
