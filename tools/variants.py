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

from relpos.book.exercises.students import CHOICES, student_numbers

Edits = list[tuple[str, str]]


@dataclass(frozen=True)
class Variant:
    """Where one exercise's numbers go in its cells: ``edits``, for drawn values,
    the passages of the exercise's cells (statement, solution, check call) and what
    replaces them. The values each keyword can take are ``CHOICES[label]``
    (relpos/book/exercises/students.py, which the grader's hidden tests read too).
    """

    edits: Callable[[dict[str, int]], Edits]


def _ch1_ex2(p: dict[str, int]) -> Edits:
    n, k = p["n"], p["k"]
    return [
        ("for $n = 7$", f"for $n = {n}$"),
        ("`relpos.relative_positions(7)`", f"`relpos.relative_positions({n})`"),
        ("table rows for $k = 4$", f"table rows for $k = {k}$"),
        (
            "`relpos.relative_position_index(7, max_relative_positions=4)`",
            f"`relpos.relative_position_index({n}, max_relative_positions={k})`",
        ),
        ("positions = torch.arange(7)", f"positions = torch.arange({n})"),
        ("-relpos.relative_positions(7))", f"-relpos.relative_positions({n}))"),
        ("relpos.delta(-t, 4)", f"relpos.delta(-t, {k})"),
        (
            'check("ch1-ex2", rows_from_t)',
            f'check("ch1-ex2", rows_from_t, n={n}, k={k})',
        ),
    ]


def _ch1_ex3(p: dict[str, int]) -> Edits:
    m = p["behind"]
    return [
        ("{exercise} Two tokens behind", f"{{exercise}} {m} tokens behind"),
        (
            "every pair whose key is\ntwo tokens **behind** its query",
            f"every pair whose key is\n{m} tokens **behind** its query",
        ),
        (
            "relative.diagonal(offset=-2)  # the entries (i, i - 2): i - j = +2",
            f"relative.diagonal(offset=-{m})  # the entries (i, i - {m}): "
            f"i - j = +{m}",
        ),
        ("relpos.delta(+2, k)", f"relpos.delta(+{m}, k)"),
        (
            'check("ch1-ex3", behind2, row, scores=relative)',
            f'check("ch1-ex3", behind2, row, scores=relative, behind={m})',
        ),
    ]


def _ch2_ex1(p: dict[str, int]) -> Edits:
    k = p["k"]
    asked = ", ".join(str(r) for r in (-k - 88, -k, -k + 1, 0, k - 1, k, k + 88))
    return [
        (
            "With DeBERTa's $k = 512$, which rows do the distances "
            "$-600, -512, -511, 0, 511, 512, 600$",
            f"With a span of $k = {k}$, which rows do the distances\n${asked}$",
        ),
        (
            "distances = [-600, -512, -511, 0, 511, 512, 600]",
            f"distances = [{asked}]",
        ),
        ("relpos.delta(r_value, 512)", f"relpos.delta(r_value, {k})"),
        ('check("ch2-ex1", rows)', f'check("ch2-ex1", rows, k={k})'),
    ]


def _ch2_ex3(p: dict[str, int]) -> Edits:
    k = p["k"]
    return [
        ("$\\delta'$ uses for $k = 4$.", f"$\\delta'$ uses for $k = {k}$."),
        (
            "rows_used = delta_symmetric(r, 4).unique().numel()",
            f"rows_used = delta_symmetric(r, {k}).unique().numel()",
        ),
        (
            'check("ch2-ex3", delta_symmetric, rows_used)',
            f'check("ch2-ex3", delta_symmetric, rows_used, k={k})',
        ),
        ("9 for $k = 4$", f"{2 * k + 1} for $k = {k}$"),
    ]


def _ch1_ex1(p: dict[str, int]) -> Edits:
    n, m = p["n"], p["m"]
    return [
        (
            "$n = 10$ tokens whose key is exactly $m = 3$ tokens",
            f"$n = {n}$ tokens whose key is exactly $m = {m}$ tokens",
        ),
        ("n, m = 10, 3\n", f"n, m = {n}, {m}\n"),
        (
            'check("ch1-ex1", distance_matrix, pairs_ahead)',
            f'check("ch1-ex1", distance_matrix, pairs_ahead, n={n}, m={m})',
        ),
    ]


