"""Deprecated: the every-seed sweep figures live in ``relpos.book.plot`` now.

Their names stay importable from ``relpos.book.plot`` (``plot.accuracy_grid``);
this module goes in relpos 0.3.
"""

from __future__ import annotations

import warnings

from .plot.grid import accuracy_grid
from .plot.seeds import band_profiles, data_efficiency, seed_points

warnings.warn(
    "relpos.book.sweep_plots moved to relpos.book.plot.seeds (its figures are in "
    "relpos.book.plot); the old module goes in 0.3",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = ["accuracy_grid", "band_profiles", "data_efficiency", "seed_points"]
