"""The grading cycle (make assignments): nbgrader grades the chapters' problem sets.

The course is built from the book (tools/assignments.py: the source notebooks,
nbgrader's generate_assignment and the due dates of a term that starts on
FIRST_SESSION), then students hand in every chapter; one ``nbgrader autograde``
call grades all of a course's submissions (each course a copy of its own, graded
at the same time as the others, in threads):

- ``untouched``: the release as handed out, which earns none;
- ``mistaken``: the reference with one typical wrong answer per chapter (WRONG,
  taken from the usual mistakes of tests/test_exercises*.py), which loses that
  exercise's points (the course plan's, book/course/plan.yml) and nothing else,
  with the check's hint in the feedback (``generate_feedback``). So it also shows
  every other exercise's reference solution earning its points;
- ``reference``, in a per-student course (``--per-student``, built by the tool as
  book/instructors.md says): the book's solutions, with the numbers drawn for this
  student written into the varied exercises (tools/variants.py, the edits a
  variant makes), earn every autograded point of every chapter. That shows the
  reference solutions earn every point (the exercise each chapter's ``mistaken``
  gets wrong included) and, for every varied exercise at once, that the reference
  solution given other numbers than the book's passes its check called with them
  (what a variant of tests/test_variants.py needs; its static tests check that a
  variant changes no code but those solutions and check calls). ``copycat`` hands
  in the reference student's chapter 6: nbgrader gives it none of the varied
  exercises' points, since its hidden tests check copycat's own numbers
  (tests/test_student_variants.py tests the rest of the per-student numbers).

Only the feedback and the export of ``mistaken`` and of the class below are read,
so only those courses run ``generate_feedback`` and ``nbgrader export``.

A fourth copy runs the cycle as book/instructors.md says and a learning management
system feeds it: a class of three hands in chapter 1, downloaded as one zip file
(Blackboard's names, with the times they were handed in, LMS_TIMES, and its
receipts), collected by tools/collect.py run from the repository root, autograded,
refused by tools/grades.py while the written answers (exercise 1.3) await marking,
marked by hand (the model answer, full marks), fed back and exported by
tools/grades.py: ``punctual`` (the reference, with the book's numbers) keeps every
point, ``partial`` (one typical mistake) loses that exercise, and ``tardy``, 26
hours late with no autograded point but the written answer, loses the plan's
penalty for two days (10% a day) on its final score: 20% of the maximum, which
nbgrader alone, capped at the autograded score of 0, would not take.
"""

from __future__ import annotations

import csv
import html
import json
import re
import shutil
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import assignments  # noqa: E402
import course_config  # noqa: E402
import course_plan  # noqa: E402  (assignments puts book/_ext on the path)
import grades  # noqa: E402
import variants  # noqa: E402

from relpos.book.exercises import labels, students  # noqa: E402
from relpos.book.exercises.grading import GRADING, grading  # noqa: E402

pytestmark = pytest.mark.slow

BOOK = ROOT / "book"
PLAN = course_plan.load_plan()

# label -> (a line of the reference solution, the mistake put in its place, a
# fragment of the hint the check gives). One per chapter.
WRONG: dict[str, tuple[str, str, str]] = {
    "ch1-ex1": (
        "return positions[:, None] - positions[None, :]",
        "return positions[None, :] - positions[:, None]",
        "j - i",
    ),
    "ch2-ex3": (
        "rows_used = delta_symmetric(r, 4).unique().numel()",
        "rows_used = 2 * 4",
        "2k is DeBERTa",
    ),
    "ch3-ex1": ("return min(2 * n - 1, 2 * k)", "return 2 * n - 1", "caps the rows"),
    "ch4-ex1": ("Pk[index]", "Pk[index.T]", "delta(j, i)"),
    "ch5-ex3": (
        "rows = distance.clamp(-self.k, self.k - 1) + self.k",
        "rows = distance + self.k",
        "clip i - j",
    ),
    "ch6-ex1": ("last_row = (n - k + 1) * (n - k + 2) // 2", "last_row = row_zero",
                "also collects distance k - 1"),
    "ch7-ex1": ("torch.ceil(", "torch.floor(", "round up"),
    "ch8-ex1": (
        "return torch.tensor(geometric(closest) + extra, dtype=torch.float64)",
        "return torch.tensor(geometric(num_heads), dtype=torch.float64)",
        "is not a power of two",
    ),
    "ch9-ex2": (
        'and r["length"] == multiple * L',
        'and r["length"] == max(sweep["config"]["test_lengths"])',
        "those are the sizes at test length",
    ),
    "ch10-ex1": (
        "first_untrained[scheme] = found[0] if found else None",
        "first_untrained[scheme] = found[0] if found else longer[0]",
        "is not what coverage predicts",
    ),
    "ch11-ex2": (
        'r["eval"][str(at)]["bpb"] - r["eval"][str(L)]["bpb"]',
        'r["eval"][str(L)]["bpb"] - r["eval"][str(at)]["bpb"]',
        "the signs are flipped",
    ),
    "ch12-ex2": (
        'if test["mean"] > 0 and test["p_value"] < 0.05:',
        'if test["p_value"] < 0.05:',
        "some of these are not shown ahead",
    ),
    "ch13-ex1": ("[3 * t + 3 for t in range(m)]", "[3 * t + 2 for t in range(m)]",
                 "expected"),
    "ch14-ex1": ("return (distance >= 0) & (distance < length)",
                 "return (distance >= 0) & (distance <= length)", "one key too many"),
}


