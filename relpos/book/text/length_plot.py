"""The length probe's figure: does a scheme use the context beyond ``L``?

Three panels over the window ``W`` (in multiples of ``L``), one line per
scheme: the cut minus the full loss (nats per byte; above zero, the model
uses keys ``L`` or more back) with its interval over modules and seeds; the
full loss on sliding windows; and the attention mass on keys ``L`` or more
back (mean over layers).

Shapes:
    per panel, per scheme: one line of ``len(eval_lengths)`` points (the middle
    panel) or of the lengths beyond ``L`` (the other two)
"""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure

from ..plot._style import MARKERS


def length_figure(result: dict[str, Any]) -> Figure:
    """The three panels of a length probe's JSON (``length_probe.run_length_probe``).

    Shapes:
        result["contrasts"]: one row per (scheme, W)
    """
    rows = result.get("contrasts") if isinstance(result, dict) else None
    if not rows:
        raise ValueError("result must be a length probe's JSON with its contrasts")
    L = result["config"]["train_length"]
    schemes = list(dict.fromkeys(r["scheme"] for r in rows))
    figure = Figure(figsize=(10, 3.6), layout="constrained")
    cut_ax, loss_ax, mass_ax = figure.subplots(1, 3)
    for k, scheme in enumerate(schemes):
        style = {"color": f"C{k % 10}", "marker": MARKERS[k % len(MARKERS)]}
        mine = sorted(
            (r for r in rows if r["scheme"] == scheme), key=lambda r: r["length"]
        )
        far = [r for r in mine if r["length"] > L]
        x_far = [r["length"] / L for r in far]
        middle = [r["cut_minus_full"]["mean"] for r in far]
        low = [m - r["cut_minus_full"]["interval"][0] for m, r in zip(middle, far)]
        high = [r["cut_minus_full"]["interval"][1] - m for m, r in zip(middle, far)]
        cut_ax.errorbar(
            x_far, middle, yerr=[low, high], label=scheme, capsize=3, **style
        )
        x = [r["length"] / L for r in mine]
        loss_ax.plot(x, [r["sliding"] for r in mine], label=scheme, **style)
        masses = [r["attention_beyond"] for r in far]
        if far and all(m is not None for m in masses):
            mean = [sum(m) / len(m) for m in masses]
            mass_ax.plot(x_far, mean, label=scheme, **style)
    cut_ax.axhline(0.0, color="black", linewidth=0.8)
    cut_ax.set(
        xscale="log", xlabel="window W / L",
        ylabel="cut minus full (nats per byte)",
        title="uses context beyond L? (> 0: yes)",
    )
    loss_ax.set(
        xscale="log", xlabel="window W / L",
        ylabel="loss, sliding windows (nats per byte)", title="full context",
    )
    mass_ax.set(
        xscale="log", xlabel="window W / L",
        ylabel="share of attention L or more back", title="where attention goes",
    )
    for ax in (cut_ax, loss_ax, mass_ax):
        ax.set_xticks([r["length"] / L for r in rows if r["scheme"] == schemes[0]])
        ax.get_xaxis().set_major_formatter("{x:g}")
        ax.get_xaxis().set_minor_formatter("")  # no 3 x 10^0 between the windows
    loss_ax.legend(fontsize="small", ncols=2)
    return figure


__all__ = ["length_figure"]
