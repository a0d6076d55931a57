"""The three score maps of a small example, and the gather made visible.

c2c, c2p and p2c of chapter 4's small example, every value from ``relpos``
(``content_to_position``, ``position_to_content``), next to the two matrices the
position terms gather from: ``Q Pk^T`` (every query against every table row,
``(i, r)``) beside c2p and ``K Pq^T`` (every key against every row, ``(j, r)``)
beside p2c. One pair ``(i, j)`` is chosen, by hovering a cell of c2c, c2p or
p2c or with the sliders for query i and key j; its cell is outlined in the three
maps, and in the two full matrices the cell of table row ``r = delta(i, j)`` it
reads, with a line of text printing the numbers.

The row ``r`` of every pair is ``index[i, j]`` as given (and the text lines are
written here), so the browser computes nothing: it only filters the pair
chosen (:data:`PICKED`).
"""

from __future__ import annotations

from typing import Any

import altair as alt
import numpy as np
import torch

from relpos import content_to_position, position_to_content
from relpos.book import plot

from ._controls import plain_names, slider
from ._figure import Interactive

DECIMALS = 4
#: The pair chosen: the cell hovered, else the sliders' (query i, key j).
CHOSEN_I = "isValid(pair.i) ? pair.i[0] : query"
CHOSEN_J = "isValid(pair.j) ? pair.j[0] : key"
#: A datum of the pairs' data is the chosen pair.
PICKED = "datum.i == chosen_i && datum.j == chosen_j"
#: Hovering a cell of c2c, c2p or p2c chooses its pair (cleared on leaving it).
HOVER = {
    "name": "pair",
    "select": {"type": "point", "fields": ["i", "j"], "on": "pointerover",
               "clear": "pointerout"},
    "views": ["c2c_cells", "c2p_cells", "p2c_cells"],
}
CELL = 40  # pixels per matrix cell
MAX_TOKENS, MAX_ROWS = 8, 16


def _matrix(name: str, value: Any) -> torch.Tensor:
    if not isinstance(value, (torch.Tensor, np.ndarray)):
        raise TypeError(f"{name} must be a tensor, got {type(value).__name__}")
    tensor = torch.as_tensor(value)
    if tensor.dim() != 2:
        raise ValueError(f"{name} must be 2-D, got shape {tuple(tensor.shape)}")
    return tensor


def _number(x: float) -> float | int:
    x = round(float(x), DECIMALS) + 0.0  # no -0.0
    return int(x) if x.is_integer() else x


def stream_values(
    query: torch.Tensor,
    key: torch.Tensor,
    pos_query: torch.Tensor,
    pos_key: torch.Tensor,
    index: torch.Tensor,
) -> dict[str, torch.Tensor]:
    """c2c, c2p, p2c and the two full matrices, computed with ``relpos``.

    Shapes:
        query, key: ``(n, d)``; pos_query, pos_key: ``(2k, d)``; index: ``(i, j)``
        output: c2c, c2p, p2c ``(i, j)``; query_rows ``(i, r)``; key_rows ``(j, r)``
    """
    q, k = _matrix("query", query), _matrix("key", key)
    pq, pk = _matrix("pos_query", pos_query), _matrix("pos_key", pos_key)
    rows = _matrix("index", index)
    n, width = q.shape
    if k.shape[0] != n or not 1 <= n <= MAX_TOKENS:
        raise ValueError(
            f"query and key must hold the same 1 ... {MAX_TOKENS} tokens, got "
            f"{n} and {k.shape[0]}"
        )
    if pq.shape != pk.shape or not 2 <= pk.shape[0] <= MAX_ROWS or pk.shape[0] % 2:
        raise ValueError(
            f"pos_query and pos_key must have the same 2k <= {MAX_ROWS} rows, got "
            f"{tuple(pq.shape)} and {tuple(pk.shape)}"
        )
    if not (k.shape[1] == pq.shape[1] == pk.shape[1] == width):
        raise ValueError(
            "query, key, pos_query and pos_key must share their width d, got "
            f"{width}, {k.shape[1]}, {pq.shape[1]}, {pk.shape[1]}"
        )
    if rows.shape != (n, n) or rows.dtype.is_floating_point or rows.min() < 0 or (
        rows.max() >= pk.shape[0]
    ):
        raise ValueError(
            f"index must be an ({n}, {n}) integer matrix of table rows "
            f"0 ... {pk.shape[0] - 1}"
        )
    q, k, pq, pk = (m.double() for m in (q, k, pq, pk))
    rows = rows.long()
    return {
        "c2c": q @ k.T,
        "c2p": content_to_position(q[None, None], pk[None], rows)[0, 0],
        "p2c": position_to_content(k[None, None], pq[None], rows)[0, 0],
        "query_rows": q @ pk.T,
        "key_rows": k @ pq.T,
        "index": rows,
    }


