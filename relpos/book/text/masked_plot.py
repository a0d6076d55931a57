"""The masked-baselines study's figure: the curves, the rates, the scramble test.

Three panels:

1. training loss (bits per masked byte, mean of each block of steps, mean
   over seeds) against the step, one line per arm at the study's rate;
2. absolute's validation loss at every rate (seed 0), ``none``'s level and
   ``MARGIN`` below it drawn;
3. each arm's validation loss, plain and with its windows scrambled, one
   point per seed.

Shapes:
    curves: ``steps // curve_every`` points per arm
"""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure


def masked_figure(result: dict[str, Any]) -> Figure:
    """The figure of a study result (``masked_cli.run_study``'s JSON).

    Shapes:
        axes: three panels in one row
    """
    summary = result.get("summary")
    if not isinstance(summary, dict) or "cells" not in summary:
        raise ValueError("result must be the study's JSON, with its summary")
    design = result["design"]
    rate, margin = design["rate"], design["margin"]
    every = design["curve_every"]
    main = [c for c in summary["cells"] if c["learning_rate"] == rate]
    plateau = next(c for c in main if c["arm"] == "none")
    level = sum(plateau["valid_bpb"]) / len(plateau["valid_bpb"])
    fig = Figure(figsize=(12, 3.6), layout="constrained")
    curve_ax, rate_ax, order_ax = fig.subplots(1, 3)
    for k, cell in enumerate(main):
        if cell["curve"] is not None:
            steps = [every * (i + 1) for i in range(len(cell["curve"]))]
            curve_ax.plot(steps, cell["curve"], ".-", color=f"C{k}", label=cell["arm"])
    curve_ax.set_xlabel("training step")
    curve_ax.set_ylabel("training loss (bits per masked byte)")
    curve_ax.set_title(f"masked LM, L = 64, rate {rate:g}", fontsize=9)
    curve_ax.legend(fontsize=7)
    grid = sorted(
        (c for c in summary["cells"] if c["arm"] == "absolute"),
        key=lambda c: c["learning_rate"],
    )
    rate_ax.plot(
        [c["learning_rate"] for c in grid],
        [c["valid_bpb"][0] for c in grid],
        "o-",
        color="C1",
        label="absolute (seed 0)",
    )
    rate_ax.axhline(level, color="grey", lw=0.8, label="none")
    rate_ax.axhline(level - margin, color="grey", lw=0.8, ls="--",
                    label=f"none - {margin:g}")
    rate_ax.set_xscale("log")
    rate_ax.set_xlabel("learning rate")
    rate_ax.set_ylabel("validation loss (bits per masked byte)")
    rate_ax.set_title("absolute across rates", fontsize=9)
    rate_ax.legend(fontsize=7)
    for k, cell in enumerate(main):
        for value, marker in ((cell["valid_bpb"], "o"), (cell["scrambled_bpb"], "x")):
            shown = [v for v in value if v is not None]
            order_ax.plot([k] * len(shown), shown, marker, color=f"C{k}", ms=5)
    order_ax.plot([], [], "o", color="grey", label="windows in order")
    order_ax.plot([], [], "x", color="grey", label="windows scrambled")
    order_ax.set_xticks(
        range(len(main)), [c["arm"] for c in main], rotation=30, ha="right"
    )
    order_ax.set_xlabel("arm (one point per seed)")
    order_ax.set_ylabel("validation loss (bits per masked byte)")
    order_ax.set_title("does the arm read the order?", fontsize=9)
    order_ax.legend(fontsize=7)
    for ax in (curve_ax, rate_ax, order_ax):
        ax.tick_params(labelsize=8)
    return fig


__all__ = ["masked_figure"]
