"""Checks for chapter 8, where DeBERTa sits among the relative position schemes.

Shape legend:
    ch8-ex1: a function ``num_heads -> (h,)``;
    ch8-ex2: a function ``(rel (m,), num_buckets, max_distance) -> (m,)``;
    ch8-ex3: a function ``(n, num_heads) -> (h, n, n)``
"""

from __future__ import annotations

import math
from typing import Any, Callable

import torch

from relpos.schemes import alibi_bias, alibi_slopes, relative_distances, t5_bucket
from ._core import as_number, as_tensor, call, exercise, fail, require_callable

#: Head counts the slopes are checked at: powers of two and others.
ALIBI_HEADS = tuple(range(1, 17)) + (20, 24, 32, 48, 64)

#: ``(num_buckets, max_distance)`` settings the buckets are checked at (T5's first).
T5_SETTINGS = ((32, 128), (16, 64), (64, 256), (8, 20))


def _naive_slopes(num_heads: int) -> torch.Tensor:
    """``2^(-8 m / h)`` for ``m = 1 .. h``, whatever ``h``: the usual wrong answer."""
    m = torch.arange(1, num_heads + 1, dtype=torch.float64)
    return torch.pow(2.0, -8.0 * m / num_heads)


def _same(got: torch.Tensor, expected: torch.Tensor) -> bool:
    return torch.allclose(got, expected, rtol=1e-6, atol=0.0)


@exercise("ch8-ex1")
def alibi_slopes_from_the_formula(
    answer: Callable[[int], Any], last_slope: Any, *, heads: int = 12
) -> str:
    """``answer(h)``: ALiBi's slopes for ``h`` heads, at every count in ``ALIBI_HEADS``;
    ``last_slope``: the slope of the last of ``heads`` heads (the book: 12).

    Compared with ``relpos.schemes.alibi_slopes`` to a relative 1e-6, so an
    answer computed in float32 passes.

    Shapes:
        answer(h): ``(h,)``
    """
    function = require_callable(answer, "a function of num_heads, such as my_slopes")
    asked = heads
    for heads in ALIBI_HEADS:
        what = f"my_slopes({heads})"
        got = as_tensor(call(function, heads, what=what), "a list or tensor of slopes")
        if tuple(got.shape) != (heads,):
            fail(f"{what} should give one slope per head, shape ({heads},), got shape "
                 f"{tuple(got.shape)}")
        got = got.double()
        expected = alibi_slopes(heads, dtype=torch.float64)  # (h,)
        if _same(got, expected):
            continue
        if _same(got, expected.flip(0)):
            fail(f"{what} is in reverse order: head 0 has the steepest slope, 2^(-8/h)")
        if math.isclose(float(got[0]), 1.0):
            fail(f"{what} starts at 1: m runs from 1 to h, so the first slope is "
                 "2^(-8/h)")
        if heads & (heads - 1) and _same(got, _naive_slopes(heads)):
            closest = 1 << (heads.bit_length() - 1)
            fail(f"{heads} is not a power of two, and 2^(-8m/h) is the rule for powers "
                 f"of two. The authors' code (and BLOOM) take the {closest} slopes of "
                 f"{closest} heads, then every other slope (the 1st, 3rd, ...) of "
                 f"{2 * closest} heads for the remaining {heads - closest}")
        head = int((~torch.isclose(got, expected, rtol=1e-6, atol=0.0)).nonzero()[0])
        fail(f"{what}: head {head} has slope {float(got[head]):.6g}, which is not "
             "ALiBi's; follow the geometric series from 2^(-8/h)")
    slope = as_number(last_slope, "a slope, a float")
    expected = float(alibi_slopes(asked, dtype=torch.float64)[-1])
    if not math.isclose(slope, expected, rel_tol=1e-6):
        if math.isclose(slope, float(_naive_slopes(asked)[-1]), rel_tol=1e-6):
            fail(f"{slope:g} is the last slope of the geometric series of {asked} "
                 "heads; the heads past the largest power of two take every other "
                 "slope of twice as many heads")
        fail(f"{slope:g} is not the slope of head {asked - 1} of {asked}: evaluate "
             "your function there")
    return (f"equal to relpos.schemes.alibi_slopes for {len(ALIBI_HEADS)} head "
            "counts, and at the asked one.")


