"""What each exercise's check takes, and which tests are hidden (``make assignments``).

Every exercise with a check has an entry in ``GRADING``: the kind of each answer its
check takes, ``"code"`` (a function, a class, a module, or a tensor the student
computes) or ``"number"`` (a number, or a short list, set or table of numbers), and
whether the graded test is hidden. What a kind is worth is the course's rubric, not a
fact about the check: book/course/plan.yml (``grading``) gives the points per kind
and per written answer, and tools/assignments.py, which writes the problem sets,
reads them there.

A test is **hidden** where the visible self-check would give the answer away:
where an answer is a number (or a few) that the check's hints would steer a
student to by trying values. The release then runs ``answered(label, ...)``
(the answers exist and have a form the check accepts) and the grader runs
``check(label, ...)`` between nbgrader's ``### BEGIN HIDDEN TESTS`` markers.
A function, a class or a computed tensor keeps its visible check: no guessing
finds one, and the hint is the feedback the student needs while writing it. So does
the value a function exercise asks for at the student's own numbers (``"code"`` and
``"number"`` in one visible check): its hint says only to evaluate the function
there, which steers no one to the number.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._core import fitting_check

# The kinds of answer a check takes (book/course/plan.yml gives each its points).
KINDS = ("code", "number")


@dataclass(frozen=True)
class Grading:
    """How one exercise's check is graded: the kind of each of its ``answers``,
    whether its test is ``hidden``, and what it takes in words (``described``)."""

    answers: tuple[str, ...]
    hidden: bool
    described: str  # for the instructors' table

    def __post_init__(self) -> None:
        if not self.answers or not set(self.answers) <= set(KINDS):
            raise ValueError(
                f"answers must be a non-empty tuple of kinds from {KINDS}, "
                f"got {self.answers!r}"
            )


def _visible(answers: tuple[str, ...], described: str) -> Grading:
    return Grading(answers, False, described)


def _hidden(answers: tuple[str, ...], described: str) -> Grading:
    return Grading(answers, True, described)


CODE, NUMBER = ("code",), ("number",)
GRADING: dict[str, Grading] = {
    "ch1-ex1": _visible(CODE + NUMBER, "a function and a number of pairs"),
    "ch1-ex2": _visible(CODE, "a tensor of rows"),
    "ch1-ex3": _hidden(CODE + NUMBER, "a tensor and a row number"),
    "ch2-ex1": _hidden(NUMBER, "seven row numbers"),
    "ch2-ex2": _visible(CODE + NUMBER, "a function and a number of pairs"),
    "ch2-ex3": _hidden(CODE + NUMBER, "a function and a number of rows"),
    "ch3-ex1": _visible(CODE + NUMBER, "a function and a sequence length"),
    "ch3-ex2": _hidden(NUMBER, "a sequence length"),
    "ch3-ex3": _hidden(NUMBER, "a norm"),
    "ch4-ex1": _visible(CODE, "a function"),
    "ch4-ex2": _visible(CODE, "a boolean tensor"),
    "ch4-ex3": _hidden(NUMBER, "a scale"),
    "ch4-ex4": _hidden(NUMBER, "a set of projection names"),
    "ch5-ex1": _visible(CODE, "a function"),
    "ch5-ex2": _visible(CODE, "a tensor of scores"),
    "ch5-ex3": _visible(CODE, "a module class"),
    "ch6-ex1": _hidden(NUMBER + NUMBER, "two numbers of pairs"),
    "ch6-ex2": _hidden(NUMBER, "a distance"),
    "ch6-ex3": _hidden(NUMBER, "a fraction"),
    "ch7-ex1": _visible(CODE, "a function"),
    "ch7-ex2": _visible(CODE, "a tensor of context vectors"),
    "ch7-ex3": _visible(CODE, "a module"),
    "ch8-ex1": _visible(CODE + NUMBER, "a function and a slope"),
    "ch8-ex2": _visible(CODE + NUMBER, "a function and a list of distances"),
    "ch8-ex3": _visible(CODE + NUMBER, "a function and a bias difference"),
    "ch9-ex1": _hidden(NUMBER + CODE, "a span and a trained run"),
    "ch9-ex2": _hidden(NUMBER, "a table of training sizes"),
    "ch10-ex1": _hidden(NUMBER, "a table of test lengths"),
    "ch10-ex2": _visible(CODE + CODE, "a scheme builder and its trained run"),
    "ch10-ex3": _hidden(NUMBER, "a table of accuracy differences"),
    "ch11-ex1": _visible(CODE, "a function"),
    "ch11-ex2": _hidden(NUMBER, "a table of bits-per-byte differences"),
    "ch12-ex1": _visible(CODE + NUMBER, "a function and a p-value"),
    "ch12-ex2": _hidden(NUMBER, "a set of schemes"),
    "ch13-ex1": _visible(CODE + NUMBER, "a function and a table of shares"),
    "ch13-ex2": _hidden(NUMBER + NUMBER, "two exact-match probabilities"),
    "ch14-ex1": _visible(CODE + NUMBER, "a function and a number of pairs"),
    "ch14-ex2": _hidden(NUMBER + NUMBER, "a table of costs per seed and a seed count"),
}


def grading(label: str) -> Grading:
    """The kinds of answer and the hidden flag of exercise ``label``."""
    if label not in GRADING:
        raise ValueError(
            f"label must be an exercise listed in relpos.book.exercises.grading."
            f"GRADING (every exercise needs its answers' kinds), got {label!r}"
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
