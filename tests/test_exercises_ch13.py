"""Chapter 13's checks accept the reference answers and refuse the usual mistakes."""

from __future__ import annotations

import pytest

from relpos.book.exercises import ExerciseError, check
from relpos.book.experiments.equivariance import expected_max_share

V = 16  # copy's label symbols


def farthest(kind, n):
    """Each answer slot's farthest needed distance, from the layouts by hand."""
    if kind in ("copy", "reverse"):
        m = (n - 1) // 2  # PAD? x_0 .. x_{m-1} SEP, then m answer slots
        return [m + 1 if kind == "copy" else 2 * t + 2 for t in range(m)]
    if kind == "mqar":
        m = n // 3  # PAD* k_0 v_0 .. k_{m-1} v_{m-1}, then m queries
        return [2 * m - 1 + t for t in range(m)]  # every query needs v_0
    m = (n - 2) // 3  # addition: PAD* 2m digits, "=", m + 1 answer slots
    return [3 * t + 3 for t in range(m)] + [3 * m + 1]


def within(kind, n, d):
    return sum(f <= d for f in farthest(kind, n))


def but(kind_wrong, value):
    """``within``, except for one kind, where it returns ``value(n, d)``."""
    return lambda kind, n, d: value(n, d) if kind == kind_wrong else within(kind, n, d)


#: The book's shares at n = 64 and k = 8 (d = 6): 3 of 31 reverse slots, 2 of 21
#: addition slots
SHARE = {"copy": 0.0, "reverse": 3 / 31, "mqar": 0.0, "addition": 2 / 21}


def test_ch13_ex1_accepts_the_layouts_counts(capsys):
    # hand-computed at n = 64 (m = 31, 21, 20), d = 6: copy needs 32 back everywhere;
    # reverse's slots 0, 1, 2 read 2, 4, 6 back; mqar's first query needs 41;
    # addition's slots 0 and 1 read 3 and 6 back
    assert [within(k, 64, 6) for k in ("copy", "reverse", "mqar", "addition")] == [
        0, 3, 0, 2]
    check("ch13-ex1", within, SHARE)
    out = " ".join(capsys.readouterr().out.split())
    assert out.startswith("ch13-ex1: correct. a fixed window")
    assert "3 of 31" not in out  # the note does not give the shares away


def test_ch13_ex1_asks_the_share_at_the_students_length_and_span(capsys):
    # n = 40 (m = 19, 13, 12), k = 12 (d = 10): reverse's slots 0..4 read 2..10;
    # addition's 0..2 read 3, 6, 9; copy needs 20 and mqar's first query 25
    share = {"copy": 0.0, "reverse": 5 / 19, "mqar": 0.0, "addition": 3 / 13}
    check("ch13-ex1", within, share, n=40, k=12)
    assert "correct" in capsys.readouterr().out
    with pytest.raises(ExerciseError, match="share\\['reverse'\\] = 0.0967742"):
        check("ch13-ex1", within, SHARE, n=40, k=12)  # another student's
    with pytest.raises(ExerciseError, match="share must be a dict"):
        check("ch13-ex1", within, [0, 3, 0, 2])


def test_ch13_ex1_is_not_the_distance_the_chapter_prints():
    # chapter 13 prints each task's farthest needed distance; that is not the count
    with pytest.raises(ExerciseError, match="farthest distance any slot needs"):
        check("ch13-ex1", lambda kind, n, d: max(farthest(kind, n)), SHARE)


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (lambda kind, n, d: sum(f < d for f in farthest(kind, n)), "exactly 6 back"),
        (lambda kind, n, d: sum(f > d for f in farthest(kind, n)), "beyond 6"),
        (but("mqar", lambda n, d: n // 3), "the first pair's value v_0"),
        (but("reverse", lambda n, d: 0), "expected 3"),
        (lambda kind, n, d: float(within(kind, n, d)) + 0.5, "whole number"),
        (lambda kind, n, d: str(within(kind, n, d)), "must return an int"),
        (lambda kind, n: 3, "raised TypeError"),
    ],
)
def test_ch13_ex1_refuses_the_usual_mistakes(answer, hint):
    with pytest.raises(ExerciseError, match="^ch13-ex1: not yet") as error:
        check("ch13-ex1", answer, SHARE)
    assert hint in str(error.value), str(error.value)


def test_ch13_ex1_takes_ints_of_any_kind(capsys):
    import numpy as np
    import torch

    check("ch13-ex1", lambda kind, n, d: np.int64(within(kind, n, d)), SHARE)
    check("ch13-ex1", lambda kind, n, d: torch.tensor(within(kind, n, d)), SHARE)
    check("ch13-ex1", lambda kind, n, d: float(within(kind, n, d)), SHARE)
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
