"""The nbgrader course's dates and configuration, from the course plan.

book/course/plan.yml says when a problem set is due: ``homework_due_weeks`` (in
``format``, the one rule the instructors' page and the slides state too) weeks after
the start of the session that teaches its chapter at the earliest, the sessions being
``session_interval_days`` apart, and no more than ``problem_sets_per_week`` in one
week (book/_ext/course_plan.py's ``problem_set_days`` applies the rule); and its
``assessment`` says what late work costs
(a share of the problem set's points per day late or part of a day, up to a cap).
tools/assignments.py writes, from it,

- each assignment's due date, into nbgrader's gradebook (``due_dates``; nbgrader
  0.9 reads due dates from there, as ``nbgrader db assignment add --duedate``
  writes them), and
- ``nbgrader_config.py`` (``config_text``): the course id, the cell timeout, the
  late penalty as an nbgrader plugin (``LatePenalty``, which ``nbgrader
  autograde`` runs on a submission with a timestamp after its due date), the
  file names ``nbgrader zip_collect`` reads in files downloaded from a learning
  management system (``LmsNames``: nbgrader's own reading of a time such as
  2026-01-12-08-30-00 drops the minutes), and the due dates again, as comments.

The penalty is taken from the final score: ``LatePenalty`` asks for the plan's share
of the maximum, but nbgrader caps a penalty at the score the notebook has when it is
autograded, before its written answers are marked. So ``generate_feedback`` assigns
the penalty again (on the score after hand-marking), and tools/grades.py, the export,
settles every penalty in the gradebook as min(share x maximum, final score).

``LMS_NAMES``: the file names of the bulk downloads of Blackboard, Canvas and Moodle,
which tools/collect.py passes to ``nbgrader zip_collect``.

The configuration holds the source of ``late_fraction`` itself, so the course
folder needs nothing from this repository when it moves to another machine.
"""

from __future__ import annotations

import inspect
import math
import sys
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import yaml

PLAN = Path(__file__).resolve().parent.parent / "book" / "course" / "plan.yml"
sys.path.insert(0, str(PLAN.parent.parent / "_ext"))

import course_plan  # noqa: E402  (the plan's one due rule, problem_set_days)
SECONDS_PER_DAY = 24 * 60 * 60
# The names of the files a learning management system hands over, for
# ``nbgrader zip_collect``: SOMETHING_STUDENT_attempt_YYYY-MM-DD-HH-MM-SS_chNN.ipynb
# (the form of nbgrader's own example), the time in LMS_TIMEZONE (an IANA name).
LMS_TIMEZONE = "UTC"
SUBMISSION_NAME = (
    r".*_(?P<student_id>[^_/\\]+)_attempt_(?P<timestamp>\d{4}(?:-\d\d){5})"
    r"_(?P<file_id>ch\d\d\.ipynb)$"
)


@dataclass(frozen=True)
class LmsNaming:
    """How one learning management system names the files of a bulk download.

    ``pattern``: an expression nbgrader matches against each file's whole path; it
    captures ``student_id``, ``file_id`` and, where the name carries one,
    ``timestamp``. ``sample``: a name the system writes. ``extra``: the files it
    adds beside the notebooks (receipts), which are not submissions.
    """

    pattern: str
    sample: str
    timed: bool
    extra: str = ""


# Blackboard (Grade Centre, "Assignment File Download"): ASSIGNMENT_USERNAME_attempt_
# TIME_FILENAME, and a receipt ASSIGNMENT_USERNAME_attempt_TIME.txt per attempt.
# Canvas ("Download Submissions"): lastnamefirstname[_late]_USERID_SUBMISSIONID_
# FILENAME, a resubmitted file's name with -1, -2...; no time. Moodle ("Download
# all submissions"): Full Name_PARTICIPANTID_assignsubmission_file_FILENAME, or a
# folder of that name holding FILENAME; no time.
LMS_NAMES = {
    "blackboard": LmsNaming(
        SUBMISSION_NAME,
        "Problem set 1_jdoe_attempt_2026-01-12-08-30-00_ch01.ipynb",
        timed=True,
        extra=r"_attempt_\d{4}(?:-\d\d){5}\.txt$",
    ),
    "canvas": LmsNaming(
        r"(?:.*[/\\])?[^/\\_]+_(?:late_|LATE_)?(?P<student_id>\d+)_\d+"
        r"_(?P<file_id>ch\d\d)(?:-\d+)?\.ipynb$",
        "doejane_late_123456_7891011_ch01-1.ipynb",
        timed=False,
    ),
    "moodle": LmsNaming(
        r".*_(?P<student_id>\d+)_assignsubmission_file_[/\\]?"
        r"(?P<file_id>ch\d\d)\.ipynb$",
        "Jane Doe_654321_assignsubmission_file_ch01.ipynb",
        timed=False,
    ),
}


def load_plan(path: Path = PLAN) -> dict[str, Any]:
    """The course plan, as the instructors' page reads it."""
    return yaml.safe_load(path.read_text())


def late_fraction(
    seconds_late: float, percent_per_day: float, max_percent: float
) -> float:
    """The share of a notebook's points that a submission ``seconds_late`` late
    loses: ``percent_per_day`` per day or part of a day, at most ``max_percent``.
    """
    if seconds_late <= 0:
        return 0.0
    days = math.ceil(seconds_late / SECONDS_PER_DAY)
    return min(percent_per_day * days, max_percent) / 100


