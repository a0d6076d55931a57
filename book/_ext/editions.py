"""The two editions of the site and the PDF: the instructors' and the students'.

The **instructors' edition** is the book as written: every exercise with its
solution (folded away on the site, printed open in the PDF). ``make book`` and
``make pdf`` build it.

The **students' edition** is the same book with every solution taken out, not
hidden: ``RELPOS_EDITION=students`` (``make student-site``, ``make student-pdf``)
makes this extension hand Sphinx each chapter without its solutions
(:func:`without_solutions`):

- the code between nbgrader's ``### BEGIN SOLUTION`` and ``### END SOLUTION``
  becomes nbgrader's stub (``# YOUR CODE HERE`` / ``raise NotImplementedError()``);
  the ``check(...)`` line after the markers stays, so the checks still work;
- a gated solution's Markdown (between ``{solution-start}`` and
  ``{solution-end}``) and the two gates go, so the site shows no "Solution to
  Exercise" toggle and the PDF prints none;
- the outputs of the code cells inside a solution are cleared.

The notebooks the site offers for download (``_sources/``) are written the same
way, and the course plan leaves out the discussion questions' good answers. The
pages have no launch button: it would open the repository's notebook, solutions
and all, on Colab; a student uploads the downloaded notebook there instead.

The transform needs no Sphinx and no nbgrader (the site's environment has
neither requirement): tools/student_edition.py builds the student notebooks
from it too. Sphinx's cache of read pages is per output folder; when one is
reused for the other edition, the pages the edition changes are read again.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import nbformat

ROOT = Path(__file__).resolve().parents[2]
# The environment variable that chooses the edition, and its values.
EDITION_VARIABLE = "RELPOS_EDITION"
EDITIONS = ("instructors", "students")
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
# nbgrader's delimiters, found anywhere in a line
_OPENS, _CLOSES = "BEGIN SOLUTION", "END SOLUTION"
# nbgrader's stub for Python (ClearSolutions.code_stub["python"])
STUB = ("# YOUR CODE HERE", "raise NotImplementedError()")
# The pages whose students' version differs although they hold no solution.
PLAN_PAGES = ("book/instructors",)

# A gated solution's fence with its options: {solution-start} or {solution-end}
GATE = re.compile(
    r"^```\{(?P<kind>solution-start|solution-end)\}[^\n]*\n(?::[^\n]*\n)*```[ \t]*$",
    re.MULTILINE,
)


def edition() -> str:
    """The edition being built: ``RELPOS_EDITION``, ``"instructors"`` by default."""
    chosen = os.environ.get(EDITION_VARIABLE, "").strip() or "instructors"
    if chosen not in EDITIONS:
        raise ValueError(
            f"{EDITION_VARIABLE} must be one of {EDITIONS} (or unset), got {chosen!r}"
        )
    return chosen


def students() -> bool:
    """Whether the students' edition is being built."""
    return edition() == "students"


def stub_solutions(source: str) -> str:
    """``source`` with each ``BEGIN``/``END SOLUTION`` region replaced by the stub,
    indented as its ``BEGIN`` line (what nbgrader's ClearSolutions writes).

    Raises:
        ValueError: a region is opened twice or never closed.
    """
    kept: list[str] = []
    inside = False
    for line in source.split("\n"):
        if _OPENS in line:
            if inside:
                raise ValueError("source: a BEGIN SOLUTION inside another one")
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            kept += [indent + stub for stub in STUB]
        elif _CLOSES in line:
            inside = False
        elif not inside:
            kept.append(line)
    if inside:
        raise ValueError("source: a BEGIN SOLUTION without its END SOLUTION")
    return "\n".join(kept)


