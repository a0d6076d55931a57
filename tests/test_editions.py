"""The students' edition's transform (book/_ext/editions.py), without building a site.

Every chapter loses every solution (code stubbed as nbgrader stubs it, worked
answers and their gates dropped) and keeps its exercises and check calls; the
Sphinx hooks change nothing in the instructors' edition and make Sphinx read
again the pages a change of edition changes. tests/site/test_students_site.py
reads the built students' site.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import editions  # noqa: E402
from _solutions import solution_passages  # noqa: E402

CHAPTERS = sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb"))
CHECK = re.compile(r"""check\(\s*["'](ch\d+-ex\d+)["']""")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_solution_goes_and_every_check_stays(chapter):
    original = nbformat.read(chapter, as_version=4)
    students = editions.without_solutions(original)
    text = "\n".join(cell.source for cell in students.cells)
    assert "SOLUTION" not in text and "{solution-" not in text
    source = "\n".join(cell.source for cell in original.cells)
    assert CHECK.findall(text) == CHECK.findall(source) != []
    assert text.count("{exercise}") == source.count("{exercise}") >= 2
    regions = source.count(editions.BEGIN)
    assert text.count("\n".join(editions.STUB)) == regions
    passages = solution_passages(original)
    assert len(passages["code"]) >= regions, "each solution has lines of its own"
    assert not [p for p in passages["code"] + passages["markdown"] if p in text]
    assert original.cells == nbformat.read(chapter, as_version=4).cells  # unchanged


def test_the_stub_is_the_one_nbgrader_writes():
    from nbgrader.preprocessors import ClearSolutions

    clear = ClearSolutions(enforce_metadata=False)
    compared = 0
    for chapter in CHAPTERS:
        for cell in nbformat.read(chapter, as_version=4).cells:
            if cell.cell_type == "code" and editions.BEGIN in cell.source:
                theirs, _ = clear.preprocess_cell(
                    nbformat.from_dict(cell), {"language": "python"}, 0
                )
                assert editions.stub_solutions(cell.source) == theirs.source
                compared += 1
    indented = "def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION"
    theirs, _ = clear.preprocess_cell(
        nbformat.v4.new_code_cell(indented), {"language": "python"}, 0
    )
    assert editions.stub_solutions(indented) == theirs.source
    assert "    raise NotImplementedError()" in theirs.source
    assert compared >= 30


def test_a_broken_solution_is_refused():
    with pytest.raises(ValueError, match="inside another"):
        editions.stub_solutions("### BEGIN SOLUTION\n### BEGIN SOLUTION\n")
    with pytest.raises(ValueError, match="without its END"):
        editions.stub_solutions("### BEGIN SOLUTION\nx = 1")
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell("```{solution-start} ch1-ex1\n```")]
    )
    with pytest.raises(ValueError, match="without its"):
        editions.without_solutions(notebook)
    notebook.cells[0].source = "```{solution-end}\n```"
    with pytest.raises(ValueError, match="out of order"):
        editions.without_solutions(notebook)


def test_the_edition_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(editions.EDITION_VARIABLE, raising=False)
    assert editions.edition() == "instructors" and not editions.students()
    monkeypatch.setenv(editions.EDITION_VARIABLE, "students")
    assert editions.students()
    monkeypatch.setenv(editions.EDITION_VARIABLE, "student")
    with pytest.raises(ValueError, match="RELPOS_EDITION must be one of"):
        editions.edition()


def fake_app(found: list[str]) -> SimpleNamespace:
    """What the hooks read of Sphinx: the pages and where their sources are."""

    def doc2path(name: str, base: bool = True) -> str:
        matches = sorted(ROOT.glob(f"{name}.*"))
        return str(matches[0])

    env = SimpleNamespace(found_docs=set(found), doc2path=doc2path)
    return SimpleNamespace(env=env)


def test_sphinx_reads_the_students_chapter_only_in_their_edition(monkeypatch):
    chapter = CHAPTERS[1]
    app = fake_app([f"book/{chapter.stem}"])
    text = chapter.read_text()
    monkeypatch.delenv(editions.EDITION_VARIABLE, raising=False)
    source = [text]
    editions._source_read(app, f"book/{chapter.stem}", source)
    assert source == [text]
    monkeypatch.setenv(editions.EDITION_VARIABLE, "students")
    editions._source_read(app, f"book/{chapter.stem}", source)
    assert "BEGIN SOLUTION" in text and "BEGIN SOLUTION" not in source[0]
    assert CHECK.findall(source[0]) == CHECK.findall(text)


def test_a_change_of_edition_reads_the_changed_pages_again(monkeypatch):
    pages = [f"book/{p.stem}" for p in CHAPTERS] + ["book/intro", "book/instructors"]
    pages += ["book/appendix_sweeps"]  # a notebook without exercises
    app = fake_app(pages)
    monkeypatch.setenv(editions.EDITION_VARIABLE, "students")
    changed = editions._outdated(app, app.env, set(), {"book/intro"}, set())
    expected = {f"book/{p.stem}" for p in CHAPTERS} | {"book/instructors"}
    assert set(changed) == expected  # intro is read anyway; the appendix unchanged
    assert editions._outdated(app, app.env, set(), set(), set()) == []
    monkeypatch.delenv(editions.EDITION_VARIABLE)
    assert set(editions._outdated(app, app.env, set(), set(), set())) == expected
