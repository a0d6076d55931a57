"""Chapter 12's checks accept the reference answers and refuse the usual mistakes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from relpos.book import results
from relpos.book.exercises import ExerciseError, check
from relpos.book.exercises.ch12 import ahead_of_absolute


def sign_flip_p(a, b):
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    signs = np.array(list(itertools.product([1, -1], repeat=len(d))))
    return float(np.mean(np.abs((signs * d).mean(1)) >= abs(d.mean()) - 1e-12))


def test_ch12_ex1_accepts_both_tails_and_refuses_one(capsys):
    check("ch12-ex1", sign_flip_p)
    assert capsys.readouterr().out.startswith("ch12-ex1: correct.")
    one_tail = lambda a, b: sign_flip_p(a, b) / 2  # noqa: E731
    with pytest.raises(ExerciseError, match="one tail"):
        check("ch12-ex1", one_tail)
    with pytest.raises(ExerciseError, match="finite float"):
        check("ch12-ex1", lambda a, b: None)


def test_ch12_ex2_reads_the_protocol_sweep(capsys):
    sweep = results.load("protocol/sweep.json")
    ahead = ahead_of_absolute(sweep)
    assert {"deberta", "shaw", "rotary"} <= ahead and "none" not in ahead
    check("ch12-ex2", ahead)
    assert capsys.readouterr().out.startswith("ch12-ex2: correct.")
    with pytest.raises(ExerciseError, match="missing"):
        check("ch12-ex2", ahead - {"deberta"})
    with pytest.raises(ExerciseError, match="not shown ahead"):
        check("ch12-ex2", ahead | {"alibi"})
    with pytest.raises(ExerciseError, match="baseline"):
        check("ch12-ex2", ahead | {"absolute"})