@exercise("ch8-ex2")
def t5_bucket_from_the_formula(
    answer: Callable[..., Any],
    shared: Any,
    *,
    bucket: int = 12,
    max_distance: int = 128,
) -> str:
    """``answer(rel, num_buckets, max_distance)``: T5's two-sided bucket of ``i - j``;
    ``shared``: the distances behind the query (``i - j >= 0``) in ``bucket`` with
    32 buckets and ``max_distance`` (the book: 12 and 128).

    ``rel`` holds the book's distances ``i - j`` from ``-3D`` to ``3D``
    (``D = max_distance``) as a ``torch.long`` tensor; the answer must equal
    ``relpos.schemes.t5_bucket`` at every distance, for every setting in
    ``T5_SETTINGS``.

    Shapes:
        rel: ``(m,)``; answer(rel, ...): ``(m,)``
    """
    function = require_callable(
        answer, "a function of (rel, num_buckets, max_distance)"
    )
    asked = bucket, max_distance
    for num_buckets, max_distance in T5_SETTINGS:
        what = f"my_bucket(rel, {num_buckets}, {max_distance})"
        rel = torch.arange(-3 * max_distance, 3 * max_distance + 1)  # (m,)
        result = call(function, rel.clone(), num_buckets, max_distance, what=what)
        if not isinstance(result, torch.Tensor):
            fail(f"{what} returned {type(result).__name__}; return a tensor of "
                 "buckets shaped like rel")
        if result.is_floating_point() or result.dtype == torch.bool:
            fail(f"{what} has dtype {result.dtype}; buckets index an embedding, so "
                 "they must be integers (torch.long)")
        if tuple(result.shape) != tuple(rel.shape):
            fail(f"{what} should have rel's shape {tuple(rel.shape)}, got "
                 f"{tuple(result.shape)}")
        got = result.long()
        expected = t5_bucket(rel, num_buckets=num_buckets, max_distance=max_distance)
        if torch.equal(got, expected):
            continue
        if torch.equal(got, expected.flip(0)):
            fail("keys ahead and keys behind are swapped. T5's code takes j - i (key "
                 "minus query); rel here is the book's i - j, so keys ahead "
                 "(i - j < 0) get the upper half, num_buckets // 2 and up")
        if int(got.min()) < 0 or int(got.max()) >= num_buckets:
            fail(f"{what}: buckets must lie in [0, {num_buckets}), got values from "
                 f"{int(got.min())} to {int(got.max())}. Distances at or beyond "
                 "max_distance share the last bucket of their side")
        wrong = (got != expected).nonzero().flatten()
        wrong = wrong[rel[wrong].abs().argsort(stable=True)]  # nearest first
        shown = ", ".join(
            f"r={int(rel[a])}: {int(got[a])} (expected {int(expected[a])})"
            for a in wrong[:4]
        )
        hint = f"{what}: {len(wrong)} of {rel.numel()} distances differ, e.g. {shown}"
        exact = num_buckets // 4
        if bool((rel[wrong].abs() <= exact).any()):
            hint += (f". Distances |i - j| < {exact} (num_buckets // 4) each have a "
                     "bucket of their own; the log rule starts at that magnitude")
        fail(hint)
    bucket, max_distance = asked
    behind = torch.arange(0, 4 * max_distance)  # (m,): i - j >= 0
    buckets = t5_bucket(behind, num_buckets=32, max_distance=max_distance)
    expected = behind[buckets == bucket].tolist()
    items = as_tensor(shared, "a list of distances").flatten().tolist()
    if sorted(items) != expected:
        if sorted(-x for x in items) == expected:
            fail("those are keys ahead (i - j < 0); the question asks for the "
                 "distances behind the query, i - j >= 0")
        fail(f"those are not the distances behind the query in bucket {bucket} "
             f"with 32 buckets and max_distance={max_distance}: run your function "
             "on torch.arange(0, 4 * max_distance) and keep those in the bucket")
    return (f"equal to relpos.schemes.t5_bucket for {len(T5_SETTINGS)} settings; "
            f"bucket {bucket} holds {len(expected)} distances.")


@exercise("ch8-ex3")
def bloom_bias(
    answer: Callable[[int, int], Any],
    shift: Any,
    *,
    heads: int = 12,
    head: int = 3,
    query: int = 9,
) -> str:
    """``answer(n, h)``: BLOOM's causal ALiBi bias ``slope_h * j``, keys ahead ``-inf``;
    ``shift``: BLOOM's bias minus ALiBi's on the row of ``query`` in head ``head`` of
    ``heads`` (the book: 12, 3, 9), the same for every key at or behind it.

    Checked entry by entry for a few ``n`` and head counts; the probabilities
    it gives are then the same as ALiBi's ``-slope_h * (i - j)``.

    Shapes:
        answer(n, h): ``(h, n, n)``
    """
    function = require_callable(answer, "a function of (n, num_heads)")
    asked = heads, head, query
    for n, heads in ((1, 2), (6, 4), (9, 12)):
        what = f"bloom_bias({n}, {heads})"
        got = as_tensor(call(function, n, heads, what=what), "a tensor").double()
        if tuple(got.shape) != (heads, n, n):
            fail(f"{what} should have shape (h, n, n) = {(heads, n, n)}, got "
                 f"{tuple(got.shape)}")
        slopes = alibi_slopes(heads, dtype=torch.float64)  # (h,)
        positions = torch.arange(n)
        rel = relative_distances(positions, positions)  # (i, j)
        ahead = rel < 0  # (i, j): keys after the query
        expected = slopes[:, None, None] * positions.double()  # (h, 1, j)
        expected = expected.expand(heads, n, n).masked_fill(ahead, float("-inf"))
        if torch.equal(got, expected):
            continue
        if not torch.isinf(got[:, ahead]).all() or (got[:, ahead] > 0).any():
            fail("keys ahead of the query (j > i) must be masked: give them -inf")
        alibi = alibi_bias(rel, slopes, causal=True)  # (h, i, j)
        if torch.allclose(got, alibi):
            fail("that is ALiBi's own -slope * (i - j); BLOOM's bias is slope * j, "
                 "a function of the key's position alone")
        flipped = (-slopes[:, None, None] * positions.double()).expand(heads, n, n)
        if torch.allclose(got, flipped.masked_fill(ahead, float("-inf"))):
            fail("the sign is flipped: BLOOM adds +slope * j, so later keys get more")
        fail(f"{what}: entry (h, i, j) with j <= i should be slope_h * j")
    heads, head, query = asked
    expected = float(alibi_slopes(heads, dtype=torch.float64)[head]) * query
    got = as_number(shift, "a number, the difference of the two biases")
    if not math.isclose(got, expected, rel_tol=1e-6):
        if math.isclose(got, -expected, rel_tol=1e-6):
            fail("the sign is flipped: take BLOOM's bias minus ALiBi's")
        fail(f"{got:g} is not BLOOM's bias minus ALiBi's on row {query} of head "
             f"{head} of {heads}: subtract the two at any key j <= {query}")
    return ("slope * j differs from -slope * (i - j) by slope * i, fixed per row; "
            "the softmax removes it.")


__all__ = ["ALIBI_HEADS", "T5_SETTINGS"]
