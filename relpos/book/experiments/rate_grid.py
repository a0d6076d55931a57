"""A learning rate per cell from a log-spaced grid that brackets the best.

A cell (a (setting, task, scheme, training size) of a sweep, or a (setting,
scheme) of the language models) trains once per rate of the grid and per
tuning seed and is scored on validation data of the training length (lower is
better: a validation loss, or bits per byte; the test data is never read). A
best rate at an edge of
the grid is no optimum: the grid is then extended past that edge by its own
log step (the geometric mean ratio of neighbouring rates: ``1e-3, 3.16e-3,
1e-2`` extends to ``3.16e-2, 1e-1, ...`` or ``3.16e-4, ...``), one rate at a time,
until the best rate has a measured rate on each side or the grid holds
``max_rates`` rates (then the cell is recorded as not ``bracketed``). A run
whose loss is not finite (diverged) scores ``inf``, so a grid whose every rate
diverges extends downward.

:func:`tune_rates` runs the rounds on any objective (``measure``), so the
extension is tested on a fake objective without training. Its result, per
cell: the rates tried (sorted), their validation scores, the chosen rate and
whether it is bracketed.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Hashable, Iterable

#: Significant digits a rate of an extended grid is rounded to.
RATE_DIGITS = 3


def _score(value: float | None) -> float:
    return math.inf if value is None or not math.isfinite(value) else float(value)


def grid_step(grid: Iterable[float]) -> float:
    """The log step of a grid: the geometric mean ratio of its neighbouring rates.

    ``grid`` must hold at least two distinct positive rates.
    """
    rates = sorted(check_grid(grid))
    return (rates[-1] / rates[0]) ** (1 / (len(rates) - 1))


def check_grid(grid: Iterable[float]) -> list[float]:
    """``grid`` as a list; ValueError unless two or more distinct positive rates."""
    rates = list(grid)
    if (
        len(rates) < 2
        or len(set(rates)) != len(rates)
        or not all(isinstance(r, (int, float)) and 0 < r < math.inf for r in rates)
    ):
        raise ValueError(
            "grid must hold two or more distinct positive finite learning rates, "
            f"got {rates!r}"
        )
    return rates


def best_rate(curve: dict[float, float | None]) -> float:
    """The rate of the lowest score (ties and all-diverged: the smallest rate)."""
    return min(curve, key=lambda rate: (_score(curve[rate]), rate))


def is_bracketed(curve: dict[float, float | None]) -> bool:
    """Whether the best rate of ``curve`` has a tried rate below and above it."""
    rates = sorted(curve)
    return 0 < rates.index(best_rate(curve)) < len(rates) - 1


def next_rate(
    curve: dict[float, float | None], step: float, max_rates: int, anchor: float
) -> float | None:
    """The rate to try next: one log ``step`` past the edge holding the best rate.

    Rates lie on the lattice ``anchor * step**k`` (``k`` an integer), rounded to
    :data:`RATE_DIGITS` significant digits. ``None`` when the best rate is
    bracketed or ``curve`` already holds ``max_rates`` rates.
    """
    if is_bracketed(curve) or len(curve) >= max_rates:
        return None
    edge = best_rate(curve)
    k = round(math.log(edge / anchor) / math.log(step))
    k += -1 if edge == min(curve) else 1
    rate = float(f"{anchor * step**k:.{RATE_DIGITS}g}")
    return None if rate in curve else rate  # a step too fine for the rounding


def tune_rates(
    cells: list[Hashable],
    grid: Iterable[float],
    measure: Callable[[list[tuple[Hashable, float]]], list[float | None]],
    *,
    max_rates: int = 8,
) -> dict[Hashable, dict[str, Any]]:
    """The chosen rate of every cell: the grid, extended until the best is bracketed.

    ``measure(jobs)`` gets ``(cell, rate)`` pairs and returns one score per
    pair (lower is better; ``None`` or a non-finite value for a diverged run).
    The first round measures the whole grid for every cell; each later round
    one new rate per cell whose best is still at an edge.

    Returns ``{cell: {"rates": [...], "scores": [...], "chosen": rate,
    "bracketed": bool}}`` (rates sorted, a score per rate).
    """
    rates = check_grid(grid)
    step = grid_step(rates)
    if isinstance(max_rates, bool) or not isinstance(max_rates, int):
        raise TypeError(f"max_rates must be an int, got {max_rates!r}")
    if max_rates < len(rates):
        raise ValueError(
            f"max_rates must be >= the grid's {len(rates)} rates, got {max_rates}"
        )
    curves: dict[Hashable, dict[float, float | None]] = {cell: {} for cell in cells}
    pending = [(cell, rate) for cell in cells for rate in rates]
    while pending:
        scores = list(measure(pending))
        if len(scores) != len(pending):
            raise ValueError(
                f"measure must return one score per job ({len(pending)}), "
                f"got {len(scores)}"
            )
        for (cell, rate), score in zip(pending, scores):
            curves[cell][rate] = score
        pending = []
        for cell, curve in curves.items():
            rate = next_rate(curve, step, max_rates, min(rates))
            if rate is not None:
                pending.append((cell, rate))
    return {
        cell: {
            "rates": sorted(curve),
            "scores": [curve[rate] for rate in sorted(curve)],
            "chosen": best_rate(curve),
            "bracketed": is_bracketed(curve),
        }
        for cell, curve in curves.items()
    }


__all__ = [
    "RATE_DIGITS",
    "best_rate",
    "check_grid",
    "grid_step",
    "is_bracketed",
    "next_rate",
    "tune_rates",
]
