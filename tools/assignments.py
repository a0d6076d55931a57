"""Write the graded assignments: an nbgrader course, one assignment per chapter.

Usage: .venv/bin/python tools/assignments.py [COURSE] [--book DIR] [--variant N]
       [--first-session DATETIME] [--per-student [--students FILE]]
(default COURSE: _build/course; default DIR: book; variant 0, the book's numbers;
DATETIME as 2026-09-14T10:00+02:00, the first session's start with its UTC offset)

Each chapter's problem set is its setup cell (the first code cell), its imports
cell (the second) and every cell from its ``## Exercises`` heading to the end. This
script writes it, with nbgrader's cell metadata, to ``COURSE/source/chNN/chNN.ipynb``:

- each solution's code (between ``### BEGIN SOLUTION`` and ``### END SOLUTION``) is
  a solution cell; the ``check(...)`` after the markers becomes a locked,
  autograded test cell worth the exercise's points: the course plan's points
  (book/course/plan.yml, ``grading``) of each kind of answer the check takes
  (``relpos.book.exercises.grading.GRADING``);
- where that table hides the test, the test cell runs ``answered(...)`` (the
  answers exist) and keeps ``check(...)`` between ``### BEGIN HIDDEN TESTS`` and
  ``### END HIDDEN TESTS``, which the release leaves out and the grader runs;
- the worked reasoning the book gives as Markdown in a solution becomes a
  manually graded written answer, worth the top level of the plan's rubric
  (``written_answers``), after a locked prompt that says what the plan asks it to
  explain; an exercise with a written answer the plan does not list is refused;
- the exercise statements, the setup and imports cells and the cells that rebuild
  the chapter's context are locked (read-only); directives and citations read as
  plain Markdown, as in the student edition.

``--variant N`` changes the numbers of the exercises of tools/variants.py (a seed
per variant), so that a past year's answers fail this year's checks.

``--per-student`` gives each student numbers of their own instead. The source keeps
the book's numbers, and each varied exercise's check calls ``graded_numbers(label)``
(relpos/book/exercises/students.py): when nbgrader autogrades, it reads the
student's ID from the folder the submission runs in (``autograded/STUDENT/chNN``)
and draws that student's numbers from the course's secret (``$RELPOS_COURSE_SECRET``
or ``~/.config/relpos/course-secret``, kept out of the repository). After nbgrader's
release, each student of ``--students FILE`` (one ID a line), or of the gradebook,
gets ``COURSE/release_students/STUDENT/chNN/chNN.ipynb``: the release with that
student's numbers in the statements and check calls. Hand those out, not
``release/``; grading needs the same secret in the environment.

It writes ``COURSE/nbgrader_config.py`` (tools/course_config.py: the late
penalty, the collection of files downloaded from a learning management system)
and runs nbgrader's own ``generate_assignment``, which writes the students'
version to ``COURSE/release/chNN/chNN.ipynb`` and each assignment to
``COURSE/gradebook.db``. With ``--first-session``, each assignment gets its due
date there (book/course/plan.yml: ``homework_due_weeks`` after the start of the
session that teaches the chapter). book/instructors.md describes the rest of the
cycle (collect, ``nbgrader autograde``, manual grading, ``nbgrader
generate_feedback``, export).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))

from student_edition import (  # noqa: E402
    BEGIN,
    BOOK,
    END,
    GATE,
    ROOT,
    _citations,
    _plain_markdown,
)

sys.path.insert(0, str(ROOT / "book" / "_ext"))

import course_plan  # noqa: E402  (the plan's points and due dates)
from course_config import config_text, due_dates, parse_first_session  # noqa: E402
from variants import VARIANTS, for_student, vary, with_graded_numbers  # noqa: E402

from relpos.book.exercises.grading import grading  # noqa: E402
from relpos.book.exercises.students import check_student, course_secret  # noqa: E402

CHAPTERS = "[0-9][0-9]_*.ipynb"
_LABEL = re.compile(r"ch\d+-ex\d+")
_EXERCISES = re.compile(r"^##\s+Exercises\s*$", re.MULTILINE)
_CHECK = re.compile(r"\bcheck\(")


def assignment_id(chapter: Path) -> str:
    """``"ch02"`` for ``02_delta.ipynb``."""
    return f"ch{chapter.name[:2]}"


def problem_set(notebook: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    """The setup cell, the imports cell and the cells from ``## Exercises`` on."""
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    start = next(
        (
            i
            for i, cell in enumerate(notebook.cells)
            if cell.cell_type == "markdown" and _EXERCISES.search(cell.source)
        ),
        None,
    )
    if start is None or len(code) < 2:
        raise ValueError("a chapter needs a setup cell, an imports cell and Exercises")
    return code[:2] + list(notebook.cells[start:])


