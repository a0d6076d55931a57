"""The probe's figure: the verdict's costs, the matched levels, the mechanism's cosines.

Three panels, one column of points per arm (each point a seed, the mean as a
tick with its 95% bootstrap interval as a pale bar):

1. the content cost (content loss with the position objective minus without,
   nats per byte), zero drawn;
2. the position objective's test loss where it was trained (the matched
   level), ``AUX_TARGET`` drawn;
3. the gradient cosine of the two objectives on each group of shared
   parameters (the token embedding, the content query and key projections),
   zero drawn.

Shapes:
    per panel: one column of seeds per arm (panel 3: per arm and group)
"""

from __future__ import annotations

from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure


def _column(ax: Axes, x: float, cell: dict[str, Any], colour: str) -> None:
    """One column: the seeds as points, the mean as a tick, the interval as a bar."""
    values = cell["values"]
    ax.plot([x] * len(values), values, "o", ms=3, alpha=0.6, color=colour)
    low, high = cell["interval"] if cell["interval"] else (cell["mean"],) * 2
    ax.plot([x, x], [low, high], color=colour, alpha=0.3, lw=7, solid_capstyle="butt")
    ax.plot([x - 0.2, x + 0.2], [cell["mean"]] * 2, color=colour, lw=2)


def probe_figure(result: dict[str, Any]) -> Figure:
    """The figure of a probe result (``sweep.run_probe``'s JSON).

    Shapes:
        axes: three panels in one row
    """
    summary = result.get("summary")
    if not isinstance(summary, dict) or "arms" not in summary:
        raise ValueError("result must be the probe's JSON, with its summary")
    arms = list(summary["arms"])
    rows = summary["arms"]
    fig = Figure(figsize=(11, 3.4), layout="constrained")
    cost_ax, aux_ax, cos_ax = fig.subplots(1, 3)
    for k, arm in enumerate(arms):
        _column(cost_ax, k, rows[arm]["cost"], f"C{k}")
        _column(aux_ax, k, rows[arm]["aux"], f"C{k}")
    cost_ax.axhline(0.0, color="grey", lw=0.8)
    cost_ax.set_ylabel("content cost (nats per byte)")
    cost_ax.set_title(
        "next byte: with the position\nobjective minus without", fontsize=9
    )
    aux_ax.axhline(summary["aux_target"], color="grey", lw=0.8, ls="--")
    aux_ax.set_ylabel("position objective, test loss (nats)")
    aux_ax.set_title(f"matched level (target {summary['aux_target']:g})", fontsize=9)
    groups = list(rows[arms[0]]["cosine"])
    width = 0.8 / len(groups)
    for k, arm in enumerate(arms):
        for g, group in enumerate(groups):
            x = k - 0.4 + width * (g + 0.5)
            _column(cos_ax, x, rows[arm]["cosine"][group], f"C{len(arms) + g}")
    for g, group in enumerate(groups):
        cos_ax.plot([], [], "o", color=f"C{len(arms) + g}", label=group)
    cos_ax.axhline(0.0, color="grey", lw=0.8)
    cos_ax.legend(fontsize=7, loc="best")
    cos_ax.set_ylabel("gradient cosine (mean over training)")
    cos_ax.set_title("mechanism: the two objectives'\ngradients on shared parameters",
                     fontsize=9)
    for ax in (cost_ax, aux_ax, cos_ax):
        ax.set_xticks(range(len(arms)), arms)
        ax.set_xlabel("arm (points: seeds; bar: 95% interval)")
        ax.tick_params(labelsize=8)
    return fig


__all__ = ["probe_figure"]
