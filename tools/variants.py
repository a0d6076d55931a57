"""Problem-set variants: the same exercises with other numbers, one seed per variant.

A course that reuses the problem sets year after year builds them with
``--variant N`` (tools/assignments.py; ``make assignments VARIANT=N``), so that
last year's answers are not this year's. Variant 0 is the book as written. Any
other ``N`` seeds a draw, per exercise, of new numbers for the exercises below:
those whose answer is a number (a copied number would pass) and whose check
takes the numbers it recomputes the answer from as keywords. Each exercise's
statement, reference solution and check call get the drawn numbers; the check
then recomputes the expected answer from them, so the hidden test grades the
variant's answer and the book's answer fails it.

Each change replaces a passage of the book's text that must be there: when a
chapter's wording changes, the build stops and names the passage, instead of
handing out a statement with the book's numbers and a check with others.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Callable

import nbformat

Edits = list[tuple[str, str]]


@dataclass(frozen=True)
class Variant:
    """The numbers one exercise can take and where they go in its cells.

    ``choices``: each parameter of the check and the values a variant draws from
    (never the book's own). ``edits``: for drawn values, the passages of the
    exercise's cells (statement, solution, check call) and what replaces them.
    """

    choices: dict[str, tuple[int, ...]]
    edits: Callable[[dict[str, int]], Edits]


def _ch3_ex2(p: dict[str, int]) -> Edits:
    gib = p["gib"]
    return [
        ("16 GiB", f"{gib} GiB"),
        ("budget = 16 * 2**30", f"budget = {gib} * 2**30"),
        ('check("ch3-ex2", n_longest)', f'check("ch3-ex2", n_longest, gib={gib})'),
    ]


def _ch6_ex1(p: dict[str, int]) -> Edits:
    n, k = p["n"], p["k"]
    return [
        (
            "A 1000-token sequence with plain clipping at $k = 128$",
            f"A {n}-token sequence with plain clipping at $k = {k}$",
        ),
        ("read row 255", f"read row {2 * k - 1}"),
        ("n, k = 1000, 128", f"n, k = {n}, {k}"),
        (
            'check("ch6-ex1", row_zero, last_row)',
            f'check("ch6-ex1", row_zero, last_row, n={n}, k={k})',
        ),
    ]


def _ch6_ex3(p: dict[str, int]) -> Edits:
    n = p["n"]
    return [
        ("2048-token sequence", f"{n}-token sequence"),
        ("n = 2048\n", f"n = {n}\n"),
        ('check("ch6-ex3", edge_fraction)', f'check("ch6-ex3", edge_fraction, n={n})'),
    ]


def _but(values: range | tuple[int, ...], book: int) -> tuple[int, ...]:
    return tuple(value for value in values if value != book)


VARIANTS: dict[str, Variant] = {
    "ch3-ex2": Variant({"gib": _but(range(4, 97, 4), 16)}, _ch3_ex2),
    "ch6-ex1": Variant(
        {"n": _but(range(500, 2001, 50), 1000), "k": (32, 64, 96, 192, 256, 384)},
        _ch6_ex1,
    ),
    "ch6-ex3": Variant({"n": _but(range(1024, 4097, 128), 2048)}, _ch6_ex3),
}


def numbers(label: str, variant: int) -> dict[str, int]:
    """The numbers of exercise ``label`` in ``variant`` (``{}`` for variant 0, the
    book's).

    Raises:
        ValueError: ``label`` has no variants, or ``variant`` is negative.
        TypeError: ``variant`` is not an int.
    """
    if isinstance(variant, bool) or not isinstance(variant, int):
        raise TypeError(f"variant must be an int >= 0, got {variant!r}")
    if variant < 0:
        raise ValueError(f"variant must be an int >= 0 (0: the book), got {variant}")
    if label not in VARIANTS:
        raise ValueError(f"label must be one of {sorted(VARIANTS)}, got {label!r}")
    if variant == 0:
        return {}
    draw = random.Random(f"relpos-variant-{variant}-{label}")
    choices = VARIANTS[label].choices
    return {name: draw.choice(values) for name, values in choices.items()}


def _exercise_cells(cells: list, label: str) -> range:
    """The cells of exercise ``label``: its statement to its ``{solution-end}``."""
    statement = re.compile(rf"```\{{exercise\}}[^\n]*\n:label: {re.escape(label)}\n")
    start = next((i for i, c in enumerate(cells) if statement.search(c.source)), None)
    if start is None:
        raise ValueError(f"{label}: no exercise with this label in the notebook")
    end = next(
        (i for i in range(start, len(cells)) if "{solution-end}" in cells[i].source),
        None,
    )
    if end is None:
        raise ValueError(f"{label}: the exercise's solution has no {{solution-end}}")
    return range(start, end + 1)


def vary(
    notebook: nbformat.NotebookNode, variant: int
) -> tuple[nbformat.NotebookNode, dict[str, dict[str, int]]]:
    """``notebook`` (a new one) with the numbers of ``variant``, and the numbers
    drawn per exercise (none for variant 0).

    Raises:
        ValueError: a passage an edit replaces is not in the exercise's cells
            (the chapter's wording changed), or ``variant`` is negative.
    """
    notebook = nbformat.from_dict(notebook)
    drawn: dict[str, dict[str, int]] = {}
    text = "\n".join(cell.source for cell in notebook.cells)
    for label, spec in VARIANTS.items():
        if f":label: {label}\n" not in text:
            continue
        chosen = numbers(label, variant)
        if not chosen:
            continue
        cells = [notebook.cells[i] for i in _exercise_cells(notebook.cells, label)]
        for old, new in spec.edits(chosen):
            if not any(old in cell.source for cell in cells):
                raise ValueError(
                    f"{label}: the variant replaces {old!r}, which the exercise "
                    "no longer holds; update tools/variants.py"
                )
            for cell in cells:
                cell.source = cell.source.replace(old, new)
        drawn[label] = chosen
    return notebook, drawn
