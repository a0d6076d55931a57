"""Statistics over seeds: a confidence interval for a mean, a paired test for a difference.

A trained verdict rests on a few seeds, and length generalisation is known to
vary strongly with the seed (Zhou et al. 2024). Two tools from ``scipy.stats``
carry the book's evidence:

- :func:`bootstrap_interval`: a bootstrap confidence interval for the mean
  accuracy of one cell over its seeds (``scipy.stats.bootstrap``, percentile
  method; BCa needs a spread to estimate its correction and fails on cells
  where every seed scores alike, which saturated cells often do).
- :func:`paired_test`: the difference between two schemes trained on the same
  seeds (same data, same initial draws where the schemes share parameters),
  its bootstrap interval and an exact sign-flip permutation test
  (``scipy.stats.permutation_test``, ``permutation_type="samples"``): under the
  null hypothesis the two labels of each pair are exchangeable, so each seed's
  difference is as likely to carry either sign.

Both are seeded (``seed``), so a rerun on the same values gives the same
numbers, bit for bit. Intervals are two-sided at ``confidence`` (default 95%).

Shapes:
    values, a, b: 1-D sequences of floats, one per seed
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Sequence

import numpy as np

# scipy.stats is imported where it is used: it costs most of a second, and most
# processes that import the book's experiments never draw an interval.

#: The default confidence level of every interval the book shows.
CONFIDENCE = 0.95
#: Bootstrap resamples (scipy's default); intervals move in the third decimal
#: at most between seeds of the resampling for ten seeds.
RESAMPLES = 9999


def _values(name: str, values: Sequence[float], minimum: int) -> np.ndarray:
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a sequence of floats, got {values!r}") from None
    if array.ndim != 1 or array.size < minimum:
        raise ValueError(
            f"{name} must be a 1-D sequence of at least {minimum} floats, "
            f"got shape {array.shape}"
        )
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must hold finite floats, got {values!r}")
    return array


def _confidence(confidence: float) -> float:
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)):
        raise TypeError(f"confidence must be a float in (0, 1), got {confidence!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return float(confidence)


def bootstrap_interval(
    values: Sequence[float],
    *,
    confidence: float = CONFIDENCE,
    seed: int = 0,
    resamples: int = RESAMPLES,
) -> list[float]:
    """The bootstrap confidence interval ``[low, high]`` of the mean of ``values``.

    Percentile bootstrap over the seeds (resampled with replacement). When
    every value is equal the interval is that value on both sides (no
    resample can move it).

    Shapes:
        values: ``(seeds,)``, at least two
        output: two floats, ``low <= mean(values) <= high``
    """
    array = _values("values", values, 2)
    confidence = _confidence(confidence)
    if np.all(array == array[0]):
        return [float(array[0]), float(array[0])]
    from scipy import stats

    result = stats.bootstrap(
        (array,),
        np.mean,
        confidence_level=confidence,
        n_resamples=resamples,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    interval = result.confidence_interval
    return [float(interval.low), float(interval.high)]


def paired_test(
    a: Sequence[float],
    b: Sequence[float],
    *,
    confidence: float = CONFIDENCE,
    seed: int = 0,
    resamples: int = RESAMPLES,
) -> dict[str, Any]:
    """``a - b`` seed by seed: mean, bootstrap interval, exact sign-flip p-value.

    ``a[s]`` and ``b[s]`` must come from the same seed ``s``. The p-value is
    two-sided; with ``n`` pairs it is exact (all ``2**n`` sign patterns) up to
    ``n = 13`` and a ``resamples``-draw Monte Carlo estimate beyond. Pairs
    whose difference is zero carry no sign and count as ties.

    Returns ``{"mean": float, "interval": [low, high], "p_value": float,
    "n": int, "wins": int, "losses": int}`` (wins: seeds where ``a > b``).

    Shapes:
        a, b: ``(seeds,)`` each, at least two, equal lengths
        output: a dict of floats and ints
    """
    first = _values("a", a, 2)
    second = _values("b", b, 2)
    if first.shape != second.shape:
        raise ValueError(
            f"a and b must hold one value per seed each, got {first.size} and "
            f"{second.size}"
        )
    difference = first - second  # (seeds,)
    if np.all(difference == 0):
        p_value = 1.0
    else:
        from scipy import stats

        test = stats.permutation_test(
            (first, second),
            lambda x, y, axis: np.mean(x - y, axis=axis),
            permutation_type="samples",
            vectorized=True,
            n_resamples=resamples,
            alternative="two-sided",
            rng=np.random.default_rng(seed),
        )
        p_value = float(min(1.0, test.pvalue))
    return {
        "mean": float(difference.mean()),
        "interval": bootstrap_interval(
            difference, confidence=confidence, seed=seed, resamples=resamples
        ),
        "p_value": p_value,
        "n": int(difference.size),
        "wins": int((difference > 0).sum()),
        "losses": int((difference < 0).sum()),
    }


def describe(values: Sequence[float], *, seed: int = 0) -> dict[str, Any]:
    """Mean, spread and interval of one cell's seeds (what a summary row shows).

    ``interval`` is :func:`bootstrap_interval` with two seeds or more, else
    ``None``.

    Shapes:
        values: ``(seeds,)``, at least one
        output: ``{"mean", "std", "min", "max", "n", "interval"}``
    """
    array = _values("values", values, 1)
    return {
        "mean": float(array.mean()),
        "std": float(array.std(ddof=1)) if array.size > 1 else 0.0,
        "min": float(array.min()),
        "max": float(array.max()),
        "n": int(array.size),
        "interval": bootstrap_interval(array, seed=seed) if array.size > 1 else None,
    }


def excludes(interval: Sequence[float], value: float) -> bool:
    """Whether ``value`` lies outside the closed ``interval`` ``[low, high]``."""
    low, high = (float(x) for x in interval)
    if not (math.isfinite(low) and math.isfinite(high) and low <= high):
        raise ValueError(f"interval must be [low, high] with low <= high, got {interval}")
    return value < low or value > high


def clustered_interval(
    differences: Sequence[Sequence[float]],
    counts: Sequence[float],
    *,
    confidence: float = CONFIDENCE,
    seed: int = 0,
    resamples: int = RESAMPLES,
) -> list[float]:
    """The interval of a mean difference per item, resampling clusters and seeds.

    ``differences[s][m]``: seed ``s``'s summed difference over the items of
    cluster ``m`` (a document's bytes: the loss sums of two readings, one
    minus the other), ``counts[m]`` the items of cluster ``m``. The statistic is
    the mean over seeds of ``sum_m differences[s][m] / sum_m counts[m]``. Each
    resample draws the clusters with replacement and, independently, the seeds
    (a two-level percentile bootstrap), so the interval is over documents, not
    over windows or bytes, which are not independent.

    Shapes:
        differences: ``(seeds, clusters)``; counts: ``(clusters,)``
        output: two floats ``[low, high]``
    """
    try:
        array = np.asarray(differences, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(
            f"differences must be a (seeds, clusters) array of floats, got "
            f"{type(differences).__name__}"
        ) from None
    if array.ndim != 2 or array.shape[0] < 1 or array.shape[1] < 1:
        raise ValueError(
            "differences must have shape (seeds, clusters) with at least 1 seed "
            f"and 1 cluster, got {array.shape}"
        )
    sizes = _values("counts", counts, 1)
    if sizes.size != array.shape[1] or np.any(sizes < 0) or sizes.sum() <= 0:
        raise ValueError(
            f"counts must hold {array.shape[1]} non-negative numbers with a positive "
            f"sum, got {counts!r}"
        )
    if not np.all(np.isfinite(array)):
        raise ValueError("differences must hold finite floats")
    confidence = _confidence(confidence)
    rng = np.random.default_rng(seed)
    seeds, clusters = array.shape
    picked = rng.integers(clusters, size=(resamples, clusters))  # (r, m)
    weights = np.stack([np.bincount(p, minlength=clusters) for p in picked])  # (r, m)
    per_seed = (weights @ array.T) / np.maximum(weights @ sizes, 1e-12)[:, None]
    chosen = rng.integers(seeds, size=(resamples, seeds))  # (r, s)
    stat = np.take_along_axis(per_seed, chosen, axis=1).mean(1)  # (r,)
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(stat, [tail, 100 - tail])
    return [float(low), float(high)]



def clustered_difference(
    first: Sequence[float],
    second: Sequence[float],
    differences: Sequence[Sequence[float]],
    counts: Sequence[float],
) -> dict[str, Any]:
    """Two readings of the same seeds compared: ``first - second`` over the seeds.

    ``first``, ``second``: each seed's value of the two readings;
    ``differences`` and ``counts``: :func:`clustered_interval`'s (each seed's
    difference summed per cluster, the items per cluster). Returns ``mean`` and
    ``per_seed`` (the differences), ``interval`` (over clusters and seeds) and
    the paired test's ``p_value`` and ``wins`` over the seeds (None with one).

    Shapes:
        first, second: ``(seeds,)``; differences: ``(seeds, clusters)``
    """
    per_seed = [float(x - y) for x, y in zip(first, second)]
    paired = paired_test(first, second) if len(per_seed) > 1 else None
    return {
        "mean": statistics.fmean(per_seed),
        "per_seed": per_seed,
        "interval": clustered_interval(differences, counts),
        "p_value": None if paired is None else paired["p_value"],
        "wins": None if paired is None else paired["wins"],
    }


__all__ = [
    "clustered_difference",
    "CONFIDENCE",
    "bootstrap_interval",
    "clustered_interval",
    "describe",
    "excludes",
    "paired_test",
]
