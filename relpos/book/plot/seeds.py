"""Figures of a trained sweep with every seed visible, no lines on top of lines.

- :func:`data_efficiency`: small multiples, one panel per (task, scheme);
  accuracy at one length against the number of training sequences, one dot per
  seed, a line through the means and, where the sweep gives one (schema 3),
  the 95% bootstrap interval of each mean as a thick pale bar.
- :func:`seed_points`: one panel per training-set size; one row of dots per
  scheme (an ablation, for example), a tick at the mean and the interval.
- :func:`band_profiles`: the mean cosine of table rows ``o`` apart, before and
  after training, per scheme and task.

Every function takes the JSON dict of ``python -m relpos.book.experiments``
(or its path; read by ``relpos.book.experiments.sweep.load_sweep``, so a
schema-1 file is upgraded) and returns a ``Figure``; the numbers drawn can be
read back from the artists (``ax.images[0].get_array()``, ``ax.collections``,
``ax.lines``), which is how the book's checks test them.

Shapes:
    accuracy_grid: one image of ``(len(schemes), len(lengths))`` per task
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import numpy as np
from matplotlib.figure import Figure

from ..experiments.sweep import load_sweep

Result = dict[str, Any]


def _load(result: Result | str | Path) -> Result:
    return load_sweep(result, needs=("config", "tasks", "runs"))


#: The metrics a sweep summarises, and the key of their rows in its JSON.
METRICS = {"accuracy": "summary", "exact match": "exact"}


def _cells(
    result: Result, metric: str = "accuracy"
) -> dict[tuple[str, str, str, int, int], dict[str, Any]]:
    key = METRICS[_pick("metric", [metric], list(METRICS))[0]]
    if key not in result:
        raise ValueError(f"metric {metric!r} needs the sweep's {key!r} rows, which "
                         "this sweep does not record")
    return {
        (r["setting"], r["task"], r["scheme"], r["train_size"], r["length"]): r
        for r in result[key]
    }


def _pick(name: str, values: Iterable[Any] | None, known: list[Any]) -> list[Any]:
    values = list(known) if values is None else list(values)
    unknown = [v for v in values if v not in known]
    if not values or unknown:
        raise ValueError(f"{name} must be drawn from {known}, got {values!r}")
    return values


def _setting(result: Result, setting: str | None) -> str:
    settings = result["grid"]["setting"]
    if setting is None:
        return settings[0]
    return _pick("setting", [setting], settings)[0]


def _interval(ax: Any, cell: dict[str, Any], *, at: float, vertical: bool) -> None:
    """The cell's bootstrap interval as a thick pale line (none in schema 2)."""
    interval = cell.get("interval")
    if interval is None:
        return
    along, across = [at, at], list(interval)
    xs, ys = (along, across) if vertical else (across, along)
    ax.plot(xs, ys, color="C1", alpha=0.35, linewidth=5, solid_capstyle="butt",
            label="95% interval")


def data_efficiency(
    result: Result | str | Path,
    *,
    setting: str | None = None,
    length: int | None = None,
    tasks: Iterable[str] | None = None,
    schemes: Iterable[str] | None = None,
) -> Figure:
    """Accuracy against training-set size: one small panel per (task, scheme).

    Each seed is a dot; the line joins the means. ``length`` defaults to the
    training length. The dashed line is chance.

    Shapes:
        axes: ``(len(tasks), len(schemes))``; per panel one dot per (size, seed)
    """
    result = _load(result)
    setting = _setting(result, setting)
    grid = result["grid"]
    length = result["config"]["train_length"] if length is None else length
    _pick("length", [length], list(result["config"]["test_lengths"]))
    tasks = _pick("tasks", tasks, grid["task"])
    schemes = _pick("schemes", schemes, grid["scheme"])
    sizes = sorted(grid["train_size"])
    cells = _cells(result)
    fig = Figure(figsize=(1.05 * len(schemes) + 0.8, 1.25 * len(tasks) + 0.9))
    axes = fig.subplots(len(tasks), len(schemes), squeeze=False, sharey=True)
    for row, task in enumerate(tasks):
        chance = result["tasks"][task]["chance"]
        for col, scheme in enumerate(schemes):
            ax = axes[row][col]
            found = [
                (s, cells[setting, task, scheme, s, length])
                for s in sizes
                if (setting, task, scheme, s, length) in cells
            ]
            for s, cell in found:
                _interval(ax, cell, at=s, vertical=True)
                ax.scatter([s] * len(cell["values"]), cell["values"], s=7, color="C0")
            ax.plot([s for s, _ in found], [c["mean"] for _, c in found], color="C1")
            ax.axhline(chance, color="grey", linestyle="--", linewidth=0.7)
            ax.set_xscale("log", base=2)
            ax.set_xticks(sizes, [str(s) for s in sizes], fontsize=6)
            ax.set_ylim(-0.04, 1.04)
            ax.tick_params(labelsize=6)
            if row == 0:
                ax.set_title(scheme, fontsize=7)
            if col == 0:
                ax.set_ylabel(f"{task}\naccuracy", fontsize=7)
            if row == len(tasks) - 1:
                ax.set_xlabel("training seqs", fontsize=6)
    fig.suptitle(
        f"{setting}: accuracy at n = {length} by training sequences; dots are seeds, "
        "the line their mean, pale bars 95% intervals, dashed chance",
        fontsize=8,
    )
    fig.tight_layout(rect=(0, 0, 1, 0.94), pad=0.4)
    return fig


