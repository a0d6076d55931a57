"""Chapter 11's exercise checks accept the right answers and explain wrong ones."""

from __future__ import annotations

import pytest
import torch

from relpos.book import results
from relpos.book.exercises import ExerciseError, check
from relpos.book.exercises.ch11 import GAIN_AT, length_gain
from relpos.book.text.alignment import opener_distances


def test_ch11_ex1_accepts_the_stack_and_refuses_a_flipped_sign(capsys):
    check("ch11-ex1", opener_distances)
    assert capsys.readouterr().out.startswith("ch11-ex1: correct.")
    with pytest.raises(ExerciseError, match="signs are flipped"):
        check("ch11-ex1", lambda s: -opener_distances(s))


def test_ch11_ex1_names_the_first_wrong_byte():
    def no_quotes(stream):
        found = opener_distances(stream)
        return torch.where(stream == ord('"'), 0, found)

    with pytest.raises(ExerciseError, match="byte 6 \\('\"'\\): expected 2, got 0"):
        check("ch11-ex1", no_quotes)


def test_ch11_ex2_reads_the_causal_sweep(capsys):
    causal = results.load("text_causal.json")
    gain = length_gain(causal)
    check("ch11-ex2", gain)
    worst = max(gain, key=gain.get)
    assert f"{worst} rises most" in " ".join(capsys.readouterr().out.split())
    with pytest.raises(ExerciseError, match="signs are flipped"):
        check("ch11-ex2", {s: -g for s, g in gain.items()})
    with pytest.raises(ExerciseError, match="missing: none"):
        check("ch11-ex2", {s: g for s, g in gain.items() if s != "none"})


def test_ch11_ex2_is_not_the_gain_the_chapter_states():
    # chapter 11 gives bits per byte at L and 16 L; the exercise reads 2 L
    causal = results.load("text_causal.json")
    assert GAIN_AT == 2 and causal["config"]["train_length"] == 64
    at_2l, at_16l = length_gain(causal), length_gain(causal, 1024)
    assert at_16l["t5"] > 0.5 > 0.05 > at_2l["t5"]  # flat at 2L, not at 16L
    with pytest.raises(ExerciseError, match="gains at 1024 bytes"):
        check("ch11-ex2", at_16l)
