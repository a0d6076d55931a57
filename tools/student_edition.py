"""Write the student edition: every chapter notebook without its solutions.

Usage: .venv/bin/python tools/student_edition.py [OUTPUT]   (default: _build/student)

The chapters mark their exercises for this (book/instructors.md, "How the chapters
are built"). For every notebook in book/ this script

- takes every solution out, as the students' edition of the site does
  (book/_ext/editions.py, ``without_solutions``): the code between
  ``### BEGIN SOLUTION`` and ``### END SOLUTION`` becomes nbgrader's stub
  (``# YOUR CODE HERE`` and ``raise NotImplementedError()``, as nbgrader's
  ``ClearSolutions`` writes it); the ``check(...)`` call after the markers stays,
  so a student runs it on their own answer; the gated solution's Markdown (the
  explanation between ``{solution-start}`` and ``{solution-end}``) and the two
  directive cells go; the outputs of the solution's code cells are cleared;
- keeps only the still picture of each interactive figure (an output marked
  ``relpos-interactive`` loses its ``text/html``, which draws the chart on the
  website only); Jupyter shows the picture and its text;
- turns each ``{exercise}`` directive into plain Markdown ("**Exercise 2.1.** ...")
  and each ``{cite:p}`` role into "(Author et al., year)", since Jupyter shows MyST
  directives and roles as raw text;
- writes each ``{self-check}`` directive out as its questions, with the answers in a
  collapsed block (``book/_ext/self_check_questions.py``, ``as_markdown``).

Every other cell is kept as it is, outputs included. The edition is written to
OUTPUT with a README listing its notebooks. pybtex, which reads the citations,
comes with the ``student`` extra, which ``make student`` installs. An instructor
who runs a full nbgrader course can also release the original notebooks with
``nbgrader generate_assignment`` and ``ClearSolutions.enforce_metadata=False``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
sys.path.insert(0, str(BOOK / "_ext"))

from editions import BEGIN, END, GATE, without_solutions  # noqa: E402, F401
from self_check_questions import as_markdown, data_file, load_questions  # noqa: E402

_EXERCISE = re.compile(
    r"```\{exercise\}[ \t]*(?P<title>[^\n]*)\n"  # the title
    r"(?P<options>(?::[^\n]*\n)*)\n?"  # :label: and other options
    r"(?P<body>.*?)\n```",
    re.DOTALL,
)
_LABEL = re.compile(r":label:\s*ch(\d+)-ex(\d+)")
_SELF_CHECK = re.compile(r"```\{self-check\}[ \t]*(?P<name>\S+)[ \t]*\n```")
_CITE = re.compile(
    r"\{cite(?::(?P<style>[pt]))?\}`(?P<keys>[\w:.-]+(?:,\s*[\w:.-]+)*)`"
)


def _citations() -> dict[str, str]:
    """``key -> "Author et al., year"`` for every entry of book/references.bib."""
    from pybtex.database import parse_file

    entries = parse_file(str(BOOK / "references.bib")).entries
    names = {}
    for key, entry in entries.items():
        people = entry.persons.get("author", [])
        if people:
            last = " ".join(people[0].last_names).replace("{", "").replace("}", "")
        else:
            last = entry.fields.get("author", key).strip("{}")
        others = (
            " et al."
            if len(people) > 2
            else (" and " + " ".join(people[1].last_names) if len(people) == 2 else "")
        )
        names[key] = f"{last}{others}, {entry.fields.get('year', '')}"
    return names


def _plain_exercise(match: re.Match) -> str:
    label = _LABEL.search(match.group("options"))
    number = f" {int(label.group(1))}.{int(label.group(2))}" if label else ""
    title = match.group("title").strip()
    title = f" {title}." if title else ""
    return f"**Exercise{number}.**{title}\n\n{match.group('body').strip()}"


def _plain_self_check(match: re.Match) -> str:
    return as_markdown(load_questions(data_file(match.group("name"))))


def _plain_markdown(text: str, citations: dict[str, str]) -> str:
    text = _EXERCISE.sub(_plain_exercise, text)
    text = _SELF_CHECK.sub(_plain_self_check, text)

    def cite(match: re.Match) -> str:
        keys = [k.strip() for k in match.group("keys").split(",")]
        if match.group("style") == "t":  # textual: Author et al. (year)
            parts = [citations.get(k, k).rsplit(", ", 1) for k in keys]
            return "; ".join(f"{part[0]} ({part[-1]})" for part in parts)
        return "(" + "; ".join(citations.get(k, k) for k in keys) + ")"

    return _CITE.sub(cite, text)


# The output metadata key of relpos.book.interactive.Interactive.
INTERACTIVE = "relpos-interactive"


def student_notebook(
    notebook: nbformat.NotebookNode, citations: dict[str, str]
) -> nbformat.NotebookNode:
    """The student version of one chapter (a new notebook; the input is not changed)."""
    notebook = without_solutions(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            cell.source = _plain_markdown(cell.source, citations)
        for output in cell.get("outputs", []):
            if INTERACTIVE in output.get("metadata", {}):
                output.data.pop("text/html", None)
    return notebook


def write_edition(output: Path) -> list[Path]:
    """Write every chapter's student version to ``output``; return the files written."""
    output.mkdir(parents=True, exist_ok=True)
    citations = _citations()
    written = []
    for path in sorted(BOOK.glob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        target = output / path.name
        try:
            student = student_notebook(notebook, citations)
        except ValueError as error:
            raise ValueError(f"{path.name}: {error}") from None
        nbformat.write(student, target)
        written.append(target)
    lines = [
        "# Relative positions, taught and tested: student edition",
        "",
        "Each chapter as a notebook, with the exercises' solutions taken out. In each",
        "exercise, replace `raise NotImplementedError()` with your code, then run the",
        "`check(...)` line under it: it says `correct` or what to look at.",
        "The first code cell installs `relpos` where it is missing (on Colab, say).",
        "",
        *[f"- `{p.name}`" for p in written],
        "",
    ]
    (output / "README.md").write_text("\n".join(lines))
    return written


def main(argv: list[str]) -> int:
    if len(argv) > 1 or (argv and argv[0] in ("-h", "--help")):
        print(__doc__)
        return 2
    output = Path(argv[0]) if argv else ROOT / "_build" / "student"
    written = write_edition(output)
    print(f"student edition: {len(written)} notebooks in {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
