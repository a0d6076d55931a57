"""The course's grades as one CSV file for a learning management system.

Usage: .venv/bin/python tools/grades.py [COURSE] [--project PROJECT] [--output LMS]
       [--allow-unmarked]
(COURSE: the nbgrader course, default _build/course of this repository whatever the
current directory; PROJECT: a CSV file with the columns student_id and points, the
project's rubric points out of 100 less any late milestones; default LMS:
COURSE/lms_grades.csv)

It reads the course's gradebook (``COURSE/gradebook.db``), after hand-marking:

1. It refuses while a written answer awaits marking, and lists each one (student,
   problem set, cell), unless ``--allow-unmarked`` (they then count 0).
2. It settles every late penalty on the final score, as the plan states it:
   penalty = min(share x maximum, score), the share from the time handed in and the
   due date (tools/course_config.py, ``late_fraction``). nbgrader assigns it when it
   autogrades, capped at the autograded score alone, so written answers marked
   afterwards would lose nothing; the settled penalty is written back to the
   gradebook, so that ``nbgrader export``, the formgrader and the feedback agree.
3. It writes one row per student: their ID and name, each problem set's score as a
   percentage of its points (after the penalty; a problem set not handed in is 0),
   ``problem_sets``, the mean of those percentages (each problem set counts
   equally), and with PROJECT, ``project`` and ``total``, the two weighed as
   book/course/plan.yml's ``assessment`` says. Percentages have one decimal. A
   system's gradebook imports it as one column per graded item, matched on the
   student's ID (name the columns as the system's own export does, if it asks).

The project's milestones are not in the gradebook (they are a branch, an archive and
a Markdown file, not notebooks nbgrader can hold), so their points come from
PROJECT, typed by hand, with the late rule of the plan already applied.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nbgrader.api import Gradebook

sys.path.insert(0, str(Path(__file__).resolve().parent))

from course_config import late_fraction, load_plan  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
COURSE = ROOT / "_build" / "course"

PENALTY_TOLERANCE = 1e-9  # points; a settled penalty this close is left as it is
NAME_COLUMNS = ("student_id", "last_name", "first_name", "email")


def _read(path: Path, needed: tuple[str, ...]) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    columns = set(rows[0]) if rows else set()
    missing = [name for name in needed if name not in columns]
    if missing:
        raise ValueError(f"{path} must have the columns {needed}; {missing} missing")
    return rows


def _number(text: str, what: str) -> float:
    try:
        return float(text) if text.strip() else 0.0
    except ValueError:
        raise ValueError(f"{what} must be a number, got {text!r}") from None


def problem_set_percentages(
    rows: list[dict[str, str]],
) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """The problem sets in order, and per student their names and percentages,
    from the rows of ``nbgrader export``."""
    sets = sorted({row["assignment"] for row in rows})
    students: dict[str, dict[str, Any]] = {}
    for row in rows:
        student = students.setdefault(
            row["student_id"],
            {name: row.get(name, "") for name in NAME_COLUMNS} | {"sets": {}},
        )
        maximum = _number(row["max_score"], f"max_score of {row['assignment']}")
        score = _number(row["score"], f"score of {row['student_id']}")
        if maximum <= 0:
            raise ValueError(f"max_score of {row['assignment']} must be above 0")
        student["sets"][row["assignment"]] = 100 * score / maximum
    return sets, students


def lms_rows(
    export: list[dict[str, str]],
    project: dict[str, float] | None,
    weights: dict[str, float],
) -> list[dict[str, str]]:
    """The rows of the LMS file (see the module's docstring); ``weights``: the
    percentages of ``problem_sets`` and ``project``, summing to 100."""
    if sum(weights.values()) != 100:
        raise ValueError(f"weights must sum to 100, got {weights}")
    sets, students = problem_set_percentages(export)
    table = []
    for student_id, student in sorted(students.items()):
        row = {name: student[name] for name in NAME_COLUMNS}
        percentages = [student["sets"].get(name, 0.0) for name in sets]
        row |= {name: f"{value:.1f}" for name, value in zip(sets, percentages)}
        mean = sum(percentages) / len(percentages)
        row["problem_sets"] = f"{mean:.1f}"
        if project is not None:
            points = project.get(student_id, 0.0)
            total = (weights["problem_sets"] * mean + weights["project"] * points) / 100
            row |= {"project": f"{points:.1f}", "total": f"{total:.1f}"}
        table.append(row)
    return table


def read_project(path: Path) -> dict[str, float]:
    """``student_id -> project points`` (out of 100) from a CSV file."""
    points = {}
    for row in _read(path, ("student_id", "points")):
        value = _number(row["points"], f"points of {row['student_id']}")
        if not 0 <= value <= 100:
            raise ValueError(f"points of {row['student_id']} must be 0 to 100: {value}")
        points[row["student_id"]] = value
    return points


def write(rows: list[dict[str, str]], output: Path) -> Path:
    with output.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]) if rows else [])
        writer.writeheader()
        writer.writerows(rows)
    return output


def open_gradebook(course: Path) -> "Gradebook":
    """nbgrader's gradebook of ``course`` (a context manager).

    Raises:
        ValueError: ``course`` has no gradebook.db.
    """
    from nbgrader.api import Gradebook

    path = course / "gradebook.db"
    if not path.is_file():
        raise ValueError(
            f"course must be an nbgrader course folder with its gradebook.db; "
            f"{path} does not exist (build it with `make assignments`)"
        )
    return Gradebook(f"sqlite:///{path}", "relpos")


def unmarked(book: "Gradebook") -> list[tuple[str, str, str]]:
    """``(student, problem set/notebook, cell)`` of every answer awaiting marking."""
    found = []
    for assignment in book.assignments:
        for submission in assignment.submissions:
            for notebook in submission.notebooks:
                for grade in notebook.grades:
                    if grade.needs_manual_grade:
                        found.append(
                            (
                                submission.student.id,
                                f"{assignment.name}/{notebook.name}",
                                grade.name,
                            )
                        )
    return sorted(found)


def settle_penalties(
    book: "Gradebook", percent_per_day: float, max_percent: float
) -> list[tuple[str, str, float, float]]:
    """Every late penalty set to min(share x maximum, score) on the current scores;
    ``(student, notebook, penalty before, after)`` of each one changed."""
    changed = []
    for assignment in book.assignments:
        for submission in assignment.submissions:
            share = late_fraction(
                submission.total_seconds_late, percent_per_day, max_percent
            )
            for notebook in submission.notebooks:
                before = notebook.late_submission_penalty or 0.0
                after = min(share * notebook.max_score, notebook.score)
                if abs(after - before) > PENALTY_TOLERANCE:
                    notebook.late_submission_penalty = after if after > 0 else None
                    name = f"{assignment.name}/{notebook.name}"
                    changed.append((submission.student.id, name, before, after))
    book.db.commit()
    return changed


def export_rows(book: "Gradebook") -> list[dict[str, str]]:
    """The rows ``nbgrader export`` writes, read from the gradebook: one per
    problem set and student, a problem set not handed in scoring 0."""
    from nbgrader.api import MissingEntry

    rows = []
    for assignment in book.assignments:
        for student in book.students:
            row = {
                "assignment": assignment.name,
                "student_id": student.id,
                "last_name": student.last_name or "",
                "first_name": student.first_name or "",
                "email": student.email or "",
                "raw_score": "0.0",
                "late_submission_penalty": "0.0",
                "score": "0.0",
                "max_score": str(assignment.max_score),
            }
            try:
                submission = book.find_submission(assignment.name, student.id)
            except MissingEntry:
                rows.append(row)
                continue
            penalty = submission.late_submission_penalty or 0.0
            row["raw_score"] = str(submission.score)
            row["late_submission_penalty"] = str(penalty)
            row["score"] = str(max(0.0, submission.score - penalty))
            rows.append(row)
    return rows


def _refusal(waiting: list[tuple[str, str, str]]) -> str:
    listed = "\n".join(f"  {s}  {n}  {c}" for s, n, c in waiting)
    return (
        f"{len(waiting)} answer(s) await marking by hand (student, problem set, "
        f"cell); mark them in the formgrader, or pass --allow-unmarked to count "
        f"them as 0:\n{listed}"
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="tools/grades.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("course", nargs="?", type=Path, default=COURSE)
    parser.add_argument("--project", type=Path, help="student_id,points (of 100)")
    parser.add_argument("--output", type=Path, help="default: COURSE/lms_grades.csv")
    parser.add_argument(
        "--allow-unmarked",
        action="store_true",
        help="export while answers await marking (they count 0)",
    )
    args = parser.parse_args(argv)
    assessment = load_plan()["assessment"]
    weights = {
        "problem_sets": assessment["problem_sets"]["weight"],
        "project": assessment["project"]["weight"],
    }
    late = assessment["late"]
    if args.output is not None and not args.output.parent.is_dir():
        parser.error(f"argument --output: no folder {str(args.output.parent)!r}")
    try:
        project = read_project(args.project) if args.project else None
    except (OSError, ValueError) as error:
        parser.error(f"argument --project: {error}")
    try:
        gradebook = open_gradebook(args.course)
    except ValueError as error:
        parser.error(str(error))
    with gradebook as book:
        waiting = unmarked(book)
        if waiting and not args.allow_unmarked:
            print(f"grades: {_refusal(waiting)}", file=sys.stderr)
            return 1
        changed = settle_penalties(book, late["percent_per_day"], late["max_percent"])
        export = export_rows(book)
    for student, notebook, before, after in changed:
        print(
            f"grades: late penalty of {student} on {notebook}: {before:g} -> {after:g}"
        )
    output = args.output or args.course / "lms_grades.csv"
    written = write(lms_rows(export, project, weights), output)
    print(f"grades: {written}, one row per student")
    if waiting:
        print(f"grades: {len(waiting)} answer(s) not yet marked counted as 0")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
