"""Chapter 2's figure, live: the distance ``i - j`` and the table row ``delta(i, j)``.

Two ``n`` by ``n`` matrices side by side, with sliders for the sequence length
``n`` and the span ``k``. The browser computes both matrices itself, from a grid
of cell numbers (``alt.sequence``) and the two expressions :data:`DISTANCE` and
:data:`DELTA`; the tests evaluate those same expressions outside the browser
(:func:`relpos.book.interactive.evaluate`) and compare them with
``relpos.relative_positions`` and ``relpos.delta``.

Hovering a cell shows its i, j, i - j and delta(i, j) and outlines it in both
matrices; two more sliders (query i, key j) choose a cell from the keyboard, and
a line of text under the matrices prints its values.
"""

from __future__ import annotations

import altair as alt
from matplotlib.figure import Figure

from relpos.checks import check_int

from ._controls import hovered_or, slider
from ._figure import Interactive

# The two formulas the browser evaluates, for cell (datum.i, datum.j) and span k.
DISTANCE = "datum.i - datum.j"
DELTA = "clamp(datum.i - datum.j, -k, k - 1) + k"

# The chosen cell: the hovered one, else the one the sliders name (kept in the matrix).
_CHOSEN_I = hovered_or(0, "min(qi, n - 1)")
_CHOSEN_J = hovered_or(1, "min(kj, n - 1)")

SIDE = 225  # px, each matrix: both and their legends fit in 700 px


def _check(n: int, k: int, max_n: int, max_k: int) -> tuple[int, int, int, int]:
    max_n = check_int("max_n", max_n, minimum=2)
    max_k = check_int("max_k", max_k, minimum=1)
    n = check_int("n", n, minimum=2)
    k = check_int("k", k, minimum=1)
    if n > max_n:
        raise ValueError(f"n must be <= max_n={max_n}, got n={n}")
    if k > max_k:
        raise ValueError(f"k must be <= max_k={max_k}, got k={k}")
    if max_n > 32:
        raise ValueError(f"max_n must be <= 32 (cells stay readable), got {max_n}")
    return n, k, max_n, max_k


def _matrix(
    cells: alt.Chart,
    *,
    name: str,
    field: str,
    title: str | alt.Title,
    legend: str,
    scale: alt.Scale,
) -> alt.Chart:
    """One matrix: coloured cells, the chosen cell outlined and drawn last."""
    return (
        cells.mark_rect(strokeWidth=3)
        .encode(
            x=alt.X("j:O", title="key position j", axis=alt.Axis(labelAngle=0)),
            y=alt.Y("i:O", title="query position i"),
            color=alt.Color(f"{field}:Q", title=legend, scale=scale),
            stroke=alt.condition("datum.chosen", alt.value("black"), alt.value(None)),
            order=alt.Order("chosen:Q"),
            tooltip=[
                alt.Tooltip("i:Q", title="i"),
                alt.Tooltip("j:Q", title="j"),
                alt.Tooltip("distance:Q", title="i - j"),
                alt.Tooltip("delta:Q", title="delta(i, j)"),
            ],
        )
        .properties(name=name, title=title, width=SIDE, height=SIDE)
    )


