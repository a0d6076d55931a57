"""Each student's own numbers: the parameters of the varied exercises, per student.

An exercise whose answer is a number (or a tensor computed from a few numbers)
takes its numbers as keywords of its check (``check("ch3-ex2", n, gib=24)``), and
the check recomputes the expected answer from them. ``CHOICES`` lists, for each
such exercise, the values each keyword can take (never the book's own).

A course with per-student problem sets (``tools/assignments.py --per-student``)
draws each student's numbers from a seeded generator over a hash of the course's
secret, the student's ID and the exercise's label (``student_numbers``). The
secret is the instructors' alone: it lives outside the repository, in the
environment variable ``RELPOS_COURSE_SECRET`` or in the file
``~/.config/relpos/course-secret`` (``course_secret``), so the public repository
does not give any student's numbers. The grader's hidden test calls
``graded_numbers(label)``, which reads the student's ID from the folder nbgrader
runs the submission in (``autograded/STUDENT/chNN/``) and draws the same numbers.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
from pathlib import Path

SECRET_VARIABLE = "RELPOS_COURSE_SECRET"
SECRET_FILE = Path("~/.config/relpos/course-secret")
_STUDENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]*")


def _but(values: range | tuple[int, ...], book: int) -> tuple[int, ...]:
    return tuple(value for value in values if value != book)


# label -> keyword -> the values a variant draws from (the book's value excluded).
CHOICES: dict[str, dict[str, tuple[int, ...]]] = {
    # n - m >= 8: never the book's count, 10 - 3
    "ch1-ex1": {"n": tuple(range(15, 41)), "m": _but(range(1, 8), 3)},
    "ch1-ex2": {"n": (8, 9, 10, 11, 12), "k": (2, 3, 5)},
    "ch1-ex3": {"behind": tuple(range(3, 12))},
    "ch2-ex1": {"k": (96, 128, 160, 192, 256, 320, 384, 448, 640, 768, 1024)},
    "ch2-ex2": {
        "n": _but(range(60, 201, 10), 100),
        "k": (8, 16, 20, 24, 40, 48, 56),  # n - k is never the book's 68
    },
    "ch2-ex3": {"k": _but(range(2, 13), 4)},
    "ch3-ex1": {"span": _but(range(5, 101), 24)},
    "ch3-ex3": {"hidden": (64, 96, 128, 192, 256, 384, 512, 640, 1024, 1536)},
    "ch3-ex2": {"gib": _but(range(4, 97, 4), 16)},
    # the scale depends on the head's width alone, shown as heads and a hidden size
    "ch4-ex3": {
        "head_size": (16, 24, 32, 40, 48, 80, 96, 112, 128),
        "heads": (2, 4, 6, 8, 16),
    },
    "ch5-ex2": {"n": (4, 6, 7, 8), "k": (1, 3, 4), "d": (2, 4, 5), "masked": (1, 3)},
    "ch6-ex1": {
        "n": _but(range(500, 2001, 50), 1000),
        "k": (32, 64, 96, 192, 256, 384),
    },
    "ch6-ex2": {"buckets": (64, 128, 192), "max_position": (256, 1024, 2048)},
    "ch6-ex3": {"n": _but(range(1024, 4097, 128), 2048)},
    # heads that are not a power of two: the last head is an interleaved one
    "ch8-ex1": {"heads": tuple(h for h in range(3, 49) if h & (h - 1) and h != 12)},
    # buckets of the log range of 32 buckets (8 exact, 15 collects the rest)
    "ch8-ex2": {"bucket": (9, 10, 11, 13, 14), "max_distance": (64, 96, 256, 512)},
    "ch8-ex3": {
        "heads": (4, 6, 8, 10, 16, 20, 24),
        "head": (0, 1, 2),
        "query": _but(range(5, 41), 9),
    },
    # the stored sweeps: another threshold, another length (chapter 11 states 16 L's)
    # at L every level but 99% gives the book's answer: read 2L
    "ch9-ex2": {"percent": (60, 70, 80, 95, 99), "multiple": (2,)},
    # never chapter 9's 32, whose coverage the chapter prints
    "ch10-ex1": {"train_length": (8, 12, 20, 24, 40, 48)},
    "ch11-ex2": {"multiple": (4, 8)},
    "ch12-ex1": {"seeds": (6, 7, 8, 9, 11, 12, 13, 14), "losses": (0, 1, 3)},
    "ch12-ex2": {"multiple": (4, 8)},
    "ch13-ex1": {"n": _but(range(20, 97), 64), "k": _but(range(5, 17), 8)},
    # n = 31 and 32 both hold the book's m = 15 answer slots
    "ch13-ex2": {"n": tuple(n for n in range(12, 65) if (n - 1) // 2 != 15)},
    # n L - L (L - 1) / 2 is never the book's 904 (n = 64, L = 16) on these
    "ch14-ex1": {"n": _but(range(24, 129, 8), 64), "length": (4, 8, 12, 20, 24)},
    # never a share that counts the book's seeds: over 10%, TUPE pays more in 7
    "ch14-ex2": {"percent": (20, 30, 40, 50, 100, 120, 150)},
}


def course_secret() -> str:
    """The course's secret: ``$RELPOS_COURSE_SECRET``, else the first line of
    ``~/.config/relpos/course-secret``.

    Raises:
        ValueError: neither is set (or the secret is empty).
    """
    secret = os.environ.get(SECRET_VARIABLE, "").strip()
    path = SECRET_FILE.expanduser()
    if not secret and path.is_file():
        lines = path.read_text().strip().splitlines()
        secret = lines[0].strip() if lines else ""
    if not secret:
        raise ValueError(
            f"the course's secret is not set: export {SECRET_VARIABLE} or write it "
            f"to {SECRET_FILE} (book/instructors.md, per-student problem sets)"
        )
    return secret


def check_student(student: str) -> str:
    """``student`` if it is a student ID a folder can be named after, else an error.

    Raises:
        TypeError: ``student`` is not a string.
        ValueError: it is empty or holds characters other than letters, digits and
            ``._@-`` (or starts with one of ``._@-``).
    """
    if not isinstance(student, str):
        raise TypeError(f"student must be a str (a student ID), got {student!r}")
    if not _STUDENT.fullmatch(student):
        raise ValueError(
            "student must be a student ID of letters, digits and ._@- that starts "
            f"with a letter or digit, got {student!r}"
        )
    return student


def student_numbers(label: str, student: str, secret: str) -> dict[str, int]:
    """The numbers of exercise ``label`` for ``student`` in the course of ``secret``.

    The same three give the same numbers; each keyword's value is drawn from
    ``CHOICES[label]`` by a generator seeded with a SHA-256 hash of the three.

    Raises:
        ValueError: ``label`` has no choices, ``student`` is not a valid ID or
            ``secret`` is empty.
    """
    if label not in CHOICES:
        raise ValueError(f"label must be one of {sorted(CHOICES)}, got {label!r}")
    check_student(student)
    if not isinstance(secret, str) or not secret:
        raise ValueError("secret must be a non-empty str (the course's secret)")
    seed = hashlib.sha256(f"{secret}\0{student}\0{label}".encode()).hexdigest()
    draw = random.Random(seed)
    return {name: draw.choice(values) for name, values in CHOICES[label].items()}


def student_here(folder: Path | None = None) -> str | None:
    """The student whose submission runs in ``folder`` (default: the working
    directory): ``STUDENT`` of ``.../autograded/STUDENT/chNN`` or of
    ``.../submitted/STUDENT/chNN``; ``None`` in the instructors' ``source/chNN``.

    Raises:
        ValueError: ``folder`` is none of these (the grader would not know whose
            numbers to check).
    """
    folder = (folder or Path.cwd()).resolve()
    if folder.parent.name == "source":
        return None
    if folder.parent.parent.name in ("autograded", "submitted"):
        return check_student(folder.parent.name)
    raise ValueError(
        f"folder must be nbgrader's autograded/STUDENT/chNN (or source/chNN), got "
        f"{folder}"
    )


def graded_numbers(label: str, folder: Path | None = None) -> dict[str, int]:
    """The numbers the hidden test of ``label`` checks: the student's own, drawn
    from the course's secret, where ``folder`` is a submission's; the book's
    (``{}``) in the instructors' source folder.

    Raises:
        ValueError: as ``student_here`` and ``course_secret``.
    """
    student = student_here(folder)
    if student is None:
        return {}
    return student_numbers(label, student, course_secret())
