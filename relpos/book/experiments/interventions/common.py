"""What every intervention shares: a run's record, its arms' accuracies, paired tests.

An intervention trains each seed's model once (or twice, for a scheme that
changes in training) and measures every *arm* on the same test sequences: the
model as trained, and the model with one cause changed. A comparison is then
paired by seed: the same seed's data (and weights, where the arms share them)
on both sides, one difference per seed, tested by ``relpos.book.stats``
(``paired_test``: mean, bootstrap interval, exact sign-flip p-value) with each
side's bootstrap interval (``bootstrap_interval``).

Shapes:
    accuracies: ``{arm: {"<length>": float}}``
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import torch

from ..config import Config
from ..measure import evaluation_set
from ..tasks import get_task
from ..train import Trained
from ..tuning import mean_final_loss
from .surgery import accuracy_with

#: Arms: name -> ``masks(n)``, the pair masks of :func:`.surgery.forward_layers` at
#: length ``n`` (``None``: the model as trained).
Arms = Mapping[str, Callable[[int], Any]]


def run_record(config: Config, trained: Trained, seed: int) -> dict[str, Any]:
    """What identifies a run and its training: the start of every record.

    ``seed`` is the model seed the run trained under.

    Shapes:
        (no tensors): a JSON-ready dict
    """
    return {
        "setting": config.setting,
        "task": config.task,
        "scheme": config.scheme,
        "num_layers": config.num_layers,
        "train_size": config.train_size,
        "seed": config.seed,
        "learning_rate": config.learning_rate,
        "model_seed": seed,
        "final_loss": mean_final_loss(trained.losses, config.steps),
        "train_seconds": trained.seconds,
    }


def arm_accuracies(
    model: torch.nn.Module, config: Config, arms: Arms
) -> dict[str, dict[str, float]]:
    """Accuracy of every arm at every test length, on the sweep's test sequences.

    Shapes:
        output: ``{arm: {"<length>": float}}``
    """
    task = get_task(config.task)
    found: dict[str, dict[str, float]] = {arm: {} for arm in arms}
    for n in config.test_lengths:
        tokens, labels = evaluation_set(config, n)  # (test_size, n) each
        for arm, masks in arms.items():
            found[arm][str(n)] = accuracy_with(model, task, tokens, labels, masks(n))
    return found


@dataclass(frozen=True)
class Side:
    """One side of a paired comparison: which records, and which number of each.

    ``where`` selects records by their fields (``{"scheme": "t5", "setting":
    "causal"}``); ``value(record)`` reads the number; ``label`` names it.
    """

    label: str
    where: Mapping[str, Any]
    value: Callable[[dict[str, Any]], float] = field(compare=False)

    def values(self, records: list[dict[str, Any]]) -> dict[int, float]:
        """``{seed: value}`` over the selected records (one per seed)."""
        found: dict[int, float] = {}
        for record in records:
            if all(record.get(k) == v for k, v in self.where.items()):
                if record["seed"] in found:
                    raise ValueError(
                        f"where={dict(self.where)!r} must select one record per "
                        f"seed, got two of seed {record['seed']}"
                    )
                found[record["seed"]] = float(self.value(record))
        return found


def arm(label: str, where: Mapping[str, Any], name: str, length: int) -> Side:
    """The side of an arm's accuracy at one length (``record["arms"]``).

    Shapes:
        (no tensors)
    """
    return Side(label, where, lambda r: r["arms"][name][str(length)])


def paired(
    records: list[dict[str, Any]], name: str, a: Side, b: Side
) -> dict[str, Any]:
    """``a - b`` seed by seed: both sides' values and intervals, the paired test.

    Both sides must cover the same seeds (at least two). Returns ``{"name",
    "a", "b", "seeds", "a_values", "b_values", "a_interval", "b_interval",
    "mean", "interval", "p_value", "n", "wins", "losses"}`` (``mean`` and on:
    ``relpos.book.stats.paired_test``'s, of ``a - b``).

    Shapes:
        records: one per cell and seed; ``a_values``, ``b_values``: one per seed
    """
    from relpos.book.stats import bootstrap_interval, paired_test

    first, second = a.values(records), b.values(records)
    if set(first) != set(second) or len(first) < 2:
        raise ValueError(
            f"comparison {name!r}: both sides must hold the same two or more seeds, "
            f"got {sorted(first)} and {sorted(second)}"
        )
    seeds = sorted(first)
    a_values = [first[s] for s in seeds]
    b_values = [second[s] for s in seeds]
    return {
        "name": name,
        "a": a.label,
        "b": b.label,
        "seeds": seeds,
        "a_values": a_values,
        "b_values": b_values,
        "a_interval": bootstrap_interval(a_values),
        "b_interval": bootstrap_interval(b_values),
        **paired_test(a_values, b_values),
    }


def rms(values: torch.Tensor) -> float:
    """Root mean square of every entry.

    Shapes:
        values: any; output: a float
    """
    return values.detach().float().pow(2).mean().sqrt().item()


__all__ = ["Arms", "Side", "arm", "arm_accuracies", "paired", "rms", "run_record"]
