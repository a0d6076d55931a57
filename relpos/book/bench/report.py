"""Reading results back and presenting them: the schema, the ratios, the table.

:func:`load_results` reads a JSON file written by :func:`run_benchmark` and
rejects one of an unknown schema or with missing keys (a schema 1 file, written
before the roofline, loads as it is: :func:`relpos.book.bench.roofline.roofline`
computes its FLOP from the config and leaves its fractions unknown);
:func:`ratios` expresses
every result's time and memory as a multiple of transformers' at the same
length; :func:`format_table` lays the numbers and ratios out as plain text, the
form ``python -m relpos.book.bench`` prints and the book shows.
"""

from __future__ import annotations

import json
import textwrap
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from .config import (
    MIB,
    MATMUL_KEYS,
    READABLE_SCHEMAS,
    RESULT_KEYS,
    ROOFLINE_KEYS,
    STATUSES,
)
from .roofline import roofline

# -- reading and presenting results ----------------------------------------------------


def load_results(path: str | Path | Traversable) -> dict[str, Any]:
    """Read a results file written by :func:`run_benchmark` and check its schema.

    ``path`` is a file path, or a committed result such as
    ``relpos.book.results.path("bench_cpu.json")``. Schemas 1 and 2 are read and
    returned unchanged; schema 2 must carry ``machine["matmul"]`` and each row's
    ``flops`` and ``roofline_fraction``. Raises ``ValueError`` naming what is
    missing or malformed.
    """
    file = Path(path) if isinstance(path, str) else path
    data = json.loads(file.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("schema") not in READABLE_SCHEMAS:
        got = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise ValueError(
            f"{path}: schema must be one of {READABLE_SCHEMAS}, got {got!r}"
        )
    for key in ("machine", "config", "results"):
        if key not in data:
            raise ValueError(f"{path}: missing top-level key {key!r}")
    row_keys = RESULT_KEYS
    if data["schema"] >= 2:
        row_keys = RESULT_KEYS + ROOFLINE_KEYS
        matmul = data["machine"].get("matmul")
        matmul = matmul if isinstance(matmul, dict) else {}
        missing = [key for key in MATMUL_KEYS if key not in matmul]
        if missing:
            raise ValueError(
                f"{path}: machine.matmul lacks {missing} (schema {data['schema']})"
            )
    check_rows(path, data["results"], row_keys)
    return data


def check_rows(path: object, rows: list[dict[str, Any]], keys: tuple[str, ...]) -> None:
    """Every row has ``keys`` and a status of ``STATUSES``; ValueError naming the row.
    """
    for i, row in enumerate(rows):
        missing = [key for key in keys if key not in row]
        if missing:
            raise ValueError(f"{path}: results[{i}] lacks {missing}")
        if row["status"] not in STATUSES:
            raise ValueError(
                f"{path}: results[{i}].status must be one of {STATUSES}, "
                f"got {row['status']!r}"
            )


def _ratio(value: float | None, reference: float | None) -> float | None:
    if value is None or reference is None or reference <= 0:
        return None
    return value / reference


def ratios(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Every result's time and memory as a multiple of transformers' at the same length.

    One entry per result, in order: ``{"backend", "n", "time_ratio",
    "backward_ratio", "memory_ratio"}``; a ratio is None where either number is
    missing (not measured, skipped, failed, or no transformers row).
    """
    rows = results["results"]
    reference = {
        row["n"]: row
        for row in rows
        if row["backend"] == "transformers" and row["status"] == "ok"
    }
    out = []
    for row in rows:
        ref = reference.get(row["n"], {})
        ok = row["status"] == "ok"
        out.append(
            {
                "backend": row["backend"],
                "n": row["n"],
                "time_ratio": _ratio(row["forward_s"], ref.get("forward_s"))
                if ok
                else None,
                "backward_ratio": _ratio(row["backward_s"], ref.get("backward_s"))
                if ok
                else None,
                "memory_ratio": _ratio(row["peak_bytes"], ref.get("peak_bytes"))
                if ok
                else None,
            }
        )
    return out


def _cell(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def format_table(results: dict[str, Any], width: int = 88) -> str:
    """A plain-text table: per length and backend, times, memory, ratios to reference.

    ``GFLOP`` is the forward's matrix-multiply work and ``roofline`` the fraction
    of the measured matmul throughput the forward reached (``-`` where unknown,
    as in results written before the roofline was measured). The title is wrapped
    to ``width`` characters; a measurement that did not succeed shows its status
    and reason in place of its numbers, wrapped under them, so that without the
    backward columns every line fits in ``width`` (88, the book's column).
    """
    if not isinstance(width, int) or width < 40:
        raise ValueError(f"width must be an int of at least 40, got {width!r}")
    config, machine = results["config"], results["machine"]
    show_backward = any(row.get("backward_s") is not None for row in results["results"])
    header = ["n", "backend", "forward s", "x ref", "GFLOP", "roofline"]
    if show_backward:
        header += ["fwd+bwd s", "x ref"]
    header += ["peak MiB", "x ref", "compile s"]
    lines, reasons = [], {}
    for row, ratio, roof in zip(results["results"], ratios(results), roofline(results)):
        note = row.get("note") or row.get("error") or ""
        if row["status"] != "ok":
            reasons[len(lines)] = f"{row['status']}: {note}" if note else row["status"]
            lines.append([str(row["n"]), row["backend"]])
            continue
        cells = [
            str(row["n"]),
            row["backend"],
            _cell(row["forward_s"], ".4f"),
            _cell(ratio["time_ratio"], ".2f"),
            _cell(roof["flops"] / 1e9, ".1f"),
            _cell(roof["fraction"], ".2f"),
        ]
        if show_backward:
            cells += [
                _cell(row.get("backward_s"), ".4f"),
                _cell(ratio["backward_ratio"], ".2f"),
            ]
        peak = row["peak_bytes"] / MIB if row["peak_bytes"] is not None else None
        cells += [_cell(peak, ".1f"), _cell(ratio["memory_ratio"], ".2f")]
        cells += [_cell(row["compile_s"], ".1f")]
        if note:
            reasons[len(lines)] = note
        lines.append(cells)
    widths = [
        max(len(line[c]) for line in [header, *lines] if c < len(line))
        for c in range(len(header))
    ]

    def render(cells: list[str]) -> str:
        left = {1}  # the backend reads better left-aligned
        parts = [
            cell.ljust(width) if c in left else cell.rjust(width)
            for c, (cell, width) in enumerate(zip(cells, widths))
        ]
        return "  ".join(parts).rstrip()

    indent = widths[0] + 2 + widths[1] + 2  # a reason starts where the numbers do
    body = []
    for number, cells in enumerate(lines):
        text = render(cells)
        if number not in reasons:
            body.append(text)
            continue
        reason = reasons[number]
        if len(cells) == 2:  # no numbers: the reason takes their place
            first, rest = text.ljust(indent) + reason, ""
        else:
            first, rest = text, reason
        wrapped = textwrap.wrap(
            first, width, subsequent_indent=" " * indent, break_on_hyphens=False
        )
        if rest:
            wrapped += textwrap.wrap(
                rest, width, initial_indent=" " * indent,
                subsequent_indent=" " * indent, break_on_hyphens=False,
            )
        body.extend(wrapped)

    title = (
        f"disentangled attention on {machine['device']} ({machine['device_name']}), "
        f"{config['dtype']}, "
        f"batch {config['batch']}, hidden {config['hidden']}, heads {config['heads']}, "
        f"max_relative_positions {config['max_relative_positions']}, "
        f"position_buckets {config['position_buckets']}; "
        f"median of {config['repeats']}; "
        f"x ref = ratio to transformers at the same n."
    )
    matmul = machine.get("matmul")
    if matmul:
        title += (
            f" roofline = GFLOP / forward s / matmul throughput "
            f"({matmul['flop_per_s'] / 1e9:.1f} GFLOP/s, "
            f"{matmul['size']}^3 {matmul['dtype']} matmul, "
            f"{matmul['threads']} threads, median of {len(matmul['runs_s'])})."
        )
    else:
        title += (
            " roofline: no matmul throughput in these results "
            "(measured from schema 2 on)."
        )
    head = render(header)
    rule = "-" * max(len(head), *(len(line) for line in body))
    title_lines = textwrap.wrap(title, width, break_on_hyphens=False)
    return "\n".join([*title_lines, head, rule, *body])
