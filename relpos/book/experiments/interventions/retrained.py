"""Arms that change a setting before training, trained as the sweep and scored.

Some mechanisms are tested by training the same cell twice with one setting
changed (the rate, the table's span ``k``), not by cutting a trained model
(``mechanisms``: ``mqar_rates``, ``deberta_reach``). Each arm is a cell whose
``changes`` set that field; both arms train under the same model seed (so the
same batches, and every initial weight the change does not touch), on the
sweep's test sequences. A record holds the changed fields, so a comparison
selects an arm by them (``Side.where``).

Shapes:
    arms: ``{"trained": {"<length>": float}}``
"""

from __future__ import annotations

from typing import Any

from ..config import Config, model_seed
from ..measure import evaluate, exact_match
from ..train import train
from .common import arm, paired, run_record

#: The settings an arm may change, recorded in every run (``Side.where`` keys).
ARM_FIELDS = ("learning_rate", "max_relative_positions", "t5_max_distance")


def measure(config: Config) -> dict[str, Any]:
    """Train the cell as its sweep does; accuracy and exact match at every length.

    The record: :func:`.common.run_record`'s fields, every field of
    :data:`ARM_FIELDS`, ``arms`` (``trained``: accuracy per test length) and
    ``exact_match`` per test length.

    Shapes:
        record: JSON-ready
    """
    seed = model_seed(config)
    trained = train(config, seed=seed)
    model = trained.model
    return {
        **run_record(config, trained, seed),
        **{name: getattr(config, name) for name in ARM_FIELDS},
        "arms": {"trained": {str(n): a for n, a in evaluate(model, config).items()}},
        "exact_match": {
            str(n): a for n, a in evaluate(model, config, metric=exact_match).items()
        },
    }


def against(
    records: list[dict[str, Any]], field: str, base: Any
) -> list[dict[str, Any]]:
    """Every other value of ``field`` against ``base``, paired by seed, per length.

    Shapes:
        records: one per cell and seed; output: one dict per comparison
    """
    values = sorted({r[field] for r in records} - {base})
    lengths = sorted({int(n) for r in records for n in r["arms"]["trained"]})
    found = []
    for value in values:
        for n in lengths:
            found.append(
                paired(
                    records,
                    f"{field} {value:g} - {base:g}, n = {n}",
                    arm(f"{field} {value:g}, n = {n}", {field: value}, "trained", n),
                    arm(f"{field} {base:g}, n = {n}", {field: base}, "trained", n),
                )
            )
    return found


def rates(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``mqar_rates``: each rate against the sweep's chosen one (the middle rate).

    Shapes:
        records: one per cell and seed; output: one dict per comparison
    """
    chosen = sorted({r["learning_rate"] for r in records})
    return against(records, "learning_rate", chosen[len(chosen) // 2])


def spans(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``deberta_reach``: each span ``k`` against the smallest (the sweep's).

    Shapes:
        records: one per cell and seed; output: one dict per comparison
    """
    field = "max_relative_positions"
    return against(records, field, min(r[field] for r in records))


__all__ = ["ARM_FIELDS", "against", "measure", "rates", "spans"]