def _meta(grade_id: str, **flags: object) -> dict:
    """nbgrader's cell metadata (schema 3); ``flags``: solution, grade, locked..."""
    meta = {"grade": False, "locked": False, "solution": False, "task": False}
    meta.update(flags, grade_id=grade_id, schema_version=3)
    return {"nbgrader": meta}


def _segments(text: str, inside: bool) -> tuple[list[tuple[bool, str, str]], bool]:
    """A Markdown cell cut at its solution gates: ``(inside, label, text)`` pieces."""
    pieces, position, label = [], 0, ""
    for gate in GATE.finditer(text):
        pieces.append((inside, label, text[position : gate.start()]))
        opening = gate.group("kind") == "solution-start"
        if opening == inside:
            raise ValueError(f"{gate.group(0).splitlines()[0]} out of order")
        found = _LABEL.search(gate.group(0).splitlines()[0])
        inside, position, label = opening, gate.end(), found.group(0) if found else ""
    pieces.append((inside, label, text[position:]))
    return [p for p in pieces if p[2].strip()], inside


@dataclass
class _Exercise:
    label: str
    tests: list[nbformat.NotebookNode] = field(default_factory=list)


class _Builder:
    """Turns a problem set's cells into an nbgrader source notebook, cell by cell."""

    def __init__(
        self, citations: dict[str, str], plan: dict, per_student: bool = False
    ) -> None:
        self.citations = citations
        self.per_student = per_student
        self.plan = plan
        self.asks = course_plan.written_asks(plan)
        self.cells: list[nbformat.NotebookNode] = []
        self.exercises: dict[str, _Exercise] = {}
        self.label = ""  # the exercise being read
        self.written: dict[str, nbformat.NotebookNode] = {}
        self.ids: set[str] = set()

    def grade_id(self, name: str) -> str:
        grade_id, n = name, 1
        while grade_id in self.ids:
            n += 1
            grade_id = f"{name}-{n}"
        self.ids.add(grade_id)
        return grade_id

    def locked(self, cell: nbformat.NotebookNode, name: str) -> None:
        cell.metadata = _meta(self.grade_id(name), locked=True)
        self.cells.append(cell)

    def markdown(self, text: str, inside: bool) -> None:
        text = _plain_markdown(text.strip(), self.citations)
        if not inside:
            found = re.search(r"\*\*Exercise (\d+)\.(\d+)\.\*\*", text)
            if found:
                self.label = f"ch{int(found.group(1))}-ex{int(found.group(2))}"
            self.locked(nbformat.v4.new_markdown_cell(text), "text")
            return
        if self.label in self.written:  # a second paragraph of the same reasoning
            self.written[self.label].source += "\n\n" + text
            return
        if self.label not in self.asks:
            raise ValueError(
                f"{self.label} has a written answer, but book/course/plan.yml's "
                "written_answers does not list it"
            )
        points = course_plan.written_points(self.plan)
        prompt = _wrapped(
            f"**Written answer ({points} points, graded by hand).** In the cell below, "
            f"in words: {self.asks[self.label]}. Say how you reach it, from the "
            "chapter's definitions or results, and what it shows."
        )
        self.locked(prompt, f"{self.label}-prompt")
        answer = nbformat.v4.new_markdown_cell(text)
        answer.metadata = _meta(
            self.grade_id(f"{self.label}-written"),
            solution=True,
            grade=True,
            points=points,
        )
        self.written[self.label] = answer
        self.cells.append(answer)

    def solution(self, source: str) -> None:
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata = _meta(self.grade_id(f"{self.label}-code"), solution=True)
        self.cells.append(cell)

    def test(self, source: str) -> None:
        if self.per_student and self.label in VARIANTS:
            source = with_graded_numbers(source, self.label)
        if grading(self.label).hidden:
            visible = _CHECK.sub("answered(", source)
            source = (
                "from relpos.book.exercises import answered\n\n"
                f"{visible}\n### BEGIN HIDDEN TESTS\n{source}\n### END HIDDEN TESTS"
            )
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata = _meta(
            self.grade_id(f"{self.label}-test"), grade=True, locked=True, points=0
        )
        self.exercises.setdefault(self.label, _Exercise(self.label)).tests.append(cell)
        self.cells.append(cell)

    def code(self, source: str, inside: bool) -> None:
        if not inside:
            self.locked(nbformat.v4.new_code_cell(source), "context")
        elif BEGIN in source:
            lines = source.splitlines()
            end = max(i for i, line in enumerate(lines) if END in line)
            self.solution("\n".join(lines[: end + 1]))
            rest = "\n".join(lines[end + 1 :]).strip()
            if rest:
                self.test(rest)
        elif _CHECK.search(source):
            self.test(source.strip())
        else:
            self.solution(f"{BEGIN}\n{source.strip()}\n{END}")

    def points(self) -> None:
        """Share each exercise's points among its test cells."""
        for exercise in self.exercises.values():
            worth = course_plan.exercise_points(self.plan, exercise.label)
            share = worth / len(exercise.tests)
            for cell in exercise.tests:
                cell.metadata["nbgrader"]["points"] = (
                    int(share) if share == int(share) else share
                )


