"""The two streams of disentangled attention and the gathers, cell by cell (chapter 4).

Shape legend:
    query, key: ``(n, d)``; the position projections: ``(2k, d)``, one row per
    table row ``r``; index, c2p, p2c: ``(i, j)``
"""

from __future__ import annotations

import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from ._style import to_numpy, written_matrix


def _outline(ax: Axes, cells: set[tuple[int, int]], color: str) -> None:
    """Draw a frame around each ``(row, col)`` cell: the cells a gather reads."""
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
    q, k = to_numpy(query), to_numpy(key)
    pq, pk = to_numpy(pos_query), to_numpy(pos_key)
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
        written_matrix(ax, matrix, title, xlabel, ylabel)
    pairs = [(i, j) for i in range(rows.shape[0]) for j in range(rows.shape[1])]
    _outline(axes[4], {(i, int(rows[i, j])) for i, j in pairs}, "C2")
    _outline(axes[7], {(j, int(rows[i, j])) for i, j in pairs}, "C1")
    fig.suptitle("content stream (top), position stream (below) and the gathers "
                 "(framed cells)", fontsize=11)
    fig.tight_layout()
    return fig


__all__ = ["disentangled_streams"]
