"""The book's figures. Every function returns a matplotlib Figure and never shows it.

What a figure shows can be tested without looking at pixels: the heatmaps keep
the drawn matrix in ``fig.axes[0].images[0].get_array()`` and the line plots
keep their points in ``ax.lines``. Figures are made with ``matplotlib.figure.Figure``,
not pyplot, so nothing is kept open globally and notebooks show a figure once,
when a cell returns it.

Shape legend:
    matrices drawn are ``(i, j)``: query position down, key position across
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from relpos.checks import check_int
from relpos.attention import AttentionScores
from relpos.embedding import row_cosine_similarity
from relpos.positions import (
    exact_bucket_limit,
    log_bucket_position,
    relative_position_index,
    relative_positions,
)


def _to_numpy(matrix: torch.Tensor | np.ndarray) -> np.ndarray:
    if isinstance(matrix, torch.Tensor):
        matrix = matrix.detach().cpu().double().numpy()
    matrix = np.asarray(matrix)
    if matrix.ndim != 2:
        raise ValueError(f"matrix must be 2-D (i, j), got shape {matrix.shape}")
    return matrix


def _heatmap(
    ax: Axes,
    matrix: np.ndarray,
    *,
    cmap: str,
    annotate: bool,
    fmt: str = "{:d}",
    vmin: float | None = None,
    vmax: float | None = None,
    xlabel: str = "key position $j$",
    ylabel: str = "query position $i$",
    colorbar_label: str = "",
) -> None:
    image = ax.imshow(matrix, cmap=cmap, vmin=vmin, vmax=vmax)
    colorbar = ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    colorbar.set_label(colorbar_label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if annotate:
        for (i, j), value in np.ndenumerate(matrix):
            text = fmt.format(int(value) if fmt == "{:d}" else value)
            red, green, blue, _ = image.cmap(image.norm(value))
            dark = 0.299 * red + 0.587 * green + 0.114 * blue < 0.5  # perceived brightness
            ax.text(j, i, text, ha="center", va="center", fontsize=8, color="white" if dark else "black")


def relative_position_matrix(seq_len: int = 6, *, annotate: bool = True) -> Figure:
    """Heatmap of the signed distances ``i - j`` with each entry written in its cell.

    Negative (blue): the key is ahead of the query. Positive (red): behind.

    Shapes:
        drawn matrix: ``(seq_len, seq_len)``, ``relative_positions(seq_len)``
    """
    seq_len = check_int("seq_len", seq_len, minimum=1)
    rel = relative_positions(seq_len).numpy()
    bound = max(seq_len - 1, 1)
    size = min(seq_len, 16)
    fig = Figure(figsize=(1.0 + 0.6 * size, 0.8 + 0.6 * size))
    ax = fig.subplots()
    _heatmap(
        ax, rel, cmap="RdBu_r", annotate=annotate, vmin=-bound, vmax=bound,
        colorbar_label="relative position $i - j$",
    )
    ax.set_title("relative position $i - j$")
    fig.tight_layout()
    return fig


def index_heatmap(
    seq_len: int,
    max_relative_positions: int,
    position_buckets: int = -1,
    *,
    annotate: bool | None = None,
) -> Figure:
    """Heatmap of the table row ``delta(i, j)`` (after log buckets, if any) read by each pair.

    ``annotate`` defaults to writing the numbers when ``seq_len <= 16``.

    Shapes:
        drawn matrix: ``(seq_len, seq_len)``, ``relative_position_index(seq_len, ...)``
    """
    index = relative_position_index(
        seq_len, max_relative_positions=max_relative_positions, position_buckets=position_buckets
    ).numpy()
    annotate = seq_len <= 16 if annotate is None else annotate
    size = min(seq_len, 16)
    fig = Figure(figsize=(1.2 + 0.6 * size, 0.8 + 0.6 * size))
    ax = fig.subplots()
    span = position_buckets if position_buckets > 0 else max_relative_positions
    _heatmap(
        ax, index, cmap="viridis", annotate=annotate, vmin=0, vmax=2 * span - 1,
        colorbar_label="table row",
    )
    ax.set_title(rf"table row $\delta(i, j)$, $k = {span}$")
    fig.tight_layout()
    return fig


def row_similarity(
    weight: torch.Tensor,
    max_relative_positions: int,
    distances: range | Sequence[int] = range(-16, 16),
    *,
    title: str = "cosine similarity of table rows",
) -> Figure:
    """Heatmap of the cosine similarity between the rows of the given distances.

    Shapes:
        weight: ``(2k, hidden)``
        drawn matrix: ``(len(distances), len(distances))``, ``row_cosine_similarity(...)``
    """
    distances = list(distances)
    similarity = row_cosine_similarity(weight, max_relative_positions, distances).numpy()
    fig = Figure(figsize=(5.2, 4.4))
    ax = fig.subplots()
    image = ax.imshow(similarity, cmap="RdBu_r", vmin=-1, vmax=1)
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04).set_label("cosine similarity")
    ticks = [a for a, dist in enumerate(distances) if dist % 4 == 0]
    ax.set_xticks(ticks, [str(distances[a]) for a in ticks])
    ax.set_yticks(ticks, [str(distances[a]) for a in ticks])
    ax.set_xlabel("distance $i - j$ of the second row")
    ax.set_ylabel("distance $i - j$ of the first row")
    ax.set_title(title)
    fig.tight_layout()
    return fig


def score_heatmap(
    matrix: torch.Tensor | np.ndarray,
    *,
    title: str = "",
    annotate: bool = False,
    fmt: str = "{:.2f}",
    bound: float | None = None,
    colorbar_label: str = "score",
) -> Figure:
    """One score matrix as a heatmap (diverging colours centred on zero).

    The colours run from ``-bound`` to ``bound``, by default the largest
    ``|entry|``; pass one ``bound`` to heatmaps that are compared side by side.

    Shapes:
        matrix: ``(i, j)``
    """
    data = _to_numpy(matrix)
    if bound is None:
        bound = float(np.abs(data).max()) or 1.0
    elif isinstance(bound, bool) or not isinstance(bound, (int, float)) or bound <= 0:
        raise ValueError(f"bound must be a positive number or None, got {bound!r}")
    fig = Figure(figsize=(4.6, 4.0))
    ax = fig.subplots()
    _heatmap(
        ax, data, cmap="RdBu_r", annotate=annotate, fmt=fmt, vmin=-bound, vmax=bound,
        colorbar_label=colorbar_label,
    )
    ax.set_title(title)
    fig.tight_layout()
    return fig


def score_terms(scores: AttentionScores, *, batch: int = 0, head: int = 0) -> Figure:
    """The c2c, c2p and p2c terms and the attention probabilities of one head, side by side.

    The three terms share one colour scale, so their sizes can be compared.
    Unused terms are drawn as an empty panel titled "not used".

    Shapes:
        scores.c2c, .c2p, .p2c, .probs: ``(b, h, i, j)``; each panel ``(i, j)``
    """
    if not isinstance(scores, AttentionScores):
        raise TypeError(f"scores must be an AttentionScores, got {type(scores).__name__}")
    terms = {"c2c": scores.c2c, "c2p": scores.c2p, "p2c": scores.p2c}
    used = {name: _to_numpy(t[batch, head]) for name, t in terms.items() if t is not None}
    bound = max(float(np.abs(m).max()) for m in used.values()) or 1.0
    fig = Figure(figsize=(16, 3.9))
    axes = fig.subplots(1, 4)
    for ax, name in zip(axes[:3], terms):
        if name in used:
            _heatmap(
                ax, used[name], cmap="RdBu_r", annotate=False, vmin=-bound, vmax=bound,
                colorbar_label="score, scaled by $1/\\sqrt{d\\,s}$",
            )
            ax.set_title(f"{name} (scaled)")
        else:
            ax.set_title(f"{name}: not used")
            ax.set_axis_off()
    _heatmap(
        axes[3], _to_numpy(scores.probs[batch, head]), cmap="Greens", annotate=False,
        vmin=0, colorbar_label="attention probability",
    )
    axes[3].set_title("softmax probabilities")
    fig.tight_layout()
    return fig


def log_buckets(bucket_size: int, max_position: int, max_distance: int | None = None) -> Figure:
    """The log bucket of every distance in ``[-max_distance, max_distance]``, exact region shaded.

    ``max_distance`` defaults to ``2 * max_position``. The line's points are
    ``(r, log_bucket_position(r, bucket_size, max_position))``; a dashed line
    shows the identity ``bucket = r`` for comparison.

    Shapes:
        ax.lines[0]: ``2 * max_distance + 1`` points
    """
    max_distance = 2 * max_position if max_distance is None else check_int("max_distance", max_distance, minimum=1)
    rel = torch.arange(-max_distance, max_distance + 1)
    bucket = log_bucket_position(rel, bucket_size, max_position)
    mid = exact_bucket_limit(bucket_size)
    fig = Figure(figsize=(7.0, 4.2))
    ax = fig.subplots()
    ax.plot(rel.numpy(), bucket.numpy(), color="C0", label="log bucket")
    ax.plot(rel.numpy(), rel.numpy(), color="grey", linestyle="--", linewidth=0.8, label="bucket = distance")
    ax.axvspan(-mid, mid, color="C2", alpha=0.15, label=rf"exact: $|i - j| \leq {mid}$")
    reach = rf"distance $\pm$(max_position $-$ 1) $= \pm{max_position - 1}$"
    edge = rf"bucket $\pm${bucket_size}: the table row saturates beyond"
    for sign in (-1, 1):
        ax.axvline(
            sign * (max_position - 1), color="C3", linewidth=0.8, linestyle=":",
            label=reach if sign > 0 else None,
        )
        ax.axhline(
            sign * bucket_size, color="C1", linewidth=0.8, linestyle=":",
            label=edge if sign > 0 else None,
        )
    ax.set_ylim(-1.3 * bucket_size, 1.3 * bucket_size)
    ax.set_xlabel("distance $i - j$")
    ax.set_ylabel("bucket")
    ax.set_title(f"log buckets: bucket_size = {bucket_size}, max_position = {max_position}")
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    return fig


def benchmark(
    results: dict[str, Any] | str | Path, *, roofline: bool = False
) -> Figure:
    """Forward time and peak memory against sequence length, one line per backend, log axes.

    ``results`` is the JSON written by ``python -m relpos.book.bench`` (or its path).
    Only measurements with status ``"ok"`` are drawn. With ``roofline=True`` a
    third panel draws each backend's fraction of the roofline (its forward FLOP
    over its time over the machine's matmul throughput; 1 is matmul speed),
    which needs results that carry the throughput (schema 2).

    Shapes:
        axes[0]: time (s) against n; axes[1]: peak memory (MiB) against n
        axes[2] (``roofline=True``): fraction of the roofline against n
    """
    from .bench.roofline import roofline as roofline_rows

    if isinstance(results, (str, Path)):
        results = json.loads(Path(results).read_text())
    if not isinstance(results, dict) or "results" not in results:
        raise ValueError("results must be the benchmark's JSON (a dict with a 'results' list) or its path")
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
    order = ("transformers", "naive", "gather", "flex")
    backends = sorted(
        {r["backend"] for r in rows}, key=lambda b: order.index(b) if b in order else 9
    )
    fig = Figure(figsize=(16, 4.2) if roofline else (11, 4.2))
    axes = fig.subplots(1, 3 if roofline else 2)
    ax_time, ax_mem = axes[0], axes[1]
    for backend in backends:
        mine = sorted((r for r in rows if r["backend"] == backend), key=lambda r: r["n"])
        timed = [r for r in mine if r.get("forward_s") is not None]
        sized = [r for r in mine if r.get("peak_bytes") is not None]
        ax_time.plot([r["n"] for r in timed], [r["forward_s"] for r in timed], marker="o", label=backend)
        ax_mem.plot([r["n"] for r in sized], [r["peak_bytes"] / 2**20 for r in sized], marker="o", label=backend)
        if roofline:
            reached = [(r["n"], fractions[(backend, r["n"])]) for r in timed]
            reached = [(n, f) for n, f in reached if f is not None]
            lengths, reached_fractions = [n for n, _ in reached], [f for _, f in reached]
            axes[2].plot(lengths, reached_fractions, marker="o", label=backend)
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
        ax_roof = axes[2]
        gflops = machine["matmul"]["flop_per_s"] / 1e9
        ax_roof.axhline(1.0, color="black", linestyle="--", linewidth=1,
                        label=f"matmul speed ({gflops:.0f} GFLOP/s)")
        top = max([1.0] + [f for f in fractions.values() if f is not None])
        ax_roof.set_xscale("log", base=2)
        ax_roof.set_ylim(0, 1.05 * top)
        ax_roof.set_xlabel("sequence length n")
        ax_roof.set_ylabel("fraction of the roofline")
        ax_roof.grid(True, which="both", alpha=0.3)
        ax_roof.legend(fontsize=8)
    fig.suptitle(
        f"{machine.get('device', '?')} {config.get('dtype', '')}, batch {config.get('batch', '?')}, "
        f"hidden {config.get('hidden', '?')}, {config.get('heads', '?')} heads"
    )
    fig.tight_layout()
    return fig


__all__ = [
    "relative_position_matrix",
    "index_heatmap",
    "row_similarity",
    "score_heatmap",
    "score_terms",
    "log_buckets",
    "benchmark",
]


# -- trained models (python -m relpos.book.experiments) -------------------------------------


def _sweep_results(results: dict[str, Any] | str | Path) -> dict[str, Any]:
    """A sweep's JSON (or its path) in schema 2 (a schema-1 file is upgraded)."""
    from .experiments.sweep import as_schema_2

    if isinstance(results, (str, Path)):
        results = json.loads(Path(results).read_text())
    if isinstance(results, dict) and results.get("schema") == 1:
        results = as_schema_2(results)
    needed = {"summary", "grid", "tasks"}
    if not isinstance(results, dict) or not needed <= set(results):
        raise ValueError(
            "results must be the JSON of python -m relpos.book.experiments (a dict with "
            "'summary', 'grid' and 'tasks') or its path"
        )
    return results


