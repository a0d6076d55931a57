"""An explorer of the trained sweeps: accuracy against test length, a few schemes.

The chart of chapter 9: the protocol's committed sweeps (``relpos.book.results``,
the encoder study ``protocol/sweep.json`` and the causal decoders
``protocol/sweep_causal.json``: tuned rates, ten seeds) as one line
per shown scheme, the mean over the seeds, with a band from the lowest to the
highest seed and the training length marked. Selectors choose the task, the
setting and the number of training sequences; a checkbox per scheme shows it.
A scheme or a training size that the chosen setting's sweep did not run draws
nothing and is named in a note under the chart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
from matplotlib.figure import Figure

from ._controls import checkbox, select
from ._figure import Interactive

DIGITS = 4
DEFAULT_SCHEMES = ("absolute", "t5", "deberta")
SWEEPS = ("protocol/sweep.json", "protocol/sweep_causal.json")
SETTING_LABELS = {"encoder": "encoder", "causal": "causal decoder"}
# One colour per scheme, kept when schemes are ticked and unticked.
PALETTE = (
    "#9e9e9e", "#4c78a8", "#72b7b2", "#b279a2", "#9d755d", "#f58518",
    "#bcbd22", "#54a24b", "#e45756", "#ff9da6", "#8c2d04", "#17becf",
)
WIDTH, HEIGHT = 470, 280
# The line per shown scheme that prints its values at the chosen test length.
READOUT = (
    "datum.scheme + ' at n = ' + datum.n + ', mean ' + format(datum.mean, '.1%') + "
    "', seeds from ' + format(datum.lo, '.1%') + ' to ' + format(datum.hi, '.1%')"
)
# The chart's title names the cell the selectors chose.
SUBJECT = (
    "'Accuracy against test length: ' + task + ', ' + "
    + "".join(f"(setting == '{k}' ? '{v}' : " for k, v in SETTING_LABELS.items())
    + "setting"
    + ")" * len(SETTING_LABELS)
    + " + ', ' + size + ' training sequences'"
)

Result = Mapping[str, Any]


def _sweeps(sweeps: Sequence[Result] | None) -> list[Result]:
    """The sweeps, each read by ``load_sweep`` (schema 1 upgraded, others refused)."""
    from relpos.book.experiments.sweep import load_sweep

    if sweeps is None:
        from relpos.book import results

        sweeps = [results.load(name) for name in SWEEPS]
    if isinstance(sweeps, (Mapping, str)) or not isinstance(sweeps, Sequence) or (
        not sweeps
    ):
        raise TypeError(
            "sweeps must be a non-empty list of sweep results "
            f"(relpos.book.results.load), got {type(sweeps).__name__}"
        )
    return [
        load_sweep(sweep, needs=("config",), name=f"sweeps[{a}]")
        for a, sweep in enumerate(sweeps)
    ]


def _union(values: list[list[Any]]) -> list[Any]:
    seen: list[Any] = []
    for group in values:
        seen += [v for v in group if v not in seen]
    return seen


def explorer_rows(sweeps: Sequence[Result] | None = None) -> list[dict[str, Any]]:
    """One row per (setting, task, scheme, training size) of the sweeps' union.

    A row the sweep ran holds the test lengths ``n`` and, per length, the mean,
    lowest and highest seed (``mean``, ``lo``, ``hi``, rounded to 4 decimals)
    and the number of seeds ``seeds``; a row it did not run holds ``note``,
    saying what is missing, and empty lists.
    """
    sweeps = _sweeps(sweeps)
    tasks = _union([s["grid"]["task"] for s in sweeps])
    schemes = _union([s["grid"]["scheme"] for s in sweeps])
    sizes = sorted(_union([s["grid"]["train_size"] for s in sweeps]))
    rows = []
    for sweep in sweeps:
        grid = sweep["grid"]
        cells = {
            (r["setting"], r["task"], r["scheme"], r["train_size"], r["length"]): r
            for r in sweep["summary"]
        }
        lengths = list(sweep["config"]["test_lengths"])
        for setting in grid["setting"]:
            for task in tasks:
                for scheme in schemes:
                    for size in sizes:
                        found = [
                            cells[setting, task, scheme, size, n]
                            for n in lengths
                            if (setting, task, scheme, size, n) in cells
                        ]
                        row = {
                            "setting": setting,
                            "task": task,
                            "scheme": scheme,
                            "size": size,
                            "n": [c["length"] for c in found],
                            "mean": [round(c["mean"], DIGITS) for c in found],
                            "lo": [round(c["min"], DIGITS) for c in found],
                            "hi": [round(c["max"], DIGITS) for c in found],
                            "seeds": [c["n"] for c in found],
                        }
                        if not found:
                            row["note"] = _missing(
                                SETTING_LABELS.get(setting, setting),
                                grid,
                                task,
                                scheme,
                                size,
                            )
                        rows.append(row)
    return rows


def _missing(
    setting: str, grid: Mapping[str, Any], task: str, scheme: str, size: int
) -> str:
    if scheme not in grid["scheme"]:
        return f"{scheme} is not in the {setting} sweep"
    if size not in grid["train_size"]:
        sizes = " and ".join(str(s) for s in grid["train_size"])
        return (
            f"{scheme} not run with {size} sequences in the {setting} sweep ({sizes})"
        )
    if task not in grid["task"]:
        return f"the {setting} sweep has no {task} task"
    return f"{scheme} has no results for {task} in the {setting} sweep"


def _lines(
    rows: alt.Chart, field: str, title: str, *, name: str, colour: str
) -> alt.Chart:
    """``rows``' ``field`` as lines of text under the plot, one per ``line`` number."""
    return (
        rows.mark_text(align="left", baseline="middle", fontSize=12, color=colour)
        .encode(
            x=alt.value(0),
            y=alt.Y("line:O", axis=None),
            text=alt.Text(f"{field}:N", title=title),
        )
        .properties(name=name, width=WIDTH, height=alt.Step(16))
    )


