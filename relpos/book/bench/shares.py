"""Where a scheme's time goes: each torch kernel's share of one forward.

The cost benchmark (:mod:`relpos.book.bench.costs`) says how many times plain
attention a scheme costs; this module says which of torch's kernels the time
is spent in, for the cells that stay above their bound
(``costs_report.BOUNDS``). One cell is a scheme on one backend; ``plain`` is the
benchmark's plain attention (the projections, then torch's fused kernel). Each
cell is built as the benchmark builds it (``cells.build_cell``), called twice
before anything is recorded (``flex`` compiles on its first call), then
``repeats`` forwards run under ``torch.profiler`` and, apart, ``repeats``
timed forwards beside as many of plain attention (the ratio, as the benchmark
takes it). A kernel's share is its *self* time (its children's not counted)
over the sum of every kernel's self time, so the shares of a cell add up to 1;
with more than one thread, a kernel's self time is the wall time of the thread
that called it while its workers ran.

Run it as a module (CPU)::

    python -m relpos.book.bench shares --n 2048 \\
        --cells deberta:gather,shaw:gather,fire:flex \\
        --output relpos/book/results/profile_shares.json

Shapes:
    every cell's input: ``(1, n, hidden)``; its output: ``(1, n, hidden)``
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any, Callable

import torch
from torch.profiler import ProfilerActivity, profile

from relpos.checks import check_int

from .. import _cli
from . import cells as cell_models
from .cells import PLAIN
from .costs import CostsConfig
from .measure import _timed

SCHEMA = 1
KIND = "kernel shares"
#: Kernels listed per cell; the rest are summed as ``other``.
TOP = 6


def parse_cells(text: str) -> list[tuple[str, str]]:
    """``"deberta:gather,plain"`` as ``[("deberta", "gather"), ("plain", "sdpa")]``."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"cells must be 'scheme:backend,...', got {text!r}")
    found = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        if part == PLAIN:
            found.append((PLAIN, cell_models.SDPA))
            continue
        scheme, _, backend = part.partition(":")
        if not backend:
            raise ValueError(f"cells must be 'scheme:backend,...', got {part!r}")
        found.append((scheme, backend))
    return found


def _forward(
    scheme: str, backend: str, config: CostsConfig, n: int
) -> tuple[Callable[[], torch.Tensor], Callable[[], torch.Tensor]]:
    """The cell's forward and plain attention's, on the same projections and input.
    """
    shapes = config.shapes
    projections = cell_models.plain_projections(shapes, config.seed)
    states = cell_models.make_hidden_states(n, shapes, config.seed, config.batch)
    plain = cell_models.forward_of(None, projections, states)
    if scheme == PLAIN:
        return plain, plain
    module = cell_models.build_cell(scheme, backend, shapes, projections, config.seed)
    return cell_models.forward_of(module, projections, states), plain


def cell_shares(
    scheme: str, backend: str, n: int, config: CostsConfig, top: int = TOP
) -> dict[str, Any]:
    """One cell at length ``n``: its time, its ratio to plain, its kernels' shares.

    Returns ``scheme``, ``backend``, ``n``, ``forward_s`` and ``plain_s`` (medians
    of ``config.repeats`` forwards, taken in turn), ``time_ratio`` and
    ``kernels``: the ``top`` kernels by self time, each ``name``, ``share`` and
    ``calls`` per forward, then ``other`` (the rest's share).
    """
    check_int("n", n, minimum=1)
    check_int("top", top, minimum=1)
    forward, plain = _forward(scheme, backend, config, n)
    for _ in range(2):  # flex compiles on its first call; the allocator warms up
        forward()
        plain()
    with profile(activities=[ProfilerActivity.CPU]) as recorded:
        for _ in range(config.repeats):
            forward()
    events = [e for e in recorded.key_averages() if e.self_cpu_time_total > 0]
    total = sum(e.self_cpu_time_total for e in events)
    events.sort(key=lambda e: e.self_cpu_time_total, reverse=True)
    kernels = [
        {
            "name": e.key,
            "share": e.self_cpu_time_total / total,
            "calls": e.count / config.repeats,
        }
        for e in events[:top]
    ]
    times, plains = [], []
    for _ in range(config.repeats):  # in turn, so a slow spell falls on both
        times.append(_timed(forward, "cpu"))
        plains.append(_timed(plain, "cpu"))
    forward_s, plain_s = statistics.median(times), statistics.median(plains)
    return {
        "scheme": scheme,
        "backend": backend,
        "n": n,
        "forward_s": forward_s,
        "plain_s": plain_s,
        "time_ratio": forward_s / plain_s,
        "kernels": kernels,
        "other": 1.0 - sum(k["share"] for k in kernels),
    }


