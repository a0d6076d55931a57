"""Row similarities of the 2k table, with the span k and the filling to choose.

The chart draws the cosine similarity between every two rows of a table of
``2k`` rows, row ``r`` holding distance ``r - k`` (the matrix
``relpos.row_cosine_similarity`` returns over ``range(-k, k)``, as chapter 3's
``plot.row_similarity`` draws it). Three fillings:

- ``normal``: ``RelativePositionEmbedding(k, hidden, init="normal")``, seed 0;
- ``sinusoidal``: ``init="sinusoidal"``;
- ``trained``: the table a tiny one-layer DeBERTa model learned on the
  ``relative`` task (output the token 3 positions back), read out after its
  LayerNorm. Training takes a few seconds per k, so the tables are committed in
  ``relpos/book/results/trained_tables.json``; one command writes them again::

      python -m relpos.book.interactive

(``--output PATH`` writes elsewhere).

Every similarity is computed here with ``relpos`` and rounded to 3 decimals; the
browser only picks the (filling, k) to show and numbers the flattened columns
(:data:`SECOND_DISTANCE`).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import altair as alt
import torch
from matplotlib.figure import Figure

from relpos import RelativePositionEmbedding, row_cosine_similarity
from relpos.book import plot, results

from ._controls import plain_names, select, slider
from ._figure import Interactive

#: The spans a reader can choose, and the fillings.
SPANS = (2, 4, 8, 16)
INITS = ("normal", "sinusoidal", "trained")
INIT_LABELS = ("random (normal)", "sinusoidal", "trained (relative task)")
#: The file of the trained tables, and the training run behind each.
TRAINED_FILE = "trained_tables.json"
TRAINING = dict(task="relative", scheme="deberta", steps=200, train_size=256,
                test_lengths=(32,), seed=0)
DECIMALS = 3
AXIS = dict(labelOverlap="parity", labelSeparation=4)

#: The distance of the second row of a drawn cell: ``column`` is the 1-based
#: number of the cell in its flattened row (Vega's row_number), ``k`` the span.
SECOND_DISTANCE = "datum.column - 1 - k"
#: The cell the sliders choose: both distances clipped into the window of k.
CHOSEN = "datum.a == clamp(first, -k, k - 1) && datum.b == clamp(second, -k, k - 1)"
CHOSEN_TEXT = (
    "'rows of distances ' + datum.a + ' and ' + datum.b"
    " + ', cosine similarity ' + format(datum.cos, '.3f')"
)


def _check_spans(spans: Sequence[int]) -> list[int]:
    spans = list(spans)
    if not spans or any(
        not isinstance(k, int) or isinstance(k, bool) or k < 1 for k in spans
    ):
        raise ValueError(f"spans must be positive ints, got {spans!r}")
    if len(set(spans)) != len(spans):
        raise ValueError(f"spans must not repeat, got {spans!r}")
    return spans


def train_table(k: int) -> tuple[torch.Tensor, float]:
    """The relative table a DeBERTa model of span ``k`` learns on ``relative``.

    The run is :data:`TRAINING` (seeded, deterministic, one thread); returns
    the table after its LayerNorm and the accuracy on length-32 test sequences.

    Shapes:
        output: ``(2k, hidden)`` and a float
    """
    from relpos.book.experiments import Config, evaluate, relative_table, train

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        config = Config(**TRAINING, max_relative_positions=k)
        trained = train(config)
        weight, span = relative_table(trained.model)
        accuracy = evaluate(trained.model, config)[32]
    finally:
        torch.set_num_threads(threads)
    assert span == k, (span, k)
    return weight, accuracy


def trained_tables(spans: Sequence[int] = SPANS) -> dict[str, Any]:
    """Train one model per span and return the JSON :data:`TRAINED_FILE` holds."""
    spans = _check_spans(spans)
    tables = {}
    for k in spans:
        weight, accuracy = train_table(k)
        tables[str(k)] = {
            "accuracy": round(accuracy, 4),
            "weight": [[round(x, 4) for x in row] for row in weight.tolist()],
        }
    return {"training": {**TRAINING, "test_lengths": [32]}, "tables": tables}


def table_weight(init: str, k: int, hidden_size: int = 768) -> torch.Tensor:
    """The table of filling ``init`` and span ``k`` the chart draws.

    ``normal`` and ``sinusoidal`` are built at ``hidden_size`` under seed 0 (the
    global random state is left as it was); ``trained`` is read from the
    committed file (its width is the trained model's, 32).

    Shapes:
        output: ``(2k, hidden)``
    """
    if init not in INITS:
        raise ValueError(f"init must be one of {INITS}, got {init!r}")
    if init == "trained":
        tables = results.load(TRAINED_FILE)["tables"]
        if str(k) not in tables:
            raise ValueError(f"k must be one of {sorted(map(int, tables))}, got {k!r}")
        return torch.tensor(tables[str(k)]["weight"])
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        table = RelativePositionEmbedding(k, hidden_size, init=init)
    return table.weight.detach()


def similarity(init: str, k: int, hidden_size: int = 768) -> torch.Tensor:
    """Cosine similarity of every two rows, distances ``-k .. k - 1``, 3 decimals.

    Shapes:
        output: ``(2k, 2k)``
    """
    weight = table_weight(init, k, hidden_size)
    cos = row_cosine_similarity(weight, k, range(-k, k))
    return torch.round(cos.double(), decimals=DECIMALS)


def _rows(spans: list[int], hidden_size: int) -> list[dict[str, Any]]:
    rows = []
    for init in INITS:
        for k in spans:
            cos = similarity(init, k, hidden_size)
            for a, values in zip(range(-k, k), cos.tolist()):
                rows.append({"t": init, "k": k, "a": a, "c": values})
    return rows


def similarity_chart(
    spans: Sequence[int] = SPANS,
    *,
    k: int = 16,
    init: str = "normal",
    hidden_size: int = 768,
    size: int = 360,
) -> alt.VConcatChart:
    """The row-similarity heatmap, selects for the filling and the span k.

    Two sliders choose a cell from the keyboard (its distances clipped into the
    window), outlined, with a line of text printing its similarity.
    """
    spans = _check_spans(spans)
    if k not in spans:
        raise ValueError(f"k must be one of the spans {spans}, got {k!r}")
    if init not in INITS:
        raise ValueError(f"init must be one of {INITS}, got {init!r}")
    if not isinstance(hidden_size, int) or hidden_size < 2 or hidden_size % 2:
        raise ValueError(f"hidden_size must be an even int >= 2, got {hidden_size!r}")
    if not isinstance(size, int) or not 100 <= size <= 600:
        raise ValueError(f"size must be an int in [100, 600] pixels, got {size!r}")
    span = select("k", "span k", spans, k)
    filling = select("init", "table", list(INITS), init, labels=list(INIT_LABELS))
    first = "distance i - j of the first row"
    second = "distance i - j of the second row"
    row_a = slider("first", "first distance", 0, -max(spans), max(spans) - 1)
    row_b = slider("second", "second distance", 1, -max(spans), max(spans) - 1)
    base = (
        alt.Chart(alt.Data(values=_rows(spans, hidden_size)))
        .transform_filter("datum.t == init && datum.k == k")
        .transform_flatten(["c"], as_=["cos"])
        .transform_window(column="row_number()", groupby=["a"])
        .transform_calculate(b=SECOND_DISTANCE)
    )
    x = alt.X("b:O", title=second, axis=alt.Axis(labelAngle=0, **AXIS))
    y = alt.Y("a:O", title=first, axis=alt.Axis(**AXIS))
    tooltip = [
        alt.Tooltip("a:Q", title=first),
        alt.Tooltip("b:Q", title=second),
        alt.Tooltip("cos:Q", title="cosine similarity", format=".3f"),
    ]
    cells = base.mark_rect().encode(
        x=x,
        y=y,
        color=alt.Color(
            "cos:Q",
            title="cosine similarity",
            scale=alt.Scale(scheme="redblue", reverse=True, domain=[-1, 1]),
        ),
        tooltip=tooltip,
    )
    chosen = base.transform_filter(CHOSEN)
    outline = chosen.mark_rect(filled=False, stroke="#111", strokeWidth=2).encode(
        x=x, y=y, tooltip=tooltip
    )
    line = (
        chosen.transform_calculate(text=CHOSEN_TEXT)
        .mark_text(align="left", fontSize=13)
        .encode(x=alt.value(0), text=alt.Text("text:N", title="chosen"))
        .properties(name="chosen_line", width=size, height=20, view={"stroke": None})
    )
    heatmap = alt.layer(
        cells.properties(name="similarity"),
        outline.properties(name="chosen"),
        title="cosine similarity of table rows",
    ).properties(width=size, height=size)
    chart = alt.vconcat(heatmap, line).add_params(filling, span, row_a, row_b)
    # Altair suffixes the layers' names with their position; they are unique.
    return alt.VConcatChart.from_dict(plain_names(chart.to_dict()))


def similarity_figure(still: Figure | None = None) -> Interactive:
    """Chapter 3's row-similarity figure: the chart, and its still.

    ``still`` is the matplotlib figure print and readers without JavaScript get
    (the chapter passes the one a later cell reads); by default it is
    ``plot.row_similarity`` of the chart's first view, the random table at k = 16.
    """
    if still is None:
        still = plot.row_similarity(
            table_weight("normal", 16), 16, range(-16, 16), title="random (normal) init"
        )
    trained = results.load(TRAINED_FILE)["training"]
    alt_text = (
        "Heatmap of the cosine similarity between every two rows of a table of "
        "2k rows, k = 16 (distances -16 to 15), randomly initialised (normal, "
        "hidden size 768): 1 on the diagonal, near 0 everywhere else. The controls "
        "choose the span k (2, 4, 8 or 16) and the table: random, sinusoidal (a "
        "wide bright band along the diagonal) or trained (the table a one-layer "
        f"DeBERTa model of width 32 learned in {trained['steps']} steps on the "
        "relative task, output the token 3 positions back; at k = 8 and 16 the row "
        "of distance 3 points away from every other row). Two sliders choose a "
        "cell, whose similarity a line of text prints."
    )
    hint = (
        "Choose the table and the span k; hover a cell, or move the two distances, "
        "for the similarity of two rows. Random and sinusoidal tables have hidden "
        "size 768; the trained one is a width-32 DeBERTa model's, trained on the "
        "relative task."
    )
    return Interactive(similarity_chart(), name="table", alt=alt_text,
                       still=still, hint=hint)


def main(argv: Sequence[str] | None = None) -> None:
    """Write the trained tables: ``python -m relpos.book.interactive``."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--output", type=Path,
                        default=Path("relpos/book/results") / TRAINED_FILE)
    args = parser.parse_args(argv)
    from relpos.book.experiments.sweep import machine_info

    start = time.perf_counter()
    written = trained_tables()
    written["command"] = "python -m relpos.book.interactive"
    written["machine"] = {**machine_info(), "torch_threads": 1}
    written["seconds"] = round(time.perf_counter() - start, 1)
    text = json.dumps(written, separators=(",", ":"))
    args.output.write_text(text + "\n", encoding="utf-8")
    print(f"wrote {args.output} ({len(text) / 1024:.0f} KB)")



__all__ = ["similarity_chart", "similarity_figure", "similarity", "table_weight",
           "trained_tables", "SECOND_DISTANCE"]
