"""The book's figures. Every function returns a matplotlib Figure and never shows it.

What a figure shows can be tested without looking at pixels: the heatmaps keep
the drawn matrix in ``fig.axes[0].images[0].get_array()`` and the line plots
keep their points in ``ax.lines``. Figures are made with ``matplotlib.figure.Figure``,
not pyplot, so nothing is kept open globally and notebooks show a figure once,
when a cell returns it. Every axis and colour bar is labelled.

One module per idea, every figure importable from here (``plot.index_heatmap``):

- ``positions``: ``i - j``, the table row ``delta``, log buckets, row similarity;
- ``scores``: a score matrix, the terms of one head, the terms by distance;
- ``streams``: the two streams of disentangled attention and the gathers;
- ``benchmark``: time, memory and the roofline of ``python -m relpos.book.bench``,
  and what positions cost (``position_costs``);
- ``sweep``: a trained sweep's means and spreads, the tables' bands;
- ``seeds``: a trained sweep with every seed visible;
- ``grid``: a trained sweep as one heatmap per task, per token or exact match;
- ``landscape``: what each relative scheme adds to a logit against ``i - j``;
- ``text``: the language models on real text: bits per byte by length and by
  position, the tuned learning rates;
- ``tuning``: a sweep's learning rates, every tuned cell's validation curve;
- ``interventions``: an intervention's paired comparisons, every seed a pair;
- ``_style``: the labelled heatmap, the written matrix and the markers they share.

Shape legend:
    matrices drawn are ``(i, j)``: query position down, key position across
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from relpos.book._lazy import lazy_names

# The benchmark's figures, imported now (it is cheap): the function ``benchmark``
# must stay what ``plot.benchmark`` names, not its module.
from .benchmark import benchmark, position_costs

# module -> its figures, each imported when first asked for (``plot.X``): a
# notebook that imports the package and draws nothing (a problem set's imports
# cell) does not load SciPy and the sweeps' code (about 1 s of CPU a kernel).
_FIGURES = {
    "interventions": ("paired_seeds",),
    "landscape": ("score_landscape",),
    "positions": (
        "index_heatmap",
        "log_buckets",
        "relative_position_matrix",
        "row_similarity",
    ),
    "scores": (
        "score_by_distance",
        "score_heatmap",
        "score_terms",
        "terms_by_distance",
    ),
    "grid": ("accuracy_grid",),
    "seeds": ("band_profiles", "data_efficiency", "seed_points"),
    "streams": ("disentangled_streams",),
    "sweep": ("experiment_sweep", "table_bands"),
    "text": ("bits_by_length", "loss_by_position", "tuning_curves"),
    "tuning": ("rate_curves",),
}
_WHERE = {name: module for module, names in _FIGURES.items() for name in names}
_WHERE.update(benchmark="benchmark", position_costs="benchmark")

if TYPE_CHECKING:
    from .grid import accuracy_grid
    from .interventions import paired_seeds
    from .landscape import score_landscape
    from .positions import (
        index_heatmap,
        log_buckets,
        relative_position_matrix,
        row_similarity,
    )
    from .scores import (
        score_by_distance,
        score_heatmap,
        score_terms,
        terms_by_distance,
    )
    from .seeds import band_profiles, data_efficiency, seed_points
    from .streams import disentangled_streams
    from .sweep import experiment_sweep, table_bands
    from .text import bits_by_length, loss_by_position, tuning_curves
    from .tuning import rate_curves


__getattr__, __dir__ = lazy_names(__name__, _WHERE, {*_FIGURES, "_style"})


__all__ = [
    "paired_seeds",
    "rate_curves",
    "relative_position_matrix",
    "index_heatmap",
    "row_similarity",
    "score_heatmap",
    "score_terms",
    "log_buckets",
    "benchmark",
    "position_costs",
    "experiment_sweep",
    "score_by_distance",
    "table_bands",
    "terms_by_distance",
    "score_landscape",
    "disentangled_streams",
    "accuracy_grid",
    "band_profiles",
    "data_efficiency",
    "bits_by_length",
    "loss_by_position",
    "tuning_curves",
    "seed_points",
]
