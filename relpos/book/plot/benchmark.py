"""The benchmark's figure: time, memory and the roofline against sequence length.

Draws the JSON of ``python -m relpos.book.bench`` (chapter 5).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

# The backends in the order of the book: the reference first, the fastest last.
_ORDER = ("transformers", "naive", "gather", "flex")


def _bench_results(results: dict[str, Any] | str | Path) -> dict[str, Any]:
    """The benchmark's JSON: a path is read (and checked) by ``bench.load_results``."""
    from ..bench.report import load_results

    if isinstance(results, (str, Path)):
        results = load_results(results)
    if not isinstance(results, dict) or "results" not in results:
        raise ValueError(
            "results must be the benchmark's JSON (a dict with a 'results' list) "
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


__all__ = ["benchmark"]
