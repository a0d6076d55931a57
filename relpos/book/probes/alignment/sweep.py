"""The probe's sweep: every arm tuned, ten seeds trained, every item scored.

The protocol of chapter 12: each arm's learning rate is tuned on the tuning
seeds (bits per byte on a validation stream at ``L``; the items are never
read) over a log-spaced grid extended past an edge until the best is interior
(``runner.Runs.tuned``); then every measured seed trains at the chosen rate
and scores every item. Runs go to the run engine (``runner.open_runs``); each
finished run is its own record in a runs folder keyed on :data:`STAMP` (the
probe and ``design.PROBE_SCHEMA``) and not on the relpos version
(``RunStore(stamp=STAMP)``), committed to git, so the sweep resumes across
sessions and releases.

The JSON (``alignment.json``)::

    {"schema", "commands", "machine", "torch", "relpos",
     "design": {"prediction", "falsifier", "mechanism", "arms"},
     "items": {"file", "sha256", "count", "provenance"},
     "config": {the ProbeRun fields but arm, seed, rate},
     "grid": {"arm": [...], "seed": [...]},
     "tuning": {"grid", "seeds", "max_rates", "cells": [...], "runs": [...]},
     "runs": [measured records without margins, with "accuracy"],
     "summary": ..., "comparisons": ..., "record": the verdict,
     "wall_seconds", "run_seconds"}

``summary`` and ``comparisons`` are ``summary.summarize``'s; the margins of
every item, seed and arm stay in the runs folder, and the per-item table
(share of seeds right, mean margin) is written beside the JSON.
"""

from __future__ import annotations

import os
import time
from typing import Any, Sequence

import torch

from ...experiments.rate_grid import check_grid
from ...experiments.store import RunStore
from ...experiments.sweep import check_tune_seeds
from ...runner import EngineOptions, open_runs
from .design import ARM_CONFIGS, ARMS, FALSIFIER, MECHANISM, PREDICTION, PROBE_SCHEMA
from .run import ProbeRun, check_items, probe_run

#: What stamps every record of the runs folder (instead of relpos's version).
STAMP = {"probe": "alignment", "schema": PROBE_SCHEMA}
#: The fields of a ProbeRun a sweep varies or chooses (not in the JSON's config).
SWEPT = ("arm", "seed", "learning_rate")


def probe_job(kind: str, job: tuple[ProbeRun, tuple], threads: int = 1) -> dict:
    """One job of an executor: a tuning run, or a measured run on the items.

    ``job`` is ``(run, items)`` (items as a tuple of dicts; empty for tuning).
    Sets the torch threads first.
    """
    if kind not in ("measured", "tuning"):
        raise ValueError(f"kind must be 'measured' or 'tuning', got {kind!r}")
    torch.set_num_threads(threads)
    run, items = job
    return probe_run(run, list(items) if kind == "measured" else None)


class _Jobs(RunStore):
    """The probe's store, keyed on the run alone (the items are fixed by the
    schema), for jobs that carry their items."""

    def get(self, kind: str, job: Any) -> dict[str, Any] | None:
        return super().get(kind, job[0])

    def put(self, kind: str, job: Any, record: dict[str, Any]) -> dict[str, Any]:
        return super().put(kind, job[0], record)


def probe_store(runs_dir: str | os.PathLike | None) -> RunStore:
    """The runs folder of the probe: keyed on :data:`STAMP`, not the version."""
    return _Jobs(runs_dir, stamp=STAMP)


def _label(kind: str, job: Any) -> str:
    run = job[0]
    text = f"{run.arm} seed={run.seed}"
    return f"tuning {text} lr={run.learning_rate:g}" if kind == "tuning" else text


def run_probe(
    base: ProbeRun,
    items: Sequence[dict[str, Any]],
    *,
    arms: Sequence[str],
    seeds: Sequence[int],
    learning_rates: Sequence[float],
    tune_seeds: Sequence[int] = (100, 101),
    max_rates: int = 6,
    options: EngineOptions = EngineOptions(workers=1),
    runs_dir: str | os.PathLike | None = None,
    progress: bool = True,
    command: str | None = None,
) -> dict[str, Any]:
    """Tune every arm, train every seed, score every item: the JSON dict
    (without ``summary``, ``comparisons`` and ``record``: ``summary`` adds them).

    ``base`` supplies every field but arm, seed and rate; ``options`` are
    ``open_engine``'s.
    """
    unknown = [a for a in arms if a not in ARM_CONFIGS]
    if not arms or unknown:
        raise ValueError(f"arms must be drawn from {tuple(ARM_CONFIGS)}, got {arms!r}")
    check_items(items, base.train_length)
    tune_seeds = check_tune_seeds(tune_seeds, seeds)
    rates = list(learning_rates)
    for arm in arms:  # every run's config checked before any run
        for seed in [*seeds, *tune_seeds]:
            base.replace(arm=arm, seed=seed, learning_rate=rates[0])
    frozen = tuple(items)
    store = probe_store(runs_dir)
    start = time.perf_counter()
    with open_runs(
        store,
        options,
        job=probe_job,
        progress=progress,
        label=_label,
    ) as run:
        chosen, tuning_runs, runs = run.tuned(
            list(arms),
            check_grid(rates),  # the probe tunes: two rates or more
            lambda kind, arm, seed, rate: (
                base.replace(arm=arm, seed=seed, learning_rate=rate),
                frozen if kind == "measured" else (),
            ),
            lambda record: record["valid_bpb"],
            tune_seeds=tune_seeds,
            seeds=seeds,
            max_rates=max_rates,
        )
    return {
        "schema": PROBE_SCHEMA,
        "commands": [] if command is None else [command],
        **options.header(),
        "design": {
            "prediction": PREDICTION,
            "falsifier": FALSIFIER,
            "mechanism": MECHANISM,
            "arms": {arm: ARMS[arm] for arm in arms},
        },
        "config": {k: v for k, v in base.to_dict().items() if k not in SWEPT},
        "grid": {"arm": list(arms), "seed": list(seeds)},
        "tuning": {
            "grid": rates,
            "seeds": list(tune_seeds),
            "max_rates": max_rates,
            "cells": [
                {
                    "arm": arm,
                    "rates": chosen[arm]["rates"],
                    "valid_bpb": chosen[arm]["scores"],
                    "chosen": chosen[arm]["chosen"],
                    "bracketed": chosen[arm]["bracketed"],
                }
                for arm in arms
            ],
            "runs": tuning_runs,
        },
        "runs": runs,
        "wall_seconds": time.perf_counter() - start,
        "run_seconds": sum(
            r["train_seconds"] + r["eval_seconds"] for r in [*tuning_runs, *runs]
        ),
    }


__all__ = ["STAMP", "SWEPT", "probe_job", "probe_store", "run_probe"]
