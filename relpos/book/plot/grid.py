"""The heatmap of a trained sweep: every scheme at every test length, per task.

:func:`accuracy_grid` draws one heatmap per task, schemes by test length; each
cell shows the mean over the seeds and, under it, the lowest and highest seed,
per token or by exact match. It reads a sweep as ``seeds`` does (its helpers),
and the numbers drawn can be read back from ``ax.images[0].get_array()``.

Shapes:
    accuracy_grid: one image of ``(len(schemes), len(lengths))`` per task
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from ._style import page_columns
from .seeds import Result, _cells, _load, _pick, _setting


def accuracy_grid(
    result: Result | str | Path,
    *,
    setting: str | None = None,
    train_size: int | None = None,
    tasks: Iterable[str] | None = None,
    schemes: Iterable[str] | None = None,
    metric: str = "accuracy",
    columns: int | None = None,
) -> Figure:
    """Mean accuracy (and the seeds' range) of every scheme at every test length.

    One panel per task; rows are schemes, columns test lengths. The colour is
    the mean over the seeds; the text gives the mean and, below it, the lowest
    and highest seed, in percent. Default: the sweep's first setting and its
    largest training set. ``metric`` is ``"accuracy"`` (per scored token) or
    ``"exact match"`` (the share of sequences with every scored token right,
    where the sweep records it); ``columns`` panels per row (default: as many
    as the page's width holds, ``_style.PAGE_WIDTH``).

    Shapes:
        each panel's image: ``(len(schemes), len(lengths))``, means in ``[0, 1]``
    """
    result = _load(result)
    setting = _setting(result, setting)
    grid = result["grid"]
    train_size = max(grid["train_size"]) if train_size is None else train_size
    _pick("train_size", [train_size], grid["train_size"])
    tasks = _pick("tasks", tasks, grid["task"])
    schemes = _pick("schemes", schemes, grid["scheme"])
    lengths = list(result["config"]["test_lengths"])
    cells = _cells(result, metric)
    width = 1.1 + 0.8 * len(lengths)
    if columns is None:
        columns = page_columns(len(tasks), width, margin=1.2)
    if not isinstance(columns, int) or isinstance(columns, bool) or columns < 1:
        raise ValueError(f"columns must be a positive int, got {columns!r}")
    columns = min(columns, len(tasks))
    rows = -(-len(tasks) // columns)
    height = (0.36 * len(schemes) + 1.0) * rows + 0.3
    fig = Figure(figsize=(width * columns + 1.2, height))
    panels = fig.subplots(rows, columns, squeeze=False)
    axes = list(panels.flat)
    for ax in axes[len(tasks):]:
        ax.set_visible(False)
    axes = axes[: len(tasks)]
    image = None
    for index, (ax, task) in enumerate(zip(axes, tasks)):
        means = np.full((len(schemes), len(lengths)), np.nan)
        for a, scheme in enumerate(schemes):
            for b, n in enumerate(lengths):
                cell = cells.get((setting, task, scheme, train_size, n))
                if cell is None:
                    continue
                means[a, b] = cell["mean"]
                dark = cell["mean"] < 0.55
                ax.text(
                    b,
                    a,
                    f"{100 * cell['mean']:.0f}\n{100 * cell['min']:.0f}-"
                    f"{100 * cell['max']:.0f}",
                    ha="center",
                    va="center",
                    fontsize=6.5,
                    linespacing=0.95,
                    color="white" if dark else "black",
                )
        image = ax.imshow(means, vmin=0, vmax=1, cmap="viridis", aspect="auto")
        first = index % columns == 0
        ax.set_xticks(range(len(lengths)), [str(n) for n in lengths])
        ax.set_yticks(range(len(schemes)), schemes if first else [])
        ax.set_xlabel("test length n")
        if first:
            ax.set_ylabel("scheme")
        ax.set_title(f"{task}", fontsize=9)
        ax.tick_params(labelsize=8)
    fig.suptitle(
        f"{setting}, {train_size} training sequences: mean {metric} in % over "
        f"{len(grid['seed'])} seeds, lowest-highest seed below",
        fontsize=9,
    )
    fig.tight_layout(rect=(0, 0, 0.93, 0.95))
    bar = fig.colorbar(image, ax=list(panels.flat), fraction=0.02, pad=0.02)
    bar.set_label(f"mean {metric}")
    return fig


__all__ = ["accuracy_grid"]