def run_shares(
    cells: list[tuple[str, str]],
    n: int,
    *,
    config: CostsConfig = CostsConfig(),
    top: int = TOP,
    output: str | Path | None = None,
    command: str | None = None,
) -> dict[str, Any]:
    """:func:`cell_shares` for every cell, with the machine; return (and write) it."""
    from .run import machine_info

    if config.device != "cpu":
        raise ValueError(f"config.device must be 'cpu' (the profiler's CPU view), "
                         f"got {config.device!r}")
    if output is not None:
        output = _cli.check_writable("output", output, make_parents=True)
    threads = torch.get_num_threads()
    torch.set_num_threads(config.threads)
    load_before = list(os.getloadavg())
    try:
        rows = [cell_shares(s, b, n, config, top) for s, b in cells]
        machine = machine_info(config.device)
        machine.update(load_before=load_before, load_after=list(os.getloadavg()))
    finally:
        torch.set_num_threads(threads)
    data = {
        "schema": SCHEMA, "kind": KIND, "command": command, "machine": machine,
        "config": {"n": n, "top": top, "hidden": config.hidden, "heads": config.heads,
                   "span": config.span, "batch": config.batch, "dtype": config.dtype,
                   "repeats": config.repeats, "seed": config.seed,
                   "threads": config.threads},
        "cells": rows,
    }
    if output is not None:
        Path(output).write_text(json.dumps(data, indent=2) + "\n")
    return data


def _short(name: str) -> str:
    """A kernel's name without torch's namespace and its private underscores; a
    compiled graph (``flex``'s kernel) as ``compiled graph``."""
    if name.startswith("## Call CompiledFxGraph"):
        return "compiled graph"
    if "scaled_dot_product" in name:
        return "sdpa"
    return name.removeprefix("aten::").strip("_")


def shares_table(data: dict[str, Any], top: int = 4) -> str:
    """One line per cell: its ratio to plain and its ``top`` kernels' shares
    (``sdpa``: torch's fused attention kernel)."""
    check_int("top", top, minimum=1)
    lines = [f"n = {data['config']['n']}, {data['config']['threads']} threads: time x "
             "plain, then each kernel's share of it"]
    for row in data["cells"]:
        parts = ", ".join(
            f"{_short(k['name'])} {k['share']:.0%}" for k in row["kernels"][:top]
        )
        lines.append(f"{row['scheme'] + ' (' + row['backend'] + ')':<25}"
                     f"{row['time_ratio']:5.2f}x  {parts}")
    return "\n".join(lines)


def build_parser() -> _cli.OneLineParser:
    """The parser of ``python -m relpos.book.bench shares``."""
    base = CostsConfig()
    parser = _cli.OneLineParser(
        prog="python -m relpos.book.bench shares",
        description="Where each cell's forward time goes: torch's kernels and their "
        "shares, beside its time as a multiple of plain attention.",
    )
    add = parser.add_argument
    integer = _cli.integer()
    add("--n", type=integer, default=2048, help="sequence length")
    add("--cells", default="plain,deberta:gather,shaw:gather", metavar="CELLS",
        help="comma-separated scheme:backend, or plain")
    add("--top", type=integer, default=TOP, help="kernels listed per cell")
    for name in ("hidden", "heads", "span", "repeats", "seed", "threads"):
        add(f"--{name}", type=integer, default=getattr(base, name), help=name)
    add("--output", default="profile_shares.json", metavar="PATH", help="JSON path")
    return parser


def shares_main(argv: list[str]) -> dict[str, Any]:
    """``python -m relpos.book.bench shares``: check, run, print the table, write."""
    import shlex

    parser = build_parser()
    args = parser.parse_args(argv)
    fields = ("hidden", "heads", "span", "repeats", "seed", "threads")
    values = {name: getattr(args, name) for name in fields}
    config = _cli.config_or_exit(
        parser, lambda: CostsConfig(**values), {f: "--" + f for f in fields}
    )
    _cli.output_flag(parser, "--output", args.output, make_parents=True)
    try:
        cells = parse_cells(args.cells)
        command = shlex.join(["python", "-m", "relpos.book.bench", "shares", *argv])
        data = run_shares(cells, args.n, config=config, top=args.top,
                          output=args.output, command=command)
    except ValueError as exc:
        parser.error(str(exc))
    print(shares_table(data))
    print(f"wrote {args.output}", file=sys.stderr)
    return data


__all__ = [
    "KIND",
    "SCHEMA",
    "TOP",
    "build_parser",
    "cell_shares",
    "parse_cells",
    "run_shares",
    "shares_main",
    "shares_table",
]
