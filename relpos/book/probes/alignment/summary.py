"""The probe's numbers: accuracy by distance and offset, and paired comparisons.

An item is right in a run when its margin is positive (``run.item_margins``).
Per arm, from the runs' margins:

- ``cells``: accuracy per (relation, distance, offset) over the seeds, with its
  mean, spread and 95% bootstrap interval (``stats.describe``) and the
  per-seed ``values``; ``by_distance`` (offsets pooled) and ``by_offset``
  (relations and distances pooled) the same;
- ``overall``: accuracy over all items, per seed;
- ``offset_spread``: per seed, the largest minus the smallest accuracy of the
  offsets (each pooled over relations and distances: 400 items each with the
  default items); a scheme blind to the offset has only the items' noise here.

``comparisons``: every arm against the main arm (``design.MAIN_ARM``), paired
by seed on overall accuracy (``stats.paired_test``) and paired by item on the
share of seeds that get the item right (the same test over items).
:func:`per_item` is the table written beside the JSON: per arm, each item's
share of seeds right and mean margin.

Shapes:
    margins: ``(items,)`` per run; values: ``(seeds,)``
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any, Sequence

from ...stats import describe, paired_test
from .design import MAIN_ARM
from .run import decode_margins


def correct(margins: Sequence[float | None]) -> list[bool]:
    """Whether each item is right: a positive margin (``None``, diverged, and a
    margin stored as 0.000, under 0.0005 nats, are wrong)."""
    return [m is not None and m > 0 for m in margins]


def _by_seed(runs: list[dict[str, Any]], arm: str) -> list[dict[str, Any]]:
    return sorted((r for r in runs if r["arm"] == arm), key=lambda r: r["seed"])


def accuracy(
    items: Sequence[dict[str, Any]], right: Sequence[bool], key: tuple[str, ...]
) -> dict[tuple, float]:
    """Accuracy per value of the item fields ``key`` (``()``: over all items)."""
    if len(items) != len(right):
        raise ValueError(f"right must hold one bool per item ({len(items)}), "
                         f"got {len(right)}")
    groups: dict[tuple, list[bool]] = defaultdict(list)
    for item, ok in zip(items, right):
        groups[tuple(item[k] for k in key)].append(ok)
    return {group: sum(v) / len(v) for group, v in sorted(groups.items())}


def offset_spread(items: Sequence[dict[str, Any]], right: Sequence[bool]) -> float:
    """Largest minus smallest accuracy over the offsets (all else pooled)."""
    by_offset = accuracy(items, right, ("offset",)).values()
    return max(by_offset) - min(by_offset)


def _rows(arm: str, fields: tuple[str, ...], per_seed: list[dict[tuple, float]]
          ) -> list[dict[str, Any]]:
    rows = []
    for group in per_seed[0]:
        values = [seed[group] for seed in per_seed]
        rows.append({"arm": arm, **dict(zip(fields, group)), **describe(values),
                     "values": values})
    return rows


def summarize(result: dict[str, Any], items: Sequence[dict[str, Any]]
              ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``summary`` and ``comparisons`` of a sweep whose runs hold margins."""
    runs, arms = result["runs"], result["grid"]["arm"]
    right = {arm: [correct(decode_margins(r["margins"])) for r in _by_seed(runs, arm)]
             for arm in arms}
    summary: dict[str, Any] = {"cells": [], "by_distance": [], "by_offset": [],
                               "overall": {}, "offset_spread": {}}
    parts = {
        "cells": ("relation", "distance", "offset"),
        "by_distance": ("relation", "distance"),
        "by_offset": ("offset",),
    }
    for arm in arms:
        for name, fields in parts.items():
            per_seed = [accuracy(items, r, fields) for r in right[arm]]
            summary[name] += _rows(arm, fields, per_seed)
        overall = [accuracy(items, r, ())[()] for r in right[arm]]
        spread = [offset_spread(items, r) for r in right[arm]]
        summary["overall"][arm] = {**describe(overall), "values": overall}
        summary["offset_spread"][arm] = {**describe(spread), "values": spread}
    comparisons = []
    if MAIN_ARM in arms:
        main_items = _shares(right[MAIN_ARM])
        for arm in arms:
            if arm == MAIN_ARM:
                continue
            seeds = paired_test(summary["overall"][MAIN_ARM]["values"],
                                summary["overall"][arm]["values"])
            by_item = paired_test(main_items, _shares(right[arm]))
            comparisons.append({"arm": MAIN_ARM, "against": arm, "seeds": seeds,
                                "items": by_item})
    return summary, comparisons


def _shares(right: list[list[bool]]) -> list[float]:
    """Per item, the share of seeds that get it right."""
    return [statistics.fmean(seeds) for seeds in zip(*right)]


def per_item(result: dict[str, Any], items: Sequence[dict[str, Any]]
             ) -> dict[str, Any]:
    """Per arm: each item's share of seeds right and mean margin (nats)."""
    table: dict[str, Any] = {"items": [item["id"] for item in items], "arms": {}}
    for arm in result["grid"]["arm"]:
        runs = _by_seed(result["runs"], arm)
        per_run = [decode_margins(r["margins"]) for r in runs]  # (seeds, items)
        margins = list(zip(*per_run))  # (items, seeds)
        table["arms"][arm] = {
            "seeds": [r["seed"] for r in runs],
            "right": [round(s, 3) for s in _shares([correct(m) for m in per_run])],
            "margin": [
                round(statistics.fmean(m), 3) if None not in m else None
                for m in margins
            ],
        }
    return table


__all__ = ["accuracy", "correct", "offset_spread", "per_item", "summarize"]