def seed_points(
    result: Result | str | Path,
    *,
    task: str,
    schemes: Iterable[str],
    setting: str | None = None,
    length: int | None = None,
    train_sizes: Iterable[int] | None = None,
) -> Figure:
    """One dot per seed for each scheme; one panel per training-set size.

    A short bar marks each scheme's mean. ``length`` defaults to the training
    length.

    Shapes:
        axes: ``len(train_sizes)``; per panel one dot per (scheme, seed)
    """
    result = _load(result)
    setting = _setting(result, setting)
    grid = result["grid"]
    _pick("task", [task], grid["task"])
    schemes = _pick("schemes", schemes, grid["scheme"])
    sizes = _pick("train_sizes", train_sizes, sorted(grid["train_size"]))
    length = result["config"]["train_length"] if length is None else length
    cells = _cells(result)
    fig = Figure(figsize=(2.6 * len(sizes) + 0.6, 0.3 * len(schemes) + 1.6))
    axes = fig.subplots(1, len(sizes), squeeze=False, sharey=True)[0]
    for ax, size in zip(axes, sizes):
        for a, scheme in enumerate(schemes):
            cell = cells.get((setting, task, scheme, size, length))
            if cell is None:
                continue
            _interval(ax, cell, at=a, vertical=False)
            ax.scatter(cell["values"], [a] * len(cell["values"]), s=12, color="C0")
            ax.plot([cell["mean"]] * 2, [a - 0.3, a + 0.3], color="C1")
        ax.axvline(
            result["tasks"][task]["chance"], color="grey", linestyle="--", lw=0.7
        )
        ax.set_yticks(range(len(schemes)), schemes)
        ax.set_xlim(-0.04, 1.04)
        ax.invert_yaxis() if ax is axes[0] else None
        ax.set_xlabel(f"accuracy at n = {length}")
        ax.set_title(f"{size} training sequences", fontsize=9)
        ax.tick_params(labelsize=8)
    axes[0].set_ylabel("scheme")
    fig.suptitle(
        f"{task}, {setting}: one dot per seed, a tick at the mean, a pale bar its "
        "95% interval, dashed chance",
        fontsize=9,
    )
    fig.tight_layout(rect=(0, 0, 1, 0.92))
    return fig


def band_profiles(
    result: Result | str | Path,
    *,
    schemes: Iterable[str],
    tasks: Iterable[str] | None = None,
    setting: str | None = None,
    train_size: int | None = None,
) -> Figure:
    """Mean cosine of table rows ``o`` apart, before (dashed) and after training.

    One panel per task; one colour per scheme; a thin line per seed after
    training, a thick one for their mean, the mean before training dashed.

    Shapes:
        per run: ``2k`` offsets ``0 .. 2k - 1``
    """
    result = _load(result)
    setting = _setting(result, setting)
    grid = result["grid"]
    tasks = _pick("tasks", tasks, grid["task"])
    schemes = _pick("schemes", schemes, grid["scheme"])
    train_size = max(grid["train_size"]) if train_size is None else train_size
    fig = Figure(figsize=(4.2 * len(tasks), 3.2))
    axes = fig.subplots(1, len(tasks), squeeze=False, sharey=True)[0]
    for ax, task in zip(axes, tasks):
        for color, scheme in enumerate(schemes):
            runs = [
                r
                for r in result["runs"]
                if (r["setting"], r["task"], r["scheme"], r["train_size"])
                == (setting, task, scheme, train_size)
                and r["band"]
            ]
            if not runs:
                continue
            trained = np.array([r["band"]["trained"] for r in runs])
            initial = np.array([r["band"]["initial"] for r in runs])
            offsets = np.arange(trained.shape[1])
            for line in trained:
                ax.plot(offsets[1:], line[1:], color=f"C{color}", lw=0.5, alpha=0.5)
            ax.plot(
                offsets[1:], trained.mean(0)[1:], color=f"C{color}", lw=2,
                label=f"{scheme}, trained",
            )
            ax.plot(
                offsets[1:], initial.mean(0)[1:], color=f"C{color}", lw=1.2,
                linestyle="--", label=f"{scheme}, initial",
            )
        ax.axhline(0, color="grey", lw=0.6)
        ax.set_xlabel("offset between rows o")
        ax.set_title(f"{task}, {train_size} training sequences", fontsize=9)
    axes[0].set_ylabel("mean cosine of rows o apart")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


__all__ = ["band_profiles", "data_efficiency", "seed_points"]
