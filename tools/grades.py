"""The course's grades as one CSV file for a learning management system.

Usage: .venv/bin/python tools/grades.py GRADES [--project PROJECT] [--output LMS]
(GRADES: what ``nbgrader export`` writes in the course folder, grades.csv;
PROJECT: a CSV file with the columns student_id and points, the project's rubric
points out of 100 less any late milestones; default LMS: lms_grades.csv)

One row per student: their ID and name, each problem set's score as a percentage
of its points (after the late penalty, as nbgrader exports it; a problem set not
handed in is 0), ``problem_sets``, the mean of those percentages (each problem set
counts equally), and with PROJECT, ``project`` and ``total``, the two weighed as
book/course/plan.yml's ``assessment`` says. Percentages have one decimal. A
system's gradebook imports it as one column per graded item, matched on the
student's ID (name the columns as the system's own export does, if it asks).
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from course_config import load_plan  # noqa: E402

EXPORT_COLUMNS = ("assignment", "student_id", "last_name", "first_name", "score")
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


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="tools/grades.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("grades", type=Path, help="nbgrader export's grades.csv")
    parser.add_argument("--project", type=Path, help="student_id,points (of 100)")
    parser.add_argument("--output", type=Path, default=Path("lms_grades.csv"))
    args = parser.parse_args(argv)
    assessment = load_plan()["assessment"]
    weights = {
        "problem_sets": assessment["problem_sets"]["weight"],
        "project": assessment["project"]["weight"],
    }
    export = _read(args.grades, EXPORT_COLUMNS + ("max_score",))
    project = read_project(args.project) if args.project else None
    written = write(lms_rows(export, project, weights), args.output)
    print(f"grades: {written}, one row per student")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
