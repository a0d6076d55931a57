"""Schemes set side by side on the protocol: means, differences, and who is best.

Chapter 11's text sweeps read every trained model on the whole test split and
keep its loss summed per module of the standard library. From those sums this
module gives, at each window length ``W``:

- each scheme's mean over its seeds, in bits per byte, with an interval that
  resamples the modules and the seeds (``stats.clustered_interval``);
- each scheme minus a reference scheme (DeBERTa's table), seed ``s`` against
  seed ``s`` (the same seed draws the same batches), with the interval over
  modules and seeds and the paired test over seeds
  (``stats.clustered_difference``);
- who is *best*: the scheme of the lowest mean and every scheme whose difference
  from it is not resolved (the interval holds zero or the paired test gives
  ``p >= 0.05``). A sentence may call one scheme best only where this set has
  one member.

Two layouts of a run are read: the length probe's (``module_sums[reading][W]``,
``module_counts[reading][W]``, losses under ``run[reading][W]``; reading
``"nonoverlapping"``) and the far-keys intervention's (``module_sums["full"][W]``,
``module_counts[W]``, losses under ``run["full"][W]``).

Shapes:
    a run's module sums at ``W``: ``(modules,)``; stacked over seeds:
    ``(seeds, modules)``
"""

from __future__ import annotations

import math
import statistics
from typing import Any

import numpy as np

from ..stats import clustered_difference, clustered_interval

#: The layouts: where a run keeps its per-module sums, counts and loss at ``W``.
LAYOUTS = ("length", "far_keys")
#: The p-value under which a paired difference counts as resolved.
ALPHA = 0.05


def _check_layout(layout: str) -> str:
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    return layout


def _sums(run: dict[str, Any], width: str, layout: str) -> np.ndarray:
    reading = "nonoverlapping" if layout == "length" else "full"
    return np.asarray(run["module_sums"][reading][width], dtype=float)  # (modules,)


def _counts(run: dict[str, Any], width: str, layout: str) -> np.ndarray:
    counts = run["module_counts"]
    found = counts["nonoverlapping"][width] if layout == "length" else counts[width]
    return np.asarray(found, dtype=float)  # (modules,)


def _loss(run: dict[str, Any], width: str, layout: str) -> float:
    reading = "nonoverlapping" if layout == "length" else "full"
    return float(run[reading][width]["loss"])


def _bits(value: float) -> float:
    return value / math.log(2)


