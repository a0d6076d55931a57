"""The course's dates, late penalty, LMS file names and grades, without nbgrader's
cycle (tests/test_grading.py runs that, with a late submission).

- tools/course_config.py: the due dates from the plan (a week after each
  session's start, session 4's too), the late share per day, and the
  nbgrader_config.py it writes (the late plugin configured, the LMS names read).
- tools/grades.py: the gradebook turned into one row per student, weighed, after
  every answer is marked and every late penalty settled on the final score.
- tools/collect.py: each system's file names, a skipped file refused.
"""

from __future__ import annotations

import csv
import os
import re
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import course_config  # noqa: E402
import collect  # noqa: E402
import grades  # noqa: E402

PLAN = course_config.load_plan()
DAY = 24 * 60 * 60


def test_late_work_loses_a_share_per_started_day_up_to_the_cap():
    share = course_config.late_fraction
    assert share(0, 10, 50) == 0 and share(-5, 10, 50) == 0
    assert share(1, 10, 50) == pytest.approx(0.1)  # a second late: one day
    assert share(DAY, 10, 50) == pytest.approx(0.1)
    assert share(DAY + 1, 10, 50) == pytest.approx(0.2)
    assert share(26 * 3600, 10, 50) == pytest.approx(0.2)
    assert share(30 * DAY, 10, 50) == pytest.approx(0.5)


def test_each_problem_set_is_due_weeks_after_its_session():
    first = course_config.parse_first_session("2026-09-14T10:00+02:00")
    dates = course_config.due_dates(first, PLAN)
    taught = {
        f"ch{n:02d}": s["number"] for s in PLAN["sessions"] for n in s["chapters"]
    }
    assert sorted(dates) == sorted(taught) and len(dates) == 14
    days = 7 * PLAN["format"]["homework_due_weeks"]  # the plan's one due rule
    interval = PLAN["assessment"]["session_interval_days"]
    for name, session in taught.items():
        earliest = first + timedelta(days=(session - 1) * interval + days)
        assert dates[name] >= earliest and dates[name].tzinfo == timezone.utc
        assert (dates[name] - earliest) % timedelta(weeks=1) == timedelta(0)
    assert dates["ch01"] == datetime(2026, 9, 21, 8, 0, tzinfo=timezone.utc)
    # two a week at most, in the book's order: chapter 3 moves a week later
    assert dates["ch02"] == dates["ch01"]
    assert dates["ch03"] == dates["ch01"] + timedelta(weeks=1)
    # the last session's two problem sets: two weeks after it, no session there
    last = first + timedelta(days=5 * interval + 2 * days)
    assert dates["ch13"] == dates["ch14"] == last


@pytest.mark.parametrize("text", ["2026-09-14", "2026-09-14T10:00", "next monday"])
def test_a_first_session_without_its_offset_is_refused(text):
    with pytest.raises(ValueError, match="UTC offset"):
        course_config.parse_first_session(text)


def run_config(text: str):
    """Execute a written nbgrader_config.py as nbgrader does; its config object."""
    from traitlets.config import Config

    config = Config()
    namespace = {"get_config": lambda: config, "__file__": "nbgrader_config.py"}
    exec(compile(text, "nbgrader_config.py", "exec"), namespace)
    return config, namespace


def test_the_configuration_sets_the_penalty_and_the_lms_names():
    from nbgrader.plugins import BasePlugin

    first = course_config.parse_first_session("2026-01-05T10:00+01:00")
    text = course_config.config_text(PLAN, course_config.due_dates(first, PLAN))
    config, namespace = run_config(text)
    assert config.CourseDirectory.course_id == "relpos"
    plugin = config.AssignLatePenalties.plugin_class
    assert isinstance(plugin, type) and issubclass(plugin, BasePlugin)
    late = PLAN["assessment"]["late"]
    assert namespace["PERCENT_PER_DAY"] == late["percent_per_day"]
    assert namespace["late_fraction"](DAY + 1, 10, 50) == pytest.approx(0.2)
    assert "#   ch01  2026-01-12 09:00 UTC" in text  # the dates, as comments
    # an LMS's name, read whole: nbgrader alone reads 08-30-00 as 08:00
    from nbgrader.utils import parse_utc

    collector = config.ZipCollectApp.collector_plugin(config=config)
    path = "/course/downloaded/ch02/extracted/lms/ch02_s1_attempt_2026-01-12-08-30-00"
    found = collector.collect(path + "_ch02.ipynb")
    assert (found["student_id"], found["file_id"]) == ("s1", "ch02.ipynb")
    assert parse_utc(found["timestamp"]) == datetime(2026, 1, 12, 8, 30)
    namespace["LMS_TIMEZONE"] = "Europe/Berlin"  # an LMS on local time, in winter
    found = collector.collect(path + "_ch02.ipynb")
    assert parse_utc(found["timestamp"]) == datetime(2026, 1, 12, 7, 30)
    assert collector.collect(path + ".txt") is None  # not a notebook
    name = re.compile(config.FileNameCollectorPlugin.named_regexp)
    found = name.match("/course/downloaded/ch02/extracted/ch02_s123_attempt_"
                       "2026-01-12-09-30-00_ch02.ipynb")
    assert found and found.group("student_id", "file_id") == ("s123", "ch02.ipynb")
    assert found.group("timestamp") == "2026-01-12-09-30-00"
    assert not name.match("/course/downloaded/ch02/extracted/s123_ch02.ipynb")
    assert "none yet" in course_config.config_text(PLAN)