def chapter_of(label: str) -> str:
    """``"ch02"`` for ``"ch2-ex3"``."""
    chapter = int(re.match(r"ch(\d+)-", label).group(1))
    return f"ch{chapter:02d}"


def mistaken(notebook: nbformat.NotebookNode, label: str) -> nbformat.NotebookNode:
    """``notebook`` with WRONG[label]'s mistake in that exercise's solution cell."""
    right, wrong, _ = WRONG[label]
    cells = [
        cell
        for cell in notebook.cells
        if cell.metadata.get("nbgrader", {}).get("grade_id", "").startswith(label + "-")
        and cell.metadata["nbgrader"]["solution"]
        and right in cell.source
    ]
    assert len(cells) == 1, f"{label}: no solution cell holds {right!r}"
    cells[0].source = cells[0].source.replace(right, wrong)
    return notebook


def feedback_text(path: Path) -> str:
    """The text of a feedback page, tags and ANSI colours out, entities decoded."""
    text = re.sub(r"<[^>]+>", "", path.read_text())
    return html.unescape(re.sub(r"\x1b\[[0-9;]*m", "", text))


# The copies of the course: each is graded (autograde) in a thread of its own.
COURSES = ("untouched", "mistaken", "late", "own")
# The per-student course ("own"): its students, and the course's secret.
OWN = ("reference", "copycat")
SECRET = "the grading test's course secret"
# The chapter copycat hands in (the reference student's work) and its varied
# exercises.
COPIED = "ch06"
# The term's first session; chapter 1's problem set is then due a week later,
# 2026-01-12 at 09:00 UTC.
FIRST_SESSION = "2026-01-05T10:00+01:00"
# When the LMS says each student handed in chapter 1 (UTC): 30 minutes early, and
# 26 hours late (two days or parts of days).
LMS_TIMES = {
    "punctual": "2026-01-12-08-30-00",
    "partial": "2026-01-12-08-45-00",
    "tardy": "2026-01-13-11-00-00",
}
LATE_SECONDS = {"punctual": 0, "partial": 0, "tardy": 26 * 60 * 60}
TOOLS = ROOT / "tools"


def tool(*args: str) -> subprocess.CompletedProcess:
    """``python tools/ARGS`` run from the repository root, as the page says."""
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True
    )


def grade(course: Path, feedback: bool = True) -> Path:
    """One course, autograded (every chapter of every student at once) and, with
    ``feedback``, fed back and exported; files downloaded from an LMS are collected
    first, their written answers (the model answers) marked by hand, and the grades
    exported after."""
    downloaded = sorted((course / "downloaded").glob("ch*"))
    for folder in downloaded:
        done = tool("tools/collect.py", folder.name, "--course", str(course))
        assert done.returncode == 0, done.stderr
    assignments.nbgrader(course, "autograde", "*")
    if downloaded:
        penalties = autograded_penalties(course)
        (course / "autograded_penalties.json").write_text(json.dumps(penalties))
        refused = tool("tools/grades.py", str(course))
        assert refused.returncode == 1, refused.stdout
        (course / "refused.txt").write_text(refused.stderr)
        full_marks_by_hand(course)
    if not feedback:
        return course
    assignments.nbgrader(course, "generate_feedback", "*")
    if downloaded:
        done = tool("tools/grades.py", str(course))
        assert done.returncode == 0, done.stderr
    assignments.nbgrader(course, "export")
    return course