def _by_scheme(runs: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        if "module_sums" not in run:
            raise ValueError(
                "runs must keep their per-module sums (the runs folder's records), "
                f"got a run of {run.get('scheme')!r} without module_sums"
            )
        groups.setdefault(run["scheme"], []).append(run)
    return {s: sorted(g, key=lambda r: r["seed"]) for s, g in groups.items()}


def scheme_mean(
    runs: list[dict[str, Any]], width: int | str, layout: str = "length"
) -> dict[str, Any]:
    """One scheme's seeds at ``width``: mean, per-seed and interval, bits per byte.

    Shapes:
        runs: one run per seed of one scheme
    """
    layout, width = _check_layout(layout), str(width)
    counts = _counts(runs[0], width, layout)
    sums = np.stack([_sums(r, width, layout) for r in runs])  # (seeds, modules)
    per_seed = [_bits(_loss(r, width, layout)) for r in runs]
    return {
        "mean": statistics.fmean(per_seed),
        "per_seed": per_seed,
        "interval": [_bits(x) for x in clustered_interval(sums, counts)],
    }


def scheme_difference(
    first: list[dict[str, Any]], second: list[dict[str, Any]], width: int | str,
    layout: str = "length",
) -> dict[str, Any]:
    """``first`` minus ``second`` at ``width`` (bits per byte), seed against seed.

    Both lists hold the same seeds; the interval resamples modules and seeds, the
    paired test is over the seeds (``stats.clustered_difference``).
    """
    layout, width = _check_layout(layout), str(width)
    seeds = [r["seed"] for r in first]
    if seeds != [r["seed"] for r in second]:
        raise ValueError(
            f"first and second must hold the same seeds, got {seeds} and "
            f"{[r['seed'] for r in second]}"
        )
    counts = _counts(first[0], width, layout)
    if not np.array_equal(counts, _counts(second[0], width, layout)):
        raise ValueError("first and second must be read on the same bytes")
    per_module = np.stack([
        _sums(a, width, layout) - _sums(b, width, layout)
        for a, b in zip(first, second)
    ])  # (seeds, modules)
    return clustered_difference(
        [_bits(_loss(r, width, layout)) for r in first],
        [_bits(_loss(r, width, layout)) for r in second],
        per_module / math.log(2), counts,
    )


def resolved(difference: dict[str, Any]) -> bool:
    """Whether a difference is told apart from zero: its interval excludes zero
    and the paired test gives ``p < ALPHA``."""
    low, high = difference["interval"]
    p = difference["p_value"]
    return (low > 0 or high < 0) and p is not None and p < ALPHA


def compare(
    runs: list[dict[str, Any]], reference: str = "deberta", layout: str = "length"
) -> list[dict[str, Any]]:
    """Per ``W``: every scheme's mean, its difference from ``reference``, the best.

    Returns one row per width: ``length``, ``schemes`` (per scheme
    :func:`scheme_mean`), ``minus_reference`` (per other scheme, scheme minus
    ``reference``: :func:`scheme_difference`), ``lowest`` (the scheme of the
    lowest mean) and ``best`` (the lowest and every scheme not resolved from it,
    in order of their means).
    """
    layout = _check_layout(layout)
    groups = _by_scheme(runs)
    if reference not in groups:
        raise ValueError(f"reference must be one of {sorted(groups)}, got {reference!r}")
    widths = list(groups[reference][0]["module_sums"][
        "nonoverlapping" if layout == "length" else "full"])
    rows = []
    for width in widths:
        means = {s: scheme_mean(g, width, layout) for s, g in groups.items()}
        order = sorted(means, key=lambda s: means[s]["mean"])
        lowest = order[0]
        best = [lowest] + [
            s for s in order[1:]
            if not resolved(scheme_difference(groups[s], groups[lowest], width, layout))
        ]
        rows.append({
            "length": int(width),
            "schemes": means,
            "minus_reference": {
                s: scheme_difference(g, groups[reference], width, layout)
                for s, g in groups.items() if s != reference
            },
            "reference": reference,
            "lowest": lowest,
            "best": best,
        })
    return rows


def table(rows: list[dict[str, Any]], lengths: list[int] | None = None) -> str:
    """:func:`compare`'s rows at ``lengths`` (None: the first and the last), one
    line per scheme in order of its mean at the last: the mean in bits per byte,
    its difference from the reference with the interval, ``*`` where best.
    """
    by_length = {row["length"]: row for row in rows}
    lengths = [rows[0]["length"], rows[-1]["length"]] if lengths is None else lengths
    missing = [n for n in lengths if n not in by_length]
    if not lengths or missing:
        raise ValueError(f"lengths must be drawn from {sorted(by_length)}, got {lengths}")
    last = by_length[lengths[-1]]
    reference = last["reference"]
    order = sorted(last["schemes"], key=lambda s: last["schemes"][s]["mean"])
    head = f"{'scheme':<16}" + "".join(
        f"{'W = ' + str(n):>8}  {'minus ' + reference:<24}" for n in lengths)
    lines = [head.rstrip()]
    for scheme in order:
        line = f"{scheme:<16}"
        for n in lengths:
            row = by_length[n]
            mark = "*" if scheme in row["best"] else " "
            line += f"{row['schemes'][scheme]['mean']:>7.3f}{mark}  "
            if scheme == reference:
                line += f"{'':<24}"
                continue
            diff = row["minus_reference"][scheme]
            low, high = diff["interval"]
            line += f"{diff['mean']:+.3f} [{low:+.3f}, {high:+.3f}]".ljust(24)
        lines.append(line.rstrip())
    return "\n".join(lines)


__all__ = [
    "ALPHA",
    "LAYOUTS",
    "compare",
    "table",
    "resolved",
    "scheme_difference",
    "scheme_mean",
]