def export_rows(*rows: tuple) -> list[dict[str, str]]:
    keys = ("assignment", "student_id", "last_name", "first_name", "email",
            "score", "max_score")
    return [dict(zip(keys, map(str, row))) for row in rows]


def test_grades_become_one_weighed_row_per_student(tmp_path):
    rows = export_rows(
        ("ch01", "ada", "Lovelace", "Ada", "", 7.0, 7.0),
        ("ch02", "ada", "Lovelace", "Ada", "", 4.0, 8.0),
        ("ch01", "bob", "B", "Bob", "", 5.6, 7.0),  # late: 20% off 7 points
        ("ch02", "bob", "B", "Bob", "", 0.0, 8.0),  # not handed in
    )
    table = grades.lms_rows(rows, {"ada": 90.0}, {"problem_sets": 60, "project": 40})
    ada, bob = table
    assert (ada["ch01"], ada["ch02"], ada["problem_sets"]) == ("100.0", "50.0", "75.0")
    assert (ada["project"], ada["total"]) == ("90.0", "81.0")  # 0.6 * 75 + 0.4 * 90
    assert (bob["ch01"], bob["problem_sets"], bob["project"]) == ("80.0", "40.0", "0.0")
    assert bob["total"] == "24.0"
    no_project = grades.lms_rows(rows, None, {"problem_sets": 60, "project": 40})
    assert "total" not in no_project[0] and no_project[1]["problem_sets"] == "40.0"
    with pytest.raises(ValueError, match="weights must sum to 100"):
        grades.lms_rows(rows, None, {"problem_sets": 60, "project": 60})
    written = grades.write(table, tmp_path / "lms.csv")
    with written.open(newline="") as handle:
        read = list(csv.DictReader(handle))
    assert read == table


def test_bad_grade_files_are_refused(tmp_path):
    project = tmp_path / "project.csv"
    project.write_text("student_id,points\nada,120\n")
    with pytest.raises(ValueError, match="points of ada must be 0 to 100"):
        grades.read_project(project)
    project.write_text("student,points\nada,12\n")
    with pytest.raises(ValueError, match="must have the columns"):
        grades.read_project(project)
    rows = export_rows(("ch01", "ada", "L", "A", "", "seven", 7.0))
    with pytest.raises(ValueError, match="score of ada must be a number"):
        grades.lms_rows(rows, None, {"problem_sets": 60, "project": 40})


# The file names of each system's bulk download (tools/course_config.py, LMS_NAMES):
# (name, student, notebook, the time in the name or None).
LMS_SAMPLES = {
    "blackboard": [
        ("Problem set 1_jdoe_attempt_2026-01-12-08-30-00_ch01.ipynb", "jdoe", "ch01",
         "2026-01-12-08-30-00"),
    ],
    "canvas": [
        ("doejane_123456_7891011_ch01.ipynb", "123456", "ch01", None),
        ("doejane_late_123456_7891011_ch01.ipynb", "123456", "ch01", None),
        ("doejane_late_123456_7891011_ch01-1.ipynb", "123456", "ch01", None),
    ],
    "moodle": [
        ("Jane Doe_654321_assignsubmission_file_ch01.ipynb", "654321", "ch01", None),
        ("Jane Doe_654321_assignsubmission_file_/ch01.ipynb", "654321", "ch01", None),
    ],
}
EXTRACTED = "/course/downloaded/ch01/extracted/"


