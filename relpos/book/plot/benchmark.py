"""The benchmark's figures: time, memory and the roofline against sequence length,
and what positions cost against plain attention.

:func:`benchmark` draws the JSON of ``python -m relpos.book.bench`` (chapter 5),
:func:`position_costs` that of ``python -m relpos.book.bench costs`` (the
benchmark appendix).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

# The backends in the order of the book: the reference first, the fastest last.
_ORDER = ("transformers", "naive", "gather", "flex")


def _bench_results(
    results: dict[str, Any] | str | Path, costs: bool = False
) -> dict[str, Any]:
    """The benchmark's JSON: a path is read (and checked) by ``bench.load_results``,
    or with ``costs`` by ``bench.load_costs``."""
    from ..bench.costs_report import load_costs
    from ..bench.report import load_results

    if isinstance(results, (str, Path)):
        results = load_costs(results) if costs else load_results(results)
    if not isinstance(results, dict) or "results" not in results:
        kind = "positions-cost" if costs else "benchmark's"
        raise ValueError(
            f"results must be the {kind} JSON (a dict with a 'results' list) "
            "or its path"
        )
    return results


def benchmark(
    results: dict[str, Any] | str | Path, *, roofline: bool = False
) -> Figure:
    """Forward time and peak memory against sequence length, a line per backend.

    Log axes. ``results`` is the JSON written by ``python -m relpos.book.bench``
    (or its path, read by ``relpos.book.bench.load_results``). Only
    measurements with status ``"ok"`` are drawn. With ``roofline=True`` a third
    panel draws each backend's fraction of the roofline (its forward FLOP over
    its time over the machine's matmul throughput; 1 is matmul speed), which
    needs results that carry the throughput (schema 2).

    Shapes:
        axes[0]: time (s) against n; axes[1]: peak memory (MiB) against n
        axes[2] (``roofline=True``): fraction of the roofline against n
    """
    from ..bench.roofline import roofline as roofline_rows

    results = _bench_results(results)
    if not isinstance(roofline, bool):
        raise TypeError(
            f"roofline must be a bool, got {type(roofline).__name__} {roofline!r}"
        )
    fractions = {}
    if roofline:
        if not (results.get("machine") or {}).get("matmul"):
            raise ValueError(
                "roofline=True needs results with a measured matmul throughput "
                "(machine.matmul, schema 2); these have none: use roofline=False"
            )
        for entry in roofline_rows(results):
            fractions[(entry["backend"], entry["n"])] = entry["fraction"]
    rows = [r for r in results["results"] if r.get("status") == "ok"]
    backends = sorted(
        {r["backend"] for r in rows},
        key=lambda b: _ORDER.index(b) if b in _ORDER else len(_ORDER),
    )
    fig = Figure(figsize=(16, 4.2) if roofline else (11, 4.2))
    axes = fig.subplots(1, 3 if roofline else 2)
    ax_time, ax_mem = axes[0], axes[1]
    for backend in backends:
        mine = sorted(
            (r for r in rows if r["backend"] == backend), key=lambda r: r["n"]
        )
        timed = [r for r in mine if r.get("forward_s") is not None]
        sized = [r for r in mine if r.get("peak_bytes") is not None]
        ax_time.plot(
            [r["n"] for r in timed], [r["forward_s"] for r in timed], marker="o",
            label=backend,
        )
        ax_mem.plot(
            [r["n"] for r in sized], [r["peak_bytes"] / 2**20 for r in sized],
            marker="o", label=backend,
        )
        if roofline:
            reached = [(r["n"], fractions[(backend, r["n"])]) for r in timed]
            reached = [(n, f) for n, f in reached if f is not None]
            axes[2].plot(
                [n for n, _ in reached], [f for _, f in reached], marker="o",
                label=backend,
            )
    config = results.get("config", {})
    machine = results.get("machine", {})
    for ax, label in ((ax_time, "forward time (s)"), (ax_mem, "peak memory (MiB)")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("sequence length n")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    if roofline:
        _roofline_axis(axes[2], machine, fractions)
    fig.suptitle(
        f"{machine.get('device', '?')} {config.get('dtype', '')}, "
        f"batch {config.get('batch', '?')}, hidden {config.get('hidden', '?')}, "
        f"{config.get('heads', '?')} heads"
    )
    fig.tight_layout()
    return fig


def _roofline_axis(
    ax: Axes, machine: dict[str, Any], fractions: dict[Any, float | None]
) -> None:
    """The roofline panel's reference line at matmul speed, scales and labels."""
    gflops = machine["matmul"]["flop_per_s"] / 1e9
    ax.axhline(
        1.0, color="black", linestyle="--", linewidth=1,
        label=f"matmul speed ({gflops:.0f} GFLOP/s)",
    )
    top = max([1.0] + [f for f in fractions.values() if f is not None])
    ax.set_xscale("log", base=2)
    ax.set_ylim(0, 1.05 * top)
    ax.set_xlabel("sequence length n")
    ax.set_ylabel("fraction of the roofline")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)


