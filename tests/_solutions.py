"""What counts as a chapter's solution text, for the tests of the students' edition."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "book" / "_ext"))

import editions  # noqa: E402

LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")


def solution_passages(notebook: nbformat.NotebookNode) -> dict[str, list[str]]:
    """The lines of a chapter's solutions that appear nowhere else in it, by kind:
    ``"code"``, the code between the markers (lines of 20 characters or more), and
    ``"markdown"``, the worked answers between the gates (lines of 8 words or more,
    links as their text)."""
    code, markdown, inside = [], [], False
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            for piece in editions.GATE.split(cell.source):
                if piece in ("solution-start", "solution-end"):
                    inside = piece == "solution-start"
                elif inside:
                    markdown += [LINK.sub(r"\1", line) for line in piece.splitlines()]
        elif editions.BEGIN in cell.source:
            region = cell.source.split(editions.BEGIN)[1].split(editions.END)[0]
            code += region.splitlines()
    students = editions.without_solutions(notebook)
    kept = "\n".join(c.source for c in students.cells) + nbformat.writes(students)
    return {
        "code": [
            line.strip()
            for line in code
            if len(line.strip()) >= 20 and line.strip() not in kept
        ],
        "markdown": [
            line.strip()
            for line in markdown
            if len(words(line).split()) >= 8 and line.strip() not in kept
        ],
    }


def words(text: str) -> str:
    """``text`` as its lower-case words and numbers, one space apart (so that
    Markdown, math and rendered HTML compare alike)."""
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())
