"""How a sweep chose its learning rates: every tuned cell's validation curve.

:func:`rate_curves` draws, for a sweep of schema 3 (``python -m
relpos.book.experiments``), one panel per (setting, task, training size) and,
per scheme, the mean validation loss over the tuning seeds at every rate its
grid tried, with the chosen rate filled. A cell whose best rate is still at an
edge of its grid (``bracketed`` false) is drawn dashed, so an optimum the grid
did not reach is seen at once. The drawn points are the JSON's own
(``tuning.chosen[*].rates`` and ``scores``), read back from ``ax.lines``.

Shapes:
    per panel: one line of ``len(rates)`` points per scheme
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from matplotlib.figure import Figure

from ..experiments.sweep import load_sweep
from ._style import MARKERS

Result = dict[str, Any]


def rate_curves(
    result: Result | str | Path,
    *,
    schemes: Iterable[str] | None = None,
    columns: int = 4,
) -> Figure:
    """Validation loss against the learning rate for every tuned cell of a sweep.

    One panel per (setting, task, training size); one line per scheme (only
    ``schemes`` if given), the chosen rate filled, a dashed line where the
    best rate sits at an edge of the grid tried.

    Shapes:
        axes: ``ceil(panels / columns)`` rows of at most ``columns``
    """
    result = load_sweep(result, needs=("tuning",))
    chosen = result["tuning"].get("chosen", [])
    if not chosen or "scores" not in chosen[0]:
        raise ValueError(
            "result must be a sweep tuned per training size (schema 3), whose "
            "tuning.chosen entries hold 'rates' and 'scores'"
        )
    known = result["grid"]["scheme"]
    picked = known if schemes is None else list(schemes)
    if not picked or any(s not in known for s in picked):
        raise ValueError(f"schemes must be drawn from {known}, got {schemes!r}")
    if isinstance(columns, bool) or not isinstance(columns, int) or columns < 1:
        raise ValueError(f"columns must be an int >= 1, got {columns!r}")
    panels: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for cell in chosen:
        if cell["scheme"] in picked:
            key = (cell["setting"], cell["task"], cell["train_size"])
            panels.setdefault(key, []).append(cell)
    rows = -(-len(panels) // columns)
    width = min(columns, len(panels))
    figure = Figure(figsize=(3.0 * width + 0.4, 2.5 * rows + 0.9))
    axes = figure.subplots(rows, width, squeeze=False, sharey=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, ((setting, task, size), cells) in zip(axes.flat, panels.items()):
        for cell in cells:
            k = picked.index(cell["scheme"])
            style = {"color": f"C{k % 10}", "marker": MARKERS[k % len(MARKERS)]}
            points = [(r, v) for r, v in zip(cell["rates"], cell["scores"])
                      if v is not None]  # fmt: skip
            if not points:
                continue
            ax.plot(*zip(*points), label=cell["scheme"], ms=3, mfc="none",
                    linestyle="-" if cell["bracketed"] else "--", **style)  # fmt: skip
            best = dict(points).get(cell["learning_rate"])
            if best is not None:
                ax.plot([cell["learning_rate"]], [best], linestyle="none", ms=6,
                        **style)  # fmt: skip
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{setting}, {task}, {size} seqs", fontsize=8)
        ax.set_xlabel("learning rate", fontsize=7)
        ax.set_ylabel("validation loss (nats)", fontsize=7)
        ax.tick_params(labelsize=6)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncol=min(6, len(labels)),
                  fontsize=7, frameon=False)  # fmt: skip
    figure.suptitle("Each cell's validation curve over the rates its grid tried; "
                    "filled: chosen; dashed: best at an edge", fontsize=9)  # fmt: skip
    figure.tight_layout(rect=(0, 0.06, 1, 0.95))
    return figure


__all__ = ["rate_curves"]