def delta_chart(
    n: int = 8, k: int = 3, *, max_n: int = 16, max_k: int = 8
) -> alt.VConcatChart:
    """The distance and delta matrices at ``n`` and ``k``, both moved by sliders.

    Args:
        n: the sequence length shown first, ``2 <= n <= max_n``.
        k: the span shown first, ``1 <= k <= max_k``.
        max_n: the longest sequence the n slider reaches (at most 32).
        max_k: the largest span the k slider reaches.

    Returns:
        The chart; its views ``distance`` and ``delta`` draw marks ``distance_marks``
        and ``delta_marks``, one item per cell ("key position j: 1; query position
        i: 3; table row: 5; chosen: 1; i: 3; j: 1; i - j: 2; delta(i, j): 5";
        ``chosen`` is 1 for the outlined cell), and its view ``chosen`` the line of
        text about the chosen cell.
    """
    n, k, max_n, max_k = _check(n, k, max_n, max_k)
    controls = [
        slider("n", "sequence length n", n, 2, max_n),
        slider("k", "span k", k, 1, max_k),
        slider("qi", "query i", min(3, n - 1), 0, max_n - 1),
        slider("kj", "key j", min(1, n - 1), 0, max_n - 1),
    ]
    # Hovering a cell of either matrix chooses it (Vega-Lite's store "hover_store").
    hover = alt.TopLevelSelectionParameter(
        name="hover",
        select=alt.PointSelectionConfig(
            type="point", on="pointerover", clear="pointerout", fields=["i", "j"]
        ),
        views=["distance", "delta"],
    )
    cells = (
        alt.Chart(alt.sequence(0, max_n * max_n, as_="cell"))
        .transform_calculate(
            i=f"floor(datum.cell / {max_n})", j=f"datum.cell % {max_n}"
        )
        .transform_filter("datum.i < n && datum.j < n")
        .transform_calculate(distance=DISTANCE, delta=DELTA)
        .transform_calculate(
            chosen=f"datum.i == ({_CHOSEN_I}) && datum.j == ({_CHOSEN_J}) ? 1 : 0"
        )
    )
    distance = _matrix(
        cells,
        name="distance",
        field="distance",
        title="distance i - j",
        legend="i - j",
        scale=alt.Scale(
            scheme="redblue", reverse=True, domain=alt.ExprRef("[1 - n, n - 1]")
        ),
    )
    delta = _matrix(
        cells,
        name="delta",
        field="delta",
        title=alt.Title(alt.ExprRef("'table row delta(i, j), k = ' + k")),
        legend="table row",
        scale=alt.Scale(scheme="viridis", domain=alt.ExprRef("[0, 2 * k - 1]")),
    )
    line = (
        alt.Chart(alt.sequence(0, 1, as_="cell"))
        .transform_calculate(i=_CHOSEN_I, j=_CHOSEN_J)
        .transform_calculate(distance=DISTANCE, delta=DELTA)
        .transform_calculate(
            text="'chosen cell: query i = ' + datum.i + ', key j = ' + datum.j"
            " + ', distance i - j = ' + datum.distance"
            " + ', table row delta(i, j) = ' + datum.delta"
        )
        .mark_text(align="left", fontSize=13, x=0, y=8)
        .encode(
            text="text:N",
            tooltip=[
                alt.Tooltip("i:Q", title="i"),
                alt.Tooltip("j:Q", title="j"),
                alt.Tooltip("distance:Q", title="i - j"),
                alt.Tooltip("delta:Q", title="delta(i, j)"),
            ],
        )
        .properties(name="chosen", width=2 * SIDE, height=16)
    )
    top = alt.hconcat(distance, delta, spacing=24).resolve_scale(color="independent")
    chart = alt.vconcat(top, line, spacing=8).add_params(*controls)
    chart.params = [hover, *chart.params]
    return chart


def delta_figure(
    n: int = 8,
    k: int = 3,
    *,
    max_n: int = 16,
    max_k: int = 8,
    still: Figure | None = None,
) -> Interactive:
    """:func:`delta_chart` with its still (``plot.index_heatmap(n, k)`` by default).

    ``still`` is the matplotlib figure print and readers without JavaScript get;
    pass the one a later cell checks.
    """
    chart = delta_chart(n, k, max_n=max_n, max_k=max_k)
    if still is None:
        from relpos.book import plot

        still = plot.index_heatmap(n, k)
    alt_text = (
        f"Two {n} by {n} matrices side by side: the distance i - j of each query "
        f"position i and key position j (zero on the diagonal, negative above it, "
        f"positive below), and the table row delta(i, j) for span k = {k}, from 0 to "
        f"{2 * k - 1}: every key {k} or more tokens ahead reads row 0 and every key "
        f"{k - 1} or more tokens behind reads row {2 * k - 1} (the window is "
        f"[{-k}, {k - 1}]). Sliders change n and k and choose a cell, whose values a "
        "line of text prints."
    )
    hint = (
        "Move n and k; hover a cell, or choose one with the query i and key j "
        "sliders, for its i, j, i - j and delta(i, j)."
    )
    return Interactive(chart, name="delta", alt=alt_text, still=still, hint=hint)


__all__ = ["DELTA", "DISTANCE", "delta_chart", "delta_figure"]