def _sweep_setting(results: dict[str, Any], setting: str | None) -> str:
    settings = list(results["grid"].get("setting", ["encoder"]))
    if setting is None:
        return settings[0]
    if setting not in settings:
        raise ValueError(
            f"setting must be one of the sweep's settings {settings}, got {setting!r}"
        )
    return setting


# One marker per scheme, so that lines lying on top of each other stay visible.
_MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*", "h", "<", ">", "p")


def experiment_sweep(
    results: dict[str, Any] | str | Path,
    *,
    train_size: int | None = None,
    length: int | None = None,
    setting: str | None = None,
) -> Figure:
    """Length generalisation and data efficiency of every scheme and task, error bars.

    The runs of one ``setting`` (default: the sweep's first, ``"encoder"``).
    One row per task. Left: accuracy against test length, at ``train_size``
    training sequences (default: the largest of the sweep). Right: accuracy
    against the number of training sequences, at test ``length`` (default: the
    training length). Points are means over seeds, bars one standard deviation;
    the dashed line is chance. Each scheme is one ``errorbar`` labelled with its
    name, so ``ax.containers`` hold the drawn numbers.

    Shapes:
        axes: ``(len(tasks), 2)``; each line: one point per length or per size
    """
    results = _sweep_results(results)
    setting = _sweep_setting(results, setting)
    rows = [r for r in results["summary"] if r.get("setting", "encoder") == setting]
    sizes = sorted({r["train_size"] for r in rows})
    lengths = sorted({r["length"] for r in rows})
    train_size = sizes[-1] if train_size is None else train_size
    length = (
        results.get("config", {}).get("train_length", lengths[0])
        if length is None
        else length
    )
    if train_size not in sizes:
        raise ValueError(
            f"train_size must be one of the sweep's sizes {sizes}, got {train_size}"
        )
    if length not in lengths:
        raise ValueError(
            f"length must be one of the sweep's test lengths {lengths}, got {length}"
        )
    cells = {(r["task"], r["scheme"], r["train_size"], r["length"]): r for r in rows}
    tasks = list(results["tasks"])
    fig = Figure(figsize=(11, 3.3 * len(tasks)))
    axes = np.atleast_2d(fig.subplots(len(tasks), 2, squeeze=False))
    for row, task in enumerate(tasks):
        ax_len, ax_size = axes[row]
        for color, scheme in enumerate(results["grid"]["scheme"]):
            style = dict(
                marker=_MARKERS[color % len(_MARKERS)],
                markersize=5,
                capsize=3,
                color=f"C{color % 10}",
                linestyle="-" if color < 10 else "--",
                label=scheme,
            )
            by_len = [
                cells[c]
                for c in ((task, scheme, train_size, n) for n in lengths)
                if c in cells
            ]
            by_size = [
                cells[c]
                for c in ((task, scheme, s, length) for s in sizes)
                if c in cells
            ]
            ax_len.errorbar(
                [r["length"] for r in by_len],
                [r["mean"] for r in by_len],
                yerr=[r["std"] for r in by_len],
                **style,
            )
            ax_size.errorbar(
                [r["train_size"] for r in by_size],
                [r["mean"] for r in by_size],
                yerr=[r["std"] for r in by_size],
                **style,
            )
        chance = results["tasks"][task].get("chance")
        description = results["tasks"][task].get("description", "")
        for ax in (ax_len, ax_size):
            if chance is not None:
                ax.axhline(
                    chance, color="grey", linestyle="--", linewidth=0.8, label="chance"
                )
            ax.set_xscale("log", base=2)
            ax.set_ylim(-0.03, 1.03)
            ax.set_ylabel("accuracy")
            ax.grid(True, alpha=0.3)
        ax_len.set_xticks(lengths, [str(n) for n in lengths])
        ax_size.set_xticks(sizes, [str(s) for s in sizes])
        ax_len.set_xlabel("test sequence length n")
        ax_size.set_xlabel("training sequences")
        where = "" if setting == "encoder" else f"{setting}, "
        ax_len.set_title(
            f"{where}{task} ({description}): {train_size} training sequences",
            fontsize=9,
        )
        ax_size.set_title(f"{where}{task}: tested at length {length}", fontsize=9)
    handles, labels = axes[0][0].get_legend_handles_labels()
    # the schemes first, chance last
    order = sorted(range(len(labels)), key=lambda a: labels[a] == "chance")
    handles, labels = [handles[a] for a in order], [labels[a] for a in order]
    columns = min(len(labels), 5)
    fig.legend(handles, labels, loc="upper center", ncol=columns, fontsize=8)
    top = 1 - (0.25 + 0.22 * -(-len(labels) // columns)) / fig.get_figheight()
    fig.tight_layout(rect=(0, 0, 1, top))
    return fig


def table_bands(
    results: dict[str, Any] | str | Path,
    *,
    train_size: int | None = None,
    setting: str | None = None,
) -> Figure:
    """Band profile of the relative tables before and after training, per task.

    The runs of one ``setting`` (default: the sweep's first, ``"encoder"``).

    For every run with a relative table (the JSON's ``band`` entries), the mean
    cosine similarity of table rows ``offset`` apart; drawn as the mean over
    seeds for the trained tables (solid) and the initial ones (dotted). A band
    shows as a profile that stays high for small offsets and falls after.

    Shapes:
        axes: one per task
        each line: ``2 * span`` points (offsets ``0 .. 2 * span - 1``)
    """
    results = _sweep_results(results)
    setting = _sweep_setting(results, setting)
    runs = [
        r
        for r in results.get("runs", [])
        if r.get("band") and r.get("setting", "encoder") == setting
    ]
    if not runs:
        raise ValueError("results has no run with a relative table ('band' entries)")
    sizes = sorted({r["train_size"] for r in runs})
    train_size = sizes[-1] if train_size is None else train_size
    tasks = [t for t in results["tasks"] if any(r["task"] == t for r in runs)]
    fig = Figure(figsize=(4.2 * len(tasks), 3.6))
    axes = np.atleast_1d(fig.subplots(1, len(tasks), squeeze=False)[0])
    for ax, task in zip(axes, tasks):
        for color, scheme in enumerate(results["grid"]["scheme"]):
            mine = [
                r
                for r in runs
                if (r["task"], r["scheme"], r["train_size"])
                == (task, scheme, train_size)
            ]
            if not mine:
                continue
            for when, style in (("trained", "-"), ("initial", ":")):
                profile = np.mean([r["band"][when] for r in mine], axis=0)
                ax.plot(
                    np.arange(len(profile)),
                    profile,
                    linestyle=style,
                    color=f"C{color}",
                    label=f"{scheme}, {when}",
                )
        ax.axhline(0.0, color="grey", linewidth=0.6)
        ax.set_xlabel("offset between table rows")
        ax.set_ylabel("mean cosine similarity")
        ax.set_title(f"{task}: {train_size} training sequences", fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def score_by_distance(scores: AttentionScores, *, batch: int = 0) -> Figure:
    """Each score term and the probabilities averaged at every distance ``i - j``.

    One panel per term in use (c2c, c2p, p2c) and one for the probabilities;
    one line per head. A term that depends only on the distance is a function
    of ``i - j``, and its line shows it whole; a head that learnt "look 3 back"
    puts its probability at distance 3. Feed it
    ``relpos.book.experiments.mean_scores(model, tokens)`` for a trained model.

    Shapes:
        scores.c2c, .c2p, .p2c, .probs: ``(b, h, n, n)``
        each line: ``2n - 1`` points, distances ``-(n - 1) .. n - 1``
    """
    if not isinstance(scores, AttentionScores):
        got = type(scores).__name__
        raise TypeError(f"scores must be an AttentionScores, got {got}")
    terms = [(name, term) for name, term in zip(("c2c", "c2p", "p2c", "probs"), scores)
             if term is not None]
    fig = Figure(figsize=(3.6 * len(terms), 3.4))
    axes = fig.subplots(1, len(terms), squeeze=False)[0]
    for ax, (name, term) in zip(axes, terms):
        matrix = term[batch].detach().cpu().double()  # (h, n, n)
        n = matrix.shape[-1]
        distances = np.arange(-(n - 1), n)
        means = torch.stack(
            [matrix.diagonal(-int(d), dim1=-2, dim2=-1).mean(-1) for d in distances], -1
        ).numpy()  # (h, 2n - 1); diagonal -d holds the pairs with i - j = d
        for head, line in enumerate(means):
            ax.plot(distances, line, label=f"head {head}")
        ax.set_xlabel("distance i - j")
        ax.set_ylabel("mean probability" if name == "probs" else "mean scaled score")
        ax.set_title("softmax probabilities" if name == "probs" else name)
        ax.grid(True, alpha=0.3)
    axes[-1].legend(fontsize=7)
    fig.tight_layout()
    return fig


__all__ += ["experiment_sweep", "score_by_distance", "table_bands"]


# -- the landscape of relative schemes (chapter "Where DeBERTa sits") ---------------------


def _landscape_panels(
    distances: torch.Tensor | Sequence[int],
    contributions: dict[str, torch.Tensor | np.ndarray],
) -> tuple[np.ndarray, list[tuple[str, np.ndarray]]]:
    """The checked data of a landscape: distances, one ``(h, m)`` array per scheme.

    What :func:`score_landscape` draws and ``relpos.book.interactive.landscape``
    charts; raises TypeError/ValueError naming the argument for bad input.

    Shapes:
        distances: ``(m,)``, increasing integers; each contribution: ``(h, m)`` or
        ``(m,)``; returns ``(m,)`` and ``[(name, (h, m)), ...]``
    """
    from collections.abc import Mapping

    if isinstance(distances, torch.Tensor):
        distances = distances.detach().cpu()
        if distances.is_floating_point() or distances.dtype == torch.bool:
            raise TypeError(
                f"distances must hold integers i - j, got dtype {distances.dtype}"
            )
    rel = np.asarray(distances)
    if rel.ndim != 1 or rel.size == 0 or not np.issubdtype(rel.dtype, np.integer):
        raise ValueError(
            "distances must be a non-empty 1-D sequence of integers i - j, got "
            f"shape {rel.shape} and dtype {rel.dtype}"
        )
    if rel.size > 1 and not (np.diff(rel) > 0).all():
        raise ValueError("distances must be increasing")
    if not isinstance(contributions, Mapping) or not contributions:
        raise TypeError(
            "contributions must be a non-empty dict from scheme name to (h, m) values, "
            f"got {type(contributions).__name__}"
        )
    panels: list[tuple[str, np.ndarray]] = []
    for name, values in contributions.items():
        if isinstance(values, torch.Tensor):
            values = values.detach().cpu().double().numpy()
        values = np.asarray(values, dtype=float)
        if values.ndim == 1:
            values = values[None]  # (1, m): one head
        if values.ndim != 2 or values.shape[1] != rel.size:
            raise ValueError(
                f"contributions[{name!r}] must have shape (h, m) with m = "
                f"len(distances) = {rel.size}, got {values.shape}"
            )
        panels.append((str(name), values))
    return rel, panels


def score_landscape(
    distances: torch.Tensor | Sequence[int],
    contributions: dict[str, torch.Tensor | np.ndarray],
    *,
    columns: int = 4,
) -> Figure:
    """What each scheme adds to the logit against the distance ``i - j``, a panel each.

    ``contributions[name]`` holds one row per head, such as the output of
    ``relpos.schemes.score_by_distance``. Panel ``p`` shows the ``p``-th scheme;
    its ``ax.lines[h]`` is head ``h``, drawn at ``distances`` with the row's
    values. Each panel has its own vertical scale: compare shapes across panels,
    not heights. The heads are labelled in the first panel's legend.

    Args:
        distances: the distances ``i - j`` of the columns, increasing.
        contributions: scheme name -> ``(h, m)`` values (or ``(m,)`` for one head).
        columns: panels per row.

    Shapes:
        distances: ``(m,)``; each contribution: ``(h, m)`` or ``(m,)``
        fig.axes: one per scheme, in the order of ``contributions``, then any
        unused panels of the grid (switched off)
    """
    rel, panels = _landscape_panels(distances, contributions)
    columns = check_int("columns", columns, minimum=1)

    rows = -(-len(panels) // columns)  # ceiling division
    width = min(columns, len(panels))
    fig = Figure(figsize=(3.4 * width, 2.9 * rows))
    axes = fig.subplots(rows, width, squeeze=False).ravel()
    for ax, (name, values) in zip(axes, panels):
        for head, row in enumerate(values):
            style = dict(color=f"C{head % 10}", linewidth=1.2, label=f"head {head}")
            ax.plot(rel, row, **style)
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("distance $i - j$")
        ax.set_ylabel("added to the logit")
        ax.grid(True, alpha=0.3)
    for ax in axes[len(panels):]:
        ax.set_axis_off()
    axes[0].legend(fontsize=7, loc="best")
    fig.tight_layout()
    return fig


__all__ += ["score_landscape"]


# -- the two streams of disentangled attention (chapter 4) ---------------------------


def _annotated(
    ax: Axes, matrix: np.ndarray, title: str, xlabel: str, ylabel: str
) -> None:
    """A small matrix drawn with its value written in every cell, centred colours."""
    bound = float(np.abs(matrix).max()) or 1.0
    image = ax.imshow(matrix, cmap="RdBu_r", vmin=-bound, vmax=bound)
    for (row, col), value in np.ndenumerate(matrix):
        red, green, blue, _ = image.cmap(image.norm(value))
        dark = 0.299 * red + 0.587 * green + 0.114 * blue < 0.5  # perceived brightness
        ax.text(col, row, f"{value:g}", ha="center", va="center", fontsize=9,
                color="white" if dark else "black")
    ax.set_xticks(range(matrix.shape[1]))
    ax.set_yticks(range(matrix.shape[0]))
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)


def _outline(ax: Axes, cells: set[tuple[int, int]], color: str) -> None:
    """Draw a frame around each ``(row, col)`` cell: the cells a gather reads."""
    from matplotlib.patches import Rectangle

    for row, col in sorted(cells):
        frame = Rectangle((col - 0.5, row - 0.5), 1, 1, fill=False, edgecolor=color,
                          linewidth=2.2)
        ax.add_patch(frame)


def disentangled_streams(
    query: torch.Tensor | np.ndarray,
    key: torch.Tensor | np.ndarray,
    pos_query: torch.Tensor | np.ndarray,
    pos_key: torch.Tensor | np.ndarray,
    index: torch.Tensor | np.ndarray,
) -> Figure:
    """The content stream, the position stream and the gather, on one small example.

    One row per score term, every matrix written out cell by cell (meant for a
    pencil-and-paper example of a few tokens):

    - c2c: content queries ``Q``, content keys ``K``, then ``Q K^T``;
    - c2p: position keys ``Pk`` (one per table row), every query against every
      row ``Q Pk^T``, then c2p, which gathers column ``index[i, j]`` of row ``i``;
    - p2c: position queries ``Pq``, every key against every row ``K Pq^T``, then
      p2c, which gathers column ``index[i, j]`` of row ``j``.

    The cells the two gathers read are framed in the middle column.

    Shapes:
        query, key: ``(n, d)``; pos_query, pos_key: ``(2k, d)``; index: ``(i, j)``
        axes[0:3]: Q ``(i, d)``, K ``(j, d)``, c2c ``(i, j)``
        axes[3:6]: Pk ``(r, d)``, Q Pk^T ``(i, r)``, c2p ``(i, j)``
        axes[6:9]: Pq ``(r, d)``, K Pq^T ``(j, r)``, p2c ``(i, j)``
        framed cells: axes[4] at ``(i, index[i, j])``, axes[7] at ``(j, index[i, j])``
    """
    q, k = _to_numpy(query), _to_numpy(key)
    pq, pk = _to_numpy(pos_query), _to_numpy(pos_key)
    rows = np.asarray(index.cpu() if isinstance(index, torch.Tensor) else index)
    if rows.ndim != 2 or rows.shape != (q.shape[0], k.shape[0]):
        raise ValueError(
            f"index must have shape (i, j) = {(q.shape[0], k.shape[0])}, "
            f"got {rows.shape}"
        )
    if not np.issubdtype(rows.dtype, np.integer) or rows.min() < 0 or (
        rows.max() >= pk.shape[0]
    ):
        raise ValueError(f"index must hold table rows 0 ... {pk.shape[0] - 1}")
    if not (q.shape[1] == k.shape[1] == pq.shape[1] == pk.shape[1]):
        raise ValueError(
            "query, key, pos_query and pos_key must share their width d, got "
            f"{q.shape[1]}, {k.shape[1]}, {pq.shape[1]}, {pk.shape[1]}"
        )
    if pq.shape[0] != pk.shape[0]:
        raise ValueError(
            "pos_query and pos_key must have the same rows, "
            f"got {pq.shape[0]}, {pk.shape[0]}"
        )
    query_rows = q @ pk.T  # (i, r): every query against every table row
    key_rows = k @ pq.T  # (j, r): every key against every table row
    c2p = np.take_along_axis(query_rows, rows, axis=1)  # (i, j)
    p2c = np.take_along_axis(key_rows, rows.T, axis=1).T  # (i, j)

    fig = Figure(figsize=(11.5, 10.5))
    axes = fig.subplots(3, 3, gridspec_kw={"width_ratios": [1, 1.6, 1.3]}).ravel()
    panels = [
        (q, "content queries $Q$", "feature", "query $i$"),
        (k, "content keys $K$", "feature", "key $j$"),
        (q @ k.T, r"c2c $= Q K^{\top}$", "key $j$", "query $i$"),
        (pk, "position keys $P_k$", "feature", "table row $r$"),
        (query_rows, r"$Q P_k^{\top}$: each query, each row", "table row $r$",
         "query $i$"),
        (c2p, r"c2p: row $i$, column $\delta(i, j)$", "key $j$", "query $i$"),
        (pq, "position queries $P_q$", "feature", "table row $r$"),
        (key_rows, r"$K P_q^{\top}$: each key, each row", "table row $r$", "key $j$"),
        (p2c, r"p2c: row $j$, column $\delta(i, j)$", "key $j$", "query $i$"),
    ]
    for ax, (matrix, title, xlabel, ylabel) in zip(axes, panels):
        _annotated(ax, matrix, title, xlabel, ylabel)
    pairs = [(i, j) for i in range(rows.shape[0]) for j in range(rows.shape[1])]
    _outline(axes[4], {(i, int(rows[i, j])) for i, j in pairs}, "C2")
    _outline(axes[7], {(j, int(rows[i, j])) for i, j in pairs}, "C1")
    fig.suptitle("content stream (top), position stream (below) and the gathers "
                 "(framed cells)", fontsize=11)
    fig.tight_layout()
    return fig


__all__ += ["disentangled_streams"]


# -- a trained sweep, every seed visible (relpos.book.sweep_plots) ----------------------
from .sweep_plots import (  # noqa: E402  (the figures of a sweep live in their own file)
    accuracy_grid,
    band_profiles,
    data_efficiency,
    seed_points,
)

__all__ += ["accuracy_grid", "band_profiles", "data_efficiency", "seed_points"]