def autograded_penalties(course: Path) -> dict[str, float]:
    """``student -> chapter 1's late penalty`` as nbgrader's autograde left it."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "relpos") as book:
        return {
            s.student.id: s.late_submission_penalty
            for s in book.find_assignment("ch01").submissions
        }


def full_marks_by_hand(course: Path) -> None:
    """Every written answer handed in to ``course`` given its full points, as the
    instructor does in the formgrader for the book's model answer."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "relpos") as book:
        marked = 0
        for assignment in book.assignments:
            for submission in assignment.submissions:
                for notebook in submission.notebooks:
                    for grade in notebook.grades:
                        if grade.name.endswith("-written"):
                            grade.manual_score = grade.max_score
                            grade.needs_manual_grade = False
                            marked += 1
        book.db.commit()
    assert marked > 0, f"{course}: no written answer to mark"


def with_written_answers(
    release: nbformat.NotebookNode, source: nbformat.NotebookNode
) -> nbformat.NotebookNode:
    """The release as handed out, its written answers the model answers: no
    autograded point, every point by hand."""
    model = {
        c.metadata["nbgrader"]["grade_id"]: c.source
        for c in source.cells
        if c.metadata.get("nbgrader", {}).get("grade_id", "").endswith("-written")
    }
    assert model, "chapter 1 has no written answer"
    for cell in release.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        if grade_id in model:
            cell.source = model[grade_id]
    return release


def lms_download(course: Path, source: Path, release: Path) -> Path:
    """The zip file Blackboard gives for chapter 1: each student's file named with
    the time they handed it in, and a receipt beside it."""
    reference = nbformat.read(source, 4)
    handed_in = {
        "punctual": reference,
        "partial": mistaken(nbformat.read(source, 4), "ch1-ex1"),
        "tardy": with_written_answers(nbformat.read(release, 4), reference),
    }
    archive = course / "downloaded" / "ch01" / "archive" / "lms.zip"
    archive.parent.mkdir(parents=True)
    with zipfile.ZipFile(archive, "w") as lms:
        for student, time in LMS_TIMES.items():
            name = f"Problem set 1_{student}_attempt_{time}"
            lms.writestr(f"{name}_ch01.ipynb", nbformat.writes(handed_in[student]))
            lms.writestr(f"{name}.txt", f"Name: {student}\nDate Submitted: {time}\n")
    return archive


def own_numbers(student: str) -> dict[str, dict[str, int]]:
    """``label -> numbers`` drawn for ``student`` in the per-student course."""
    return {
        label: students.student_numbers(label, student, SECRET)
        for label in variants.VARIANTS
    }


def handed_in(
    release: nbformat.NotebookNode,
    source: nbformat.NotebookNode,
    numbers: dict[str, dict[str, int]],
) -> nbformat.NotebookNode:
    """``release`` with every solution cell the source's reference solution, with
    ``numbers`` (a student's) written into it by the variants' edits: a student's
    correct work."""
    solutions = {
        c.metadata["nbgrader"]["grade_id"]: c.source
        for c in source.cells
        if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code"
    }
    notebook = nbformat.from_dict(release)
    for cell in notebook.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        if grade_id not in solutions:
            continue
        code, label = solutions[grade_id], grade_id.removesuffix("-code")
        if label in numbers:
            for old, new in variants.VARIANTS[label].edits(numbers[label]):
                code = code.replace(old, new)
        cell.source = code
    return notebook


def submit(
    course: Path, student: str, notebook: nbformat.NotebookNode, name: str
) -> None:
    """``notebook`` handed in by ``student`` as problem set ``name`` of ``course``."""
    target = course / "submitted" / student / name / f"{name}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)


def per_student_course(root: Path) -> Path:
    """A per-student course built by the tool as book/instructors.md says (the
    secret in the environment, a roster of OWN): ``reference`` hands in its correct
    work in every chapter, ``copycat`` the reference's chapter 6."""
    roster = root / "roster.txt"
    roster.write_text("\n".join(OWN) + "\n")
    course = root / "own"
    argv = [str(course), "--book", str(BOOK), "--per-student"]
    assert assignments.main([*argv, "--students", str(roster)]) == 0
    work = own_numbers("reference")
    for release in sorted((course / "release_students" / "reference").glob("ch*")):
        name = release.name
        source = nbformat.read(course / "source" / name / f"{name}.ipynb", 4)
        mine = handed_in(nbformat.read(release / f"{name}.ipynb", 4), source, work)
        submit(course, "reference", mine, name)
        if name == COPIED:
            submit(course, "copycat", mine, name)
    return course


