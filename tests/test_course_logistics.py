"""The course's dates, late penalty, LMS file names and grades, without nbgrader's
cycle (tests/test_grading.py runs that, with a late submission).

- tools/course_config.py: the due dates from the plan (a week after each
  session's start, session 4's too), the late share per day, and the
  nbgrader_config.py it writes (the late plugin configured, the LMS names read).
- tools/grades.py: nbgrader's export turned into one row per student, weighed.
"""

from __future__ import annotations

import csv
import re
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import course_config  # noqa: E402
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
    assert sorted(dates) == sorted(taught) and len(dates) == 13
    days = 7 * PLAN["format"]["homework_due_weeks"]  # the plan's one due rule
    interval = PLAN["assessment"]["session_interval_days"]
    for name, session in taught.items():
        expected = first + timedelta(days=(session - 1) * interval + days)
        assert dates[name] == expected and dates[name].tzinfo == timezone.utc
    assert dates["ch01"] == datetime(2026, 9, 21, 8, 0, tzinfo=timezone.utc)
    # the last session's problem sets: a week after it, not "the next session"
    assert dates["ch12"] - dates["ch09"] == timedelta(0)
    assert dates["ch12"] == first + timedelta(days=3 * interval + days)


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