@pytest.mark.parametrize("lms", sorted(course_config.LMS_NAMES))
def test_each_systems_file_names_are_read(lms):
    naming = course_config.LMS_NAMES[lms]
    pattern = re.compile(naming.pattern)
    assert naming.sample in [name for name, *_ in LMS_SAMPLES[lms]]
    for name, student, notebook, time in LMS_SAMPLES[lms]:
        found = pattern.match(EXTRACTED + name)
        assert found, name
        assert found.group("student_id") == student, name
        assert found.group("file_id").removesuffix(".ipynb") == notebook, name
        assert found.groupdict().get("timestamp") == time, name
        assert naming.timed == (time is not None)
    others = [n for other, rows in LMS_SAMPLES.items() if other != lms
              for n, *_ in rows]
    for name in others + ["ch01.ipynb", "jdoe_ch01.ipynb"]:
        assert not pattern.match(EXTRACTED + name), (lms, name)


def test_a_blackboard_receipt_is_not_a_skipped_submission():
    extra = course_config.LMS_NAMES["blackboard"].extra
    log = (
        "[ZipCollectApp | WARNING] Skipped submission with no match information "
        f"provided: {EXTRACTED}Problem set 1_jdoe_attempt_2026-01-12-08-30-00.txt\n"
        "[ZipCollectApp | WARNING] Skipped submission with no match information "
        f"provided: {EXTRACTED}ch01 (1).ipynb\n"
        "[ZipCollectApp | WARNING] Skipped notebook with invalid name 'ch1.ipynb'\n"
    )
    assert collect.skipped_files(log, extra) == [f"{EXTRACTED}ch01 (1).ipynb",
                                                 "ch1.ipynb"]
    assert len(collect.skipped_files(log, "")) == 3


def mini_course(root: Path, names: list[str]) -> Path:
    """A course folder with chapter 1 released and ``names`` downloaded."""
    import nbformat

    root.mkdir(parents=True)
    (root / "nbgrader_config.py").write_text(course_config.config_text(PLAN))
    release = root / "release" / "ch01" / "ch01.ipynb"
    release.parent.mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(), release)
    archive = root / "downloaded" / "ch01" / "archive"
    archive.mkdir(parents=True)
    for name in names:
        nbformat.write(nbformat.v4.new_notebook(), archive / name)
    return root


def test_collection_refuses_with_its_reason(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # not the course
    assert collect.main(["ch01", "--course", str(tmp_path)]) == 1  # no course
    course = mini_course(tmp_path / "course", [])
    with pytest.raises(collect.Refused, match="releases no assignment 'ch02'"):
        collect.collect(course, "ch02")
    with pytest.raises(collect.Refused, match="nothing to collect"):
        collect.collect(course, "ch01")
    nbformat_name = "doejane_123456_7891011_ch01.ipynb"
    mini_course(tmp_path / "canvas", [nbformat_name])
    with pytest.raises(collect.Refused, match="carry no time"):
        collect.collect(tmp_path / "canvas", "ch01", "canvas")
    with pytest.raises(ValueError, match="lms must be one of"):
        collect.collect(tmp_path / "canvas", "ch01", "webct")
    times = tmp_path / "times.csv"
    times.write_text("student_id,submitted_at\n123456,2026-01-13\n")
    with pytest.raises(collect.Refused, match="with its UTC offset"):
        collect.read_times(times)


@pytest.mark.slow
def test_a_skipped_file_is_an_error_unless_allowed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # any directory but the course
    good = "doejane_123456_7891011_ch01.ipynb"
    course = mini_course(tmp_path / "course", [good, "ch01 from jane.ipynb"])
    times = tmp_path / "times.csv"
    times.write_text("student_id,submitted_at\n123456,2026-01-13T12:00+01:00\n")
    with pytest.raises(collect.Refused, match=r"1 file\(s\) skipped \(1 collected\)"):
        collect.collect(course, "ch01", "canvas", times)
    said = collect.collect(course, "ch01", "canvas", times, allow_skipped=True,
                           force=True)
    assert said.startswith("collect: 1 notebooks of ch01") and "1 skipped" in said
    folder = course / "submitted" / "123456" / "ch01"
    assert (folder / "ch01.ipynb").is_file()
    assert (folder / "timestamp.txt").read_text() == "2026-01-13 11:00:00"


@pytest.fixture
def alembic_on_path(monkeypatch) -> None:
    """nbgrader runs ``alembic`` (this environment's) to create a gradebook."""
    bin_dir = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", os.pathsep.join([bin_dir, os.environ["PATH"]]))


def tiny_gradebook(course: Path, hours_late: float, autograded: float):
    """A gradebook with one problem set (7 autograded points, 4 by hand) due
    2026-01-12 09:00 UTC, handed in by ``late`` ``hours_late`` hours after, with
    ``autograded`` points; its written answer awaits marking."""
    from nbgrader.api import Gradebook

    due = datetime(2026, 1, 12, 9, 0)
    course.mkdir(parents=True, exist_ok=True)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "relpos") as book:
        book.add_assignment("ch01", duedate=due)
        book.add_notebook("ch01", "ch01")
        book.add_grade_cell("ch1-ex1-test", "ch01", "ch01", max_score=7,
                            cell_type="code")
        book.add_grade_cell("ch1-ex3-written", "ch01", "ch01", max_score=4,
                            cell_type="markdown")
        for student in ("late", "absent"):
            book.add_student(student)
        book.add_submission("ch01", "late",
                            timestamp=due + timedelta(hours=hours_late))
        code = book.find_grade("ch1-ex1-test", "ch01", "ch01", "late")
        code.auto_score, code.needs_manual_grade = autograded, False
        written = book.find_grade("ch1-ex3-written", "ch01", "ch01", "late")
        written.needs_manual_grade = True
        # what nbgrader's autograde leaves: the penalty capped at the autograded score
        notebook = book.find_submission_notebook("ch01", "ch01", "late")
        notebook.late_submission_penalty = min(autograded, 0.2 * 11) or None
        book.db.commit()