def plain_courses(root: Path) -> dict[str, Path]:
    """The course of the book's numbers (due dates from FIRST_SESSION), a copy for
    each of untouched, mistaken and the LMS class, with their submissions."""
    first = course_config.parse_first_session(FIRST_SESSION)
    released = assignments.write_course(root / "course", BOOK, first_session=first)
    names = ("untouched", "mistaken", "late")
    courses = {s: shutil.copytree(root / "course", root / s) for s in names}
    lms_download(
        courses["late"],
        root / "course" / "source" / "ch01" / "ch01.ipynb",
        root / "course" / "release" / "ch01" / "ch01.ipynb",
    )
    wrong_by_chapter = {chapter_of(label): label for label in WRONG}
    for path in released:
        name = path.parent.name
        submit(courses["untouched"], "untouched", nbformat.read(path, 4), name)
        if name in wrong_by_chapter:  # else test_every_chapter_has_a_typical_mistake
            source = nbformat.read(root / "course" / "source" / name / path.name, 4)
            wrong = mistaken(source, wrong_by_chapter[name])
            submit(courses["mistaken"], "mistaken", wrong, name)
    return courses


@pytest.fixture(scope="module")
def courses(tmp_path_factory) -> dict[str, Path]:
    """``copy -> that copy of the course``, graded (COURSES). Each copy has a
    gradebook of its own, so the four are graded at the same time; only mistaken
    and the LMS class are fed back and exported (the others' are not read)."""
    root = tmp_path_factory.mktemp("grading")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(students.SECRET_VARIABLE, SECRET)  # autograde reads it too
        courses = {**plain_courses(root), "own": per_student_course(root)}
        feedback = {"untouched": False, "mistaken": True, "late": True, "own": False}
        with ThreadPoolExecutor(len(COURSES)) as pool:
            jobs = [pool.submit(grade, courses[c], feedback[c]) for c in COURSES]
            for job in jobs:
                job.result()
    return courses


@pytest.fixture(scope="module")
def course(courses) -> Path:
    """The course as built (source and release), before anyone hands in."""
    return courses["untouched"]


@pytest.fixture(scope="module")
def scores(courses) -> dict[tuple[str, str], tuple[float, float, float]]:
    """``(student, chapter) -> (autograded score, its maximum, total score)``."""
    from nbgrader.api import Gradebook

    result = {}
    for course in courses.values():
        url = f"sqlite:///{course / 'gradebook.db'}"
        with Gradebook(url, "relpos") as book:
            for assignment in book.assignments:
                for submission in assignment.submissions:
                    result[(submission.student.id, assignment.name)] = (
                        submission.code_score,
                        submission.max_code_score,
                        submission.score,
                    )
    return result


def chapters(course: Path) -> list[str]:
    return sorted(p.name for p in (course / "release").iterdir())


def test_every_check_has_points() -> None:
    missing = sorted(set(labels()) - set(GRADING))
    assert not missing, f"no answers' kinds in grading.GRADING for {missing}"
    assert all(course_plan.exercise_points(PLAN, label) > 0 for label in GRADING)


def test_every_chapter_has_a_typical_mistake(course) -> None:
    covered = sorted({chapter_of(label) for label in WRONG})
    assert covered == chapters(course), "WRONG needs one mistake per chapter"


def code(path: Path) -> str:
    """The code cells of a notebook, one text."""
    notebook = nbformat.read(path, as_version=4)
    return "\n".join(c.source for c in notebook.cells if c.cell_type == "code")


def test_the_release_hides_its_hidden_tests(course) -> None:
    for name in chapters(course):
        release = code(course / "release" / name / f"{name}.ipynb")
        source = code(course / "source" / name / f"{name}.ipynb")
        assert "BEGIN SOLUTION" not in release and "HIDDEN TESTS" not in release
        checked = re.findall(r'check\("(ch\d+-ex\d+)"', source)
        assert checked, name
        for label in checked:
            hidden = grading(label).hidden
            assert (f'check("{label}"' in release) is not hidden, label
            assert (f'answered("{label}"' in release) is hidden, label