def _wrapped(*paragraphs: str) -> nbformat.NotebookNode:
    """A Markdown cell whose paragraphs are wrapped at 88 characters."""
    return nbformat.v4.new_markdown_cell(
        "".join(p if "\n" in p else textwrap.fill(p, 88) for p in paragraphs)
    )


def _varies(notebook: nbformat.NotebookNode) -> bool:
    """Whether any exercise of ``notebook`` has variants (tools/variants.py)."""
    text = "\n".join(cell.source for cell in notebook.cells)
    return any(f":label: {label}\n" in text for label in VARIANTS)


def _title(notebook: nbformat.NotebookNode) -> str:
    for cell in notebook.cells:
        found = re.search(r"^#\s+(.+)$", cell.source, re.MULTILINE)
        if cell.cell_type == "markdown" and found:
            return found.group(1).strip()
    return ""


def assignment_notebook(
    notebook: nbformat.NotebookNode,
    citations: dict[str, str],
    number: int,
    plan: dict | None = None,
    variant: int = 0,
    due: datetime | None = None,
    per_student: bool = False,
) -> nbformat.NotebookNode:
    """One chapter's problem set as an nbgrader source notebook (a new notebook),
    graded by ``plan`` (default: book/course/plan.yml), with the numbers of
    ``variant`` (tools/variants.py; 0: the book's) and, in its first cell, the
    date ``due``. With ``per_student``, the varied exercises' checks draw each
    student's numbers when graded (``graded_numbers``; the book's in source/)."""
    if per_student and variant:
        raise ValueError("variant must be 0 with per_student (each student's own)")
    varied, drawn = vary(notebook, variant)
    cells = problem_set(varied)
    builder = _Builder(citations, plan or course_plan.load_plan(), per_student)
    setup, imports, *rest = cells
    inside = False
    for cell in rest:
        if cell.cell_type == "markdown":
            pieces, inside = _segments(cell.source, inside)
            for piece_inside, label, text in pieces:
                builder.label = label or builder.label
                builder.markdown(text, piece_inside)
        elif cell.cell_type == "code":
            builder.code(cell.source, inside)
    if inside:
        raise ValueError("a {solution-start} without its {solution-end}")
    builder.points()
    autograded = sum(
        c.metadata["nbgrader"]["points"]
        for e in builder.exercises.values()
        for c in e.tests
    )
    by_hand = sum(c.metadata["nbgrader"]["points"] for c in builder.written.values())
    header = _wrapped(
        f"# Problem set {number}: {_title(notebook)}\n\n",
        f"{autograded + by_hand:g} points: {autograded:g} from the graded checks, "
        f"{by_hand:g} from written answers graded by hand. Run the two cells below "
        "first. In each exercise, replace `raise NotImplementedError()` with your "
        "code and run the check under it. Where a check says `answered`, its values "
        "are checked when your work is graded. Leave the locked cells as they are."
        + (f" Due {due:%Y-%m-%d %H:%M} UTC." if due else "")
        + (
            f" This is variant {variant}: some numbers differ from the book's, so "
            "answer the numbers asked here."
            if drawn
            else ""
        )
        + (
            " Some numbers in this problem set are your own, drawn for you: answer "
            "the numbers asked here, not the book's."
            if per_student and _varies(notebook)
            else ""
        )
    )
    builder.cells.insert(0, header)
    header.metadata = _meta("header", locked=True)
    setup_cell = nbformat.v4.new_code_cell(setup.source)
    imports_cell = nbformat.v4.new_code_cell(imports.source)
    setup_cell.metadata = _meta("setup", locked=True)
    imports_cell.metadata = _meta("imports", locked=True)
    builder.cells[1:1] = [setup_cell, imports_cell]
    result = nbformat.v4.new_notebook(metadata=notebook.metadata)
    result.cells = builder.cells
    return result