def _ch2_ex2(p: dict[str, int]) -> Edits:
    n, k = p["n"], p["k"]
    return [
        (
            "$n = 100$ tokens with span $k = 32$",
            f"$n = {n}$ tokens with span $k = {k}$",
        ),
        ("n, k = 100, 32\n", f"n, k = {n}, {k}\n"),
        (
            'check("ch2-ex2", pairs_on_row_zero, on_row_zero)',
            f'check("ch2-ex2", pairs_on_row_zero, on_row_zero, n={n}, k={k})',
        ),
    ]


def _ch3_ex1(p: dict[str, int]) -> Edits:
    span = p["span"]
    return [
        ("a table of span $k = 24$", f"a table of span $k = {span}$"),
        ("span = 24\n", f"span = {span}\n"),
        (
            'check("ch3-ex1", rows_read, first_full)',
            f'check("ch3-ex1", rows_read, first_full, span={span})',
        ),
    ]


def _ch3_ex2(p: dict[str, int]) -> Edits:
    gib = p["gib"]
    return [
        ("16 GiB", f"{gib} GiB"),
        ("budget = 16 * 2**30", f"budget = {gib} * 2**30"),
        ('check("ch3-ex2", n_longest)', f'check("ch3-ex2", n_longest, gib={gib})'),
    ]


def _ch4_ex3(p: dict[str, int]) -> Edits:
    d, h = p["head_size"], p["heads"]
    return [
        (
            "$12$ heads of width $64$ (hidden size $768$)",
            f"${h}$ heads of width ${d}$ (hidden size ${d * h}$)",
        ),
        ("head_size, heads = 64, 12\n", f"head_size, heads = {d}, {h}\n"),
        (
            'check("ch4-ex3", only_scale)',
            f'check("ch4-ex3", only_scale, head_size={d}, heads={h})',
        ),
    ]


def _ch5_ex2(p: dict[str, int]) -> Edits:
    n, k, d, masked = p["n"], p["k"], p["d"], p["masked"]
    mask = ", ".join(str(j < n - masked) for j in range(n))
    return [
        (
            "a key mask that hides the last two of five\nkeys ($k = 2$, $d = 3$)",
            f"a key mask that hides the last {masked} of {n}\nkeys "
            f"($k = {k}$, $d = {d}$)",
        ),
        ("Rebuild the $(5, 5)$ scores", f"Rebuild the $({n}, {n})$ scores"),
        ("n, k = 5, 2\n", f"n, k = {n}, {k}\n"),
        ("torch.randn(1, 1, n, 3,", f"torch.randn(1, 1, n, {d},"),
        ("torch.randn(1, 2 * k, 3,", f"torch.randn(1, 2 * k, {d},"),
        (
            "torch.tensor([[True, True, True, False, False]])",
            f"torch.tensor([[{mask}]])",
        ),
        (
            'check("ch5-ex2", scores, query=query, pos_key=pos_key, key_mask=key_mask)',
            f'check("ch5-ex2", scores, query=query, pos_key=pos_key, '
            f"key_mask=key_mask,\n      n={n}, k={k}, d={d}, masked={masked})",
        ),
    ]


