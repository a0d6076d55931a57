"""Problem-set variants (tools/variants.py, make assignments VARIANT=N).

A variant draws other numbers, never the book's, for the exercises whose answer
is a number; the statement, the reference solution and the check call get them,
and the check recomputes the answer from them. So the book's answers fail a
variant's checks and two variants differ. A variant changes no code but the
reference solutions and the check calls (``test_statement_solution_and_check_``
``get_the_same_numbers``), so its reference solutions pass its own checks when
the solutions, given other numbers by the same edits, pass checks called with
those numbers. tests/test_grading.py shows that for every varied exercise at
once: nbgrader autogrades a per-student course's reference student, whose numbers
reach the check through ``graded_numbers``. No notebook runs here (this file used
to run each varied chapter in a variant, the same claim a second time).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import nbformat
import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import variants  # noqa: E402

import relpos  # noqa: E402
from relpos.book.exercises import ExerciseError, check  # noqa: E402

NOTEBOOKS = {
    "ch1-ex1": ROOT / "book" / "01_absolute_to_relative.ipynb",
    "ch1-ex2": ROOT / "book" / "01_absolute_to_relative.ipynb",
    "ch1-ex3": ROOT / "book" / "01_absolute_to_relative.ipynb",
    "ch2-ex1": ROOT / "book" / "02_delta.ipynb",
    "ch2-ex2": ROOT / "book" / "02_delta.ipynb",
    "ch2-ex3": ROOT / "book" / "02_delta.ipynb",
    "ch3-ex1": ROOT / "book" / "03_table.ipynb",
    "ch3-ex2": ROOT / "book" / "03_table.ipynb",
    "ch3-ex3": ROOT / "book" / "03_table.ipynb",
    "ch5-ex2": ROOT / "book" / "05_efficient_attention.ipynb",
    "ch6-ex1": ROOT / "book" / "06_long_sequences.ipynb",
    "ch6-ex2": ROOT / "book" / "06_long_sequences.ipynb",
    "ch6-ex3": ROOT / "book" / "06_long_sequences.ipynb",
    "ch4-ex3": ROOT / "book" / "04_disentangled_attention.ipynb",
    "ch8-ex1": ROOT / "book" / "08_where_deberta_sits.ipynb",
    "ch8-ex2": ROOT / "book" / "08_where_deberta_sits.ipynb",
    "ch8-ex3": ROOT / "book" / "08_where_deberta_sits.ipynb",
    "ch9-ex2": ROOT / "book" / "09_relative_positions_at_work.ipynb",
    "ch10-ex1": ROOT / "book" / "10_testing_debertas_design.ipynb",
    "ch11-ex2": ROOT / "book" / "11_real_text.ipynb",
    "ch12-ex1": ROOT / "book" / "12_verdicts_that_survive.ipynb",
    "ch12-ex2": ROOT / "book" / "12_verdicts_that_survive.ipynb",
    "ch13-ex1": ROOT / "book" / "13_distances_that_grow.ipynb",
    "ch13-ex2": ROOT / "book" / "13_distances_that_grow.ipynb",
    "ch14-ex1": ROOT / "book" / "14_the_four_claims_probed.ipynb",
    "ch14-ex2": ROOT / "book" / "14_the_four_claims_probed.ipynb",
}
sys.path.insert(0, str(ROOT / "tests"))
from test_exercises import (  # noqa: E402
    distance_matrix,
    pairs_on_row_zero,
    relative_scores,
    score_mod_inputs,
    score_mod_scores,
)
from test_exercises_ch12 import P_SPLIT, sign_flip_p  # noqa: E402
from test_exercises_ch13 import SHARE, within  # noqa: E402
from test_exercises_ch14 import cut_mask  # noqa: E402
from test_exercises_landscape import (  # noqa: E402
    LAST_SLOPE,
    SHARED,
    SHIFT,
    bloom,
    reference,
)



def stored_answer(label: str) -> object:
    """The book's answer to an exercise that reads a stored sweep, from the file."""
    from relpos.book import results
    from relpos.book.exercises.ch09 import _fewest
    from relpos.book.exercises.ch10 import PREDICT_AT, first_untrained
    from relpos.book.exercises.ch11 import length_gain
    from relpos.book.exercises.ch12 import ahead_of_absolute
    from relpos.book.exercises.ch14 import content_costs, seeds_paying_more
    from relpos.book.experiments.sweep import load_sweep

    sweep = results.load("protocol/sweep.json")
    if label == "ch9-ex2":
        return _fewest(load_sweep(sweep), "relative", 32, "mean")
    if label == "ch10-ex1":
        return {
            s: first_untrained(s, "relative", PREDICT_AT, [2, 4, 8])
            for s in sweep["grid"]["scheme"]
        }
    if label == "ch11-ex2":
        return length_gain(results.load("text_causal.json"))
    if label == "ch14-ex2":
        cost = content_costs(results.load("probes/gradients.json"))
        return cost, seeds_paying_more(cost, 10)
    return ahead_of_absolute(sweep)