def parse_first_session(text: str) -> datetime:
    """The first session's start, ``2026-09-14T10:00+02:00``, as an aware datetime.

    Raises:
        ValueError: ``text`` is not an ISO 8601 date and time with a UTC offset.
    """
    try:
        start = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        start = None
    if start is None or start.tzinfo is None:
        raise ValueError(
            "first session must be an ISO 8601 date and time with its UTC offset, "
            f"such as 2026-09-14T10:00+02:00 or 2026-09-14T08:00Z; got {text!r}"
        )
    return start


def due_dates(first_session: datetime, plan: dict[str, Any]) -> dict[str, datetime]:
    """``"chNN" -> its problem set's due date`` in UTC, for every chapter taught."""
    if first_session.tzinfo is None:
        raise ValueError("first_session must be an aware datetime (with its offset)")
    return {
        f"ch{chapter:02d}": (first_session + timedelta(days=day)).astimezone(
            timezone.utc
        )
        for chapter, day in course_plan.problem_set_days(plan).items()
    }


def config_text(plan: dict[str, Any], dates: dict[str, datetime] | None = None) -> str:
    """The course's ``nbgrader_config.py``; ``dates`` are listed as comments."""
    late = plan["assessment"]["late"]
    listed = "#   none yet: tools/assignments.py --first-session sets them"
    if dates:
        listed = "\n".join(
            f"#   {name}  {date:%Y-%m-%d %H:%M} UTC"
            for name, date in sorted(dates.items())
        )
    return f'''\
"""nbgrader's configuration for the relpos course (written by tools/assignments.py
from book/course/plan.yml; change the plan and rebuild rather than this file)."""

import math
import re

from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.plugins import BasePlugin, FileNameCollectorPlugin
from nbgrader.preprocessors import AssignLatePenalties, GetGrades

c = get_config()  # noqa: F821 (nbgrader defines it)
c.CourseDirectory.course_id = "relpos"
# A problem set runs in seconds; a cell that trains a small model may take longer.
c.Execute.timeout = 300

# Due dates, in the gradebook (`nbgrader db assignment list` shows them):
{listed}

# Late work loses PERCENT_PER_DAY of a problem set's points per day late or part of
# a day, at most MAX_PERCENT. `nbgrader autograde` applies it to a submission whose
# timestamp (timestamp.txt, written by zip_collect or by nbgrader's exchange) is
# after the due date; `nbgrader export` subtracts it.
PERCENT_PER_DAY = {late["percent_per_day"]}
MAX_PERCENT = {late["max_percent"]}
SECONDS_PER_DAY = {SECONDS_PER_DAY}


{inspect.getsource(late_fraction)}

class LatePenalty(BasePlugin):
    """The late penalty in points: a share of the notebook's maximum points, so
    that the written answers graded later by hand are penalised alike."""

    def late_submission_penalty(self, student_id, score, total_seconds_late):
        grader = self.parent  # nbgrader's AssignLatePenalties, on this notebook
        notebook = grader.gradebook.find_notebook(
            grader.notebook_id, grader.assignment_id
        )
        share = late_fraction(total_seconds_late, PERCENT_PER_DAY, MAX_PERCENT)
        return share * notebook.max_score


c.AssignLatePenalties.plugin_class = LatePenalty
# nbgrader caps the penalty at the score when autograded, before the written answers
# are marked: the feedback (after hand-marking) assigns it again on the final score,
# and tools/grades.py settles it in the gradebook before it exports.
c.GenerateFeedback.preprocessors = [
    AssignLatePenalties,
    GetGrades,
    CSSHTMLHeaderPreprocessor,
]

# Files downloaded from a learning management system: put them (or the zip files
# holding them) in downloaded/chNN/archive/ and run, from anywhere,
# `python tools/collect.py chNN --lms blackboard|canvas|moodle` (it runs
# `nbgrader zip_collect chNN` here and fails on a file it skips), which files each
# notebook as submitted/STUDENT/chNN/chNN.ipynb with its time. Without --lms the
# names read SOMETHING_STUDENT_attempt_YYYY-MM-DD-HH-MM-SS_chNN.ipynb (Blackboard's),
# the time in LMS_TIMEZONE (tools/course_config.py, LMS_NAMES, has the others).
LMS_TIMEZONE = {LMS_TIMEZONE!r}


class LmsNames(FileNameCollectorPlugin):
    """nbgrader's collector, with a time YYYY-MM-DD-HH-MM-SS read whole, in
    LMS_TIMEZONE (other forms of time are left to nbgrader)."""

    def collect(self, submitted_file):
        found = super().collect(submitted_file)
        time = (found or {{}}).get("timestamp") or ""
        if re.fullmatch(r"\\d{{4}}(-\\d\\d){{5}}", time):
            clock = time[11:].replace("-", ":")
            found["timestamp"] = f"{{time[:10]}} {{clock}} {{LMS_TIMEZONE}}"
        return found


c.ZipCollectApp.collector_plugin = LmsNames
c.FileNameCollectorPlugin.named_regexp = {SUBMISSION_NAME!r}
'''
