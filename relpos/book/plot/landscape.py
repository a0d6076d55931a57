"""The landscape of relative schemes: what each adds to a logit against ``i - j``.

Chapter "Where DeBERTa sits": one panel per scheme, one line per head, the
values of ``relpos.schemes.score_by_distance``. The checked data
(:func:`_landscape_panels`) is shared with ``relpos.book.interactive.landscape``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Sequence

import numpy as np
import torch
from matplotlib.figure import Figure

from relpos.checks import check_int


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


__all__ = ["score_landscape"]
