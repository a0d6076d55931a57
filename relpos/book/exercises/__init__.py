"""Checks for the book's exercises: ``check(label, answer)`` on a student's own answer.

Every exercise that asks for code or a number ends with a call such as

    >>> from relpos.book.exercises import check
    >>> check("ch2-ex1", [0, 0, 1, 512, 1023, 1023, 1023])
    ch2-ex1: correct. ...

A right answer prints one line that starts with ``"<label>: correct."``; a wrong
one raises ``ExerciseError`` (an ``AssertionError``) whose message hints at the
usual mistake without giving the answer away. The checks recompute the expected
answer from ``relpos`` itself; anything else they need from the chapter is passed
by keyword (the exercise's text says what).

One module per chapter (``ch01.py``, ``ch02.py``, ...) holds that chapter's
checks; each registers itself with ``@exercise("chN-exM")``, and every such
module in this package is imported here, so a new chapter adds a module and
touches nothing else.

The graded assignments (``make assignments``) read the kinds of answer each check
takes and whether its test is hidden from ``grading.GRADING`` (the points per kind
are the course plan's); ``answered(label, ...)`` is the visible half of a hidden test.
"""

from __future__ import annotations

import importlib
import pkgutil

from ._core import ExerciseError, check, exercise, labels

for _module in pkgutil.iter_modules(__path__):
    if _module.name.startswith("ch"):
        importlib.import_module(f"{__name__}.{_module.name}")

from .grading import answered  # noqa: E402 (after the checks it looks up)

__all__ = ["ExerciseError", "answered", "check", "exercise", "labels"]
