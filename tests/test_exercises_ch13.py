"""Chapter 13's checks accept the reference answers and refuse the usual mistakes."""

from __future__ import annotations

import pytest

from relpos.book.exercises import ExerciseError, check
from relpos.book.experiments.equivariance import expected_max_share

V = 16  # copy's label symbols


def needed(kind, n):
    if kind in ("copy", "reverse"):
        m = (n - 1) // 2  # PAD? x_0 .. x_{m-1} SEP, then m answer slots
        return m + 1 if kind == "copy" else 2 * m
    if kind == "mqar":
        m = n // 3  # PAD* k_0 v_0 .. k_{m-1} v_{m-1}, then m queries
        return 3 * m - 2
    m = (n - 2) // 3  # addition: PAD* 2m digits, "=", m + 1 answer slots
    return 3 * m + 1


def with_size(kind, n):
    """The usual mistake: the formula in m, called with the length n."""
    return {"copy": n + 1, "reverse": 2 * n, "mqar": 3 * n - 2,
            "addition": 3 * n + 1}[kind]


def but(kind_wrong, value):
    """``needed``, except for one kind, where it returns ``value(n)``."""
    return lambda kind, n: value(n) if kind == kind_wrong else needed(kind, n)


def test_ch13_ex1_accepts_the_layouts_distances(capsys):
    check("ch13-ex1", needed)
    assert capsys.readouterr().out.startswith("ch13-ex1: correct.")


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (with_size, "for a problem of size m = 9"),
        (but("copy", lambda n: n // 2 + 1), "off by one"),  # no PAD at even n
        (but("reverse", lambda n: 2 * ((n - 1) // 2) + 1), "off by one"),
        (but("mqar", lambda n: 3 * (n // 3) - 1), "the key k_0"),
        (but("mqar", lambda n: 2 * (n // 3) - 1), "query 0's farthest"),
        (but("addition", lambda n: 3 * ((n - 2) // 3)), "the final carry"),
        (but("reverse", lambda n: n // 2), "expected 8"),
        (lambda kind, n: float(needed(kind, n)) + 0.5, "whole number"),
        (lambda kind, n: str(needed(kind, n)), "must return an int distance"),
        (lambda kind: 3, "raised TypeError"),
    ],
)
def test_ch13_ex1_refuses_the_usual_mistakes(answer, hint):
    with pytest.raises(ExerciseError, match="^ch13-ex1: not yet") as error:
        check("ch13-ex1", answer)
    assert hint in str(error.value), str(error.value)


def test_ch13_ex1_takes_ints_of_any_kind(capsys):
    import numpy as np
    import torch

    check("ch13-ex1", lambda kind, n: np.int64(needed(kind, n)))
    check("ch13-ex1", lambda kind, n: torch.tensor(needed(kind, n)))
    check("ch13-ex1", lambda kind, n: float(needed(kind, n)))
    assert capsys.readouterr().out.count("ch13-ex1: correct.") == 3


M = (32 - 1) // 2  # copy's answer slots at n = 32
CHANCE, BOUND = V**-M, V ** (1 - M)


def test_ch13_ex2_accepts_the_chance_and_the_bound(capsys):
    check("ch13-ex2", CHANCE, BOUND)
    assert capsys.readouterr().out.startswith("ch13-ex2: correct.")
    m = (20 - 1) // 2  # another length, as a variant would ask
    check("ch13-ex2", V**-m, V ** (1 - m), n=20)
    with pytest.raises(ExerciseError, match="chance"):
        check("ch13-ex2", CHANCE, BOUND, n=20)


@pytest.mark.parametrize(
    ("chance", "bound", "hint"),
    [
        (1 / V, BOUND, "per token"),
        (V**-32, BOUND, "n-th power"),
        (V**-16, BOUND, "count the answer slots again"),
        (2 * CHANCE, BOUND, "independently"),
        (CHANCE, CHANCE, "does better than uniform guesses"),
        (CHANCE, expected_max_share(M, V), "per-token bound"),
        (CHANCE, CHANCE / 2, "below the chance"),
        (CHANCE, V ** (1 - 14), "count the answer slots again"),
        (CHANCE, 2 * BOUND, "all m data tokens are equal"),
        (CHANCE, [BOUND], "must be a probability"),
    ],
)
def test_ch13_ex2_refuses_the_usual_mistakes(chance, bound, hint):
    with pytest.raises(ExerciseError, match="^ch13-ex2: not yet") as error:
        check("ch13-ex2", chance, bound)
    assert hint in str(error.value), str(error.value)