def written_answers(source: nbformat.NotebookNode) -> list[str]:
    """The exercises whose written answer a problem set grades by hand, in order."""
    ids = [c.metadata.get("nbgrader", {}).get("grade_id", "") for c in source.cells]
    return [i.removesuffix("-written") for i in ids if i.endswith("-written")]


def write_source(
    course: Path,
    book: Path = BOOK,
    variant: int = 0,
    dates: dict[str, datetime] | None = None,
    per_student: bool = False,
) -> list[Path]:
    """Every chapter's source notebook (in ``variant``, or drawing each student's
    numbers with ``per_student``) and nbgrader_config.py (with ``dates``, the due
    dates, as comments); the notebooks written."""
    course.mkdir(parents=True, exist_ok=True)
    plan = course_plan.load_plan()
    (course / "nbgrader_config.py").write_text(config_text(plan, dates))
    citations = _citations()
    written = []
    for chapter in sorted(book.glob(CHAPTERS)):
        name = assignment_id(chapter)
        try:
            notebook = assignment_notebook(
                nbformat.read(chapter, as_version=4),
                citations,
                int(chapter.name[:2]),
                plan,
                variant,
                (dates or {}).get(name),
                per_student,
            )
        except ValueError as error:
            raise ValueError(f"{chapter.name}: {error}") from None
        target = course / "source" / name / f"{name}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, target)
        written.append(target)
    return written


def nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess:
    """Run ``nbgrader ARGS`` in ``course`` (its config and gradebook), checked."""
    # nbgrader runs alembic, from the same environment, to read the gradebook
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
    return subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=course,
        env={**os.environ, "PATH": path},
        check=True,
        capture_output=True,
        text=True,
    )


def write_course(
    course: Path,
    book: Path = BOOK,
    variant: int = 0,
    first_session: datetime | None = None,
    per_student: bool = False,
) -> list[Path]:
    """The source notebooks and, by nbgrader's generate_assignment, the release;
    with ``first_session``, every assignment's due date in the gradebook; with
    ``per_student``, checks that draw each student's numbers (then hand out
    ``release_students``, not ``release``)."""
    dates = due_dates(first_session, course_plan.load_plan()) if first_session else None
    sources = write_source(course, book, variant, dates, per_student)
    try:
        nbgrader(course, "generate_assignment", "*", "--force")
    except subprocess.CalledProcessError as error:
        raise RuntimeError(f"nbgrader generate_assignment failed:\n{error.stderr}")
    if dates:
        from nbgrader.api import Gradebook

        with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "relpos") as book_:
            for source in sources:
                name = source.parent.name
                book_.update_or_create_assignment(name, duedate=dates[name])
    return [course / "release" / s.parent.name / s.name for s in sources]