# The kernels' line styles in the costs figure; a scheme keeps one colour.
_BACKEND_STYLES = {"naive": ":", "gather": "-", "flex": "--"}


def position_costs(results: dict[str, Any] | str | Path) -> Figure:
    """Time and peak memory as multiples of plain attention against n.

    A line per scheme and backend (the scheme's colour, the backend's style:
    ``naive`` dotted, ``gather`` solid, ``flex`` dashed), labelled
    ``"scheme / backend"``; on the time panel each scheme's arithmetic floor is a
    thin line of its colour labelled ``"scheme floor"``, and plain attention is
    the black line at 1. ``results`` is the JSON of ``python -m relpos.book.bench
    costs`` or its path (read by ``load_costs``).

    Shapes:
        axes[0]: forward time / plain's against n; axes[1]: peak memory / plain's
    """
    from matplotlib import colormaps

    from ..bench.costs_report import cost_series

    results = _bench_results(results, costs=True)
    times, memories = cost_series(results), cost_series(results, "memory_ratio")
    floors = cost_series(results, "floor_ratio")
    schemes = list(dict.fromkeys(scheme for scheme, _ in times))
    colours = colormaps["tab10"]
    fig = Figure(figsize=(14, 5.5))
    ax_time, ax_mem = fig.subplots(1, 2)
    for number, scheme in enumerate(schemes):
        colour = colours(number % 10)
        for (name, backend), points in times.items():
            if name != scheme:
                continue
            style = _BACKEND_STYLES.get(backend, "-.")
            label = f"{scheme} / {backend}"
            ax_time.plot(*zip(*points), style, color=colour, marker="o",
                         markersize=3, label=label)
            if (scheme, backend) in memories:
                ax_mem.plot(*zip(*memories[scheme, backend]), style, color=colour,
                            marker="o", markersize=3, label=label)
        floor = next((p for (name, _), p in floors.items() if name == scheme), None)
        if floor:
            ax_time.plot(*zip(*floor), "-", color=colour, linewidth=3, alpha=0.3,
                         label=f"{scheme} floor")
    for ax, label in ((ax_time, "forward time / plain attention's"),
                      (ax_mem, "peak memory / plain attention's")):
        ax.axhline(1.0, color="black", linewidth=1, label="plain attention")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("sequence length n")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    handles, labels = ax_time.get_legend_handles_labels()
    fig.legend(handles, labels, loc="center right", fontsize=7, ncol=2)
    config = results.get("config", {})
    fig.suptitle(
        f"what positions cost: {results.get('machine', {}).get('device', '?')} "
        f"{config.get('dtype', '')}, {config.get('threads', '?')} thread(s), "
        f"hidden {config.get('hidden', '?')}, {config.get('heads', '?')} heads"
    )
    fig.tight_layout(rect=(0, 0, 0.76, 1))
    return fig


__all__ = ["benchmark", "position_costs"]
