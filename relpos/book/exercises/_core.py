"""The registry of exercise checks and the helpers they share.

A check is a function registered under an exercise label (``"ch4-ex2"``). It
receives the student's answer(s) and any context the exercise names (keyword
arguments), raises ``ExerciseError`` with a hint when the answer is wrong, and
returns a one-line note when it is right.
"""

from __future__ import annotations

import cmath
import inspect
import math
import numbers
import re
import textwrap
from typing import Any, Callable, NoReturn

import torch

_LABEL = re.compile(r"ch\d+-ex\d+")
_CHECKS: dict[str, Callable[..., str]] = {}


class ExerciseError(AssertionError):
    """An answer that does not solve its exercise; the message says what to look at."""


def exercise(label: str) -> Callable[[Callable[..., str]], Callable[..., str]]:
    """Register the decorated function as the check of exercise ``label``."""
    if not isinstance(label, str) or not _LABEL.fullmatch(label):
        raise ValueError(f"label must look like 'ch4-ex2', got {label!r}")

    def register(function: Callable[..., str]) -> Callable[..., str]:
        if label in _CHECKS:
            raise ValueError(
                f"label {label!r} already has a check: {_CHECKS[label].__name__}"
            )
        _CHECKS[label] = function
        return function

    return register


def labels() -> list[str]:
    """Every exercise label that has a check, in chapter and exercise order."""

    def order(label: str) -> tuple[int, int]:
        chapter, number = re.findall(r"\d+", label)
        return int(chapter), int(number)

    return sorted(_CHECKS, key=order)


def fitting_check(label: str, answers: tuple, given: dict) -> Callable[..., str]:
    """The check of exercise ``label``, once the answers fit it: the right number of
    answers and keywords, and no NaN or infinite number among them. Says nothing
    about whether the answers are right (``check`` and ``grading.answered`` share it).
    """
    if not isinstance(label, str):
        raise TypeError(
            f"label must be an exercise label such as 'ch4-ex2', got "
            f"{type(label).__name__} {label!r:.60}"
        )
    if label not in _CHECKS:
        raise ValueError(f"label must be one of {labels()}, got {label!r}")
    function = _CHECKS[label]
    try:
        inspect.signature(function).bind(*answers, **given)
    except TypeError as error:
        raise TypeError(
            f"answers: {label} takes {_takes(function)}; got {len(answers)} answer(s)"
            f"{' and ' + ', '.join(given) if given else ''} ({error})"
        ) from None
    for position, answer in enumerate(answers):
        name = "answer" if len(answers) == 1 else f"answer {position + 1}"
        _finite(answer, name)
    return function


def check(label: str, *answers: Any, **given: Any) -> None:
    """Check the answer(s) to exercise ``label``; print a note if right, raise if wrong.

    ``answers`` are what the exercise asks for (a number, a tensor, a function,
    a module); ``given`` passes anything from the chapter that the check needs
    to recompute the expected answer (for example ``scores=relative``).

    Raises:
        ExerciseError: the answer is wrong (a wrong type of answer included);
            the message hints at the usual cause.
        ValueError: ``label`` names no exercise, or a number given as an answer
            is NaN or infinite (no exercise's answer is).
        TypeError: ``label`` is not a string, or the answers or keywords do not
            fit the exercise (too many, too few, an unknown keyword).
    """
    function = fitting_check(label, answers, given)
    try:
        note = function(*answers, **given)
    except ExerciseError as error:
        raise ExerciseError(f"{label}: not yet. {error}") from None
    print(_fitted(f"{label}: correct. {note}"))


#: The widest line a note prints: what a page's code column shows unscrolled.
NOTE_WIDTH = 88


def _fitted(text: str) -> str:
    """``text`` with every line longer than :data:`NOTE_WIDTH` broken between words
    (a line that fits is kept as written)."""
    return "\n".join(
        textwrap.fill(line, NOTE_WIDTH, break_long_words=False, break_on_hyphens=False)
        if len(line) > NOTE_WIDTH else line
        for line in text.splitlines()
    )


def _takes(function: Callable[..., str]) -> str:
    """What a check takes, in words: ``"2 answers (values, row) and scores=, k="``."""
    parameters = inspect.signature(function).parameters.values()
    positional = [p.name for p in parameters if p.kind is not p.KEYWORD_ONLY]
    keywords = [f"{p.name}=" for p in parameters if p.kind is p.KEYWORD_ONLY]
    count = f"{len(positional)} answer{'s' if len(positional) != 1 else ''}"
    words = f"{count} ({', '.join(positional)})"
    return words + (f" and the keywords {', '.join(keywords)}" if keywords else "")


def _finite(answer: Any, name: str) -> None:
    """A ValueError naming ``name`` if ``answer`` is a NaN or infinite number."""
    if isinstance(answer, torch.Tensor):
        if answer.numel() != 1 or not (
            answer.is_floating_point() or answer.is_complex()
        ):
            return
        value: Any = answer.item()
    elif isinstance(answer, numbers.Number) and not isinstance(answer, bool):
        value = answer
    else:
        return
    if not cmath.isfinite(complex(value)):
        raise ValueError(f"{name} must be a finite number, got {value!r}")


def fail(message: str) -> NoReturn:
    """Raise the ExerciseError that a check reports (a helper to keep checks short)."""
    raise ExerciseError(message)


def require_callable(answer: Any, what: str) -> Callable:
    """``answer`` if it can be called, else an ExerciseError naming ``what``."""
    if not callable(answer):
        fail(f"the answer must be {what}; got {type(answer).__name__} {answer!r:.60}")
    return answer


def as_tensor(answer: Any, what: str) -> torch.Tensor:
    """``answer`` as a tensor (lists and numpy arrays are converted)."""
    if isinstance(answer, torch.Tensor):
        return answer.detach().cpu()
    try:
        return torch.as_tensor(answer)
    except (TypeError, ValueError, RuntimeError):
        fail(f"the answer must be {what}; got {type(answer).__name__}")


def as_number(answer: Any, what: str) -> float:
    """``answer`` as a finite Python float (a one-element tensor is accepted)."""
    if isinstance(answer, torch.Tensor) and answer.numel() == 1:
        answer = answer.item()
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real):
        fail(f"the answer must be {what}; got {type(answer).__name__} {answer!r:.60}")
    if not math.isfinite(answer):
        fail(f"the answer must be {what}, a finite number; got {answer!r}")
    return float(answer)


def call(function: Callable, *args: Any, what: str) -> Any:
    """Call the student's function; turn an exception into a hint naming ``what``."""
    try:
        return function(*args)
    except ExerciseError:
        raise
    except Exception as error:  # the student's code may raise anything
        fail(f"{what} raised {type(error).__name__}: {error}")


def close(got: torch.Tensor, expected: torch.Tensor, atol: float = 1e-6) -> bool:
    """Same shape and equal within ``atol`` (compared in float64)."""
    return tuple(got.shape) == tuple(expected.shape) and torch.allclose(
        got.double(), expected.double(), rtol=0.0, atol=atol
    )