def test_the_reference_solutions_earn_every_autograded_point(courses, scores):
    """The reference student of the per-student course (the book's solutions with
    their own numbers in the varied exercises) earns every autograded point of
    every chapter, out of the same maxima as the book's course."""
    built = chapters(courses["untouched"])
    assert chapters(courses["own"]) == built
    for name in built:
        score, maximum, _ = scores[("reference", name)]
        assert maximum > 0 and score == maximum, name
        assert maximum == scores[("untouched", name)][1], name


def graded_cells(course: Path, student: str, name: str) -> list:
    """The test cells of ``student``'s problem set ``name`` as autograde ran them."""
    path = course / "autograded" / student / name / f"{name}.ipynb"
    notebook = nbformat.read(path, as_version=4)
    return [
        c
        for c in notebook.cells
        if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")
    ]


def test_every_varied_check_passes_with_the_students_own_numbers(courses):
    """Each varied exercise's reference solution, given the reference student's
    numbers (never the book's), passes its test, whose check draws the same numbers
    when nbgrader runs it: what a variant's reference solutions passing its own
    checks needs, for every varied exercise at once."""
    course, numbers = courses["own"], own_numbers("reference")
    for label in variants.VARIANTS:
        drawn = numbers[label].items()  # CHOICES never hold the book's numbers
        assert all(v in students.CHOICES[label][k] for k, v in drawn), label
        cells = [
            c
            for c in graded_cells(course, "reference", chapter_of(label))
            if c.metadata["nbgrader"]["grade_id"].startswith(f"{label}-test")
        ]
        assert cells, label
        for cell in cells:
            assert f'graded_numbers("{label}")' in cell.source, label
            printed = "".join(o.get("text", "") for o in cell.outputs)
            assert f"{label}: correct." in printed, (label, printed)


def test_a_copied_answer_earns_none_of_the_varied_points(courses) -> None:
    """copycat hands in the reference student's correct chapter 6: nbgrader's
    autograde gives the reference every point of each varied exercise, copycat
    none (each hidden test checks its own student's numbers)."""
    from nbgrader.api import Gradebook

    url = f"sqlite:///{courses['own'] / 'gradebook.db'}"
    got, maximum = {}, {}
    with Gradebook(url, "relpos") as gradebook:
        for student in OWN:
            (notebook,) = gradebook.find_submission(COPIED, student).notebooks
            for grade in notebook.grades:
                got[student, grade.name] = grade.score
                maximum[grade.name] = grade.max_score
    varied = [label for label in variants.VARIANTS if chapter_of(label) == COPIED]
    assert varied
    for label in varied:
        test = f"{label}-test"
        assert got["reference", test] == maximum[test] > 0, (label, got)
        assert got["copycat", test] == 0, (label, got)


def test_the_untouched_release_earns_nothing(course, scores) -> None:
    for name in chapters(course):
        assert scores[("untouched", name)][0::2] == (0, 0), name


def test_a_typical_mistake_loses_its_points_with_the_hint(courses, scores) -> None:
    """Each chapter's mistaken exercise loses its points and nothing else (so
    every other exercise's reference solution, with the book's numbers, earns its
    points), and the feedback gives the check's hint."""
    course = courses["mistaken"]
    built = chapters(course)
    for label, (_, _, hint) in WRONG.items():
        name = chapter_of(label)
        if name not in built:  # test_every_chapter_has_a_typical_mistake says so
            continue
        score, maximum, _ = scores[("mistaken", name)]
        assert score == maximum - course_plan.exercise_points(PLAN, label), label
        feedback = course / "feedback" / "mistaken" / name / f"{name}.html"
        assert f"{label}: not yet." in feedback_text(feedback)
        assert hint in feedback_text(feedback), label


@pytest.fixture(scope="module")
def handed_in_late(courses) -> dict[str, dict[str, float]]:
    """The chapter 1 submissions collected from the LMS download: per student, the
    seconds late, the penalty, the final score, the autograded score and the
    maxima, from the gradebook after hand-marking and export."""
    from nbgrader.api import Gradebook

    url = f"sqlite:///{courses['late'] / 'gradebook.db'}"
    found = {}
    with Gradebook(url, "relpos") as book:
        for student in LMS_TIMES:
            submission = book.find_submission("ch01", student)
            found[student] = {
                "late": submission.total_seconds_late,
                "penalty": submission.late_submission_penalty or 0.0,
                "score": submission.score,
                "autograded": submission.code_score,
                "maximum": submission.max_score,
                "max_autograded": submission.max_code_score,
            }
    return found


