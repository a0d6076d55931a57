"""The probe's figure: accuracy against the distance, one panel per relation.

One colour per arm, one line style per offset, the mean over the seeds; chance
(one half) drawn across. Made with ``matplotlib.figure.Figure`` (nothing kept
open), as the book's other figures.
"""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure

from ...plot._style import PAGE_WIDTH

#: Line styles of the offsets, in the items' order.
STYLES = ("-", "--", ":", "-.")


def accuracy_by_distance(result: dict[str, Any]) -> Figure:
    """Mean accuracy against ``d`` per arm (colour) and offset (style).

    ``result`` is the probe's JSON (its ``summary.cells``). Every axis is
    labelled; ``ax.lines`` hold the points (chance last). The figure is as
    wide as the page (``PAGE_WIDTH``), its panels side by side.
    """
    cells = result["summary"]["cells"]
    relations = list(dict.fromkeys(c["relation"] for c in cells))
    offsets = sorted({c["offset"] for c in cells})
    arms = result["grid"]["arm"]
    figure = Figure(figsize=(PAGE_WIDTH, 4), layout="constrained")
    axes = figure.subplots(1, len(relations), squeeze=False)[0]
    colours = [f"C{i % 10}" for i in range(len(arms))]
    for ax, relation in zip(axes, relations):
        for arm, colour in zip(arms, colours):
            for offset, style in zip(offsets, STYLES):
                rows = sorted(
                    (c for c in cells if (c["arm"], c["relation"], c["offset"])
                     == (arm, relation, offset)),
                    key=lambda c: c["distance"],
                )
                ax.plot([r["distance"] for r in rows], [r["mean"] for r in rows],
                        style, color=colour, marker="o", markersize=3,
                        label=f"{arm}" if offset == offsets[0] else None)
        ax.axhline(0.5, color="grey", linewidth=0.8)
        ax.set_xscale("log", base=2)
        distances = sorted({c["distance"] for c in cells})
        ax.set_xticks(distances, [str(d) for d in distances])
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("distance d = i - j (bytes)")
        ax.set_ylabel("accuracy (grammatical preferred)")
        ax.set_title(f"{relation}; offsets " + ", ".join(
            f"{o} {s}" for o, s in zip(offsets, STYLES)), fontsize=9)
    axes[-1].legend(fontsize=7, loc="lower left")
    return figure


__all__ = ["STYLES", "accuracy_by_distance"]
