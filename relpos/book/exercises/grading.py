"""Points and hidden tests of the graded assignments (``make assignments``).

Every exercise with a check has an entry in ``GRADING``: the points its check is
worth and whether the graded test is hidden. The scheme, per answer the check
takes: **2 points** for code (a function, a class, a module, or a tensor the
student computes), **1 point** for a number or a short list, set or table of
numbers; a written answer (the worked reasoning the book gives as Markdown in
the solution) is graded by hand and worth ``WRITTEN_POINTS``.

A test is **hidden** where the visible self-check would give the answer away:
where an answer is a number (or a few) that the check's hints would steer a
student to by trying values. The release then runs ``answered(label, ...)``
(the answers exist and have a form the check accepts) and the grader runs
``check(label, ...)`` between nbgrader's ``### BEGIN HIDDEN TESTS`` markers.
A function, a class or a computed tensor keeps its visible check: no guessing
finds one, and the hint is the feedback the student needs while writing it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._core import fitting_check

WRITTEN_POINTS = 2


@dataclass(frozen=True)
class Grading:
    """How one exercise's check is graded: ``points`` and a ``hidden`` test."""

    points: int
    hidden: bool
    answers: str  # what the check takes, in words, for the instructors' table


def _visible(points: int, answers: str) -> Grading:
    return Grading(points, False, answers)


def _hidden(points: int, answers: str) -> Grading:
    return Grading(points, True, answers)


GRADING: dict[str, Grading] = {
    "ch1-ex1": _visible(2, "a function"),
    "ch1-ex2": _visible(2, "a tensor of rows"),
    "ch1-ex3": _hidden(3, "a tensor and a row number"),
    "ch2-ex1": _hidden(1, "seven row numbers"),
    "ch2-ex2": _visible(2, "a function"),
    "ch2-ex3": _hidden(3, "a function and a number of rows"),
    "ch3-ex1": _visible(2, "a function"),
    "ch3-ex2": _hidden(1, "a sequence length"),
    "ch3-ex3": _hidden(1, "a norm"),
    "ch4-ex1": _visible(2, "a function"),
    "ch4-ex2": _visible(2, "a boolean tensor"),
    "ch4-ex3": _hidden(1, "a scale"),
    "ch4-ex4": _hidden(1, "a set of projection names"),
    "ch5-ex1": _visible(2, "a function"),
    "ch5-ex2": _visible(2, "a tensor of scores"),
    "ch5-ex3": _visible(2, "a module class"),
    "ch6-ex1": _hidden(2, "two numbers of pairs"),
    "ch6-ex2": _hidden(1, "a distance"),
    "ch6-ex3": _hidden(1, "a fraction"),
    "ch7-ex1": _visible(2, "a function"),
    "ch7-ex2": _visible(2, "a tensor of context vectors"),
    "ch7-ex3": _visible(2, "a module"),
    "ch8-ex1": _visible(2, "a function"),
    "ch8-ex2": _visible(2, "a function"),
    "ch8-ex3": _visible(2, "a function"),
    "ch9-ex1": _hidden(3, "a span and a trained run"),
    "ch9-ex2": _hidden(1, "a table of training sizes"),
    "ch10-ex1": _hidden(1, "a table of test lengths"),
    "ch10-ex2": _visible(4, "a scheme builder and its trained run"),
    "ch10-ex3": _hidden(1, "a table of accuracy differences"),
    "ch11-ex1": _visible(2, "a function"),
    "ch11-ex2": _hidden(1, "a table of bits-per-byte differences"),
}


def grading(label: str) -> Grading:
    """The points and hidden flag of exercise ``label``."""
    if label not in GRADING:
        raise ValueError(
            f"label must be an exercise listed in relpos.book.exercises.grading."
            f"GRADING (every exercise needs points), got {label!r}"
        )
    return GRADING[label]


def answered(label: str, *answers: Any, **given: Any) -> None:
    """The visible half of a hidden test: the answers exist and fit ``label``'s check.

    Checks what ``check`` checks before it looks at the values (the number of
    answers and keywords, finite numbers) and that no answer is ``None`` or
    ``...``; prints that the values are graded later. Says nothing about whether
    they are right.

    Raises:
        AssertionError: an answer is missing (``None`` or ``...``).
        ValueError: ``label`` names no exercise, or a number is NaN or infinite.
        TypeError: the answers or keywords do not fit the exercise.
    """
    fitting_check(label, answers, given)
    for position, answer in enumerate(answers):
        name = "answer" if len(answers) == 1 else f"answer {position + 1}"
        if answer is None or answer is Ellipsis:
            raise AssertionError(f"{label}: {name} is missing ({answer!r})")
    print(f"{label}: answered; the grader checks the values.")
