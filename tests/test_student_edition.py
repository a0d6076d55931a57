"""The student edition (make student): solutions out, checks in, the rest kept."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import student_edition  # noqa: E402

CHAPTERS = sorted((ROOT / "book").glob("*.ipynb"))


@pytest.fixture(scope="module")
def edition(tmp_path_factory) -> Path:
    output = tmp_path_factory.mktemp("student")
    written = student_edition.write_edition(output)
    assert [p.name for p in written] == [p.name for p in CHAPTERS]
    return output


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_solutions_are_out_and_checks_are_in(edition, chapter):
    original = nbformat.read(chapter, as_version=4)
    student = nbformat.read(edition / chapter.name, as_version=4)
    text = "\n".join(cell.source for cell in student.cells)
    assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text
    assert "{solution-start}" not in text and "{solution-end}" not in text
    assert "{exercise}" not in text and "{cite" not in text
    # the self-check's questions, written out, with their answers collapsed
    assert "{self-check}" not in text
    is_chapter = chapter.name[:2].isdigit()  # not an appendix page
    assert text.count("<details><summary>Answers</summary>") == int(is_chapter)

    def checks(notebook) -> list[str]:
        return re.findall(
            r"check\(\s*\"(ch\d+-ex\d+)\"",
            "\n".join(
                cell.source for cell in notebook.cells if cell.cell_type == "code"
            ),
        )

    assert checks(student) == checks(original)
    solved = [
        c
        for c in original.cells
        if c.cell_type == "code" and "BEGIN SOLUTION" in c.source
    ]
    stubs = [
        c
        for c in student.cells
        if c.cell_type == "code" and "YOUR CODE HERE" in c.source
    ]
    assert len(stubs) == len(solved)
    for cell in stubs:
        assert "raise NotImplementedError()" in cell.source
        assert cell.outputs == [] and cell.execution_count is None
    exercises = sum("{exercise}" in c.source for c in original.cells)
    numbered = re.findall(r"\*\*Exercise \d+\.\d+\.\*\*", text)
    assert len(numbered) == exercises


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_the_chapter_text_and_outputs_stay(edition, chapter):
    original = nbformat.read(chapter, as_version=4)
    student = nbformat.read(edition / chapter.name, as_version=4)
    first_exercise = next(
        (i for i, c in enumerate(original.cells) if "{exercise}" in c.source),
        len(original.cells),
    )
    for before, after in zip(original.cells[:first_exercise], student.cells):
        assert before.cell_type == after.cell_type
        if before.cell_type == "code":
            assert before.source == after.source
            assert stills(before.outputs) == after.outputs


def stills(outputs: list) -> list:
    """The outputs as students get them: an interactive figure's HTML dropped."""
    kept = nbformat.from_dict(outputs)
    for output in kept:
        if student_edition.INTERACTIVE in output.get("metadata", {}):
            output.data.pop("text/html")
    return kept


def test_citations_read_as_author_and_year(edition):
    text = (edition / "02_delta.ipynb").read_text()
    assert "DeBERTa (He et al., 2021)" in text


def test_an_unclosed_solution_is_refused():
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_markdown_cell(
            "```{solution-start} ch1-ex1\n:class: dropdown\n```"
        ),
        nbformat.v4.new_code_cell("### BEGIN SOLUTION\nx = 1\n### END SOLUTION"),
    ]
    with pytest.raises(ValueError, match="without its"):
        student_edition.student_notebook(notebook, {})


def test_interactive_figures_keep_only_their_still():
    """Jupyter shows an interactive figure's still: its website HTML is dropped."""
    output = nbformat.v4.new_output(
        "display_data",
        data={
            "text/html": '<figure class="relpos-interactive">...</figure>',
            "image/png": "iVBORw0KGgo=",
            "text/plain": "A matrix.",
        },
        metadata={student_edition.INTERACTIVE: "delta"},
    )
    plain = nbformat.v4.new_output(
        "display_data", data={"text/html": "<b>a table</b>", "text/plain": "a table"}
    )
    cell = nbformat.v4.new_code_cell("figure", outputs=[output, plain])
    notebook = nbformat.v4.new_notebook(cells=[cell])
    student = student_edition.student_notebook(notebook, citations={})
    kept, other = student.cells[0].outputs
    assert set(kept.data) == {"image/png", "text/plain"}
    assert set(other.data) == {"text/html", "text/plain"}  # only figures lose HTML
    assert "text/html" in notebook.cells[0].outputs[0].data  # the input is unchanged


def test_the_chapters_interactive_figures_reach_students_as_stills(edition):
    figures = 0
    for chapter in CHAPTERS:
        student = nbformat.read(edition / chapter.name, as_version=4)
        for cell in student.cells:
            for output in cell.get("outputs", []):
                if student_edition.INTERACTIVE in output.get("metadata", {}):
                    figures += 1
                    assert "text/html" not in output.data
                    assert "image/png" in output.data
    assert figures >= 6, f"{figures} interactive figures in the student edition"
