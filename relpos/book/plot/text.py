"""Figures of the language models on real text (``python -m relpos.book.text``).

- :func:`bits_by_length`: bits per byte against the evaluation window, one panel
  per results file (causal, masked), one dot per seed and a line through the
  seeds' mean for each scheme: the book's version of Press et al.'s figure.
- :func:`loss_by_position`: the loss at each position of the longest windows,
  averaged over the seeds and over ``smooth`` positions at a time, with the
  training length marked.
- :func:`tuning_curves`: validation bits per byte against the learning rate of
  every tuned (setting, scheme), the chosen rate filled.

Every function takes the JSON dicts a text sweep writes and returns a
``Figure``; the numbers drawn are in ``ax.lines`` (``line.get_xdata()``,
``line.get_ydata()``, ``line.get_label()``), which is how the book tests them.
Each scheme of a figure has a colour of its own (the ten of the default cycle,
then ten more), its own marker, and from the eleventh on a dashed line.

Shapes:
    bits_by_length: per panel, per scheme, one line of ``len(eval_lengths)``
    points (the mean) and one of ``seeds * len(eval_lengths)`` (the seeds)
"""

from __future__ import annotations

import statistics
from typing import Any, Iterable

from matplotlib.figure import Figure

from ._style import MARKERS

Result = dict[str, Any]


def _schemes(result: Result, schemes: Iterable[str] | None) -> list[str]:
    known = list(result["grid"]["scheme"])
    chosen = known if schemes is None else list(schemes)
    unknown = [s for s in chosen if s not in known]
    if not chosen or unknown:
        raise ValueError(f"schemes must be drawn from {known}, got {chosen!r}")
    return chosen


#: The default cycle's ten colours, then ten more unlike them (20 schemes apart).
COLOURS = tuple(f"C{k}" for k in range(10)) + (
    "black", "#b8860b", "#000080", "#00ced1", "#ff1493",
    "#556b2f", "#8a2be2", "#a0522d", "#32cd32", "#708090",
)


def _style(k: int) -> dict[str, Any]:
    """Colour, marker and line style of the ``k``-th scheme of a figure."""
    return {
        "color": COLOURS[k % len(COLOURS)],
        "marker": MARKERS[k % len(MARKERS)],
        "linestyle": "-" if k < 10 else "--",
    }


def _runs(result: Result, scheme: str) -> list[dict[str, Any]]:
    return [r for r in result["runs"] if r["scheme"] == scheme]


def bits_by_length(
    results: dict[str, Result],
    *,
    schemes: Iterable[str] | None = None,
    figsize: tuple[float, float] | None = None,
) -> Figure:
    """Bits per byte against the evaluation window, every seed a dot.

    ``results`` maps a panel title (``"causal"``) to a text sweep's results;
    the panels share the y axis. The x axis is logarithmic, ticked ``L``,
    ``2L``, ...; a grey line marks ``L``.

    Shapes:
        per panel: one line of ``len(eval_lengths)`` means per scheme
    """
    if not results:
        raise ValueError("results must hold at least one (title, result) pair")
    figure = Figure(figsize=figsize or (4.1 * len(results) + 0.2, 4.4))
    axes = figure.subplots(1, len(results), sharey=True, squeeze=False)[0]
    chosen = {title: _schemes(result, schemes) for title, result in results.items()}
    # one style per scheme in every panel, even where the panels' schemes differ
    every = list(dict.fromkeys(s for names in chosen.values() for s in names))
    for ax, (title, result) in zip(axes, results.items()):
        short = result["config"]["train_length"]
        lengths = list(result["config"]["eval_lengths"])
        for scheme in chosen[title]:
            style = _style(every.index(scheme))
            runs = _runs(result, scheme)
            xs = [n for _ in runs for n in lengths]
            ys = [r["eval"][str(n)]["bpb"] for r in runs for n in lengths]
            ax.plot(xs, ys, linestyle="none", marker=style["marker"], ms=3,
                    color=style["color"], alpha=0.45)  # fmt: skip
            means = [statistics.fmean(r["eval"][str(n)]["bpb"] for r in runs)
                     for n in lengths]  # fmt: skip
            ax.plot(lengths, means, label=scheme, ms=4, **style)
        ax.set_xscale("log", base=2)
        ax.set_xticks(lengths, [f"{n // short}L" for n in lengths])
        ax.minorticks_off()
        ax.axvline(short, color="grey", lw=0.6)
        ax.set_title(f"{title} language model")
        ax.set_xlabel(f"evaluation window (L = {short} bytes)")
    axes[0].set_ylabel("bits per byte (test split)")
    handles = {}
    for ax in axes:  # every scheme of any panel, once
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    axes[-1].legend(handles.values(), handles.keys(), fontsize=7, ncol=2,
                    loc="upper left")
    figure.tight_layout()
    return figure


