"""Reading and presenting what positions cost: the check, the series, the table.

:func:`load_costs` reads the JSON of ``python -m relpos.book.bench costs`` and
checks it; :func:`cost_series` gives each scheme and backend's ratios against
``n`` (what the figure draws); :func:`cost_table` lays the ratios out as text,
one line per scheme and backend, one column per length, with each scheme's
arithmetic floor on a line of its own; :func:`bounds_table` sets each scheme's
best kernel at the longest length beside the bound the library holds itself to
(:data:`BOUNDS`).
"""

from __future__ import annotations

import json
import textwrap
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from .cells import PLAIN
from .costs import COST_KEYS, KIND, SCHEMA
from .report import check_rows

#: What a series can hold: the time ratio, the memory ratio or the floor.
MEASURES = ("time_ratio", "memory_ratio", "floor_ratio")
#: The forward time each scheme should cost at most, as a multiple of plain
#: attention at the longest measured length, on all the machine's threads: a
#: little above its arithmetic floor (1 for the biases and rotary, 1.22 for
#: DeBERTa, 1.16 for Shaw, 1.17 for FIRE, 1.88 for Transformer-XL at n = 2048).
BOUNDS = {
    "deberta": 1.5,
    "deberta-buckets": 1.5,
    "shaw": 1.5,
    "transformer_xl": 2.5,
    "t5": 1.2,
    "alibi": 1.2,
    "rotary": 1.2,
    "fire": 1.3,
    "kerple": 1.2,
}


