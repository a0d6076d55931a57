"""No exercise's answer stands in a chapter's visible cells before its exercises.

Each entry names a chapter and what would give an exercise away there: the
computation the exercise asks for, written out in a cell a reader sees (or in any
code cell, which the downloadable notebook holds). The exercises' own checks test
that the reworked exercises ask for what the chapters do not print
(tests/test_exercises_ch10.py, _ch11.py, _ch13.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parents[1] / "book"

#: chapter file -> (exercise, text that would give it away before the exercises)
GIVEAWAYS = {
    "10_testing_debertas_design.ipynb": [
        ("ch9-ex2", "'fewest'"),  # a column of the fewest training sequences
        ("ch9-ex2", '== 512 and fewest["none"]'),  # the answer as an assert
    ],
    "12_verdicts_that_survive.ipynb": [
        ("ch12-ex1", "itertools.product([1, -1]"),  # the sign flips by hand
    ],
}


def before_exercises(name: str) -> list[str]:
    """The sources (and outputs) of every cell before the chapter's exercises."""
    cells = json.loads((BOOK / name).read_text())["cells"]
    texts = []
    for cell in cells:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and source.startswith("## Exercises"):
            return texts
        texts.append(source)
        for output in cell.get("outputs", []):
            text = output.get("text") or output.get("data", {}).get("text/plain", "")
            texts.append("".join(text))
    raise AssertionError(f"{name} has no '## Exercises' heading")


@pytest.mark.parametrize("name", sorted(GIVEAWAYS))
def test_no_answer_before_the_exercises(name):
    texts = before_exercises(name)
    assert len(texts) > 20  # the chapter was read
    for label, giveaway in GIVEAWAYS[name]:
        hits = [t[:60] for t in texts if giveaway in t]
        assert not hits, f"{name} gives {label} away: {hits}"


def test_the_reader_finds_a_giveaway():
    # the pattern the test looks for is there in the chapter 12 exercise's solution
    cells = json.loads((BOOK / "12_verdicts_that_survive.ipynb").read_text())["cells"]
    assert any("itertools.product([1, -1]" in "".join(c["source"]) for c in cells)
