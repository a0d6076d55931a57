"""The mean and spread of a trained sweep: length, data and the tables' bands.

The figures of ``python -m relpos.book.experiments``'s JSON that draw each
cell's mean over the seeds with one standard deviation (chapter 9):
:func:`experiment_sweep` (accuracy against test length and against training
sequences) and :func:`table_bands` (the band profile of the relative tables).
The figures that show every seed are in ``seeds``. Both read the JSON with
``relpos.book.experiments.sweep.load_sweep``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from ..experiments.sweep import load_sweep
from ._style import MARKERS


def _sweep_setting(results: dict[str, Any], setting: str | None) -> str:
    settings = list(results["grid"].get("setting", ["encoder"]))
    if setting is None:
        return settings[0]
    if setting not in settings:
        raise ValueError(
            f"setting must be one of the sweep's settings {settings}, got {setting!r}"
        )
    return setting


def experiment_sweep(
    results: dict[str, Any] | str | Path,
    *,
    train_size: int | None = None,
    length: int | None = None,
    setting: str | None = None,
) -> Figure:
    """Length generalisation and data efficiency of every scheme and task, error bars.

    The runs of one ``setting`` (default: the sweep's first, ``"encoder"``).
    One row per task. Left: accuracy against test length, at ``train_size``
    training sequences (default: the largest of the sweep). Right: accuracy
    against the number of training sequences, at test ``length`` (default: the
    training length). Points are means over seeds, bars one standard deviation;
    the dashed line is chance. Each scheme is one ``errorbar`` labelled with its
    name, so ``ax.containers`` hold the drawn numbers.

    Shapes:
        axes: ``(len(tasks), 2)``; each line: one point per length or per size
    """
    results = load_sweep(results, needs=("tasks",), name="results")
    setting = _sweep_setting(results, setting)
    rows = [r for r in results["summary"] if r.get("setting", "encoder") == setting]
    sizes = sorted({r["train_size"] for r in rows})
    lengths = sorted({r["length"] for r in rows})
    train_size = sizes[-1] if train_size is None else train_size
    length = (
        results.get("config", {}).get("train_length", lengths[0])
        if length is None
        else length
    )
    if train_size not in sizes:
        raise ValueError(
            f"train_size must be one of the sweep's sizes {sizes}, got {train_size}"
        )
    if length not in lengths:
        raise ValueError(
            f"length must be one of the sweep's test lengths {lengths}, got {length}"
        )
    cells = {(r["task"], r["scheme"], r["train_size"], r["length"]): r for r in rows}
    tasks = list(results["tasks"])
    fig = Figure(figsize=(11, 3.3 * len(tasks)))
    axes = np.atleast_2d(fig.subplots(len(tasks), 2, squeeze=False))
    for row, task in enumerate(tasks):
        ax_len, ax_size = axes[row]
        for color, scheme in enumerate(results["grid"]["scheme"]):
            style = dict(
                marker=MARKERS[color % len(MARKERS)],
                markersize=5,
                capsize=3,
                color=f"C{color % 10}",
                linestyle="-" if color < 10 else "--",
                label=scheme,
            )
            by_len = [
                cells[c]
                for c in ((task, scheme, train_size, n) for n in lengths)
                if c in cells
            ]
            by_size = [
                cells[c]
                for c in ((task, scheme, s, length) for s in sizes)
                if c in cells
            ]
            ax_len.errorbar(
                [r["length"] for r in by_len],
                [r["mean"] for r in by_len],
                yerr=[r["std"] for r in by_len],
                **style,
            )
            ax_size.errorbar(
                [r["train_size"] for r in by_size],
                [r["mean"] for r in by_size],
                yerr=[r["std"] for r in by_size],
                **style,
            )
        chance = results["tasks"][task].get("chance")
        description = results["tasks"][task].get("description", "")
        for ax in (ax_len, ax_size):
            if chance is not None:
                ax.axhline(
                    chance, color="grey", linestyle="--", linewidth=0.8, label="chance"
                )
            ax.set_xscale("log", base=2)
            ax.set_ylim(-0.03, 1.03)
            ax.set_ylabel("accuracy")
            ax.grid(True, alpha=0.3)
        ax_len.set_xticks(lengths, [str(n) for n in lengths])
        ax_size.set_xticks(sizes, [str(s) for s in sizes])
        ax_len.set_xlabel("test sequence length n")
        ax_size.set_xlabel("training sequences")
        where = "" if setting == "encoder" else f"{setting}, "
        ax_len.set_title(
            f"{where}{task} ({description}): {train_size} training sequences",
            fontsize=9,
        )
        ax_size.set_title(f"{where}{task}: tested at length {length}", fontsize=9)
    handles, labels = axes[0][0].get_legend_handles_labels()
    # the schemes first, chance last
    order = sorted(range(len(labels)), key=lambda a: labels[a] == "chance")
    handles, labels = [handles[a] for a in order], [labels[a] for a in order]
    columns = min(len(labels), 5)
    fig.legend(handles, labels, loc="upper center", ncol=columns, fontsize=8)
    top = 1 - (0.25 + 0.22 * -(-len(labels) // columns)) / fig.get_figheight()
    fig.tight_layout(rect=(0, 0, 1, top))
    return fig


def table_bands(
    results: dict[str, Any] | str | Path,
    *,
    train_size: int | None = None,
    setting: str | None = None,
) -> Figure:
    """Band profile of the relative tables before and after training, per task.

    The runs of one ``setting`` (default: the sweep's first, ``"encoder"``).

    For every run with a relative table (the JSON's ``band`` entries), the mean
    cosine similarity of table rows ``offset`` apart; drawn as the mean over
    seeds for the trained tables (solid) and the initial ones (dotted). A band
    shows as a profile that stays high for small offsets and falls after.

    Shapes:
        axes: one per task
        each line: ``2 * span`` points (offsets ``0 .. 2 * span - 1``)
    """
    results = load_sweep(results, needs=("tasks",), name="results")
    setting = _sweep_setting(results, setting)
    runs = [
        r
        for r in results.get("runs", [])
        if r.get("band") and r.get("setting", "encoder") == setting
    ]
    if not runs:
        raise ValueError("results has no run with a relative table ('band' entries)")
    sizes = sorted({r["train_size"] for r in runs})
    train_size = sizes[-1] if train_size is None else train_size
    tasks = [t for t in results["tasks"] if any(r["task"] == t for r in runs)]
    fig = Figure(figsize=(4.2 * len(tasks), 3.6))
    axes = np.atleast_1d(fig.subplots(1, len(tasks), squeeze=False)[0])
    for ax, task in zip(axes, tasks):
        for color, scheme in enumerate(results["grid"]["scheme"]):
            mine = [
                r
                for r in runs
                if (r["task"], r["scheme"], r["train_size"])
                == (task, scheme, train_size)
            ]
            if not mine:
                continue
            for when, style in (("trained", "-"), ("initial", ":")):
                profile = np.mean([r["band"][when] for r in mine], axis=0)
                ax.plot(
                    np.arange(len(profile)),
                    profile,
                    linestyle=style,
                    color=f"C{color}",
                    label=f"{scheme}, {when}",
                )
        ax.axhline(0.0, color="grey", linewidth=0.6)
        ax.set_xlabel("offset between table rows")
        ax.set_ylabel("mean cosine similarity")
        ax.set_title(f"{task}: {train_size} training sequences", fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


__all__ = ["experiment_sweep", "table_bands"]