def _data(values: dict[str, torch.Tensor]) -> tuple[list, list, list, list]:
    rows = values["index"]
    n, table = rows.shape[0], values["query_rows"].shape[1]
    pairs, lines = [], []
    for i in range(n):
        for j in range(n):
            r = int(rows[i, j])
            c2c, c2p, p2c = (_number(values[t][i, j]) for t in ("c2c", "c2p", "p2c"))
            qpk = _number(values["query_rows"][i, r])
            kpq = _number(values["key_rows"][j, r])
            pairs.append({"i": i, "j": j, "d": i - j, "r": r,
                          "c2c": c2c, "c2p": c2p, "p2c": p2c})
            texts = (
                f"c2c[{i}, {j}] = Q{i} · K{j} = {c2c}",
                f"c2p[{i}, {j}] = (Q Pkᵀ)[{i}, {r}] = {qpk},  "
                f"r = delta({i}, {j}) = {r}",
                f"p2c[{i}, {j}] = (K Pqᵀ)[{j}, {r}] = {kpq},  "
                f"r = delta({i}, {j}) = {r}",
            )
            lines += [{"i": i, "j": j, "line": n_, "text": t}
                      for n_, t in enumerate(texts)]
    query_rows = [{"i": i, "r": r, "v": _number(values["query_rows"][i, r])}
                  for i in range(n) for r in range(table)]
    key_rows = [{"j": j, "r": r, "v": _number(values["key_rows"][j, r])}
                for j in range(n) for r in range(table)]
    return pairs, lines, query_rows, key_rows


def _panel(
    data: list[dict[str, Any]],
    *,
    name: str,
    x: tuple[str, str],
    y: tuple[str, str],
    value: tuple[str, str],
    title: str,
    color: alt.Color,
    bound: float,
) -> alt.Chart:
    """One matrix: coloured cells with their values written in, no pick yet."""
    base = alt.Chart(alt.Data(values=data)).encode(
        x=alt.X(f"{x[0]}:O", title=x[1], axis=alt.Axis(labelAngle=0)),
        y=alt.Y(f"{y[0]}:O", title=y[1]),
    )
    tooltip = [alt.Tooltip(f"{y[0]}:Q", title=y[1]),
               alt.Tooltip(f"{x[0]}:Q", title=x[1])]
    if x[0] == "j":
        tooltip += [alt.Tooltip("d:Q", title="distance i - j"),
                    alt.Tooltip("r:Q", title="table row r")]
    tooltip.append(alt.Tooltip(f"{value[0]}:Q", title=value[1]))
    cells = base.mark_rect().encode(
        color=color, tooltip=tooltip
    ).transform_calculate(v=f"datum.{value[0]}")
    dark = f"abs(datum.{value[0]}) > {0.6 * bound}"
    numbers = base.mark_text(fontSize=12, aria=False).encode(
        text=alt.Text(f"{value[0]}:Q", format=".3~f"),
        color=alt.condition(dark, alt.value("white"), alt.value("black")),
    )
    return alt.layer(
        cells.properties(name=f"{name}_cells"), numbers.properties(name=f"{name}_text"),
        title=title,
    )


def _pick(
    data: list[dict[str, Any]], *, name: str, x: tuple[str, str], y: tuple[str, str]
) -> alt.Chart:
    """The outline of the chosen pair's cell, drawn from the pairs' data."""
    return (
        alt.Chart(alt.Data(values=data))
        .transform_filter(PICKED)
        .mark_rect(filled=False, stroke="#111", strokeWidth=3)
        .encode(
            x=alt.X(f"{x[0]}:O", title=x[1], axis=alt.Axis(labelAngle=0)),
            y=alt.Y(f"{y[0]}:O", title=y[1]),
            tooltip=[alt.Tooltip("i:Q", title="query i"),
                     alt.Tooltip("j:Q", title="key j"),
                     alt.Tooltip("r:Q", title="table row r")],
        )
        .properties(name=f"{name}_pick")
    )


