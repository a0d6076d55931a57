"""What one attention layer cannot tell apart: the keys that read one position entry.

Many schemes read the distance ``i - j`` only through an *entry*: a row of a
clipped table (``deberta``, ``shaw``), a log bucket (``deberta-buckets``, T5),
or nothing at all (``none``). In one layer of such a model the score of key
``j`` from query ``i`` depends on ``(x_i, x_j, entry(i - j))`` only (content to
content, content to position, position to content), and so does the value it
sends; the feed-forward block and the classifier act on position ``i`` alone.
The prediction at ``i`` is then a function ``g(x_i, M_i)`` of the query's token
and of the multiset ``M_i`` of (token, entry) pairs of its keys: swapping the
tokens of two keys that read the same entry changes nothing at ``i``.

Shift tasks (the label is ``x[i - s]``). Let ``G`` be the distances that read
distance ``s``'s entry (``s`` included, the query's own distance 0 left out:
its token is known apart, through the residual). At query ``i`` the keys at
``m_i`` of those distances exist; tokens are i.i.d., so given ``(x_i, M_i)``
their tokens are in a uniformly random order, ``x[i - s]`` is a uniformly
random one of them, and no ``g`` beats naming the commonest:
``E[max_t c_t] / m_i`` (:func:`~relpos.book.experiments.equivariance.
expected_max_shares`, exact). :func:`shared_entry_bound` averages it over the
scored positions ``i = s .. n - 1``. Cases:

- a causal model with no positions: every visible key reads the same (empty)
  entry, so ``G = {1, 2, ...}`` and ``m_i = i``: a bound that falls with
  ``n``, since a position far into the sequence has many earlier tokens to
  confuse with the one ``s`` back;
- an encoder with no positions: ``G`` holds every other position, ``m_i =
  n - 1``, and the bound is ``permutation_bound``'s;
- a table clipped at ``k``: a distance at or beyond ``k - 1`` shares the edge
  row with every distance beyond it;
- T5's buckets: the distances of one bucket (causal, 16 buckets to 32: 12 and
  13 share one, so half the weight is the best a head can put on 12).

A second layer breaks the argument (a key's first-layer output carries its own
neighbourhood), which is how two layers can compose a distance no entry
singles out.

Shapes:
    distances: ``(d,)``, ``i - j`` (query minus key)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache

import torch

import relpos
from relpos import schemes
from relpos.checks import check_bool, check_int
from .equivariance import expected_max_shares
from .tasks import Task, get_task

#: A scheme's position entry for each distance ``i - j``: ``(d,) -> (d,)``.
EntryOf = Callable[[torch.Tensor], torch.Tensor]


@lru_cache(maxsize=8)
def _shares(draws: int, vocab: int) -> tuple[float, ...]:
    """``expected_max_shares(draws, vocab)`` as a tuple, computed once per pair.

    Entry ``j`` does not depend on ``draws`` (only how many entries there are).
    """
    return tuple(expected_max_shares(draws, vocab).tolist())


def shared_distances(
    entry_of: EntryOf, target: int, n: int, *, causal: bool = False
) -> list[int]:
    """The distances ``i - j`` of a length-``n`` sequence that read ``target``'s entry.

    ``entry_of`` maps distances to entries (for example
    ``lambda d: relpos.position_index(d, max_relative_positions=8)``); the
    query's own distance 0 is left out, and with ``causal`` every key ahead
    (``i - j < 0``) too.

    Shapes:
        entry_of: ``(d,) -> (d,)``; output: a sorted list of ints
    """
    n = check_int("n", n, minimum=2)
    target = check_int("target", target)
    causal = check_bool("causal", causal)
    if not 0 < abs(target) < n:
        raise ValueError(f"target must be a distance with 0 < |target| < n = {n}, "
                         f"got {target}")
    distances = torch.arange(0 if causal else -(n - 1), n)  # (d,)
    entries = entry_of(distances)  # (d,)
    if not isinstance(entries, torch.Tensor) or entries.shape != distances.shape:
        raise ValueError("entry_of must map a (d,) tensor of distances to a (d,) "
                         "tensor of entries")
    same = entries == entries[distances == target]  # (d,)
    return [d for d in distances[same].tolist() if d != 0]


def entry_functions(
    config: Mapping[str, int], causal: bool = False
) -> dict[str, EntryOf]:
    """The entry each windowed scheme reads per distance, for a sweep's ``config``.

    ``deberta`` and ``shaw`` clip at ``max_relative_positions``,
    ``deberta-buckets`` takes ``position_buckets`` log buckets a side to
    ``bucket_max_position``, T5 twice that many buckets to ``t5_max_distance``
    (all behind the query when ``causal``).

    Shapes:
        each function: distances ``(d,)`` -> entries ``(d,)``
    """
    k, per_side = config["max_relative_positions"], config["position_buckets"]
    reach, t5_reach = config["bucket_max_position"], config["t5_max_distance"]
    causal = check_bool("causal", causal)
    return {
        "deberta": lambda d: relpos.position_index(d, max_relative_positions=k),
        "shaw": lambda d: schemes.shaw_index(d, k),
        "deberta-buckets": lambda d: relpos.position_index(
            d, max_relative_positions=reach, position_buckets=per_side
        ),
        "t5": lambda d: schemes.t5_bucket(
            d, num_buckets=2 * per_side, max_distance=t5_reach, bidirectional=not causal
        ),
    }


def shared_entry_bound(task: Task | str, n: int, shared: Iterable[int]) -> float:
    """The best scored accuracy of one such layer on a shift task, exact.

    ``shared`` holds the distances ``i - j`` that read the entry of the task's
    distance (:func:`shared_distances`); the bound is the mean over the scored
    positions ``i = s .. n - 1`` of ``E[max_t c_t] / m_i``, with ``m_i`` the
    number of those distances whose key lies inside the sequence. The
    derivation: the module docstring.

    Shapes:
        shared: ``(d,)`` distances ``i - j``; output: a float in ``[0, 1]``
    """
    task = get_task(task) if isinstance(task, str) else task
    if not isinstance(task, Task):
        raise TypeError(f"task must be a Task or a task name, got "
                        f"{type(task).__name__}")
    if task.kind != "shift":
        raise ValueError(f"task must be a shift task, got kind {task.kind!r}")
    n = check_int("n", n, minimum=task.param + 1)
    shared = sorted({check_int("shared", d) for d in shared})
    if task.param not in shared or 0 in shared:
        raise ValueError(f"shared must hold the task's distance {task.param} and not "
                         f"0, got {shared}")
    ceiling = 1 << max(8, (n - 2).bit_length())  # >= n - 1: one table serves many n
    shares = _shares(ceiling, task.vocab_size)  # by number of keys
    scored = range(task.param, n)
    keys = [sum(1 for d in shared if 0 <= i - d < n) for i in scored]
    return sum(shares[m] for m in keys) / len(keys)


__all__ = ["EntryOf", "entry_functions", "shared_distances", "shared_entry_bound"]