def _ch3_ex3(p: dict[str, int]) -> Edits:
    h = p["hidden"]
    table = f'relpos.RelativePositionEmbedding(k, {h}, init="sinusoidal")'
    return [
        (
            "Every sinusoidal row has the same norm: give it as `row_norm`.",
            f"Every row of a sinusoidal table of hidden size {h}\n(`{table}`) has "
            "the same norm: give it as `row_norm`.",
        ),
        (
            "norms = sinusoidal_weight.double().norm(dim=-1)",
            f"norms = {table}.weight.detach().double().norm(dim=-1)",
        ),
        ('check("ch3-ex3", row_norm)', f'check("ch3-ex3", row_norm, hidden={h})'),
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


def _ch6_ex2(p: dict[str, int]) -> Edits:
    b, m = p["buckets"], p["max_position"]
    return [
        (
            "With the v3 settings the exact region ends at $|r| = 128$, yet "
            "`log_bucket_position(129)` is\nstill 129.",
            f"With {b} buckets and distances up to {m} "
            f"(`log_bucket_position(r, {b}, {m})`),\nthe exact region ends at "
            f"$|r| = {b // 2}$.",
        ),
        ("explain why it is not 129.", f"explain why it is not {b // 2 + 1}."),
        ("r = torch.arange(1, 512)\n", f"r = torch.arange(1, {m})\n"),
        ("log_bucket_position(r, 256, 512)", f"log_bucket_position(r, {b}, {m})"),
        (
            'check("ch6-ex2", first)',
            f'check("ch6-ex2", first, buckets={b}, max_position={m})',
        ),
    ]


def _ch6_ex3(p: dict[str, int]) -> Edits:
    n = p["n"]
    return [
        ("2048-token sequence", f"{n}-token sequence"),
        ("n = 2048\n", f"n = {n}\n"),
        ('check("ch6-ex3", edge_fraction)', f'check("ch6-ex3", edge_fraction, n={n})'),
    ]


def _ch8_ex1(p: dict[str, int]) -> Edits:
    h = p["heads"]
    return [
        ("a model with $H = 12$ heads", f"a model with $H = {h}$ heads"),
        ("heads = 12\nlast_slope", f"heads = {h}\nlast_slope"),
        (
            'check("ch8-ex1", my_slopes, last_slope)',
            f'check("ch8-ex1", my_slopes, last_slope, heads={h})',
        ),
    ]


def _ch8_ex2(p: dict[str, int]) -> Edits:
    b, m = p["bucket"], p["max_distance"]
    return [
        (
            "bucket 12 with `num_buckets=32, max_distance=128`",
            f"bucket {b} with `num_buckets=32, max_distance={m}`",
        ),
        ("bucket, max_distance = 12, 128\n", f"bucket, max_distance = {b}, {m}\n"),
        (
            'check("ch8-ex2", my_bucket, shared)',
            f'check("ch8-ex2", my_bucket, shared, bucket={b}, max_distance={m})',
        ),
    ]


def _ch8_ex3(p: dict[str, int]) -> Edits:
    heads, head, query = p["heads"], p["head"], p["query"]
    return [
        (
            "query $i = 9$ in head $h = 3$ of $H = 12$",
            f"query $i = {query}$ in head $h = {head}$ of $H = {heads}$",
        ),
        ("H, h, i = 12, 3, 9\n", f"H, h, i = {heads}, {head}, {query}\n"),
        (
            'check("ch8-ex3", bloom_bias, shift)',
            f'check("ch8-ex3", bloom_bias, shift, heads={heads}, head={head}, '
            f"query={query})",
        ),
    ]


def _ch9_ex2(p: dict[str, int]) -> Edits:
    percent, m = p["percent"], p["multiple"]
    return [
        (
            "at $1L$ (the training length), reaches 90%",
            f"at ${m}L$ ({m} times the training length), reaches {percent}%",
        ),
        ("reach\n90%", f"reach\n{percent}%"),
        ("percent, multiple = 90, 1\n", f"percent, multiple = {percent}, {m}\n"),
        (
            'check("ch9-ex2", fewest)',
            f'check("ch9-ex2", fewest, percent={percent}, multiple={m})',
        ),
    ]


def _ch10_ex1(p: dict[str, int]) -> Edits:
    n = p["train_length"]
    return [
        ("trained at $L = 16$", f"trained at $L = {n}$"),
        (
            "train_length=16,\ntest_lengths=(16, 32, 64, 128))",
            f"train_length={n},\ntest_lengths=({n}, {2 * n}, {4 * n}, {8 * n}))",
        ),
        ("(32, 64, 128) at which", f"({2 * n}, {4 * n}, {8 * n}) at which"),
        ("short = 16\n", f"short = {n}\n"),
        (
            'check("ch10-ex1", first_untrained)',
            f'check("ch10-ex1", first_untrained, train_length={n})',
        ),
    ]


def _ch11_ex2(p: dict[str, int]) -> Edits:
    m = p["multiple"]
    return [
        ("$2L$", f"${m}L$"),
        ("at = 2 * L", f"at = {m} * L"),
        ('check("ch11-ex2", gain)', f'check("ch11-ex2", gain, multiple={m})'),
    ]


def _ch12_ex2(p: dict[str, int]) -> Edits:
    m = p["multiple"]
    return [
        ("At $2L$ on `relative`", f"At ${m}L$ on `relative`"),
        ("at = 2 * L", f"at = {m} * L"),
        ('check("ch12-ex2", ahead)', f'check("ch12-ex2", ahead, multiple={m})'),
    ]


def _ch12_ex1(p: dict[str, int]) -> Edits:
    seeds, losses = p["seeds"], p["losses"]
    return [
        (
            "$n = 10$ seeds on which one arm beats the other by the same margin on "
            "all but $2$ of them",
            f"$n = {seeds}$ seeds on which one arm beats the other by the same "
            f"margin on all but ${losses}$ of them",
        ),
        ("seeds, losses = 10, 2\n", f"seeds, losses = {seeds}, {losses}\n"),
        (
            'check("ch12-ex1", sign_flip_p, p_split)',
            f'check("ch12-ex1", sign_flip_p, p_split, seeds={seeds}, losses={losses})',
        ),
    ]


def _ch13_ex1(p: dict[str, int]) -> Edits:
    n, k = p["n"], p["k"]
    return [
        ("at $n = 64$ and", f"at $n = {n}$ and"),
        ("for $k = 8$ (the farthest", f"for $k = {k}$ (the farthest"),
        ("n, k = 64, 8\n", f"n, k = {n}, {k}\n"),
        (
            'check("ch13-ex1", within, share)',
            f'check("ch13-ex1", within, share, n={n}, k={k})',
        ),
    ]


def _ch13_ex2(p: dict[str, int]) -> Edits:
    n = p["n"]
    return [
        ("On `copy` at $n = 32$", f"On `copy` at $n = {n}$"),
        ("A, n = 16, 32\n", f"A, n = 16, {n}\n"),
        (
            "# one PAD, 15 data tokens, SEP, 15 answer slots",
            "# (a PAD when n is even), m data tokens, SEP, m answer slots",
        ),
        (
            'check("ch13-ex2", chance, bound)',
            f'check("ch13-ex2", chance, bound, n={n})',
        ),
    ]


def _ch14_ex1(p: dict[str, int]) -> Edits:
    n, length = p["n"], p["length"]
    return [
        ("a window of $n = 64$ bytes cut to\n$L = 16$",
         f"a window of $n = {n}$ bytes cut to\n$L = {length}$"),
        (
            "keys = int(cut_mask(64, 16).sum())",
            f"keys = int(cut_mask({n}, {length}).sum())",
        ),
        ("int(cut_mask(64, 64).sum())", f"int(cut_mask({n}, {n}).sum())"),
        (
            'check("ch14-ex1", cut_mask, keys)',
            f'check("ch14-ex1", cut_mask, keys, n={n}, length={length})',
        ),
    ]


def _ch14_ex2(p: dict[str, int]) -> Edits:
    m = p["percent"]
    return [
        ("by more than 10% (a cost above\nDeBERTa's times 1 + 10/100)",
         f"by more than {m}% (a cost above\nDeBERTa's times 1 + {m}/100)"),
        ("percent = 10  #", f"percent = {m}  #"),
        (
            'check("ch14-ex2", cost, more)',
            f'check("ch14-ex2", cost, more, percent={m})',
        ),
    ]


VARIANTS: dict[str, Variant] = {
    "ch1-ex1": Variant(_ch1_ex1),
    "ch1-ex2": Variant(_ch1_ex2),
    "ch1-ex3": Variant(_ch1_ex3),
    "ch2-ex1": Variant(_ch2_ex1),
    "ch2-ex2": Variant(_ch2_ex2),
    "ch2-ex3": Variant(_ch2_ex3),
    "ch3-ex1": Variant(_ch3_ex1),
    "ch3-ex2": Variant(_ch3_ex2),
    "ch3-ex3": Variant(_ch3_ex3),
    "ch4-ex3": Variant(_ch4_ex3),
    "ch5-ex2": Variant(_ch5_ex2),
    "ch6-ex1": Variant(_ch6_ex1),
    "ch6-ex2": Variant(_ch6_ex2),
    "ch6-ex3": Variant(_ch6_ex3),
    "ch8-ex1": Variant(_ch8_ex1),
    "ch8-ex2": Variant(_ch8_ex2),
    "ch8-ex3": Variant(_ch8_ex3),
    "ch9-ex2": Variant(_ch9_ex2),
    "ch10-ex1": Variant(_ch10_ex1),
    "ch11-ex2": Variant(_ch11_ex2),
    "ch12-ex1": Variant(_ch12_ex1),
    "ch12-ex2": Variant(_ch12_ex2),
    "ch13-ex1": Variant(_ch13_ex1),
    "ch13-ex2": Variant(_ch13_ex2),
    "ch14-ex1": Variant(_ch14_ex1),
    "ch14-ex2": Variant(_ch14_ex2),
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
    choices = CHOICES[label]
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


# Per-student problem sets (tools/assignments.py --per-student): the source's check
# calls draw the numbers at grading time; each student's release gets them written.
IMPORT = "from relpos.book.exercises.students import graded_numbers\n"


def graded(label: str) -> str:
    """The keyword argument a per-student source's check call of ``label`` gets."""
    return f'**graded_numbers("{label}")'


def _closing(source: str, start: int) -> int:
    """The index of the ``)`` that closes the call whose ``(`` is at ``start``."""
    depth, quote = 0, ""
    for i in range(start, len(source)):
        char = source[i]
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError(f"an unclosed call in {source[start - 20 : start + 40]!r}")


def with_graded_numbers(source: str, label: str) -> str:
    """``source`` (a test cell) whose ``check("label", ...)`` calls also take the
    student's numbers, ``**graded_numbers("label")``, and which imports it.

    Raises:
        ValueError: ``label`` has no variants, or ``source`` calls no check of it.
    """
    if label not in VARIANTS:
        raise ValueError(f"label must be one of {sorted(VARIANTS)}, got {label!r}")
    call = re.compile(rf"\bcheck\(\s*[\"']{re.escape(label)}[\"']")
    found = list(call.finditer(source))
    if not found:
        raise ValueError(f"{label}: the test cell calls no check({label!r}, ...)")
    for match in reversed(found):
        end = _closing(source, match.start() + len("check"))
        source = f"{source[:end]}, {graded(label)}{source[end:]}"
    return IMPORT + source


def _release_cells(cells: list, label: str) -> list:
    """A release's cells of exercise ``label``: from its ``**Exercise N.M.**``
    statement to its last test cell (grade id ``label-test...``)."""
    chapter, number = re.findall(r"\d+", label)
    title = f"**Exercise {chapter}.{number}.**"
    start = next((i for i, c in enumerate(cells) if title in c.source), None)
    ids = [c.metadata.get("nbgrader", {}).get("grade_id", "") for c in cells]
    tests = [i for i, gid in enumerate(ids) if gid.startswith(f"{label}-test")]
    if start is None or not tests or tests[-1] < start:
        raise ValueError(f"{label}: no {title} statement and test cell in the release")
    return cells[start : tests[-1] + 1]


def for_student(
    release: nbformat.NotebookNode, student: str, secret: str
) -> tuple[nbformat.NotebookNode, dict[str, dict[str, int]]]:
    """A per-student source's release (a new notebook) with ``student``'s numbers
    in each varied exercise's statement and check call, and the numbers drawn.

    Only the statement and the test cells are in a release (the solution is not),
    so the statement's passages must change and the check call's
    ``**graded_numbers(label)`` becomes the student's keywords.

    Raises:
        ValueError: a varied exercise's statement lacks its passages, or its test
            cell lacks ``graded_numbers`` (the release is not a per-student one).
    """
    from nbgrader.utils import compute_checksum

    release = nbformat.from_dict(release)
    drawn: dict[str, dict[str, int]] = {}
    text = "\n".join(cell.source for cell in release.cells)
    for label, spec in VARIANTS.items():
        if graded(label) not in text:
            continue
        chosen = student_numbers(label, student, secret)
        cells = _release_cells(release.cells, label)
        keywords = ", ".join(f"{name}={value}" for name, value in chosen.items())
        changed = set()
        for old, new in [*spec.edits(chosen), (graded(label), keywords)]:
            for cell in cells:
                if old in cell.source:
                    cell.source = cell.source.replace(old, new)
                    changed.add(cell.cell_type)
        if changed != {"markdown", "code"}:
            raise ValueError(
                f"{label}: the release's statement or check call lacks the passages "
                "tools/variants.py replaces; update its edits"
            )
        for cell in cells:
            cell.source = cell.source.replace(IMPORT, "")
            meta = cell.metadata.get("nbgrader", {})
            if "checksum" in meta:
                meta["checksum"] = compute_checksum(cell)
        drawn[label] = chosen
    return release, drawn