def mark(course: Path, points: float) -> None:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "relpos") as book:
        written = book.find_grade("ch1-ex3-written", "ch01", "ch01", "late")
        written.manual_score, written.needs_manual_grade = points, False
        book.db.commit()


@pytest.mark.slow  # nbgrader creates a gradebook: about 10 s
def test_the_export_refuses_unmarked_answers_and_settles_the_penalty(
    tmp_path, capsys, alembic_on_path
):
    course = tmp_path / "course"
    tiny_gradebook(course, hours_late=26, autograded=1.0)  # below 2.2, the penalty
    assert grades.main([str(course)]) == 1
    refused = capsys.readouterr().err
    assert "1 answer(s) await marking" in refused
    assert "late  ch01/ch01  ch1-ex3-written" in refused
    assert not (course / "lms_grades.csv").exists()
    mark(course, 4)  # after the penalty was assigned: 5 points of 11
    assert grades.main([str(course)]) == 0
    said = capsys.readouterr().out
    assert "late penalty of late on ch01/ch01: 1 -> 2.2" in said
    with (course / "lms_grades.csv").open(newline="") as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle)}
    # the plan: 10% a day or part of a day, 26 hours: 20% of 11 points, from 5
    assert rows["late"]["ch01"] == f"{100 * (5 - 2.2) / 11:.1f}"
    assert rows["absent"]["ch01"] == "0.0"
    with grades.open_gradebook(course) as book:  # settled for nbgrader too
        rows = {r["student_id"]: r for r in grades.export_rows(book)}
        assert float(rows["late"]["late_submission_penalty"]) == pytest.approx(2.2)
    assert grades.main([str(course)]) == 0  # settled once: nothing changes
    assert "late penalty" not in capsys.readouterr().out


@pytest.mark.slow
def test_a_penalty_never_exceeds_the_final_score(tmp_path, capsys, alembic_on_path):
    course = tmp_path / "course"
    tiny_gradebook(course, hours_late=30 * 24, autograded=0.0)  # 50%: 5.5 points
    assert grades.main([str(course), "--allow-unmarked"]) == 0
    assert "1 answer(s) not yet marked counted as 0" in capsys.readouterr().out
    mark(course, 3)
    assert grades.main([str(course)]) == 0
    with grades.open_gradebook(course) as book:
        late = {r["student_id"]: r for r in grades.export_rows(book)}["late"]
    assert float(late["late_submission_penalty"]) == 3.0 and late["score"] == "0.0"
    with pytest.raises(SystemExit):
        grades.main([str(tmp_path / "nowhere")])
    assert "gradebook.db does not exist" in capsys.readouterr().err
