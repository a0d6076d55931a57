"""Figures of the positions themselves: ``i - j``, the table row ``delta``, buckets.

Chapters 1 to 3 and 6: the signed distance of every pair, the table row each
pair reads, the log buckets of long distances, and how alike the table's rows
are.

Shape legend:
    matrices drawn are ``(i, j)``: query position down, key position across
"""

from __future__ import annotations

from typing import Sequence

import torch
from matplotlib.figure import Figure

from relpos.checks import check_int
from relpos.embedding import row_cosine_similarity
from relpos.positions import (
    exact_bucket_limit,
    log_bucket_position,
    relative_position_index,
    relative_positions,
)

from ._style import heatmap


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
    heatmap(
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
    """Heatmap of the table row ``delta(i, j)`` of each pair, after log buckets if any.

    ``annotate`` defaults to writing the numbers when ``seq_len <= 16``.

    Shapes:
        drawn matrix: ``(seq_len, seq_len)``, ``relative_position_index(seq_len, ...)``
    """
    index = relative_position_index(
        seq_len,
        max_relative_positions=max_relative_positions,
        position_buckets=position_buckets,
    ).numpy()
    annotate = seq_len <= 16 if annotate is None else annotate
    size = min(seq_len, 16)
    fig = Figure(figsize=(1.2 + 0.6 * size, 0.8 + 0.6 * size))
    ax = fig.subplots()
    span = position_buckets if position_buckets > 0 else max_relative_positions
    heatmap(
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
        drawn matrix: ``(len(distances), len(distances))``, ``row_cosine_similarity``
    """
    distances = list(distances)
    similarity = row_cosine_similarity(
        weight, max_relative_positions, distances
    ).numpy()
    fig = Figure(figsize=(5.2, 4.4))
    ax = fig.subplots()
    image = ax.imshow(similarity, cmap="RdBu_r", vmin=-1, vmax=1)
    bar = fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    bar.set_label("cosine similarity")
    ticks = [a for a, dist in enumerate(distances) if dist % 4 == 0]
    ax.set_xticks(ticks, [str(distances[a]) for a in ticks])
    ax.set_yticks(ticks, [str(distances[a]) for a in ticks])
    ax.set_xlabel("distance $i - j$ of the second row")
    ax.set_ylabel("distance $i - j$ of the first row")
    ax.set_title(title)
    fig.tight_layout()
    return fig


def log_buckets(
    bucket_size: int, max_position: int, max_distance: int | None = None
) -> Figure:
    """The log bucket of every distance in ``[-max_distance, max_distance]``.

    The exact region is shaded. ``max_distance`` defaults to
    ``2 * max_position``. The line's points are
    ``(r, log_bucket_position(r, bucket_size, max_position))``; a dashed line
    shows the identity ``bucket = r`` for comparison.

    Shapes:
        ax.lines[0]: ``2 * max_distance + 1`` points
    """
    max_distance = (
        2 * max_position
        if max_distance is None
        else check_int("max_distance", max_distance, minimum=1)
    )
    rel = torch.arange(-max_distance, max_distance + 1)
    bucket = log_bucket_position(rel, bucket_size, max_position)
    mid = exact_bucket_limit(bucket_size)
    fig = Figure(figsize=(7.0, 4.2))
    ax = fig.subplots()
    ax.plot(rel.numpy(), bucket.numpy(), color="C0", label="log bucket")
    ax.plot(
        rel.numpy(), rel.numpy(), color="grey", linestyle="--", linewidth=0.8,
        label="bucket = distance",
    )
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
    ax.set_title(
        f"log buckets: bucket_size = {bucket_size}, max_position = {max_position}"
    )
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    return fig


__all__ = ["index_heatmap", "log_buckets", "relative_position_matrix", "row_similarity"]
