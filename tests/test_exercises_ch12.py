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


#: 10 seeds, 2 lost: 8 or more of 10 signs one way, 2 * (1 + 10 + 45) of 1024
P_SPLIT = 112 / 1024


def test_ch12_ex1_accepts_both_tails_and_refuses_one(capsys):
    check("ch12-ex1", sign_flip_p, P_SPLIT)
    assert capsys.readouterr().out.startswith("ch12-ex1: correct.")
    one_tail = lambda a, b: sign_flip_p(a, b) / 2  # noqa: E731
    with pytest.raises(ExerciseError, match="one tail"):
        check("ch12-ex1", one_tail, P_SPLIT)
    with pytest.raises(ExerciseError, match="finite float"):
        check("ch12-ex1", lambda a, b: None, P_SPLIT)


def test_ch12_ex1_asks_the_p_value_of_the_students_split(capsys):
    assert sign_flip_p([1.0] * 8 + [-1.0] * 2, [0.0] * 10) == P_SPLIT
    six = sign_flip_p([1.0] * 5 + [-1.0], [0.0] * 6)  # 5 or more of 6: 14 of 64
    assert six == 14 / 64
    check("ch12-ex1", sign_flip_p, six, seeds=6, losses=1)
    assert capsys.readouterr().out.startswith("ch12-ex1: correct.")
    for wrong, given in ((P_SPLIT / 2, {}), (P_SPLIT, {"seeds": 6, "losses": 1})):
        with pytest.raises(ExerciseError, match="p_split: .* run your function"):
            check("ch12-ex1", sign_flip_p, wrong, **given)


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