def results_chart(
    sweeps: Sequence[Result] | None = None,
    *,
    task: str = "relative",
    setting: str = "encoder",
    train_size: int = 512,
    shown: Sequence[str] = DEFAULT_SCHEMES,
) -> alt.VConcatChart:
    """Accuracy against test length for the ticked schemes of one sweep cell.

    Args:
        sweeps: the sweep results to explore (each read by ``load_sweep``:
            schema 2 or 3, or schema 1 upgraded); ``None`` loads the
            protocol's committed encoder and causal sweeps.
        task, setting, train_size: where the selectors start.
        shown: the schemes ticked at first.

    The controls: ``task``, ``setting``, ``size``, ``at`` and a checkbox per scheme,
    ``show0``, ``show1``, ... in the order of the sweeps' schemes. Marks:
    ``lines_marks`` (one line per shown scheme), ``means_marks`` (one point per
    scheme and test length: scheme, test length, mean, lowest and highest seed,
    seeds), ``bands_marks`` (the seed ranges), ``train_marks`` (the training
    length), ``readout_marks`` (each shown scheme's values at the test length
    ``at``, the keyboard's way to what hovering shows) and ``notes_marks`` (a
    line for each ticked scheme not run). In a concatenation Vega-Lite names
    the layered marks ``lines_0_marks``, ``means_0_marks`` and so on.
    """
    sweeps = _sweeps(sweeps)
    rows = explorer_rows(sweeps)
    tasks = _union([s["grid"]["task"] for s in sweeps])
    settings = _union([s["grid"]["setting"] for s in sweeps])
    schemes = _union([s["grid"]["scheme"] for s in sweeps])
    sizes = sorted(_union([s["grid"]["train_size"] for s in sweeps]))
    for name, value, known in (
        ("task", task, tasks),
        ("setting", setting, settings),
        ("train_size", train_size, sizes),
    ):
        if value not in known:
            raise ValueError(f"{name} must be one of {known}, got {value!r}")
    if isinstance(shown, str):
        raise TypeError("shown must be a list of scheme names, got a str")
    unknown = [s for s in shown if s not in schemes]
    if unknown:
        raise ValueError(f"shown must be drawn from {schemes}, got {unknown}")
    lengths = sorted(_union([list(s["config"]["test_lengths"]) for s in sweeps]))
    train_lengths = sorted({s["config"]["train_length"] for s in sweeps})
    seeds = sorted({len(s["grid"]["seed"]) for s in sweeps})
    for row in rows:
        row["k"] = schemes.index(row["scheme"])

    controls = [
        select("task", "task", tasks, task),
        select(
            "setting",
            "setting",
            settings,
            setting,
            labels=[SETTING_LABELS.get(s, s) for s in settings],
        ),
        select(
            "size",
            "training sequences",
            sizes,
            train_size,
            labels=[str(s) for s in sizes],
        ),
    ]
    at = select(
        "at",
        "values at test length",
        lengths,
        lengths[-1],
        labels=[str(n) for n in lengths],
    )
    boxes = [
        checkbox(f"show{index}", scheme, scheme in shown)
        for index, scheme in enumerate(schemes)
    ]
    ticked = "[" + ", ".join(f"show{i}" for i in range(len(schemes))) + "][datum.k]"
    chosen = (
        "datum.setting == setting && datum.task == task && datum.size == size && "
        + ticked
    )
    data = alt.Data(values=rows)
    base = (
        alt.Chart()
        .transform_filter(chosen)
        .transform_flatten(["n", "mean", "lo", "hi", "seeds"])
        .transform_filter("isValid(datum.n)")
    )
    x = alt.X(
        "n:Q",
        title="test length n (log scale)",
        scale=alt.Scale(type="log", base=2, domain=[lengths[0], lengths[-1]]),
        axis=alt.Axis(values=lengths, format="d"),
    )
    y = alt.Y(
        "mean:Q",
        title="accuracy (mean over seeds)",
        scale=alt.Scale(domain=[0, 1]),
        axis=alt.Axis(format=".0%"),
    )
    colour = alt.Color(
        "scheme:N",
        title="scheme",
        scale=alt.Scale(
            domain=schemes,
            range=[PALETTE[i % len(PALETTE)] for i in range(len(schemes))],
        ),
        legend=alt.Legend(symbolOpacity=1, symbolType="circle"),
    )
    bands = (
        base.mark_area(opacity=0.15)
        .encode(x=x, y=alt.Y("lo:Q", title="accuracy (mean over seeds)"),
                y2="hi:Q", color=colour)
        .properties(name="bands")
    )
    lines = base.mark_line(strokeWidth=2).encode(x=x, y=y, color=colour).properties(
        name="lines"
    )
    means = (
        base.mark_circle(size=45, opacity=1)
        .encode(
            x=x,
            y=y,
            color=colour,
            tooltip=[
                alt.Tooltip("scheme:N", title="scheme"),
                alt.Tooltip("n:Q", title="test length"),
                alt.Tooltip("mean:Q", title="mean", format=".4~f"),
                alt.Tooltip("lo:Q", title="lowest seed", format=".4~f"),
                alt.Tooltip("hi:Q", title="highest seed", format=".4~f"),
                alt.Tooltip("seeds:Q", title="seeds"),
            ],
        )
        .properties(name="means")
    )
    marks = alt.Data(values=[{"L": L} for L in train_lengths])
    train = (
        alt.Chart(marks)
        .mark_rule(color="#555", strokeDash=[4, 3])
        .encode(x=alt.X("L:Q", title="test length n (log scale)"),
                tooltip=[alt.Tooltip("L:Q", title="training length")])
        .properties(name="train")
    )
    train_label = (
        alt.Chart(marks)
        .mark_text(align="left", baseline="bottom", dx=4, dy=-4, color="#333")
        .transform_calculate(label="'training length ' + datum.L")
        .encode(x="L:Q", y=alt.value(HEIGHT), text=alt.Text("label:N", title="mark"))
        .properties(name="trainlabel")
    )
    main = alt.layer(bands, lines, means, train, train_label).properties(
        width=WIDTH,
        height=HEIGHT,
        name="accuracy",
        title=alt.Title(
            alt.ExprRef(SUBJECT),
            subtitle=(
                f"mean over {' or '.join(map(str, seeds))} seeds; the band runs from "
                "the lowest to the highest seed"
            ),
        ),
    )
    readout = _lines(
        base.transform_filter("datum.n == at")
        .transform_calculate(text=READOUT)
        .transform_window(line="row_number()", sort=[{"field": "k"}]),
        "text", "values", name="readout", colour="#222",
    )
    notes = _lines(
        alt.Chart()
        .transform_filter(chosen)
        .transform_filter("isValid(datum.note)")
        .transform_window(line="row_number()"),
        "note", "not run", name="notes", colour="#8a3b00",
    )
    # resize: the notes and the readout grow and shrink with the selection.
    return (
        alt.vconcat(main, readout, notes, data=data, spacing=6)
        .add_params(*controls, at, *boxes)
        .properties(autosize=alt.AutoSizeParams(type="pad", resize=True))
    )


