"""What the figures share: the matrix check, the labelled heatmap, the markers.

Shape legend:
    matrices drawn are ``(i, j)``: query position down, key position across
"""

from __future__ import annotations

import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.image import AxesImage

# One marker per scheme, so that lines lying on top of each other stay visible.
MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*", "h", "<", ">", "p")

#: The widest figure the page shows whole, in inches at the book's 100 dpi (its
#: column holds about 900 px); a figure of many panels wraps them into rows.
PAGE_WIDTH = 8.5


def page_columns(panels: int, panel_width: float, margin: float = 0.0) -> int:
    """How many panels of ``panel_width`` inches a row holds within the page.

    At least one; the rows are then balanced, so that 4 panels that fit 3 a
    row are drawn 2 and 2, not 3 and 1.

    Shapes:
        output: columns, with ``ceil(panels / columns)`` rows
    """
    if panels < 1 or panel_width <= 0:
        raise ValueError(f"panels must be >= 1 and panel_width > 0, got "
                         f"{panels!r} and {panel_width!r}")
    fits = max(1, int((PAGE_WIDTH - margin) // panel_width))
    rows = -(-panels // fits)
    return -(-panels // rows)


def to_numpy(matrix: torch.Tensor | np.ndarray) -> np.ndarray:
    """A 2-D tensor or array as a float numpy array; ValueError for any other shape.

    Shapes:
        matrix: ``(i, j)``; returns ``(i, j)``
    """
    if isinstance(matrix, torch.Tensor):
        matrix = matrix.detach().cpu().double().numpy()
    matrix = np.asarray(matrix)
    if matrix.ndim != 2:
        raise ValueError(f"matrix must be 2-D (i, j), got shape {matrix.shape}")
    return matrix


def text_colour(image: AxesImage, value: float) -> str:
    """White on a dark cell, black on a light one (the cell's perceived brightness)."""
    red, green, blue, _ = image.cmap(image.norm(value))
    return "white" if 0.299 * red + 0.587 * green + 0.114 * blue < 0.5 else "black"


def heatmap(
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
    """``matrix`` drawn on ``ax`` with a labelled colour bar, values written if asked.

    Shapes:
        matrix: ``(i, j)``, drawn as ``ax.images[0]``
    """
    image = ax.imshow(matrix, cmap=cmap, vmin=vmin, vmax=vmax)
    colorbar = ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    colorbar.set_label(colorbar_label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if annotate:
        for (i, j), value in np.ndenumerate(matrix):
            text = fmt.format(int(value) if fmt == "{:d}" else value)
            ax.text(
                j, i, text, ha="center", va="center", fontsize=8,
                color=text_colour(image, value),
            )


def written_matrix(
    ax: Axes, matrix: np.ndarray, title: str, xlabel: str, ylabel: str
) -> None:
    """A small matrix with its value written in every cell, colours centred on 0.

    Shapes:
        matrix: ``(rows, columns)``, one tick per row and per column
    """
    bound = float(np.abs(matrix).max()) or 1.0
    image = ax.imshow(matrix, cmap="RdBu_r", vmin=-bound, vmax=bound)
    for (row, col), value in np.ndenumerate(matrix):
        ax.text(
            col, row, f"{value:g}", ha="center", va="center", fontsize=9,
            color=text_colour(image, value),
        )
    ax.set_xticks(range(matrix.shape[1]))
    ax.set_yticks(range(matrix.shape[0]))
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
