"""Checks for chapter 14, the four claims probed.

Shape legend:
    ch14-ex1: a function ``cut_mask(n, length) -> (n, n)`` bool tensor, ``True``
        where query ``i`` of a causal model reads key ``j`` once cut to its last
        ``length`` keys: ``0 <= i - j < length``; and the number of pairs it keeps
        at the exercise's ``n`` and ``length`` (the book: 64 and 16);
    ch14-ex2: a dict ``{arm: [content cost per seed]}`` of the gradient probe (the
        test content loss trained on both objectives minus on content alone, in the
        order of the grid's seeds), and the number of seeds in which TUPE pays more
        than DeBERTa by more than ``percent`` percent (the book: 10)
"""

from __future__ import annotations

from typing import Any

import torch

from ._core import as_number, as_tensor, call, exercise, fail, require_callable
from .ch09 import fit

#: The (n, length) pairs the mask check runs the answer at: the cut at, below and
#: beyond the window, and a window of one.
SIZES = ((8, 3), (12, 4), (6, 6), (5, 9), (1, 1), (16, 1))

#: The two objective mixes of the gradient probe's runs.
ALONE, BOTH = ("content",), ("content", "position")


def probe_cut_mask(n: int, length: int) -> torch.Tensor:
    """The length probe's cut (``text.context.band_mask``) with the causal mask.

    Shapes:
        output: ``(n, n)`` bool, ``[i, j]``
    """
    from ..text.context import band_mask

    positions = torch.arange(n)
    causal = positions[:, None] >= positions[None, :]  # (i, j): the key not ahead
    return band_mask(n, length) & causal


def kept_pairs(n: int, length: int) -> int:
    """The (query, key) pairs a causal window of ``n`` keeps, cut to ``length`` keys."""
    return int(probe_cut_mask(n, length).sum())


@exercise("ch14-ex1")
def cut_mask_function(
    answer: Any, keys: Any, *, n: int = 64, length: int = 16
) -> str:
    """``answer(n, length)`` equals the probe's cut causal mask at :data:`SIZES`, and
    ``keys`` is the number of pairs it keeps at the exercise's ``n`` and ``length``."""
    function = require_callable(answer, "cut_mask")
    for size, span in SIZES:
        got = as_tensor(call(function, size, span, what=f"cut_mask({size}, {span})"),
                        "a boolean tensor")
        expected = probe_cut_mask(size, span)
        if tuple(got.shape) != (size, size):
            fail(f"cut_mask({size}, {span}) must have shape ({size}, {size}), one "
                 f"row per query and one column per key; got {tuple(got.shape)}")
        got = got.bool()
        if torch.equal(got, expected):
            continue
        if torch.equal(got, expected.T):
            fail("the mask is transposed: row i is the query, column j the key, and "
                 "d = i - j is positive when the key is behind the query")
        if torch.equal(got, probe_cut_mask(size, span + 1)):
            fail(f"at length = {span} each query reads one key too many: the cut "
                 f"keeps the keys with d = i - j below length, the query itself "
                 f"included")
        if not got.diagonal().all():
            fail("a query reads too few keys: the query itself (d = 0) counts among "
                 "its last length keys")
        if torch.equal(got, probe_cut_mask(size, max(span - 1, 1))):
            fail(f"at length = {span} each query reads too few keys: the cut keeps "
                 f"every key with d = i - j from 0 to length - 1")
        ahead = ~torch.ones(size, size, dtype=torch.bool).tril()  # (i, j): j > i
        if (got & ahead).any():
            fail("some query reads a key ahead of it: a causal model reads only keys "
                 "with d = i - j >= 0")
        i, j = (got != expected).nonzero()[0].tolist()
        fail(f"cut_mask({size}, {span})[{i}, {j}] should be {bool(expected[i, j])}: "
             f"d = i - j = {i - j}")
    count = as_number(keys, "a number of pairs")
    if count != kept_pairs(n, length):
        if count == n * (n + 1) // 2:
            fail(f"{count:g} is the uncut triangle of n = {n}: count the pairs "
                 f"cut_mask({n}, {length}) keeps")
        fail(f"keys must be the number of True entries of cut_mask({n}, {length})")
    return fit("every query reads at most length keys, itself and those just behind "
               "it; the rest of the triangle is cut.", "ch14-ex1")


def content_costs(gradients: dict[str, Any]) -> dict[str, list[float]]:
    """Per arm, the content cost in each seed of the gradient probe, in grid order."""
    loss = {
        (r["arm"], r["seed"], tuple(r["objectives"])): r["loss"]["content"]
        for r in gradients["runs"]
    }
    return {
        arm: [loss[arm, seed, BOTH] - loss[arm, seed, ALONE]
              for seed in gradients["grid"]["seed"]]
        for arm in gradients["grid"]["arm"]
    }


def seeds_paying_more(
    cost: dict[str, list[float]], percent: int, arm: str = "tupe", than: str = "deberta"
) -> int:
    """The seeds in which ``arm``'s cost exceeds ``than``'s by over ``percent``%."""
    return sum(a > b * (1 + percent / 100) for a, b in zip(cost[arm], cost[than]))


@exercise("ch14-ex2")
def content_cost_table(
    cost: Any,
    more: Any,
    *,
    percent: int = 10,
    gradients: dict[str, Any] | None = None,
) -> str:
    """``{arm: [cost per seed]}`` within 1e-6 nats, and the seeds where TUPE pays more
    than DeBERTa by more than ``percent``% (``gradients`` defaults to the stored
    probe)."""
    from .. import results

    if gradients is None:
        gradients = results.load("probes/gradients.json")
    expected = content_costs(gradients)
    seeds = gradients["grid"]["seed"]
    if not isinstance(cost, dict):
        fail(f"cost must be a dict {{arm: [cost per seed]}}, got {type(cost).__name__}")
    missing = [arm for arm in expected if arm not in cost]
    if missing:
        fail("give one entry per arm of the probe; missing: " + ", ".join(missing))
    for arm, values in expected.items():
        got = cost[arm]
        if isinstance(got, (int, float)):
            fail(f"cost[{arm!r}] must be a list of {len(seeds)} costs, one per seed, "
                 f"not their mean")
        got = [as_number(v, f"a cost in nats per byte ({arm})") for v in got]
        if len(got) != len(values):
            fail(f"cost[{arm!r}] must hold one cost per seed ({len(values)}), "
                 f"got {len(got)}")
        if all(abs(g + e) < 1e-6 for g, e in zip(got, values)):
            fail("the signs are flipped: the cost is the loss trained on both "
                 "objectives minus the loss trained on content alone")
        if not all(abs(g - e) < 1e-6 for g, e in zip(got, values)):
            if all(abs(g - e) < 1e-6 for g, e in zip(sorted(got), sorted(values))):
                fail(f"cost[{arm!r}] is not in seed order: pair the two runs of each "
                     f"seed and keep the order of gradients['grid']['seed']")
            fail(f"cost[{arm!r}] differs: for each seed, the test loss "
                 f"run['loss']['content'] of the run whose objectives are "
                 f"{list(BOTH)} minus that of the run whose objectives are "
                 f"{list(ALONE)}")
    count = as_number(more, "a number of seeds")
    if count != seeds_paying_more(expected, percent):
        fail(f"more must count the seeds (of {len(seeds)}) in which TUPE's cost is "
             f"above DeBERTa's times 1 + {percent}/100, compared seed by seed")
    least = min(expected, key=lambda arm: sum(expected[arm]))
    return fit(f"paired by seed; {least} pays least on average, and the verdict reads "
               f"the differences with a paired interval.", "ch14-ex2")
