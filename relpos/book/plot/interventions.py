"""An intervention's paired comparisons, every seed drawn as a pair.

:func:`paired_seeds` takes comparisons as ``relpos.book.experiments.interventions``
writes them (``a_values`` and ``b_values`` one per seed, each side's
``*_interval``, the difference's ``mean``, ``interval`` and ``p_value``) and
draws one panel per comparison: the baseline ``b`` on the left, the changed
arm ``a`` on the right, a grey line joining each seed's two values, each side's
mean as a tick with its 95% bootstrap interval as a pale bar, and the paired
difference with its interval and p-value in the title. The points drawn are the
comparison's own, read back from ``ax.lines``.

Shapes:
    per panel: one line of two points per seed, two interval bars, two mean ticks
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matplotlib.figure import Figure

from ._style import page_columns

#: Where each side of a comparison sits on the horizontal axis.
SIDES = (0.0, 1.0)


def paired_seeds(
    comparisons: Sequence[dict[str, Any]],
    *,
    labels: Sequence[tuple[str, str]] | None = None,
    titles: Sequence[str] | None = None,
    ylabel: str = "accuracy",
    percent: bool = True,
    columns: int | None = None,
) -> Figure:
    """One panel per paired comparison: each seed's baseline joined to its changed arm.

    ``labels`` names each panel's two sides (default: the comparison's ``b``
    and ``a``); ``titles`` each panel (default: its ``name``); ``percent``
    writes the difference in points (values as fractions) rather than as is;
    ``columns`` panels a row (default: as many as the page's width holds, the
    rows balanced).

    Shapes:
        axes: ``ceil(len(comparisons) / columns)`` rows of at most ``columns``
    """
    comparisons = list(comparisons)
    if not comparisons:
        raise ValueError("comparisons must hold at least one paired comparison")
    for c in comparisons:
        missing = [k for k in ("a_values", "b_values", "a_interval", "b_interval",
                               "mean", "interval", "p_value") if k not in c]
        if missing or len(c.get("a_values", [])) != len(c.get("b_values", [])):
            raise ValueError("comparisons must be the interventions' paired tests "
                             f"(equal a_values and b_values); missing {missing}")
    for name, given in (("labels", labels), ("titles", titles)):
        if given is not None and len(given) != len(comparisons):
            raise ValueError(f"{name} must give one entry per comparison "
                             f"({len(comparisons)}), got {len(given)}")
    if columns is None:
        columns = page_columns(len(comparisons), 2.5, margin=0.5)
    if isinstance(columns, bool) or not isinstance(columns, int) or columns < 1:
        raise ValueError(f"columns must be an int >= 1, got {columns!r}")
    columns = min(columns, len(comparisons))
    rows = -(-len(comparisons) // columns)
    fig = Figure(figsize=(2.5 * columns + 0.5, 3.2 * rows))
    grid = fig.subplots(rows, columns, squeeze=False, sharey=True)
    for ax in grid.flat[len(comparisons):]:
        ax.set_visible(False)
    axes = list(grid.flat)[: len(comparisons)]
    scale, unit = (100, " points") if percent else (1, "")
    for k, (ax, c) in enumerate(zip(axes, comparisons)):
        for b, a in zip(c["b_values"], c["a_values"]):
            ax.plot(SIDES, [b, a], color="grey", alpha=0.5, marker="o", ms=3,
                    lw=0.8)  # fmt: skip
        for x, side in zip(SIDES, ("b", "a")):
            values = c[f"{side}_values"]
            mean = sum(values) / len(values)
            ax.plot([x, x], c[f"{side}_interval"], color="C1", alpha=0.35, lw=6,
                    solid_capstyle="butt", label="_interval")  # fmt: skip
            ax.plot([x - 0.15, x + 0.15], [mean, mean], color="C1", lw=2,
                    label="_mean")  # fmt: skip
        low, high = c["interval"]
        names = labels[k] if labels is not None else (c.get("b", "b"), c.get("a", "a"))
        ax.set_xticks(SIDES, [names[0], names[1]], fontsize=8)
        ax.set_xlim(-0.5, 1.5)
        title = titles[k] if titles is not None else c.get("name", "")
        ax.set_title(f"{title}\n{scale * c['mean']:+.1f}{unit} "
                     f"[{scale * low:+.1f}, {scale * high:+.1f}], p = "
                     f"{c['p_value']:.3f}", fontsize=8)  # fmt: skip
        ax.set_xlabel("arm (each grey line: one seed)", fontsize=8)
        ax.tick_params(labelsize=8)
    for ax in grid[:, 0]:
        ax.set_ylabel(ylabel)
    fig.suptitle("Paired over seeds: a tick at each mean, a pale bar its 95% interval; "
                 "the difference, its interval and the sign-flip p-value above",
                 fontsize=9)  # fmt: skip
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.1 / rows))
    return fig


__all__ = ["paired_seeds"]
