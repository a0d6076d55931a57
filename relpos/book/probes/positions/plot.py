"""The probe's figure: accuracy by position, the transfer gaps, the data curve.

Three panels from the probe's JSON (``run.run_probe``): the mean accuracy at
every position of the first-half-supervised runs, one line per arm, with the
supervised half shaded; each arm's transfer gap, one dot per seed and the 95%
bootstrap interval of the mean; and the accuracy at ``L`` against the number
of training sequences (every position supervised), one line per scheme
through the means.

Shapes:
    per-position lines: ``(L,)`` per arm
"""

from __future__ import annotations

import statistics
from typing import Any, Mapping

import numpy as np
from matplotlib.figure import Figure

from ...stats import bootstrap_interval
from ...experiments.sweep import load_sweep, summary_cells


def _first(result: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for run in result["transfer"]["runs"]:
        if run["supervision"] == "first":
            found.setdefault(run["scheme"], []).append(run)
    if not found:
        raise ValueError("result must hold transfer runs supervised in the first half")
    return found


def probe_figure(result: Mapping[str, Any]) -> Figure:
    """The probe's three panels (module docstring); every axis labelled.

    Shapes:
        output: a Figure of 3 axes
    """
    if not isinstance(result, Mapping) or "transfer" not in result:
        raise TypeError("result must be the probe's JSON dict (with 'transfer')")
    runs = _first(result)
    supervised = result["transfer"]["supervised"]
    fig = Figure(figsize=(13, 4))
    by_position, gaps, data = fig.subplots(1, 3)
    for index, (scheme, mine) in enumerate(runs.items()):
        rows = np.array(
            [[np.nan if v is None else v for v in r["per_position"]] for r in mine]
        )  # (seeds, L)
        places = np.flatnonzero(~np.isnan(rows).any(0))  # the scored positions
        by_position.plot(places, rows[:, places].mean(0), label=scheme,
                         color=f"C{index % 10}", linestyle="-" if index < 10 else "--")
        values = [r["gap"] for r in mine]
        gaps.scatter([index] * len(values), values, s=8, color="C0")
        if len(values) > 1:
            gaps.plot([index, index], bootstrap_interval(values), color="C1",
                      alpha=0.5, linewidth=5)
        gaps.plot([index - 0.3, index + 0.3], [statistics.fmean(values)] * 2,
                  color="C1")
    by_position.axvspan(-0.5, supervised - 0.5, color="grey", alpha=0.15,
                        label="supervised")
    by_position.set_xlabel("position i (query)")
    by_position.set_ylabel("accuracy (mean over seeds)")
    by_position.set_title("the token 3 back, supervised left of the shade's edge",
                          fontsize=9)
    by_position.legend(fontsize=6, ncol=2)
    gaps.axhline(0, color="grey", linewidth=0.7)
    gaps.set_xticks(range(len(runs)), list(runs), rotation=60, fontsize=7)
    gaps.set_xlabel("scheme")
    gaps.set_ylabel("gap: first-half minus second-half accuracy")
    gaps.set_title("transfer gap: seeds, mean, 95% interval", fontsize=9)
    if "data_efficiency" in result:
        _data_panel(data, result["data_efficiency"])
    else:
        data.set_axis_off()
    fig.tight_layout()
    return fig


def _data_panel(ax: Any, sweep: Mapping[str, Any]) -> None:
    sweep = load_sweep(sweep, name="data_efficiency")
    cells = summary_cells(sweep)
    grid = sweep["grid"]
    setting, task = grid["setting"][0], grid["task"][0]
    length = sweep["config"]["train_length"]
    sizes = sorted(grid["train_size"])
    for index, scheme in enumerate(grid["scheme"]):
        means = [cells[setting, task, scheme, s, length]["mean"] for s in sizes]
        ax.plot(sizes, means, marker="o", markersize=3, label=scheme,
                color=f"C{index % 10}", linestyle="-" if index < 10 else "--")
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [str(s) for s in sizes])
    ax.set_xlabel("training sequences (every position supervised)")
    ax.set_ylabel(f"accuracy at n = {length} (mean over seeds)")
    ax.set_title("data efficiency", fontsize=9)
    ax.legend(fontsize=6, ncol=2)


__all__ = ["probe_figure"]