def results_figure(
    sweeps: Sequence[Result] | None = None,
    *,
    still: Figure | None = None,
    task: str = "relative",
    setting: str = "encoder",
    train_size: int = 512,
    shown: Sequence[str] = DEFAULT_SCHEMES,
) -> Interactive:
    """The explorer with its still (``plot.accuracy_grid`` of the first sweep).

    ``still`` is the chapter's own matplotlib figure when it has one (a later
    check cell reads it).
    """
    chart = results_chart(
        sweeps, task=task, setting=setting, train_size=train_size, shown=shown
    )
    sweeps = _sweeps(sweeps)
    if still is None:
        from relpos.book import plot

        still = plot.accuracy_grid(dict(sweeps[0]), train_size=train_size)
    text = (
        f"Mean accuracy against test length on the {task} task, {setting} setting, "
        f"{train_size} training sequences, for {', '.join(shown)}, each with a band "
        "from its lowest to its highest seed and the training length marked. "
        "Selectors change the task, the setting (encoder or causal decoder) and "
        "the number of training sequences; a checkbox per scheme shows its line."
    )
    return Interactive(
        chart,
        name="results",
        alt=text,
        still=still,
        hint=(
            "Choose a task, a setting and a training size; tick the schemes to "
            "compare; hover a point, or choose a test length, for the values."
        ),
    )


__all__ = ["explorer_rows", "results_chart", "results_figure"]
