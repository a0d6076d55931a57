"""What a scheme provably cannot do on the tasks whose distance grows with ``n``.

The layouts are those of ``relpos.book.experiments.layouts`` (``m`` the problem
size at length ``n``, ``V`` the label symbols). Two arguments give bounds; a
bound is on the scored accuracy (per token) or on exact match (every answer
slot of a sequence right), at one length ``n``, over the task's random
sequences.

No positions, encoder (``none``; any number of layers). The model is
permutation-equivariant, so ``f(x)_i = g(x_i, M)`` with ``M`` the bag of the
tokens (``equivariance``'s argument).

- ``copy``, ``reverse``: the ``m`` answer slots all hold ``BLANK``, so they get
  one prediction; the best is the commonest of the ``m`` data tokens. Per token
  ``E[max_t c_t] / m`` (``c`` the counts of ``m`` i.i.d. uniform tokens;
  ``equivariance.expected_max_share``, exact); exact match ``<= P(all m equal)
  = V^(1 - m)``.
- ``mqar``: query ``q``'s prediction is ``g(q, M)``. Given ``M`` the pairing of
  keys and values is a uniformly random arrangement of the bag of values over
  the keys (keys and values are drawn independently and every pair is
  exchangeable), so ``P(value of q = v | M) = c_v / m``: per token
  ``E[max_v c_v] / m``, the same number as copy's. Exact match: the best guess
  of the whole arrangement is right with probability ``prod_v c_v! / m!``,
  whose mean over the multinomial counts is ``C(m + V - 1, m) / V^m`` (every
  count vector contributes ``V^-m``).
- ``addition``: the ``m + 1`` slots all hold ``BLANK``, so one prediction: per
  token at most ``E[max_d #{k : s_k = d}] / (m + 1)`` over the sum's digits
  ``s``, exact match at most ``P(all m + 1 digits equal)``; both Monte Carlo
  (:func:`addition_bound`; checked against enumeration at small ``m``).

One layer whose position signal is the same for every key ``w`` or more back
(a *window* ``w``; encoder or causal). The layer's output at ``i`` is a function
of ``x_i`` and of the bag of pairs (token, position entry); every key ``w`` or
more back reads the same entry, so only the bag of their tokens reaches ``i``
(``far_window`` finds ``w`` from the scheme's coverage reader: ``k - 1`` for
``deberta`` with span ``k``, the first distance of the last bucket for ``t5``;
schemes with absolute entries, or a distinct entry at every distance, have
none).

- ``copy``, ``reverse``: an answer whose source is ``w`` or more back is
  uniformly one of the ``F`` data tokens in that far bag (they are i.i.d. and
  their order is lost), so that slot scores at most ``E[max_t c_t] / F`` over
  ``F`` tokens; a slot with its source nearer scores at most 1. Copy's answers
  are all ``m + 1`` back; reverse's ``2k + 2``.
- ``mqar``: a query ``t >= w - 1`` positions into the queries sees every pair in
  the far bag, the pairing lost: at most ``E[max_v c_v] / m``.
- ``addition``: no bound is stated (the digits of ``a`` and ``b`` share one
  vocabulary, and what the far bag leaves of the sum is not derived here).

Causal decoders without positions: no bound. The mask lets a causal model
count (``equivariance.causal_mean_spread``), and Kazemnejad et al. 2023 prove
such a decoder can represent absolute and relative positions.

Shapes:
    tokens: ``(b, n)``
"""

from __future__ import annotations

import functools
import math

import torch

from relpos.checks import check_int
from .config import Config
from .coverage import read_entries
from .equivariance import Bound, expected_max_share
from .layouts import LAYOUTS, sum_digits
from .tasks import Task, get_task


#: ``expected_max_share`` once per (draws, vocab): a window bound asks for many.
_share = functools.cache(expected_max_share)


def _task(task: Task | str, kinds: tuple[str, ...]) -> Task:
    if isinstance(task, str):
        task = get_task(task)
    if not isinstance(task, Task):
        raise TypeError(
            f"task must be a Task or a task name, got {type(task).__name__}"
        )
    if task.kind not in kinds:
        raise ValueError(
            f"task must be of kind {' or '.join(kinds)}, got {task.kind!r}"
        )
    return task


