"""One rubric: the points the problem sets grade are the course plan's.

book/course/plan.yml states the rubric once: the points of each kind of answer a
check takes (``grading``), the levels of a written answer (``written_answers``) and
the exercises that have one. tools/assignments.py writes the problem sets from it;
here the source notebooks it writes (before nbgrader sees them) are held to the plan:

- the written answers graded by hand are exactly the plan's list, in its order: every
  one the plan lists has an answer cell, and no other exercise has one;
- every cell is worth the plan's points, and each problem set's header states the
  total of its cells;
- the points are stated nowhere else: not in relpos.book.exercises.grading, not typed
  on the instructors' page; and a plan with other points writes other points.
"""

from __future__ import annotations

import copy
import dataclasses
import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import assignments  # noqa: E402
import course_plan  # noqa: E402  (assignments puts book/_ext on the path)

from relpos.book.exercises import grading  # noqa: E402

PLAN = course_plan.load_plan()
CHAPTERS = course_plan.chapter_files()


@pytest.fixture(scope="module")
def citations() -> dict[str, str]:
    return assignments._citations()


@pytest.fixture(scope="module")
def problem_sets(citations) -> dict[int, nbformat.NotebookNode]:
    """Each chapter's source notebook, as tools/assignments.py writes it."""
    return {
        number: assignments.assignment_notebook(
            nbformat.read(path, as_version=4), citations, number, PLAN
        )
        for number, path in CHAPTERS.items()
    }


def nbgrader(cell: nbformat.NotebookNode) -> dict:
    return cell.metadata.get("nbgrader", {})


def test_the_problem_sets_grade_exactly_the_plans_written_answers(problem_sets):
    graded = [
        label
        for number in sorted(problem_sets)
        for label in assignments.written_answers(problem_sets[number])
    ]
    listed = [item["label"] for item in PLAN["written_answers"]["applies_to"]]
    assert graded == listed, (
        f"listed in the plan, no answer cell: {sorted(set(listed) - set(graded))}; "
        f"an answer cell, not in the plan: {sorted(set(graded) - set(listed))}"
    )


def test_every_cell_is_worth_the_plans_points(problem_sets):
    written = course_plan.written_points(PLAN)
    for number, notebook in problem_sets.items():
        tests: dict[str, float] = {}
        total = 0.0
        for cell in notebook.cells:
            meta = nbgrader(cell)
            if not meta.get("grade"):
                continue
            grade_id, points = meta["grade_id"], meta["points"]
            total += points
            if grade_id.endswith("-written"):
                assert points == written, grade_id
                continue
            label = re.match(r"ch\d+-ex\d+", grade_id).group(0)
            tests[label] = tests.get(label, 0) + points
        for label, points in tests.items():
            assert points == course_plan.exercise_points(PLAN, label), label
        header = notebook.cells[0].source
        assert re.search(rf"\b{total:g} points: ", header), (number, header[:200])


def test_the_prompt_asks_what_the_plan_asks(problem_sets):
    asks = course_plan.written_asks(PLAN)
    for notebook in problem_sets.values():
        for cell in notebook.cells:
            grade_id = nbgrader(cell).get("grade_id", "")
            found = re.fullmatch(r"(ch\d+-ex\d+)-prompt", grade_id)
            if found:
                text = " ".join(cell.source.split())
                assert f"({course_plan.written_points(PLAN)} points, graded" in text
                assert asks[found.group(1)] in text, found.group(1)


def test_the_points_are_stated_in_the_plan_alone():
    fields = {field.name for field in dataclasses.fields(grading.Grading)}
    assert "points" not in fields and not hasattr(grading, "WRITTEN_POINTS")
    page = (ROOT / "book" / "instructors.md").read_text()
    # the page renders the rubric (```{course-plan} grading``) and types no points
    typed = re.findall(r"\b\d+ points?\b(?! away)", page)  # "row 3 points away": no
    assert not typed, typed
    # nor a typed table of points (the variants' table of exercises has none)
    header = re.compile(r"^\| exercise \|[^\n]*\| points \|", flags=re.MULTILINE)
    assert not header.search(page)
    with pytest.raises(ValueError, match="answers"):
        grading.Grading(("essay",), False, "an essay")


def test_another_plan_writes_other_points(citations):
    chapter = nbformat.read(CHAPTERS[2], as_version=4)
    plan = copy.deepcopy(PLAN)
    plan["grading"]["answers"] = [
        {"kind": "code", "points": 5, "means": "code"},
        {"kind": "number", "points": 3, "means": "a number"},
    ]
    plan["written_answers"]["levels"][0]["points"] = 6
    notebook = assignments.assignment_notebook(chapter, citations, 2, plan)
    graded = [nbgrader(cell) for cell in notebook.cells if nbgrader(cell).get("grade")]
    points = {meta["grade_id"]: meta["points"] for meta in graded}
    assert points["ch2-ex1-test"] == 3  # one number
    assert points["ch2-ex3-test"] == 8  # a function and a number
    assert points["ch2-ex1-written"] == 6


def test_a_written_answer_the_plan_does_not_list_is_refused(citations):
    chapter = nbformat.read(CHAPTERS[2], as_version=4)
    plan = copy.deepcopy(PLAN)
    listed = plan["written_answers"]["applies_to"]
    plan["written_answers"]["applies_to"] = [
        item for item in listed if item["label"] != "ch2-ex1"
    ]
    with pytest.raises(ValueError, match="ch2-ex1 has a written answer"):
        assignments.assignment_notebook(chapter, citations, 2, plan)
