"""The far-keys intervention's figure: the masked rise, and what cutting removes.

One panel per clipped table (the intervention's arms), over the window ``W`` in
multiples of ``L``: the loss of the same trained models read four ways, as
trained, with every key ``k`` or more away cut on both sides, ahead only, and
behind only; a dotted line marks the model's own loss at ``4L``. A last panel
draws full minus cut (both sides) for each table with its 95% interval over
modules and seeds: above zero, the far keys cost that much. Losses in bits per
byte, the unit of chapter 11.

Shapes:
    per scheme panel: four lines of ``len(eval_lengths)`` points;
    the last panel: one error-bar line per scheme, the same points
"""

from __future__ import annotations

import math
from typing import Any, Iterable

from matplotlib.figure import Figure

from ..plot._style import MARKERS
from .far_keys import READINGS, SCHEMES

#: How each reading is drawn and named.
LABELS = {
    "full": "as trained",
    "cut": "far keys cut, both sides",
    "ahead": "far keys ahead cut",
    "behind": "far keys behind cut",
}
STYLES = {
    "full": {"color": "black", "linestyle": "-"},
    "cut": {"color": "C0", "linestyle": "-"},
    "ahead": {"color": "C1", "linestyle": "--"},
    "behind": {"color": "C2", "linestyle": ":"},
}


def bits(nats: float) -> float:
    """A loss in nats per byte, in bits per byte."""
    return nats / math.log(2)


def far_keys_figure(
    result: dict[str, Any], schemes: Iterable[str] | None = None
) -> Figure:
    """Draw a far-keys JSON (``far_keys.run_far_keys``) for ``schemes``.

    ``schemes``: the tables to draw, in order (None: the intervention's arms that
    the result holds).

    Shapes:
        result["contrasts"]: one row per (scheme, W)
    """
    rows = result.get("contrasts") if isinstance(result, dict) else None
    if not rows:
        raise ValueError("result must be a far-keys JSON with its contrasts")
    held = list(dict.fromkeys(r["scheme"] for r in rows))
    if schemes is None:
        chosen = [s for s in SCHEMES if s in held] or held
    else:
        chosen = list(schemes)
        missing = [s for s in chosen if s not in held]
        if not chosen or missing:
            raise ValueError(
                f"schemes must be a non-empty subset of {held}, got {chosen}"
            )
    L = result["config"]["train_length"]
    figure = Figure(figsize=(3.4 * (len(chosen) + 1), 3.6), layout="constrained")
    axes = figure.subplots(1, len(chosen) + 1, sharey=False)
    *scheme_axes, cut_ax = axes
    for k, (scheme, ax) in enumerate(zip(chosen, scheme_axes)):
        mine = sorted(
            (r for r in rows if r["scheme"] == scheme), key=lambda r: r["length"]
        )
        x = [r["length"] / L for r in mine]
        for reading in READINGS:
            ax.plot(
                x, [bits(r[reading]) for r in mine], label=LABELS[reading],
                marker="o", markersize=4, **STYLES[reading],
            )
        own = next(r for r in mine if r["length"] == 4 * L)
        ax.axhline(bits(own["full"]), color="grey", linewidth=0.8, linestyle=":")
        ax.set(
            xscale="log", xlabel="window W / L",
            ylabel="loss on masked bytes (bits per byte)", title=scheme,
        )
        style = {"color": f"C{k % 10}", "marker": MARKERS[k % len(MARKERS)]}
        middle = [bits(r["full_minus"]["cut"]["mean"]) for r in mine]
        low = [m - bits(r["full_minus"]["cut"]["interval"][0])
               for m, r in zip(middle, mine)]
        high = [bits(r["full_minus"]["cut"]["interval"][1]) - m
                for m, r in zip(middle, mine)]
        cut_ax.errorbar(x, middle, yerr=[low, high], label=scheme, capsize=3, **style)
    cut_ax.axhline(0.0, color="black", linewidth=0.8)
    cut_ax.set(
        xscale="log", xlabel="window W / L",
        ylabel="full minus cut (bits per byte)", title="what the far keys cost",
    )
    for ax in axes:
        ax.set_xticks(sorted({r["length"] / L for r in rows}))
        ax.get_xaxis().set_major_formatter("{x:g}")
        ax.get_xaxis().set_minor_formatter("")
    scheme_axes[0].legend(fontsize="small")
    cut_ax.legend(fontsize="small")
    return figure


__all__ = ["LABELS", "bits", "far_keys_figure"]