# What a check takes from the chapter besides the numbers (tensors).
GIVEN = {"ch1-ex3": {"scores": relative_scores()}, "ch5-ex2": score_mod_inputs()}
# The book's answers (tests/test_exercises.py), which no variant may accept.
BOOK_ANSWERS = {
    "ch1-ex3": (relative_scores().diagonal(-2), relpos.delta(2, 16)),
    "ch3-ex3": (math.sqrt(384),),
    "ch5-ex2": (score_mod_scores(torch.finfo(torch.float64).min),),
    "ch1-ex2": (relpos.relative_position_index(7, max_relative_positions=4),),
    "ch2-ex1": ([0, 0, 1, 512, 1023, 1023, 1023],),
    "ch2-ex3": (lambda r, k: r.clamp(-k, k) + k, 9),
    "ch3-ex2": (3344,),
    "ch6-ex1": (380_628, 381_501),
    "ch6-ex2": (132,),
    "ch6-ex3": (0.5649,),
    "ch13-ex2": (16.0**-15, 16.0**-14),
    "ch1-ex1": (distance_matrix, 7),
    "ch2-ex2": (pairs_on_row_zero, 2346),
    "ch3-ex1": (lambda n, k: min(2 * n - 1, 2 * k), 25),
    "ch8-ex1": (relpos.schemes.alibi_slopes, LAST_SLOPE),
    "ch8-ex2": (reference, SHARED),
    "ch8-ex3": (bloom, SHIFT),
    "ch12-ex1": (sign_flip_p, P_SPLIT),
    "ch13-ex1": (within, SHARE),
    "ch4-ex3": (1 / math.sqrt(128),),
    "ch9-ex2": (stored_answer("ch9-ex2"),),
    "ch10-ex1": (stored_answer("ch10-ex1"),),
    "ch11-ex2": (stored_answer("ch11-ex2"),),
    "ch12-ex2": (stored_answer("ch12-ex2"),),
    "ch14-ex1": (cut_mask, 904),
    "ch14-ex2": stored_answer("ch14-ex2"),
}
BOOK_NUMBERS = {
    "ch1-ex3": {"behind": 2},
    "ch3-ex3": {"hidden": 768},
    "ch5-ex2": {"n": 5, "k": 2, "d": 3, "masked": 2},
    "ch1-ex2": {"n": 7, "k": 4},
    "ch2-ex1": {"k": 512},
    "ch2-ex3": {"k": 4},
    "ch3-ex2": {"gib": 16},
    "ch6-ex1": {"n": 1000, "k": 128},
    "ch6-ex2": {"buckets": 256, "max_position": 512},
    "ch6-ex3": {"n": 2048},
    "ch13-ex2": {"n": 32},
    "ch1-ex1": {"n": 10, "m": 3},
    "ch2-ex2": {"n": 100, "k": 32},
    "ch3-ex1": {"span": 24},
    "ch8-ex1": {"heads": 12},
    "ch8-ex2": {"bucket": 12, "max_distance": 128},
    "ch8-ex3": {"heads": 12, "head": 3, "query": 9},
    "ch12-ex1": {"seeds": 10, "losses": 2},
    "ch13-ex1": {"n": 64, "k": 8},
    "ch4-ex3": {"head_size": 64, "heads": 12},
    "ch9-ex2": {"percent": 90, "multiple": 1},
    "ch10-ex1": {"train_length": 16},
    "ch11-ex2": {"multiple": 2},
    "ch12-ex2": {"multiple": 2},
    "ch14-ex1": {"n": 64, "length": 16},
    "ch14-ex2": {"percent": 10},
}