def outside_solutions(text: str, in_solution: bool) -> tuple[str, bool]:
    """A Markdown cell's text outside gated solutions; whether one is still open."""
    kept, position = [], 0
    for gate in GATE.finditer(text):
        if not in_solution:
            kept.append(text[position : gate.start()])
        opening = gate.group("kind") == "solution-start"
        if opening == in_solution:
            raise ValueError(f"{gate.group(0).splitlines()[0]} out of order")
        in_solution, position = opening, gate.end()
    if not in_solution:
        kept.append(text[position:])
    return "".join(kept).strip(), in_solution


def without_solutions(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``notebook`` with every solution taken out (a new notebook; the input is
    not changed): solution code stubbed, gated Markdown and its gates dropped,
    the outputs of the code cells inside a solution cleared.

    Raises:
        ValueError: a gate out of order or left open, or a solution region
            opened twice or never closed.
    """
    notebook = nbformat.from_dict(notebook)
    cells, in_solution = [], False
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            text, in_solution = outside_solutions(cell.source, in_solution)
            if text:
                cell.source = text
                cells.append(cell)
            continue
        if cell.cell_type == "code" and BEGIN in cell.source:
            cell.source = stub_solutions(cell.source)
        if cell.cell_type == "code" and in_solution:
            cell.outputs, cell.execution_count = [], None
        cells.append(cell)
    if in_solution:
        raise ValueError("a {solution-start} without its {solution-end}")
    notebook.cells = cells
    return notebook


def has_solutions(text: str) -> bool:
    """Whether a page's source holds a solution (a gate or a solution region)."""
    return BEGIN in text or "{solution-start}" in text


def students_notebook_text(text: str) -> str:
    """A notebook's JSON text, without its solutions, as JSON text."""
    notebook = nbformat.reads(text, as_version=4)
    return nbformat.writes(without_solutions(notebook))


# -- Sphinx ------------------------------------------------------------------------


def _source_read(app: Any, docname: str, source: list[str]) -> None:
    """The students' edition reads each notebook without its solutions."""
    if students() and Path(app.env.doc2path(docname)).suffix == ".ipynb":
        if has_solutions(source[0]):
            source[0] = students_notebook_text(source[0])


def _changed_by_edition(env: Any) -> set[str]:
    """The pages whose students' version differs from the instructors'."""
    changed = {name for name in PLAN_PAGES if name in env.found_docs}
    for name in env.found_docs:
        path = Path(env.doc2path(name))
        if path.suffix == ".ipynb" and has_solutions(path.read_text()):
            changed.add(name)
    return changed


def _outdated(app: Any, env: Any, added: set, changed: set, removed: set) -> list:
    """Pages read by the other edition are read again (Sphinx's cache does not
    know the edition: it is an environment variable, not a setting)."""
    previous = getattr(env, "relpos_edition", "instructors")
    env.relpos_edition = edition()
    if previous == env.relpos_edition:
        return []
    return sorted(_changed_by_edition(env) - added - changed)


def _students_sources(app: Any, error: Exception | None) -> None:
    """The notebooks offered for download (``_sources/``), without solutions."""
    if error is not None or not students() or app.builder.format != "html":
        return
    for name in _changed_by_edition(app.env):
        path = Path(app.env.doc2path(name))
        source = f"{name}{path.suffix}"
        if path.suffix != app.config.html_sourcelink_suffix:
            source += app.config.html_sourcelink_suffix  # as Sphinx names the copy
        target = Path(app.outdir) / "_sources" / source
        if path.suffix == ".ipynb" and target.exists():
            target.write_text(students_notebook_text(path.read_text()))


def _no_launch_buttons(app: Any, config: Any) -> None:
    """The students' pages launch nothing (sphinx-book-theme's launch buttons)."""
    if students():
        config.html_theme_options = {**config.html_theme_options, "launch_buttons": {}}


def setup(app: Any) -> dict[str, Any]:
    edition()  # a misspelt RELPOS_EDITION stops the build at once
    app.connect("config-inited", _no_launch_buttons)
    app.connect("source-read", _source_read)
    app.connect("env-get-outdated", _outdated)
    app.connect("build-finished", _students_sources)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
