"""The learning rate, chosen per scheme on validation sequences at the training length.

For every (setting, task, scheme) a sweep trains one model per learning rate of
a small grid and per *tuning seed* (seeds kept apart from the measured ones),
and measures each on validation sequences of the training length only: a split
of its own (``data_seed(config, L, "valid")``), never the test sequences and
never a test length. :func:`choose_rates` keeps the rate with the highest mean
validation accuracy (ties: the lower mean final training loss, then the smaller
rate); every measured run of that (setting, task, scheme) then trains with it.

Shape legend:
    tokens, labels: ``(b, n)``
"""

from __future__ import annotations

import statistics
from typing import Any, Iterable

import torch

from .config import Config, data_seed
from .measure import accuracy
from .tasks import get_task
from .train import train


def mean_final_loss(losses: list[float], steps: int) -> float:
    """The mean training loss over the last tenth of the steps (at least one)."""
    tail = losses[-max(1, steps // 10) :]
    return sum(tail) / len(tail)


def validation_set(config: Config) -> tuple[torch.Tensor, torch.Tensor]:
    """``config.test_size`` validation sequences of the training length.

    Seeded by ``data_seed(config, L, "valid")``: drawn apart from the training
    and the test sequences.

    Shapes:
        output: tokens ``(test_size, L)``, labels ``(test_size, L)``
    """
    length = config.train_length
    task = get_task(config.task)
    return task.sample(
        config.test_size, length, seed=data_seed(config, length, "valid")
    )


def tune_one(config: Config) -> dict[str, Any]:
    """Train one model of ``config`` and measure it on the validation sequences.

    One entry of the JSON's ``tuning.runs``: the run's setting, task, scheme,
    learning rate and seed, its ``valid_accuracy`` and ``final_loss``.
    """
    trained = train(config)
    task = get_task(config.task)
    return {
        "setting": config.setting,
        "task": config.task,
        "scheme": config.scheme,
        "learning_rate": config.learning_rate,
        "seed": config.seed,
        "valid_accuracy": accuracy(trained.model, task, *validation_set(config)),
        "final_loss": mean_final_loss(trained.losses, config.steps),
        "train_seconds": trained.seconds,
    }


def choose_rates(runs: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chosen rate of every (setting, task, scheme) in ``runs`` (tuning records).

    The highest mean validation accuracy over the tuning seeds wins; ties go to
    the lower mean final loss, then to the smaller rate. Returns one
    ``{"setting", "task", "scheme", "learning_rate", "valid_accuracy"}`` per
    cell, in the order the cells first appear.
    """
    cells: dict[tuple[str, str, str], dict[float, list[dict[str, Any]]]] = {}
    for run in runs:
        key = (run["setting"], run["task"], run["scheme"])
        cells.setdefault(key, {}).setdefault(run["learning_rate"], []).append(run)
    chosen = []
    for (setting, task, scheme), by_rate in cells.items():
        scores = {
            rate: (
                statistics.fmean(r["valid_accuracy"] for r in mine),
                statistics.fmean(r["final_loss"] for r in mine),
            )
            for rate, mine in by_rate.items()
        }
        best = min(scores, key=lambda rate: (-scores[rate][0], scores[rate][1], rate))
        chosen.append(
            {
                "setting": setting,
                "task": task,
                "scheme": scheme,
                "learning_rate": best,
                "valid_accuracy": scores[best][0],
            }
        )
    return chosen


__all__ = ["choose_rates", "mean_final_loss", "tune_one", "validation_set"]