def permutation_bounds(
    task: Task | str, n: int, *, samples: int = 20000, seed: int = 0
) -> tuple[Bound, Bound]:
    """Per-token and exact-match bounds of a model without positions, encoder.

    ``copy``, ``reverse``, ``mqar``: exact (the module docstring);
    ``addition``: Monte Carlo over ``samples`` sums (:func:`addition_bound`).

    Shapes:
        output: ``(per_token, exact_match)``
    """
    task = _task(task, tuple(LAYOUTS))
    n = task.check_length(n)
    m, vocab = LAYOUTS[task.kind].size(n), task.vocab_size
    if task.kind == "addition":
        return addition_bound(m, vocab, samples=samples, seed=seed)
    share = Bound(_share(m, vocab))
    if task.kind == "mqar":
        return share, Bound(math.comb(m + vocab - 1, m) / vocab**m)
    return share, Bound(float(vocab) ** (1 - m))


def addition_bound(
    m: int, base: int, *, samples: int = 20000, seed: int = 0
) -> tuple[Bound, Bound]:
    """The best one prediction for all ``m + 1`` digits of ``a + b``: per token, exact.

    Monte Carlo over ``samples`` pairs of ``m``-digit numbers (seeded): the mean
    share of the commonest digit of the sum, and the share of sums whose digits
    are all equal, each with its standard error.

    Shapes:
        output: ``(per_token, exact_match)``
    """
    m = check_int("m", m, minimum=1)
    base = check_int("base", base, minimum=2)
    samples = check_int("samples", samples, minimum=2)
    generator = torch.Generator().manual_seed(check_int("seed", seed, minimum=0))
    a = torch.randint(base, (samples, m), generator=generator)  # (s, m)
    c = torch.randint(base, (samples, m), generator=generator)  # (s, m)
    digits = sum_digits(a, c, base)  # (s, m + 1)
    counts = torch.zeros(samples, base, dtype=torch.long).scatter_add_(
        1, digits, torch.ones_like(digits)
    )  # (s, base)
    top = counts.max(-1).values.double()  # (s,)
    share = top / (m + 1)
    same = (top == m + 1).double()
    root = math.sqrt(samples)
    return (
        Bound(float(share.mean()), float(share.std() / root)),
        Bound(float(same.mean()), float(same.std() / root)),
    )


def far_window(config: Config, up_to: int | None = None) -> int | None:
    """The window ``w`` of the scheme's position signal, or ``None`` if it has none.

    The smallest ``w >= 1`` such that every pair with ``w <= i - j < up_to``
    (default: the run's longest sequence) reads the same entry of every kind
    the scheme reads (``coverage.read_entries``). ``None`` for a scheme that
    reads no entry, or one whose entries still change at ``up_to - 1`` (an
    absolute row, a formula of the distance).
    """
    up_to = config.max_length if up_to is None else check_int("up_to", up_to, minimum=2)
    entries = read_entries(config, up_to)
    if not entries:
        return None
    last = up_to - 1
    by_distance = torch.stack(
        [e.index[last, last - torch.arange(up_to)] for e in entries.values()]
    )  # (kinds, distance 0 .. up_to - 1): the entries of query up_to - 1
    same = (by_distance == by_distance[:, -1:]).all(0)  # (distance,)
    if not bool(same[-2]):
        return None  # the entry of up_to - 1 is not shared with the one before
    changed = torch.nonzero(~same).flatten()
    return int(changed.max()) + 1 if len(changed) else 1


def window_bound(task: Task | str, n: int, window: int) -> float:
    """The best scored accuracy of one layer whose positions are blind from ``window``.

    ``copy``, ``reverse``: the mean over the answer slots of ``E[max_t c_t] / F``
    (``F`` the data tokens ``window`` or more back) where the source is that far,
    else 1. ``mqar``: the mean over queries of ``E[max_v c_v] / m`` for queries
    ``t >= window - 1``, else 1. Exact (the module docstring).
    """
    task = _task(task, ("copy", "reverse", "mqar"))
    n = task.check_length(n)
    window = check_int("window", window, minimum=1)
    m, vocab = LAYOUTS[task.kind].size(n), task.vocab_size
    if task.kind == "mqar":
        blind = sum(1 for t in range(m) if t + 1 >= window)
        return (blind * _share(m, vocab) + (m - blind)) / m
    total = 0.0
    for k in range(m):
        distance = m + 1 if task.kind == "copy" else 2 * k + 2  # slot k's source
        if distance < window:
            total += 1.0
            continue
        # slot k sits m + 1 + k after data token 0: tokens t <= m + 1 + k - window
        far = min(m, m + 2 + k - window)
        total += _share(far, vocab)
    return total / m


__all__ = [
    "addition_bound",
    "far_window",
    "permutation_bounds",
    "window_bound",
]
