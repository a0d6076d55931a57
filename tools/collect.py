"""Collect a problem set downloaded from a learning management system, from anywhere.

Usage: .venv/bin/python tools/collect.py chNN [--course DIR] [--lms NAME]
       [--times CSV] [--untimed] [--allow-skipped] [--force]
(default DIR: _build/course of this repository, whatever the current directory;
NAME: blackboard (default), canvas or moodle; CSV: the columns student_id and
submitted_at, an ISO 8601 time with its UTC offset)

It runs ``nbgrader zip_collect chNN`` in the course folder (nbgrader reads its
configuration and its folders from the current directory: run elsewhere, it finds
nothing to collect and exits 0), on the files in ``DIR/downloaded/chNN/archive/``,
reading their names as the system writes them (tools/course_config.py,
``LMS_NAMES``), and files each notebook as ``DIR/submitted/STUDENT/chNN/chNN.ipynb``
with the time it was handed in in ``timestamp.txt``. It refuses, with the reason:

- a folder that is not a built course, an assignment it does not release, or an
  empty download;
- a file nbgrader skips (its name does not read as NAME's, or its notebook is not
  chNN.ipynb), unless ``--allow-skipped`` (a system's receipts are not counted);
- Canvas's and Moodle's names, which carry no time (so nothing would ever be
  late), unless ``--times CSV`` gives each student's time from the system's list
  of submissions, or ``--untimed`` says no late penalty applies;
- nothing collected at all.

``--force``: collect again, replacing what an earlier run extracted.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from course_config import LMS_NAMES  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
COURSE = ROOT / "_build" / "course"
# nbgrader's own words for a file it leaves out (nbgrader/apps/zipcollectapp.py)
_SKIPPED = re.compile(
    r"Skipped submission with no match information provided: (?P<file>.+)$"
    r"|Skipped notebook with invalid name '(?P<notebook>.+)'$"
)
_COLLECTED = re.compile(r"(\d+) files collected")


class Refused(Exception):
    """Collection refused or failed; the message says why and what to do."""


def check_course(course: Path, assignment: str) -> Path:
    """The course's download folder for ``assignment``, once the course is checked.

    Raises:
        Refused: ``course`` is not a built course, does not release
            ``assignment``, or has nothing in its download folder.
    """
    if not (course / "nbgrader_config.py").is_file():
        raise Refused(
            f"{course} is not an nbgrader course (no nbgrader_config.py): build it "
            "with `make assignments` or pass --course DIR"
        )
    released = sorted(p.name for p in (course / "release").glob("ch*"))
    if assignment not in released:
        raise Refused(
            f"{course} releases no assignment {assignment!r}; it releases "
            f"{', '.join(released) or 'none'}"
        )
    archive = course / "downloaded" / assignment / "archive"
    if not archive.is_dir() or not any(archive.iterdir()):
        raise Refused(
            f"nothing to collect in {archive}: put the system's download (its zip "
            "files or the notebooks) there"
        )
    return archive


def skipped_files(log: str, extra: str) -> list[str]:
    """The files nbgrader's log says it skipped, less the system's receipts
    (``extra``, an expression matched against each name)."""
    found = []
    for line in log.splitlines():
        match = _SKIPPED.search(line.strip())
        if not match:
            continue
        name = match.group("file") or match.group("notebook")
        if extra and re.search(extra, name):
            continue
        found.append(name)
    return found


def read_times(path: Path) -> dict[str, datetime]:
    """``student_id -> the time they handed in``, in UTC, from a CSV file.

    Raises:
        Refused: a column is missing or a time has no UTC offset.
    """
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    if not rows or not {"student_id", "submitted_at"} <= set(rows[0]):
        raise Refused(f"{path} must have the columns student_id and submitted_at")
    times = {}
    for row in rows:
        try:
            time = datetime.fromisoformat(row["submitted_at"].strip())
        except ValueError:
            time = None
        if time is None or time.tzinfo is None:
            raise Refused(
                f"submitted_at of {row['student_id']} in {path} must be an ISO 8601 "
                f"time with its UTC offset, such as 2026-01-12T09:30+01:00; got "
                f"{row['submitted_at']!r}"
            )
        times[row["student_id"]] = time.astimezone(timezone.utc)
    return times


def write_times(course: Path, assignment: str, times: dict[str, datetime]) -> int:
    """Each collected submission's ``timestamp.txt`` from ``times``; how many.

    Raises:
        Refused: a student collected has no time in ``times``.
    """
    folders = sorted((course / "submitted").glob(f"*/{assignment}"))
    missing = [f.parent.name for f in folders if f.parent.name not in times]
    if missing:
        raise Refused(f"no submitted_at for {', '.join(missing)} in --times")
    for folder in folders:
        time = times[folder.parent.name]
        # nbgrader's own form (zip_collect writes it so), read as UTC
        (folder / "timestamp.txt").write_text(f"{time:%Y-%m-%d %H:%M:%S}")
    return len(folders)


def collect(
    course: Path,
    assignment: str,
    lms: str = "blackboard",
    times: Path | None = None,
    untimed: bool = False,
    allow_skipped: bool = False,
    force: bool = False,
) -> str:
    """Run ``nbgrader zip_collect`` in ``course`` (see the module's docstring);
    a line that says what was collected.

    Raises:
        ValueError: ``lms`` is not a system of LMS_NAMES.
        Refused: the collection is refused or fails (the message says why).
    """
    if lms not in LMS_NAMES:
        raise ValueError(f"lms must be one of {sorted(LMS_NAMES)}, got {lms!r}")
    naming = LMS_NAMES[lms]
    course = course.resolve()
    check_course(course, assignment)
    if not naming.timed and times is None and not untimed:
        raise Refused(
            f"{lms}'s file names carry no time, so no submission would be late: pass "
            "--times CSV (student_id,submitted_at, from the system's list of "
            "submissions), or --untimed if no late penalty applies"
        )
    given = read_times(times) if times is not None else None
    command = [
        sys.executable, "-m", "nbgrader", "zip_collect", assignment,
        f"--FileNameCollectorPlugin.named_regexp={naming.pattern}",
        "--ZipCollectApp.strict=True",
    ] + (["--force"] if force else [])
    # nbgrader runs alembic, from the same environment, on the gradebook
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
    ran = subprocess.run(
        command, cwd=course, env={**os.environ, "PATH": path},
        capture_output=True, text=True,
    )
    log = ran.stdout + ran.stderr
    if ran.returncode != 0:
        raise Refused(f"nbgrader zip_collect {assignment} failed in {course}:\n{log}")
    skipped = skipped_files(log, naming.extra)
    counted = _COLLECTED.search(log)
    collected = int(counted.group(1)) if counted else 0
    if skipped and not allow_skipped:
        listed = "\n".join(f"  {name}" for name in skipped)
        raise Refused(
            f"{len(skipped)} file(s) skipped ({collected} collected), their names not "
            f"{lms}'s (such as {naming.sample!r}) or their notebook not "
            f"{assignment}.ipynb:\n{listed}\nrename them and run again with --force, "
            "or pass --allow-skipped"
        )
    if collected == 0:
        raise Refused(f"nothing collected from {course / 'downloaded' / assignment}")
    if given is not None:
        write_times(course, assignment, given)
    return (
        f"collect: {collected} notebooks of {assignment} in {course / 'submitted'}"
        + (f", {len(skipped)} skipped" if skipped else "")
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="tools/collect.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("assignment", help="the problem set, such as ch02")
    parser.add_argument("--course", type=Path, default=COURSE, help="the course")
    parser.add_argument("--lms", choices=sorted(LMS_NAMES), default="blackboard")
    parser.add_argument("--times", type=Path, help="student_id,submitted_at (CSV)")
    parser.add_argument("--untimed", action="store_true", help="no late penalty")
    parser.add_argument("--allow-skipped", action="store_true")
    parser.add_argument("--force", action="store_true", help="collect again")
    args = parser.parse_args(argv)
    if args.times is not None:
        try:
            read_times(args.times)  # checked before anything is collected
        except (OSError, ValueError, Refused) as error:
            parser.error(f"argument --times: {error}")
    try:
        print(
            collect(
                args.course, args.assignment, args.lms, args.times, args.untimed,
                args.allow_skipped, args.force,
            )
        )
    except Refused as error:
        print(f"collect: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
