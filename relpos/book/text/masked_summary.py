"""The masked-baselines study's summary and its rule: which arms left the plateau.

A cell is an (arm, learning rate). The plateau is ``none`` at :data:`RATE`, run
for run by seed; an arm's cell has *left* it when its validation loss is below
``none``'s of the same seed by more than :data:`MARGIN` at every seed it ran,
and *uses order* when scrambling its windows costs it more than
:data:`MARGIN` on average. The prediction (``masked_baselines.PREDICTION``)
holds when no absolute or sinusoidal cell left the plateau or uses order and
the larger sinusoids, TUPE and DeBERTa all left it; it fails otherwise
(untested when one of those five never ran). Diagnostic, not a ledger
verdict: two seeds, one rate per arm (absolute: two more rates at one seed).

Shapes:
    (no tensors: records and summaries are JSON-ready dicts)
"""

from __future__ import annotations

import statistics
from typing import Any

from .masked_baselines import MARGIN, RATE

#: The arms the prediction says stay on the plateau, and those it says leave it.
STAY = ("absolute", "sinusoidal")
LEAVE = ("sinusoidal-x10", "tupe", "deberta")


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per cell: seeds, losses, the mean curve, left / order; and the verdict.

    ``runs``: records of ``masked_baselines.train_run`` (``arm``, ``seed``,
    ``learning_rate``, ``curve``, ``valid_bpb``, ``scrambled_bpb``); ``none``
    must have run at :data:`RATE`. A diverged run (``None`` loss) counts as not
    having left the plateau and as not using order.
    """
    plateau = {
        r["seed"]: r["valid_bpb"]
        for r in runs
        if r["arm"] == "none" and r["learning_rate"] == RATE
    }
    if not plateau or None in plateau.values():
        raise ValueError("runs must hold finite runs of 'none' at the study's rate")
    cells: dict[tuple[str, float], list[dict[str, Any]]] = {}
    for r in runs:
        cells.setdefault((r["arm"], r["learning_rate"]), []).append(r)
    summary = [
        cell_summary(arm, rate, mine, plateau) for (arm, rate), mine in cells.items()
    ]
    return {"cells": summary, "verdict": verdict(summary)}


def cell_summary(
    arm: str, rate: float, runs: list[dict[str, Any]], plateau: dict[int, float]
) -> dict[str, Any]:
    """One cell: its values by seed, the gap below ``none`` and the two flags."""
    runs = sorted(runs, key=lambda r: r["seed"])
    valid = [r["valid_bpb"] for r in runs]
    scrambled = [r["scrambled_bpb"] for r in runs]
    finite = None not in valid and None not in scrambled
    missing = [r["seed"] for r in runs if r["seed"] not in plateau]
    if missing:
        raise ValueError(f"runs of 'none' must cover seeds {missing} of {arm!r}")
    gaps = [plateau[r["seed"]] - v for r, v in zip(runs, valid)] if finite else []
    costs = [s - v for s, v in zip(scrambled, valid)] if finite else []
    curves = [r["curve"] for r in runs]
    return {
        "arm": arm,
        "learning_rate": rate,
        "seeds": [r["seed"] for r in runs],
        "valid_bpb": valid,
        "scrambled_bpb": scrambled,
        "below_none": gaps,
        "scramble_cost": costs,
        "left_plateau": bool(gaps) and min(gaps) > MARGIN,
        "uses_order": bool(costs) and statistics.fmean(costs) > MARGIN,
        "curve": [statistics.fmean(c) for c in zip(*curves)] if finite else None,
    }


def verdict(cells: list[dict[str, Any]]) -> str:
    """``"holds"`` or ``"fails"``: the prediction on the cells (see the module);
    ``"untested"`` when an arm the rule reads ran in no cell.
    """
    if not {*STAY, *LEAVE} <= {c["arm"] for c in cells}:
        return "untested"
    stays = not any(
        c["left_plateau"] or c["uses_order"] for c in cells if c["arm"] in STAY
    )
    leave = all(c["left_plateau"] for c in cells if c["arm"] in LEAVE)
    return "holds" if stays and leave else "fails"


__all__ = ["LEAVE", "STAY", "cell_summary", "summarize", "verdict"]
