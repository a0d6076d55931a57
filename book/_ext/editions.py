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
and all, on Colab; a student uploads the downloaded notebook there instead. For the
same reason the students' site has no repository, issues or edit button and no
repository URL in its theme, and it has no instructors' page
(:data:`INSTRUCTOR_PAGES`): the table of contents it reads is ``_toc.yml`` without
them (:func:`students_toc`), written into the build's doctree folder, and the pages
themselves are excluded.

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
# The pages the students' edition leaves out altogether.
INSTRUCTOR_PAGES = ("book/instructors",)
# The theme's buttons that link to the repository (sphinx-book-theme's options).
REPOSITORY_BUTTONS = (
    "use_repository_button",
    "use_issues_button",
    "use_edit_page_button",
    "use_source_button",
)

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
    """The students' edition reads each notebook without its solutions, and each
    page's links to an instructors' page as their plain text."""
    if students() and Path(app.env.doc2path(docname)).suffix == ".ipynb":
        if has_solutions(source[0]):
            source[0] = students_notebook_text(source[0])
    if students() and Path(app.env.doc2path(docname)).suffix == ".md":
        source[0] = without_instructor_links(source[0])


def _instructor_link(docname: str) -> re.Pattern[str]:
    """A Markdown link to an instructors' page, from a page in the same folder."""
    name = re.escape(Path(docname).name)
    return re.compile(rf"\[(?P<text>[^\]]+)\]\({name}\.md(?:#[\w-]+)?\)")


def without_instructor_links(text: str) -> str:
    """``text`` with every link to an instructors' page replaced by its words."""
    for page in INSTRUCTOR_PAGES:
        text = _instructor_link(page).sub(lambda m: m["text"], text)
    return text


def _changed_by_edition(env: Any) -> set[str]:
    """The pages whose students' version differs from the instructors'."""
    changed = {name for name in PLAN_PAGES if name in env.found_docs}
    for name in env.found_docs:
        path = Path(env.doc2path(name))
        if path.suffix == ".ipynb" and has_solutions(path.read_text()):
            changed.add(name)
        if path.suffix == ".md":
            text = path.read_text()
            if without_instructor_links(text) != text:
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
    # a folder that held the instructors' edition keeps their pages' files: remove them
    for page in INSTRUCTOR_PAGES:
        for stale in (
            Path(app.outdir) / f"{page}.html",
            Path(app.outdir) / "_sources" / f"{page}.md",
            Path(app.outdir) / "_sources" / f"{page}.md.txt",
        ):
            stale.unlink(missing_ok=True)


def students_toc(toc: dict[str, Any]) -> dict[str, Any]:
    """A table of contents (``_toc.yml`` as read) without :data:`INSTRUCTOR_PAGES`;
    a part left with no chapter goes too."""

    def keep(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [e for e in entries if e.get("file") not in INSTRUCTOR_PAGES]

    found = dict(toc)
    if "chapters" in found:
        found["chapters"] = keep(found["chapters"])
    if "parts" in found:
        parts = [
            {**part, "chapters": keep(part["chapters"])} for part in found["parts"]
        ]
        found["parts"] = [part for part in parts if part["chapters"]]
    return found


def _no_launch_buttons(app: Any, config: Any) -> None:
    """The students' pages launch nothing (sphinx-book-theme's launch buttons) and
    link nowhere in the repository; the instructors' pages are left out."""
    if not students():
        return
    options = {**config.html_theme_options, "launch_buttons": {}, "repository_url": ""}
    options.update({button: False for button in REPOSITORY_BUTTONS})
    config.html_theme_options = options
    import yaml

    toc = Path(app.srcdir) / str(getattr(config, "external_toc_path", "_toc.yml"))
    if toc.is_file():
        target = Path(app.doctreedir) / "students_toc.yml"
        target.parent.mkdir(parents=True, exist_ok=True)
        edited = students_toc(yaml.safe_load(toc.read_text()))
        target.write_text(yaml.safe_dump(edited, sort_keys=False))
        config.external_toc_path = str(target)
    config.exclude_patterns = list(config.exclude_patterns) + [
        f"{page}.md" for page in INSTRUCTOR_PAGES
    ]


def setup(app: Any) -> dict[str, Any]:
    edition()  # a misspelt RELPOS_EDITION stops the build at once
    app.connect("config-inited", _no_launch_buttons)
    app.connect("source-read", _source_read)
    app.connect("env-get-outdated", _outdated)
    app.connect("build-finished", _students_sources)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
