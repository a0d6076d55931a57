"""Per-student problem sets (tools/assignments.py --per-student).

Each student's numbers are drawn from the course's secret, the student's ID and
the exercise; the release of each student shows that student's numbers, and the
hidden test, run in nbgrader's ``autograded/STUDENT/chNN`` folder, checks the
answer to that student's numbers. So two students' problem sets differ, and one
student's correct answer fails the other's hidden test (here by running the hidden
test in each student's folder; tests/test_grading.py runs nbgrader's autograde on a
per-student course built by the tool, every chapter, where a student's correct work
earns every point and a copy of it none of the varied exercises' points).
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import nbformat
import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "tests"))

import assignments  # noqa: E402
import variants  # noqa: E402

import relpos  # noqa: E402
from relpos.book.exercises import ExerciseError, check, labels  # noqa: E402
from relpos.book.exercises import students  # noqa: E402
from relpos.book.exercises.grading import GRADING  # noqa: E402

SECRET = "a course's secret"
CHAPTER = ROOT / "book" / "06_long_sequences.ipynb"


def test_the_draw_depends_on_secret_student_and_exercise():
    first = students.student_numbers("ch6-ex1", "alice", SECRET)
    assert first == students.student_numbers("ch6-ex1", "alice", SECRET)
    others = [
        students.student_numbers("ch6-ex1", student, secret)
        for student in ("bob", "carol", "dave")
        for secret in (SECRET, "another course")
    ]
    assert any(numbers != first for numbers in others)
    for name, value in first.items():
        assert value in students.CHOICES["ch6-ex1"][name]
    book = {"n": 1000, "k": 128}
    drawn = [students.student_numbers("ch6-ex1", f"s{i}", SECRET) for i in range(40)]
    assert all(d["n"] != book["n"] and d["k"] != book["k"] for d in drawn)
    assert len({tuple(d.values()) for d in drawn}) >= 30  # 40 students, few clashes


def test_bad_students_and_a_missing_secret_are_refused(monkeypatch, tmp_path):
    with pytest.raises(ValueError, match="student must be a student ID"):
        students.student_numbers("ch6-ex1", "../bob", SECRET)
    with pytest.raises(TypeError, match="student must be a str"):
        students.check_student(7)
    with pytest.raises(ValueError, match="label must be one of"):
        students.student_numbers("ch4-ex4", "bob", SECRET)
    with pytest.raises(ValueError, match="secret must be a non-empty str"):
        students.student_numbers("ch6-ex1", "bob", "")
    monkeypatch.delenv(students.SECRET_VARIABLE, raising=False)
    monkeypatch.setattr(students, "SECRET_FILE", tmp_path / "absent")
    with pytest.raises(ValueError, match="the course's secret is not set"):
        students.course_secret()
    (tmp_path / "secret").write_text("from a file\n")
    monkeypatch.setattr(students, "SECRET_FILE", tmp_path / "secret")
    assert students.course_secret() == "from a file"
    monkeypatch.setenv(students.SECRET_VARIABLE, SECRET)
    assert students.course_secret() == SECRET


def test_the_student_is_read_from_the_grading_folder(tmp_path):
    graded = tmp_path / "course" / "autograded" / "bob" / "ch06"
    assert students.student_here(graded) == "bob"
    assert students.student_here(tmp_path / "course" / "source" / "ch06") is None
    with pytest.raises(ValueError, match="folder must be nbgrader's autograded"):
        students.student_here(tmp_path / "elsewhere" / "ch06")


def test_varying_exercises_are_two_thirds_of_the_autograded():
    """Every exercise with a check is autograded; two thirds of them vary."""
    autograded = [label for label in labels() if label in GRADING]
    varying = [label for label in autograded if label in students.CHOICES]
    assert set(variants.VARIANTS) == set(students.CHOICES)
    print(f"varying / autograded: {len(varying)} / {len(autograded)}")
    assert len(autograded) == 38
    assert 3 * len(varying) >= 2 * len(autograded)


def test_the_instructors_page_lists_the_varied_exercises():
    page = (ROOT / "book" / "instructors.md").read_text()
    section = page.split("(per-student-problem-sets)=")[1].split("(problem-set-")[0]
    text = " ".join(section.split())
    listed = {
        f"ch{chapter}-ex{number}"
        for chapter, number in re.findall(r"\b(\d+)\.(\d+)\b", text)
    }
    assert listed == set(students.CHOICES), listed ^ set(students.CHOICES)
    assert f"{len(students.CHOICES)} of the 38 autograded" in text


def test_the_check_call_gets_the_graded_numbers():
    source = 'x = 1\ncheck("ch6-ex1", f(a, (b)), c)\ncheck("ch6-ex3", e)'
    graded = variants.with_graded_numbers(source, "ch6-ex1")
    assert graded == (
        variants.IMPORT
        + 'x = 1\ncheck("ch6-ex1", f(a, (b)), c, **graded_numbers("ch6-ex1"))\n'
        'check("ch6-ex3", e)'
    )
    with pytest.raises(ValueError, match="calls no check"):
        variants.with_graded_numbers(source, "ch3-ex2")


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> dict:
    """Chapter 6's per-student source, its release as nbgrader writes it (solutions
    and hidden tests cleared), and the releases of alice and bob."""
    from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions

    root = tmp_path_factory.mktemp("course")
    book = root / "book"
    book.mkdir()
    (book / CHAPTER.name).symlink_to(CHAPTER)
    (source_path,) = assignments.write_source(root, book=book, per_student=True)
    source = nbformat.read(source_path, as_version=4)
    release = nbformat.from_dict(source)
    resources: dict = {}
    for step in (ClearSolutions(), ClearHiddenTests()):
        release, resources = step.preprocess(release, resources)
    mine = {s: variants.for_student(release, s, SECRET) for s in ("alice", "bob")}
    return {"root": root, "source": source, "release": release, "mine": mine}


def numbers_in(notebook: nbformat.NotebookNode, label: str) -> list[str]:
    cells = variants._release_cells(notebook.cells, label)
    return re.findall(r"\d+", "\n".join(cell.source for cell in cells))


def test_two_students_releases_differ_in_two_thirds_of_the_exercises(course):
    (alice, drawn_a), (bob, drawn_b) = course["mine"]["alice"], course["mine"]["bob"]
    autograded = [label for label in GRADING if label.startswith("ch6-")]
    differ = [
        label
        for label in autograded
        if numbers_in(alice, label) != numbers_in(bob, label)
    ]
    assert len(differ) * 3 >= 2 * len(autograded), (differ, autograded)
    for label, numbers in drawn_a.items():
        cells = variants._release_cells(alice.cells, label)
        text = "\n".join(cell.source for cell in cells)
        keywords = ", ".join(f"{k}={v}" for k, v in numbers.items())
        assert f"{keywords})" in text and "graded_numbers" not in text
        statement = cells[0].source + cells[1].source  # title, then the text
        assert all(str(value) in statement for value in numbers.values()), statement
    assert drawn_a != drawn_b


def test_a_students_release_keeps_nbgraders_checksums(course):
    from nbgrader.utils import compute_checksum

    alice, _ = course["mine"]["alice"]
    for cell in alice.cells:
        meta = cell.metadata.get("nbgrader", {})
        if "checksum" in meta:
            assert meta["checksum"] == compute_checksum(cell)


def reference_answers(label: str, numbers: dict[str, int]) -> dict:
    """The book's reference solution of ``label`` run with ``numbers``."""
    book = nbformat.read(CHAPTER, as_version=4)
    edited = book.cells
    for old, new in variants.VARIANTS[label].edits(numbers):
        for cell in edited:
            cell.source = cell.source.replace(old, new)
    cells = [edited[i] for i in variants._exercise_cells(edited, label)]
    code = next(c.source for c in cells if "### BEGIN SOLUTION" in c.source)
    namespace = {"relpos": relpos, "torch": torch, "math": math}
    exec(code.split("### END SOLUTION")[0], namespace)
    return namespace


