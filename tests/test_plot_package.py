"""relpos.book.plot is a package of one module per idea; every old name still imports.

The figures moved out of one 800-line module into ``relpos.book.plot.<idea>``;
the notebooks, slides and tools import them as ``plot.X``, so each name of the
old module must still be there, the very same function as in its new module.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import pytest

from relpos.book import plot

# relpos.book.plot.__all__ before the split (0.2.0), relpos.book.sweep_plots included.
OLD_NAMES = (
    "relative_position_matrix", "index_heatmap", "row_similarity", "score_heatmap",
    "score_terms", "log_buckets", "benchmark", "experiment_sweep",
    "score_by_distance", "table_bands", "score_landscape", "disentangled_streams",
    "accuracy_grid", "band_profiles", "data_efficiency", "seed_points",
)


def _modules() -> list[str]:
    return [m.name for m in pkgutil.iter_modules(plot.__path__)]


def test_every_old_name_imports_from_plot() -> None:
    for name in OLD_NAMES:
        assert name in plot.__all__ and callable(getattr(plot, name)), name


def test_each_module_is_short_and_its_figures_are_plots() -> None:
    modules = _modules()
    assert {"positions", "scores", "streams", "benchmark", "sweep", "seeds",
            "landscape", "_style"} <= set(modules)
    exported = []
    for name in modules:
        module = importlib.import_module(f"{plot.__name__}.{name}")
        lines = len(open(module.__file__, encoding="utf-8").read().splitlines())
        assert lines < 320, (name, lines)
        for figure in getattr(module, "__all__", []):
            assert getattr(plot, figure) is getattr(module, figure), figure
            exported.append(figure)
    assert sorted(exported) == sorted(plot.__all__)  # each figure in one module


def test_the_old_sweep_plots_module_warns_and_gives_the_same_figures() -> None:
    sys.modules.pop("relpos.book.sweep_plots", None)
    with pytest.warns(DeprecationWarning, match="relpos.book.plot.seeds"):
        old = importlib.import_module("relpos.book.sweep_plots")
    for name in old.__all__:
        assert getattr(old, name) is getattr(plot, name)

