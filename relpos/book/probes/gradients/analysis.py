"""The probe's numbers from its runs: costs, matched levels, cosines, paired tests.

Per arm, every value per seed (seeds sorted, so two arms' lists pair by place):

- ``content_alone``, ``content_both``: the content loss on the test split
  (nats per byte) trained on the content objective alone, and with the
  position objective;
- ``cost``: ``content_both - content_alone``, with ``cost_test`` its paired test
  (``stats.paired_test``: mean, bootstrap interval, sign-flip p-value);
- ``aux``: the position objective's test loss where it was trained (the
  matched level), and ``aux_untrained`` where it was not;
- ``cosine``: per group of shared parameters, the mean cosine over the measured
  steps of the runs that train both objectives.

``differences``: ``cost(absolute) - cost(arm)`` for every other arm, paired by
seed. ``matched``: every arm's mean ``aux`` is at most ``AUX_TARGET``;
``bracketed``: every cell's tuned rate lies inside its grid.

Shapes:
    (no tensors: lists of floats, one per seed)
"""

from __future__ import annotations

import statistics
from typing import Any

from ...stats import describe, paired_test
from ...text.gradients import SHARED
from .design import AUX_TARGET, MIXES

ALONE, BOTH = MIXES
#: The arm whose cost the others are compared with (positions added to the input).
TIED = "absolute"


def per_seed(runs: list[dict[str, Any]], arm: str, mix: tuple[str, ...]) -> dict:
    """``{seed: record}`` of one cell's measured runs."""
    return {
        r["seed"]: r
        for r in runs
        if r["arm"] == arm and tuple(r["objectives"]) == tuple(mix)
    }


def arm_values(runs: list[dict[str, Any]], arm: str) -> dict[str, Any]:
    """One arm's per-seed values (the seeds it has both cells of, sorted).

    Shapes:
        output: ``{"seeds", "content_alone", "content_both", "cost", "aux",
        "aux_untrained", "cosine": {group: [...]}}``, each ``(seeds,)``
    """
    alone, both = per_seed(runs, arm, ALONE), per_seed(runs, arm, BOTH)
    seeds = sorted(set(alone) & set(both))
    if not seeds:
        raise ValueError(f"runs must hold both cells of arm {arm!r} for a seed")
    content_alone = [alone[s]["loss"]["content"] for s in seeds]
    content_both = [both[s]["loss"]["content"] for s in seeds]
    return {
        "seeds": seeds,
        "content_alone": content_alone,
        "content_both": content_both,
        "cost": [b - a for a, b in zip(content_alone, content_both)],
        "aux": [both[s]["loss"]["position"] for s in seeds],
        "aux_untrained": [alone[s]["loss"]["position"] for s in seeds],
        "cosine": {
            group: [statistics.fmean(both[s]["cosines"][group]) for s in seeds]
            for group in SHARED
        },
    }


def _described(values: list[float]) -> dict[str, Any]:
    return {"values": values, **describe(values)}


def summarize(result: dict[str, Any]) -> dict[str, Any]:
    """The summary of a probe result (its ``runs`` and ``tuning.cells``).

    Shapes:
        output: ``{"arms": {arm: {...}}, "differences": {name: paired test},
        "matched", "bracketed", "seeds", "aux_target"}``
    """
    runs = result["runs"]
    arms = list(result["grid"]["arm"])
    values = {arm: arm_values(runs, arm) for arm in arms}
    rows: dict[str, Any] = {}
    for arm, v in values.items():
        rates = {
            "+".join(c["objectives"]): c["chosen"]
            for c in result["tuning"]["cells"]
            if c["arm"] == arm
        }
        rows[arm] = {
            "seeds": v["seeds"],
            "rates": rates,
            "content_alone": _described(v["content_alone"]),
            "content_both": _described(v["content_both"]),
            "cost": _described(v["cost"]),
            "cost_test": paired_test(v["content_both"], v["content_alone"]),
            "aux": _described(v["aux"]),
            "aux_untrained": _described(v["aux_untrained"]),
            "cosine": {g: _described(c) for g, c in v["cosine"].items()},
        }
    differences = {}
    if TIED in values:
        for arm in arms:
            if arm == TIED:
                continue
            if values[arm]["seeds"] != values[TIED]["seeds"]:
                raise ValueError(
                    f"arms {TIED!r} and {arm!r} must hold the same seeds, got "
                    f"{values[TIED]['seeds']} and {values[arm]['seeds']}"
                )
            differences[f"{TIED}-{arm}"] = paired_test(
                values[TIED]["cost"], values[arm]["cost"]
            )
    return {
        "arms": rows,
        "differences": differences,
        "matched": all(rows[a]["aux"]["mean"] <= AUX_TARGET for a in arms),
        "bracketed": all(bool(c["bracketed"]) for c in result["tuning"]["cells"]),
        "seeds": values[arms[0]]["seeds"],
        "aux_target": AUX_TARGET,
    }


__all__ = ["ALONE", "BOTH", "TIED", "arm_values", "per_seed", "summarize"]