def hidden_test(source: nbformat.NotebookNode, label: str) -> str:
    cell = next(
        c
        for c in source.cells
        if c.metadata.get("nbgrader", {}).get("grade_id", "") == f"{label}-test"
    )
    hidden = cell.source.split("### BEGIN HIDDEN TESTS")[1]
    return hidden.split("### END HIDDEN TESTS")[0]


@pytest.mark.parametrize("label", ["ch6-ex1", "ch6-ex2", "ch6-ex3"])
def test_one_students_answer_fails_the_others_hidden_test(
    course, label, monkeypatch, capsys
):
    monkeypatch.setenv(students.SECRET_VARIABLE, SECRET)
    _, drawn_a = course["mine"]["alice"]
    answers = reference_answers(label, drawn_a[label])
    test = hidden_test(course["source"], label)
    assert 'graded_numbers("' in test
    for student, passes in (("alice", True), ("bob", False)):
        folder = course["root"] / "autograded" / student / "ch06"
        folder.mkdir(parents=True, exist_ok=True)
        monkeypatch.chdir(folder)
        namespace = {**answers, "check": check}
        if passes:
            exec(test, namespace)
            assert f"{label}: correct." in capsys.readouterr().out
        else:
            with pytest.raises(ExerciseError, match=f"^{label}: not yet"):
                exec(test, namespace)
    # the instructors' source folder checks the book's numbers
    folder = course["root"] / "source" / "ch06"
    monkeypatch.chdir(folder)
    with pytest.raises(ExerciseError):
        exec(test, {**answers, "check": check})


