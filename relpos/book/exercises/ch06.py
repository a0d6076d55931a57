"""Checks for chapter 6, long sequences and log buckets."""

from __future__ import annotations

from typing import Any

import torch

from relpos.checks import check_int
from relpos.positions import log_bucket_position, position_index
from ._core import as_number, exercise, fail


@exercise("ch6-ex1")
def edge_row_pairs(row_zero: Any, last_row: Any, *, n: int = 1000, k: int = 128) -> str:
    """The pairs of ``n`` tokens on row 0 and on row ``2k - 1``, plain clipping at
    ``k`` (1000 and 128 in the book; a problem set's variant may give others).

    Shapes:
        row_zero, last_row: ints
    """
    k = check_int("k", k, minimum=1)
    n = check_int("n", n, minimum=k)
    first = (n - k) * (n - k + 1) // 2
    last = (n - k + 1) * (n - k + 2) // 2
    got = (as_number(row_zero, "a number of pairs"), as_number(last_row, "a number"))
    if got == (last, first):
        fail("the two counts are swapped: row 0 holds the keys k or more ahead")
    if got[0] == first and got[1] == first:
        fail("row 2k - 1 also collects distance k - 1, one diagonal more than row 0")
    if got[0] != first:
        fail(f"row 0: {got[0]:g} pairs; distance -m occurs n - m times, for m >= k")
    if got[1] != last:
        fail(f"row {2 * k - 1}: {got[1]:g} pairs; sum n - r over r >= k - 1")
    return f"{first:,} and {last:,} pairs, as the closed forms say."


@exercise("ch6-ex2")
def first_inexact_distance(
    answer: Any, *, buckets: int = 256, max_position: int = 512
) -> str:
    """The first positive distance whose bucket (``buckets`` buckets, at most
    ``max_position``; v3: 256 and 512) is not itself."""
    got = as_number(answer, "a distance, an int")
    r = torch.arange(1, max_position)
    first = int(r[log_bucket_position(r, buckets, max_position) != r][0])
    half = buckets // 2
    if got <= half:
        fail(f"{got:g} lies in the exact region |r| <= {half}, where bucket(r) = r")
    if half < got < first:
        fail(
            f"bucket({got:g}) is still {got:g}: the ceiling hides the log curve's "
            "slope for a few steps; look further"
        )
    if got != first:
        fail(f"{got:g} is past the first one; compare bucket(r) with r for every r")
    return f"distance {first}, whose bucket is {first - 1}."


@exercise("ch6-ex3")
def edge_fraction(answer: Any, *, n: int = 2048) -> str:
    """The fraction of the pairs of an ``n``-token sequence on an edge row, with
    DeBERTa-v3's settings (2048 tokens in the book; a variant may give another).

    Shapes:
        answer: a float
    """
    n = check_int("n", n, minimum=1)
    got = as_number(answer, "a fraction between 0 and 1")
    dist = torch.arange(-(n - 1), n)
    rows = position_index(dist, max_relative_positions=512, position_buckets=256)
    edge = (rows == 0) | (rows == 511)
    expected = int((n - dist.abs())[edge].sum()) / n**2
    unweighted = int(edge.sum()) / len(dist)
    if abs(got - 100 * expected) < 0.05:
        fail("that is a percentage; give the fraction, between 0 and 1")
    if abs(got - unweighted) < 5e-4:
        fail("you counted distances, not pairs: distance r occurs for n - |r| pairs")
    if abs(got - expected) >= 5e-4:
        fail(
            f"{got:.4f} is not the fraction; weight each edge distance by n - |r| "
            "and divide by n^2"
        )
    return f"{100 * expected:.1f}% of the pairs read row 0 or row 511."