def load_costs(path: str | Path | Traversable) -> dict[str, Any]:
    """Read a positions-cost JSON and check its schema, kind and rows.

    ``path`` is a file path or a committed result
    (``relpos.book.results.path("bench_costs.json")``). ValueError naming what is
    missing or malformed.
    """
    file = Path(path) if isinstance(path, str) else path
    data = json.loads(file.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ValueError(f"{path}: schema must be {SCHEMA} (a positions-cost file)")
    if data.get("kind") != KIND:
        raise ValueError(f"{path}: kind must be {KIND!r}, got {data.get('kind')!r}")
    for key in ("machine", "config", "results", "command"):
        if key not in data:
            raise ValueError(f"{path}: missing top-level key {key!r}")
    check_rows(path, data["results"], COST_KEYS)
    return data


def cost_series(
    data: dict[str, Any], measure: str = "time_ratio"
) -> dict[tuple[str, str], list[tuple[int, float]]]:
    """Each scheme and backend's ``measure`` against ``n``, where it was measured.

    Plain attention (1 by definition) is left out; so are the lengths where a
    cell was skipped or failed. ``floor_ratio`` is the same for every backend of
    a scheme.

    Shapes:
        output: ``{(scheme, backend): [(n, ratio), ...]}``, ``n`` increasing
    """
    if measure not in MEASURES:
        raise ValueError(f"measure must be one of {MEASURES}, got {measure!r}")
    series: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for row in data["results"]:
        if row["scheme"] == PLAIN or row["status"] != "ok" or row[measure] is None:
            continue
        series.setdefault((row["scheme"], row["backend"]), []).append(
            (row["n"], row[measure])
        )
    return {cell: sorted(points) for cell, points in series.items()}


def _cells(data: dict[str, Any]) -> list[tuple[str, str]]:
    seen: dict[tuple[str, str], None] = {}
    for row in data["results"]:
        if row["scheme"] != PLAIN:
            seen[row["scheme"], row["backend"]] = None
    return list(seen)


def cost_table(data: dict[str, Any], width: int = 88) -> str:
    """Time and memory as multiples of plain attention, a line per scheme and backend.

    Each column is one length: ``time x / memory x`` where the cell ran, ``skip``
    or the failure's status where it did not. A scheme's first line is its
    ``floor`` (the arithmetic floor, :func:`relpos.book.bench.roofline.cost_floor`),
    and plain attention's own times head the table. Skip reasons follow, wrapped
    to ``width``.
    """
    config = data["config"]
    lengths = sorted({row["n"] for row in data["results"]})
    rows = {(r["scheme"], r["backend"], r["n"]): r for r in data["results"]}
    header = ["scheme", "backend", *[f"n={n}" for n in lengths]]
    lines = [["plain", "sdpa s", *[
        _seconds(rows.get((PLAIN, "sdpa", n))) for n in lengths
    ]]]
    reasons: dict[str, None] = {}
    last_scheme = None
    for scheme, backend in _cells(data):
        if scheme != last_scheme:
            floors = [rows.get((scheme, backend, n), {}).get("floor_ratio")
                      for n in lengths]
            lines.append([scheme, "floor",
                          *["-" if f is None else f"{f:.2f}" for f in floors]])
            last_scheme = scheme
        cells = []
        for n in lengths:
            row = rows.get((scheme, backend, n))
            if row is None:
                cells.append("")
            elif row["status"] != "ok":
                cells.append("skip" if row["status"] == "skipped" else row["status"])
                why = row["note"] or row["error"]
                reasons[f"n={n} {scheme} {backend}: {why}"] = None
            else:
                memory = row["memory_ratio"]
                memory_text = "-" if memory is None else f"{memory:.1f}"
                cells.append(f"{row['time_ratio']:.2f} / {memory_text}")
        lines.append(["", backend, *cells])
    widths = [
        max(len(line[c]) for line in [header, *lines]) for c in range(len(header))
    ]

    def render(cells: list[str]) -> str:
        return "  ".join(
            cell.ljust(w) if c < 2 else cell.rjust(w)
            for c, (cell, w) in enumerate(zip(cells, widths))
        ).rstrip()

    title = (
        f"what positions cost on {data['machine']['device']}, {config['dtype']}, "
        f"{config['threads']} thread(s), batch {config['batch']}, hidden "
        f"{config['hidden']}, {config['heads']} heads, k {config['span']}; "
        f"time x / memory x = multiples of plain attention at the same n "
        f"(median of {config['repeats']}); floor = least matmul work, same ratio."
    )
    body = [render(header), "-" * len(render(header)), *map(render, lines)]
    notes = [
        wrapped for reason in reasons
        for wrapped in textwrap.wrap(reason, width, subsequent_indent="    ")
    ]
    return "\n".join([*textwrap.wrap(title, width), *body, *notes])


def _seconds(row: dict[str, Any] | None) -> str:
    if row is None or row["forward_s"] is None:
        return "-"
    return f"{row['forward_s']:.4f}"


__all__ = ["MEASURES", "cost_series", "cost_table", "load_costs"]


def best_cells(data: dict[str, Any], n: int) -> dict[str, dict[str, Any]]:
    """Each scheme's fastest measured kernel at length ``n``: its row.

    Shapes:
        output: ``{scheme: row}`` for the schemes measured at ``n``
    """
    best: dict[str, dict[str, Any]] = {}
    for row in data["results"]:
        if row["scheme"] == PLAIN or row["n"] != n or row["status"] != "ok":
            continue
        held = best.get(row["scheme"])
        if held is None or row["time_ratio"] < held["time_ratio"]:
            best[row["scheme"]] = row
    return best


def bounds_table(data: dict[str, Any]) -> str:
    """Each scheme's fastest kernel at the longest length against its bound.

    One line per scheme of :data:`BOUNDS` that was measured: the bound, the
    kernel, its time and memory as multiples of plain attention, the floor, and
    whether the time is within the bound.
    """
    n = max(row["n"] for row in data["results"])
    best = best_cells(data, n)
    header = ["scheme", "bound", "kernel", "time x", "memory x", "floor", "within"]
    lines = []
    for scheme, bound in BOUNDS.items():
        row = best.get(scheme)
        if row is None:
            continue
        memory = row["memory_ratio"]
        lines.append([
            scheme, f"{bound:.1f}", row["backend"], f"{row['time_ratio']:.2f}",
            "-" if memory is None else f"{memory:.1f}", f"{row['floor_ratio']:.2f}",
            "yes" if row["time_ratio"] <= bound else "no",
        ])
    widths = [max(len(r[c]) for r in [header, *lines]) for c in range(len(header))]

    def render(cells: list[str]) -> str:
        return "  ".join(
            cell.ljust(w) if c in (0, 2) else cell.rjust(w)
            for c, (cell, w) in enumerate(zip(cells, widths))
        ).rstrip()

    title = f"n = {n}: each scheme's fastest kernel against its bound (x plain)"
    rule = "-" * len(render(header))
    return "\n".join([title, render(header), rule, *map(render, lines)])
