"""The learning rate, chosen per cell on validation sequences at the training length.

A cell is a (setting, task, scheme, training size): the best rate for 8
training sequences need not be the best for 512. Every cell trains one model
per learning rate and per *tuning seed* (seeds kept apart from the measured
ones) with its own number of training sequences, and each is scored on
validation sequences of the training length only: a split of its own
(``data_seed(config, L, "valid")``), never the test sequences and never a test
length. The score is the validation loss (cross-entropy over the scored
positions, mean over the tuning seeds; lower is better), which keeps ranking
rates where several reach the same accuracy. The grid is log-spaced and
extended past an edge that holds the best rate until the best is interior
(``rate_grid.tune_rates``); every measured run of the cell then trains with it.
:func:`tune_cells` is this protocol in the sweep's words, over the run engine's
one tuning path (``runner.tune_on_seeds``, which ``runner.Runs.tuned`` takes too).

Shape legend:
    tokens, labels: ``(b, n)``; logits: ``(b, n, classes)``
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Callable, Hashable, Iterable, Sequence

import torch
import torch.nn.functional as F

from ..runner import tune_on_seeds
from .config import Config, data_seed
from .measure import accuracy
from .model import TinyModel
from .tasks import Task, get_task
from .train import supervise, train


def mean_final_loss(losses: list[float], steps: int) -> float:
    """The mean training loss over the last tenth of the steps (at least one)."""
    tail = losses[-max(1, steps // 10) :]
    return sum(tail) / len(tail)


def validation_set(config: Config) -> tuple[torch.Tensor, torch.Tensor]:
    """``config.test_size`` validation sequences of the training length.

    Seeded by ``data_seed(config, L, "valid")``: drawn apart from the training
    and the test sequences. With ``supervised_positions`` the labels beyond
    them are ``IGNORE`` (``train.supervise``): the rate is chosen on the
    positions the loss reads, never on the ones a probe scores apart.

    Shapes:
        output: tokens ``(test_size, L)``, labels ``(test_size, L)``
    """
    length = config.train_length
    task = get_task(config.task)
    tokens, labels = task.sample(
        config.test_size, length, seed=data_seed(config, length, "valid")
    )
    return tokens, supervise(labels, config)


def validation_loss(
    model: TinyModel, task: Task, tokens: torch.Tensor, labels: torch.Tensor
) -> float:
    """Mean cross-entropy over the scored positions (``task.scored``).

    Shapes:
        tokens, labels: ``(b, n)``
        output: a float (``inf`` when the model's logits are not finite)
    """
    was_training = model.training
    model.eval()
    with torch.no_grad():
        logits = model(tokens)  # (b, n, classes)
    model.train(was_training)
    scored = task.scored(labels)  # (b, n)
    loss = F.cross_entropy(logits[scored], labels[scored]).item()
    return loss if math.isfinite(loss) else math.inf


def tune_one(config: Config) -> dict[str, Any]:
    """Train one model of ``config`` and measure it on the validation sequences.

    One entry of the JSON's ``tuning.runs``: the run's setting, task, scheme,
    training size, learning rate and seed, its ``valid_loss`` (the score),
    ``valid_accuracy`` and ``final_loss``.
    """
    trained = train(config)
    task = get_task(config.task)
    valid = validation_set(config)
    return {
        "setting": config.setting,
        "task": config.task,
        "scheme": config.scheme,
        "train_size": config.train_size,
        "learning_rate": config.learning_rate,
        "seed": config.seed,
        "valid_loss": validation_loss(trained.model, task, *valid),
        "valid_accuracy": accuracy(trained.model, task, *valid),
        "final_loss": mean_final_loss(trained.losses, config.steps),
        "train_seconds": trained.seconds,
    }


Cell = tuple[str, str, str, int]  # (setting, task, scheme, train_size)


def finite_loss(record: dict[str, Any]) -> float | None:
    """A tuning run's score: its ``valid_loss``, None (diverged) where not finite."""
    loss = record["valid_loss"]
    return loss if math.isfinite(loss) else None


def tune_cells(
    cells: Sequence[Cell],
    grid: Sequence[float],
    tune_seeds: Sequence[int],
    run: Callable[[list[tuple[Cell, float, int]]], list[dict[str, Any]]],
    *,
    max_rates: int = 8,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The chosen rate of every cell, and every tuning run's record.

    The rates are tuned by the run engine's one path (``runner.tune_on_seeds``):
    ``run(jobs)`` trains one tuning run per ``(cell, rate, seed)`` job and
    returns their records (``tune_one``'s) in the same order; a cell's score
    at a rate is its mean ``valid_loss`` over ``tune_seeds`` (``None``, a
    diverged run, when one is not finite: :func:`finite_loss`). Returns
    ``(chosen, runs)``: ``chosen`` holds one ``{"setting", "task", "scheme",
    "train_size", "learning_rate", "rates", "scores", "valid_accuracy",
    "bracketed"}`` per cell, in the order of ``cells`` (``rates`` sorted,
    ``scores`` one per rate, ``valid_accuracy`` the chosen rate's mean).
    """
    accuracies: dict[tuple[Hashable, float], list[float]] = {}

    def run_and_keep(jobs: list[tuple[Cell, float, int]]) -> list[dict[str, Any]]:
        records = run(jobs)
        for (cell, rate, _), record in zip(jobs, records):
            accuracies.setdefault((cell, rate), []).append(record["valid_accuracy"])
        return records

    curves, runs = tune_on_seeds(
        cells, grid, run_and_keep, finite_loss, tune_seeds=tune_seeds,
        max_rates=max_rates,
    )
    return [_chosen(cell, curves[cell], accuracies) for cell in cells], runs


def _chosen(
    cell: Cell,
    curve: dict[str, Any],
    accuracies: dict[tuple[Hashable, float], list[float]],
) -> dict[str, Any]:
    setting, task, scheme, train_size = cell
    return {
        "setting": setting,
        "task": task,
        "scheme": scheme,
        "train_size": train_size,
        "learning_rate": curve["chosen"],
        "rates": curve["rates"],
        "scores": curve["scores"],
        "valid_accuracy": statistics.fmean(accuracies[cell, curve["chosen"]]),
        "bracketed": curve["bracketed"],
    }


def interior_share(results: Iterable[dict[str, Any]]) -> tuple[int, int]:
    """How many tuned cells of the sweeps ``results`` chose a rate inside their grid.

    Shapes:
        output: ``(bracketed, cells)``, over every ``tuning.chosen`` entry
    """
    cells = [c for result in results for c in result["tuning"]["chosen"]]
    return sum(bool(c.get("bracketed")) for c in cells), len(cells)


__all__ = [
    "finite_loss",
    "interior_share",
    "mean_final_loss",
    "tune_cells",
    "tune_one",
    "validation_loss",
    "validation_set",
]