def test_every_variant_exercise_is_listed_here():
    assert set(variants.VARIANTS) == set(NOTEBOOKS) == set(BOOK_ANSWERS)


@pytest.mark.parametrize("variant", range(1, 21))
def test_a_variant_never_draws_the_books_numbers(variant):
    for label, book in BOOK_NUMBERS.items():
        drawn = variants.numbers(label, variant)
        assert drawn == variants.numbers(label, variant)  # the seed decides
        assert set(drawn) == set(book)
        for name, value in drawn.items():
            assert value != book[name]
            assert value in variants.CHOICES[label][name]


def test_variant_zero_is_the_book_and_bad_variants_are_refused():
    notebook = nbformat.read(NOTEBOOKS["ch3-ex2"], as_version=4)
    same, drawn = variants.vary(notebook, 0)
    assert drawn == {} and same.cells == notebook.cells
    with pytest.raises(ValueError, match="variant must be an int >= 0"):
        variants.numbers("ch3-ex2", -1)
    with pytest.raises(TypeError, match="variant must be an int"):
        variants.numbers("ch3-ex2", 1.5)
    with pytest.raises(ValueError, match="label must be one of"):
        variants.numbers("ch4-ex4", 1)


def exercise_text(notebook: nbformat.NotebookNode, label: str) -> list[str]:
    cells = variants._exercise_cells(notebook.cells, label)
    return [notebook.cells[i].source for i in cells]


@pytest.mark.parametrize("variant", [1, 2, 7])
def test_statement_solution_and_check_get_the_same_numbers(variant):
    for path in sorted(set(NOTEBOOKS.values())):
        book = nbformat.read(path, as_version=4)
        varied, drawn = variants.vary(book, variant)
        labels = sorted(label for label, where in NOTEBOOKS.items() if where == path)
        assert sorted(drawn) == labels
        for label in labels:
            statement, *rest = exercise_text(varied, label)
            call_cell = next(text for text in rest if f'check("{label}"' in text)
            keywords = ", ".join(f"{k}={v}" for k, v in drawn[label].items())
            assert f'check("{label}", ' in call_cell and f"{keywords})" in call_cell
            for value in drawn[label].values():
                assert str(value) in statement and str(value) in call_cell
            assert exercise_text(book, label) != exercise_text(varied, label)
        # nothing outside the varied exercises changes
        pairs = enumerate(zip(book.cells, varied.cells))
        changed = [i for i, (a, b) in pairs if a.source != b.source]
        inside = {
            i for label in labels for i in variants._exercise_cells(book.cells, label)
        }
        assert changed and set(changed) <= inside
        # and in code, only reference solutions and check calls (test_grading runs
        # those with a student's numbers)
        for i in changed:
            cell = varied.cells[i]
            if cell.cell_type == "code":
                assert "### BEGIN SOLUTION" in cell.source or any(
                    f'check("{label}", ' in cell.source for label in labels
                ), cell.source


def test_two_variants_differ():
    first = {label: variants.numbers(label, 1) for label in variants.VARIANTS}
    second = {label: variants.numbers(label, 2) for label in variants.VARIANTS}
    assert first != second


@pytest.mark.parametrize("label", sorted(BOOK_ANSWERS))
def test_the_books_answer_fails_a_variants_check(label, capsys):
    given = GIVEN.get(label, {})
    check(label, *BOOK_ANSWERS[label], **BOOK_NUMBERS[label], **given)  # the book's
    for variant in (1, 2, 3):
        drawn = variants.numbers(label, variant)
        with pytest.raises(ExerciseError, match=f"^{label}: not yet"):
            check(label, *BOOK_ANSWERS[label], **drawn, **given)


def test_a_changed_statement_stops_the_build():
    notebook = nbformat.read(NOTEBOOKS["ch3-ex2"], as_version=4)
    for cell in notebook.cells:
        cell.source = cell.source.replace("16 GiB", "sixteen GiB")
    with pytest.raises(ValueError, match="ch3-ex2: the variant replaces '16 GiB'"):
        variants.vary(notebook, 1)