def _smooth(curve: list[float], width: int) -> list[float]:
    return [statistics.fmean(curve[i : i + width]) for i in range(0, len(curve), width)]


def loss_by_position(
    result: Result,
    *,
    schemes: Iterable[str] | None = None,
    length: int | None = None,
    smooth: int = 16,
) -> Figure:
    """The loss at each position of the windows of ``length`` (default: longest).

    Each scheme's curve is the mean over its seeds (the ``summary`` rows),
    averaged over ``smooth`` positions at a time and drawn at the middle of
    each group; the x axis is logarithmic and a grey line marks ``L``.

    Shapes:
        one line of ``ceil(length / smooth)`` points per scheme
    """
    if isinstance(smooth, bool) or not isinstance(smooth, int) or smooth < 1:
        raise ValueError(f"smooth must be an int >= 1, got {smooth!r}")
    lengths = list(result["config"]["eval_lengths"])
    length = max(lengths) if length is None else length
    if length not in lengths:
        raise ValueError(f"length must be one of {lengths}, got {length!r}")
    short = result["config"]["train_length"]
    rows = {(r["scheme"], r["length"]): r for r in result["summary"]}
    figure = Figure(figsize=(8, 4.2))
    ax = figure.subplots()
    for k, scheme in enumerate(_schemes(result, schemes)):
        curve = _smooth(rows[scheme, length]["per_position"], smooth)
        xs = [smooth * i + smooth / 2 for i in range(len(curve))]
        ax.plot(xs, curve, label=scheme, ms=3, markevery=4, **_style(k))
    ax.axvline(short, color="grey", lw=0.8)
    ax.annotate("L", (short, 1), xycoords=("data", "axes fraction"),
                xytext=(3, -12), textcoords="offset points")  # fmt: skip
    ax.set_xscale("log", base=2)
    ax.set_xlabel(f"position in the window (windows of {length} bytes)")
    ax.set_ylabel("loss (nats per byte)")
    ax.legend(fontsize=7, ncol=2)
    figure.tight_layout()
    return figure


def tuning_curves(
    results: dict[str, Result], *, schemes: Iterable[str] | None = None
) -> Figure:
    """Validation bits per byte against the learning rate, per tuned cell.

    One panel per results file; per scheme, a line through the rates its grid
    tried (``result["tuning"]["cells"]``) and a filled marker at the chosen
    rate. A diverged run (``None``) is left out of its line.

    Shapes:
        per panel: one line of ``len(rates)`` points per tuned scheme
    """
    figure = Figure(figsize=(5.2 * len(results), 4.2))
    axes = figure.subplots(1, len(results), sharey=True, squeeze=False)[0]
    for ax, (title, result) in zip(axes, results.items()):
        cells = {c["scheme"]: c for c in result["tuning"]["cells"]}
        for k, scheme in enumerate(_schemes(result, schemes)):
            cell = cells[scheme]
            points = [(r, v) for r, v in zip(cell["rates"], cell["valid_bpb"])
                      if v is not None]  # fmt: skip
            if not points:
                continue
            style = _style(k)
            ax.plot(*zip(*points), label=scheme, ms=4, mfc="none", **style)
            chosen = dict(points).get(cell["chosen"])
            if chosen is not None:
                ax.plot([cell["chosen"]], [chosen], marker=style["marker"],
                        color=style["color"], ms=7, linestyle="none")  # fmt: skip
        ax.set_xscale("log")
        ax.set_title(f"{title}: the chosen rate filled")
        ax.set_xlabel("learning rate")
    axes[0].set_ylabel("bits per byte (validation, windows of L)")
    axes[-1].legend(fontsize=7, ncol=2)
    figure.tight_layout()
    return figure


__all__ = ["bits_by_length", "loss_by_position", "tuning_curves"]