def test_every_problem_set_has_its_due_date(course) -> None:
    from nbgrader.api import Gradebook

    first = course_config.parse_first_session(FIRST_SESSION)
    expected = course_config.due_dates(first, course_config.load_plan())
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "relpos") as book:
        dates = {a.name: a.duedate for a in book.assignments}
    assert sorted(dates) == chapters(course) == sorted(expected)
    for name, date in dates.items():  # nbgrader keeps UTC without a zone
        assert date == expected[name].replace(tzinfo=None), name
    header = nbformat.read(course / "release" / "ch01" / "ch01.ipynb", 4).cells[0]
    assert "Due 2026-01-12 09:00 UTC." in header.source


def test_zip_collect_files_each_download_with_its_time(courses) -> None:
    course = courses["late"]
    for student, time in LMS_TIMES.items():
        folder = course / "submitted" / student / "ch01"
        assert (folder / "ch01.ipynb").is_file(), student
        day, clock = time[:10], time[11:].replace("-", ":")
        assert (folder / "timestamp.txt").read_text().strip() == f"{day} {clock}"


def policy_penalty(found: dict[str, float]) -> float:
    """The plan's penalty on the final score: min(share x maximum, score)."""
    late = course_config.load_plan()["assessment"]["late"]
    share = course_config.late_fraction(
        found["late"], late["percent_per_day"], late["max_percent"]
    )
    return min(share * found["maximum"], found["score"])


def test_a_class_of_three_is_graded_as_stated(handed_in_late) -> None:
    punctual, partial, tardy = (handed_in_late[s] for s in LMS_TIMES)
    for student, found in handed_in_late.items():
        assert found["late"] == LATE_SECONDS[student], student
    assert punctual["score"] == punctual["maximum"] > 0 and punctual["penalty"] == 0
    lost = course_plan.exercise_points(PLAN, "ch1-ex1")
    assert partial["score"] == partial["maximum"] - lost and partial["penalty"] == 0
    # tardy: nothing autograded, the written answers (all the rest) marked later
    assert tardy["autograded"] == 0
    assert tardy["score"] == tardy["maximum"] - tardy["max_autograded"] > 0


def test_a_late_penalty_is_taken_on_the_final_score(courses, handed_in_late) -> None:
    tardy = handed_in_late["tardy"]
    late = course_config.load_plan()["assessment"]["late"]
    stated = 2 * late["percent_per_day"] / 100 * tardy["maximum"]  # two days
    assert stated < tardy["score"]  # so the policy takes it whole
    assert tardy["penalty"] == pytest.approx(stated) == policy_penalty(tardy)
    # what nbgrader's autograde alone took: capped at the autograded score, 0
    autograded = json.loads((courses["late"] / "autograded_penalties.json").read_text())
    assert not autograded["tardy"] and not autograded["punctual"]
    feedback = courses["late"] / "feedback" / "tardy" / "ch01" / "ch01.html"
    assert f"Late submission penalty (Score: -{round(stated, 2):g})" in (
        feedback_text(feedback)
    )


def test_the_export_refuses_while_answers_await_marking(courses) -> None:
    refused = (courses["late"] / "refused.txt").read_text()
    assert f"{len(LMS_TIMES)} answer(s) await marking" in refused
    for student in LMS_TIMES:
        assert f"{student}  ch01/ch01  ch1-ex3-written" in refused


def test_the_export_and_the_lms_file_carry_the_penalty(courses, handed_in_late):
    with (courses["late"] / "grades.csv").open(newline="") as handle:
        exported = list(csv.DictReader(handle))
    rows = {row["student_id"]: row for row in exported if row["assignment"] == "ch01"}
    for student, found in handed_in_late.items():
        score = float(rows[student]["score"])
        assert score == pytest.approx(found["score"] - policy_penalty(found)), student
    with (courses["late"] / "lms_grades.csv").open(newline="") as handle:
        lms = {row["student_id"]: row for row in csv.DictReader(handle)}
    for student, found in handed_in_late.items():
        kept = 100 * (found["score"] - policy_penalty(found)) / found["maximum"]
        assert lms[student]["ch01"] == f"{kept:.1f}", student
    assert lms["punctual"]["ch01"] == "100.0"
    assert float(lms["tardy"]["problem_sets"]) < float(lms["partial"]["problem_sets"])