def gather_chart(
    query: torch.Tensor,
    key: torch.Tensor,
    pos_query: torch.Tensor,
    pos_key: torch.Tensor,
    index: torch.Tensor,
    *,
    pair: tuple[int, int] | None = None,
) -> alt.VConcatChart:
    """c2c, c2p beside ``Q Pk^T``, p2c beside ``K Pq^T``; one pair's gather outlined.

    ``pair`` is the (query i, key j) the sliders start at (default: the last
    query and the first key, the pair furthest behind).

    Shapes:
        query, key: ``(n, d)``; pos_query, pos_key: ``(2k, d)``; index: ``(i, j)``
    """
    values = stream_values(query, key, pos_query, pos_key, index)
    n = values["index"].shape[0]
    start = (n - 1, 0) if pair is None else pair
    if not (isinstance(start, tuple) and len(start) == 2
            and all(isinstance(x, int) and 0 <= x < n for x in start)):
        raise ValueError(f"pair must be a (query, key) pair of ints in [0, {n}), "
                         f"got {pair!r}")
    pairs, lines, query_rows, key_rows = _data(values)
    bound = max(float(values[t].abs().max()) for t in ("c2c", "query_rows", "key_rows"))
    bound = _number(bound) or 1
    color = alt.Color(
        "v:Q", title="score",
        scale=alt.Scale(scheme="redblue", reverse=True, domain=[-bound, bound]),
    )
    query_i = slider("query", "query i", start[0], 0, n - 1)
    key_j = slider("key", "key j", start[1], 0, n - 1)
    chosen = [alt.param(name="chosen_i", expr=CHOSEN_I),
              alt.param(name="chosen_j", expr=CHOSEN_J)]
    I, J, R = ("i", "query i"), ("j", "key j"), ("r", "table row r")

    def pair_map(term: str, title: str) -> alt.LayerChart:
        panel = _panel(pairs, name=term, x=J, y=I, value=(term, term), title=title,
                       color=color, bound=bound)
        return (panel + _pick(pairs, name=term, x=J, y=I)).properties(
            width=alt.Step(CELL), height=alt.Step(CELL))

    def full(data: list, name: str, y: tuple[str, str], title: str) -> alt.LayerChart:
        label = "Q Pkᵀ" if name == "qpk" else "K Pqᵀ"
        panel = _panel(data, name=name, x=R, y=y, value=("v", label), title=title,
                       color=color, bound=bound)
        return (panel + _pick(pairs, name=name, x=R, y=y)).properties(
            width=alt.Step(CELL), height=alt.Step(CELL))

    text = (
        alt.Chart(alt.Data(values=lines))
        .transform_filter(PICKED)
        .mark_text(align="left", fontSize=13, font="monospace")
        .encode(
            x=alt.value(0),
            y=alt.Y("line:O", axis=None),
            text=alt.Text("text:N", title="gather"),
        )
        .properties(name="gather_lines", width=440, height=66, view={"stroke": None})
    )
    chart = (
        alt.vconcat(
            pair_map("c2c", "c2c = Q Kᵀ"),
            alt.hconcat(
                pair_map("c2p", "c2p, column r = delta(i, j) of row i"),
                full(query_rows, "qpk", I, "Q Pkᵀ, every query against every row"),
            ),
            alt.hconcat(
                pair_map("p2c", "p2c, column r = delta(i, j) of row j"),
                full(key_rows, "kpq", J, "K Pqᵀ, every key against every row"),
            ),
            text,
        )
        .add_params(query_i, key_j, *chosen)
        .resolve_scale(color="shared")
    )
    # The hover selection is written into the spec by hand: Altair would list
    # every layer of the three maps as its views, and Vega refuses the repeats.
    # Altair also suffixes the names of layers in a concat with their position;
    # the names given here are unique already.
    spec = plain_names(chart.to_dict())
    spec["params"].insert(0, HOVER)
    return alt.VConcatChart.from_dict(spec)


def gather_figure(
    query: torch.Tensor,
    key: torch.Tensor,
    pos_query: torch.Tensor,
    pos_key: torch.Tensor,
    index: torch.Tensor,
    *,
    still: Any = None,
) -> Interactive:
    """Chapter 4's streams figure: the chart, and ``plot.disentangled_streams``.

    ``still`` may be the matplotlib figure already drawn from the same matrices
    (a later cell reads its data); by default it is drawn here.

    Shapes:
        query, key: ``(n, d)``; pos_query, pos_key: ``(2k, d)``; index: ``(i, j)``
    """
    chart = gather_chart(query, key, pos_query, pos_key, index)
    if still is None:
        still = plot.disentangled_streams(query, key, pos_query, pos_key, index)
    n, rows = int(index.shape[0]), int(pos_key.shape[0])
    alt_text = (
        f"The c2c, c2p and p2c score maps of the {n}-token example, each value "
        f"written in its cell, with the {n} by {rows} matrices they gather from: "
        "Q Pk transposed (every query against every table row) beside c2p and K Pq "
        "transposed (every key against every row) beside p2c. The pair of the "
        f"last query and the first key is outlined, with the table row delta({n - 1}"
        ", 0) it reads in both full matrices; the sliders for query i and key j "
        "choose another pair, and a line of text prints its gather."
    )
    hint = (
        "Hover a cell of c2c, c2p or p2c, or move query i and key j: the outlines "
        "show the table row r = delta(i, j) that pair reads."
    )
    return Interactive(chart, name="gather", alt=alt_text, still=still, hint=hint)


__all__ = ["CHOSEN_I", "CHOSEN_J", "PICKED", "gather_chart", "gather_figure",
           "stream_values"]