def test_the_roster_is_read_and_checked(tmp_path):
    roster = tmp_path / "students.txt"
    roster.write_text("alice\n# a comment\n\nbob  # late joiner\n")
    assert assignments.roster(tmp_path, roster) == ["alice", "bob"]
    roster.write_text("al ice\n")
    with pytest.raises(ValueError, match="student must be a student ID"):
        assignments.roster(tmp_path, roster)


def test_every_varied_chapter_gets_each_students_numbers(tmp_path):
    """Every chapter with a varied exercise: its per-student source, released as
    nbgrader releases it, gets a student's numbers in every varied exercise."""
    from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions

    from test_variants import NOTEBOOKS

    book = tmp_path / "book"
    book.mkdir()
    for path in set(NOTEBOOKS.values()):
        (book / path.name).symlink_to(path)
    sources = assignments.write_source(tmp_path, book=book, per_student=True)
    assert len(sources) == len(set(NOTEBOOKS.values()))
    for source in sources:
        release, resources = nbformat.read(source, as_version=4), {}
        for step in (ClearSolutions(), ClearHiddenTests()):
            release, resources = step.preprocess(release, resources)
        expected = {
            label
            for label, path in NOTEBOOKS.items()
            if f"ch{path.name[:2]}" == source.parent.name
        }
        for student in ("alice", "bob"):
            mine, drawn = variants.for_student(release, student, SECRET)
            assert set(drawn) == expected
            text = "\n".join(cell.source for cell in mine.cells)
            assert "graded_numbers" not in text
            assert "your own, drawn for you" in mine.cells[0].source


def test_the_problem_sets_where_two_thirds_vary():
    """Per problem set, the share of autograded exercises that vary; chapters 1, 2,
    3, 6, 8, 12, 13 and 14 reach two thirds (the count is printed for the report)."""
    reached = []
    for chapter in range(1, 15):
        autograded = [x for x in GRADING if x.startswith(f"ch{chapter}-")]
        varying = [x for x in autograded if x in students.CHOICES]
        print(f"ch{chapter:02d}: {len(varying)} / {len(autograded)} vary")
        if 3 * len(varying) >= 2 * len(autograded):
            reached.append(chapter)
    assert reached == [1, 2, 3, 6, 8, 12, 13, 14]
