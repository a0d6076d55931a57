"""The students' edition (make student-site, make student-pdf) holds no solution.

Built once per session from the instructors' site that the other site tests
build (``built_site``): its Sphinx cache and pages are copied to _build/students/
and the students' edition is built there (RELPOS_EDITION=students, warnings as
errors). The copied cache does not yet save the reading: the edition changes
Sphinx's configuration (book/_ext/editions.py sets ``exclude_patterns``), so
Sphinx reads every page again (about 24 s of CPU). Its LaTeX is then written from
the students' cache (not typeset: xelatex adds nothing to what the LaTeX holds).

Every line of every solution (tests/_solutions.py) is in the instructors' page
and in none of the students'; the students' pages have no solution toggle, the
same exercises and the same ``check(...)`` calls, and the notebooks they offer
for download have no solution either.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from _solutions import solution_passages, words

ROOT = Path(__file__).resolve().parents[2]
STUDENTS = ROOT / "_build" / "students" / "_build"
CHAPTERS = sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb"))
CHECK = re.compile(r"""check\(\s*["'](ch\d+-ex\d+)["']""")


def build(builder: str) -> str:
    """Build the students' edition with ``builder``; the log."""
    command = [
        str(Path(sys.executable).parent / "jupyter-book"),
        "build",
        ".",
        "--path-output",
        str(STUDENTS.parent),
        "--builder",
        builder,
        "-W",
        "-n",
        "--keep-going",
    ]
    env = {**os.environ, "RELPOS_EDITION": "students"}
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env)
    log = result.stdout + result.stderr
    failed = f"the students' {builder} build failed:\n{log[-6000:]}"
    assert result.returncode == 0, failed
    assert "WARNING" not in log, log[-6000:]
    return log


@pytest.fixture(scope="session")
def students_site(built_site) -> Path:
    shutil.rmtree(STUDENTS.parent, ignore_errors=True)
    cache = built_site.parent / ".doctrees"
    if cache.is_dir():  # else the students' build reads every page
        shutil.copytree(cache, STUDENTS / ".doctrees")
        shutil.copytree(built_site, STUDENTS / "html")
    build("html")
    return STUDENTS / "html"


@pytest.fixture(scope="session")
def students_latex(students_site) -> str:
    build("latex")
    return (STUDENTS / "latex" / "relpos-book.tex").read_text()


# Pygments' escapes in LaTeX: \PYGZus{} is "_", and so on.
ESCAPES = dict(
    bs="\\", ob="{", cb="}", ca="^", am="&", lt="<", gt=">", sh="#", pc="%", dl="$",
    hy="-", sq="'", dq='"', ti="~", us="_", at="@", lb="[", rb="]",
)


def latex_code(tex: str) -> str:
    """LaTeX with its highlighted code as plain text, white space collapsed."""
    tex = re.sub(r"\\PYG\{[^{}]*\}\{", "", tex)  # a token's colour
    tex = re.sub(r"\\PYGZ([a-z]{2})\{\}", lambda m: "\0" + m.group(1), tex)
    tex = tex.replace("}", "")
    tex = re.sub("\0([a-z]{2})", lambda m: ESCAPES.get(m.group(1), "?"), tex)
    return " ".join(tex.split())


def sources(chapter: Path) -> str:
    """The text of a notebook's cells (not its JSON)."""
    notebook = nbformat.read(chapter, as_version=4)
    return "\n".join(cell.source for cell in notebook.cells)


def text_of(page: Path) -> str:
    """A page's text: scripts out, tags out, entities decoded."""
    source = re.sub(r"<script\b.*?</script>", "", page.read_text(), flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", source))


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_no_solution_on_a_students_page(chapter, built_site, students_site):
    page = f"book/{chapter.stem}.html"
    theirs, ours = text_of(students_site / page), text_of(built_site / page)
    passages = solution_passages(nbformat.read(chapter, as_version=4))
    assert passages["code"], chapter.name
    for line in passages["code"]:
        assert line in ours, f"the instructors' page lacks {line!r}"
        assert line not in theirs, f"{page} shows the solution line {line!r}"
    for line in passages["markdown"]:
        assert words(line) in words(ours), f"the instructors' page lacks {line!r}"
        assert words(line) not in words(theirs), f"{page} shows {line!r}"
    # no toggle, and the exercises and their checks as in the book
    source = (students_site / page).read_text()
    assert 'class="solution' in (built_site / page).read_text()
    assert 'class="solution' not in source and "Solution to" not in theirs
    assert source.count('class="exercise') == sources(chapter).count("{exercise}")
    assert CHECK.findall(theirs) == CHECK.findall(ours) != []
    stubs = theirs.count("raise NotImplementedError()")
    assert stubs == sources(chapter).count("### BEGIN SOLUTION") >= 2
    # no launch button opens the repository's notebook, solutions and all
    assert "colab.research.google.com" in (built_site / page).read_text()
    assert "colab.research.google.com" not in source


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_the_downloadable_notebook_has_no_solution(chapter, students_site):
    offered = students_site / "_sources" / "book" / chapter.name
    notebook = nbformat.reads(offered.read_text(), as_version=4)
    text = "\n".join(cell.source for cell in notebook.cells)
    assert "SOLUTION" not in text and "{solution-" not in text
    assert CHECK.findall(text) == CHECK.findall(sources(chapter)) != []
    outputs = json.dumps([cell.get("outputs", []) for cell in notebook.cells])
    for line in solution_passages(nbformat.read(chapter, as_version=4))["code"]:
        assert line not in text and line not in outputs, line


def test_the_students_plan_has_no_good_answers(built_site, students_site):
    # The discussion questions' good answers stand on the instructors' page, which
    # the students' site leaves out: no page of it holds one.
    page = "book/instructors.html"
    assert text_of(built_site / page).count("A good answer") >= 12
    assert not (students_site / page).exists()
    pages = sorted(students_site.rglob("*.html"))
    assert len(pages) > 20
    assert [p.name for p in pages if "A good answer" in text_of(p)] == []


def test_the_students_latex_prints_no_solution(students_latex):
    kept = latex_code(students_latex)
    book = "\n".join(sources(chapter) for chapter in CHAPTERS)
    code = [
        (chapter.name, " ".join(line.split()))
        for chapter in CHAPTERS
        for line in solution_passages(nbformat.read(chapter, as_version=4))["code"]
    ]
    # a line that is also on another page (a chapter, a page, a docstring) is
    # printed there
    pages = sorted((ROOT / "book").glob("*.md"))
    pages += sorted((ROOT / "relpos").rglob("*.py"))
    everything = " ".join((book + "".join(p.read_text() for p in pages)).split())
    code = [(name, line) for name, line in code if everything.count(line) == 1]
    assert len(code) >= 150
    for name, line in code:
        assert line not in kept, (name, line)
    # sphinx-exercise prints a solution as an admonition with this title
    assert "{Solution to Exercise" not in students_latex
    assert "-solution-" not in students_latex  # nor its label
    assert kept.count("raise NotImplementedError()") >= book.count("### BEGIN SOLUTION")
    for call in re.findall(r"^check\(.*\)$", book, re.M):
        assert call in kept, call  # the code that stays reads as code