def roster(course: Path, students: Path | None = None) -> list[str]:
    """The student IDs: one per line of ``students`` (blank lines and ``#``
    comments skipped), else the students of ``course``'s gradebook.

    Raises:
        ValueError: no student, or an ID a folder cannot be named after.
    """
    if students is not None:
        lines = students.read_text().splitlines()
        ids = [kept for line in lines if (kept := line.split("#")[0].strip())]
    else:
        from nbgrader.api import Gradebook

        with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "relpos") as book_:
            ids = [student.id for student in book_.students]
    if not ids:
        raise ValueError(
            "students: no student IDs (give --students FILE, one ID a line, or add "
            "the students to the gradebook: nbgrader db student add ID)"
        )
    return [check_student(i) for i in ids]


def write_student_releases(
    course: Path, students: list[str], secret: str | None = None
) -> list[Path]:
    """Each student's release of every problem set, with that student's numbers:
    ``COURSE/release_students/STUDENT/chNN/chNN.ipynb``, from a per-student course's
    ``release`` and the course's ``secret`` (default: ``course_secret()``)."""
    secret = secret or course_secret()
    written = []
    for release in sorted((course / "release").glob("ch*/ch*.ipynb")):
        notebook = nbformat.read(release, as_version=4)
        for student in students:
            mine, _ = for_student(notebook, student, secret)
            target = course / "release_students" / student / release.parent.name
            target.mkdir(parents=True, exist_ok=True)
            nbformat.write(mine, target / release.name)
            written.append(target / release.name)
    return written


def _variant(text: str) -> int:
    variant = int(text) if text.strip().lstrip("-").isdigit() else None
    if variant is None or variant < 0:
        raise ValueError(f"variant must be an int >= 0 (0: the book), got {text!r}")
    return variant


def _argument(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """``parse`` for argparse: its ValueError's message becomes the usage error."""

    def parsed(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parsed


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="tools/assignments.py",
        description="Write the graded assignments, an nbgrader course.",
    )
    parser.add_argument("course", nargs="?", type=Path, default=ROOT / "_build/course")
    parser.add_argument("--book", type=Path, default=BOOK, help="the chapters' folder")
    parser.add_argument(
        "--variant",
        type=_argument(_variant),
        default=0,
        help="a seed for other numbers (an int >= 0; 0: the book's)",
    )
    parser.add_argument(
        "--first-session",
        type=_argument(parse_first_session),
        help="the first session's start, as 2026-09-14T10:00+02:00: sets due dates",
    )
    parser.add_argument(
        "--per-student",
        action="store_true",
        help="each student's own numbers (needs $RELPOS_COURSE_SECRET): writes "
        "release_students/STUDENT/ for the students of --students or the gradebook",
    )
    parser.add_argument(
        "--students", type=Path, help="a file of student IDs, one a line"
    )
    args = parser.parse_args(argv)
    if not args.book.is_dir():
        parser.error(f"argument --book: no chapters' folder at {str(args.book)!r}")
    if args.per_student and args.variant:
        parser.error("--per-student draws each student's numbers: leave out --variant")
    if args.per_student:
        try:
            course_secret()
        except ValueError as error:
            parser.error(str(error))
    released = write_course(
        args.course, args.book, args.variant, args.first_session, args.per_student
    )
    print(f"assignments: {len(released)} problem sets in {args.course / 'release'}")
    if args.per_student:
        try:
            students = roster(args.course, args.students)
        except ValueError as error:
            parser.error(str(error))
        mine = write_student_releases(args.course, students)
        print(
            f"assignments: {len(mine)} notebooks for {len(students)} students in "
            f"{args.course / 'release_students'}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
