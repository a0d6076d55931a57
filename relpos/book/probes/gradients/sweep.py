"""The gradient probe's sweep: every cell tuned, every seed trained, one JSON.

A cell is an (arm, mix): an arm of :data:`design.ARMS` trained on the content
objective alone or with the position objective. Each cell's learning rate is
tuned on the tuning seeds over a log-spaced grid extended past an edge until
the best is interior (``experiments.rate_grid.tune_rates``, chapter 12's rule),
scored by the summed validation loss of the objectives it trains on; every
measured seed then trains at the chosen rate and is measured on the test split.
Runs go to the run engine (``relpos.book.runner.open_runs``) and every
finished run is a record in the runs folder (``store.RunStore``) stamped with
the probe's own schema (:data:`design.SCHEMA`), not relpos's version: the folder
is committed, and a stopped sweep resumes in another session.

The JSON (``RESULT_SCHEMA = 1``)::

    {"schema": 1, "probe": "gradients", "design": {prediction, falsifier, arms,
     mechanism, aux_target, offset, mixes, schema}, "commands": [...],
     "machine": {...}, "torch", "corpus": {...}, "config": {the base TextConfig
     less scheme, seed and rate}, "grid": {"arm": [...], "seed": [...]},
     "tuning": {"grid", "seeds", "max_rates", "cells": [{"arm", "objectives",
     "rates", "scores", "chosen", "bracketed"}], "runs": [...]},
     "runs": [measured records, run.train_run], "summary": analysis.summarize,
     "wall_seconds", "run_seconds"}
"""

from __future__ import annotations

import os
import time
from typing import Any

from ...experiments.sweep import check_tune_seeds
from ...runner import EngineOptions, open_runs
from ...runner import store as runs_store
from ...text.config import TextConfig
from ...text.corpus import stdlib_corpus
from . import design
from .analysis import summarize
from .run import ProbeRun, label, probe_job, score

#: The JSON schema of the probe's result.
RESULT_SCHEMA = 1
#: What stamps every record of the runs folder (instead of relpos's version).
STAMP = {"probe": "gradients", "schema": design.SCHEMA}
#: The fields of the config a sweep varies or chooses (not in the JSON's config).
SWEPT = ("scheme", "seed", "learning_rate")

Cell = tuple[str, tuple[str, ...]]  # (arm, objectives)


def _finite_score(record: dict[str, Any]) -> float | None:
    """A tuning run's :func:`run.score`, None where it is not finite."""
    value = score(record)
    return value if value == value and abs(value) != float("inf") else None


def design_record() -> dict[str, Any]:
    """The design as the JSON holds it (the sentences written before the runs)."""
    return {
        "prediction": design.PREDICTION,
        "falsifier": design.FALSIFIER,
        "mechanism": design.MECHANISM,
        "arms": dict(design.ARMS),
        "aux_target": design.AUX_TARGET,
        "offset": design.OFFSET,
        "mixes": [list(m) for m in design.MIXES],
        "schema": design.SCHEMA,
    }


def run_probe(
    base: TextConfig,
    *,
    arms: list[str],
    seeds: list[int],
    learning_rates: list[float],
    tune_seeds: list[int],
    max_rates: int = 5,
    options: EngineOptions = EngineOptions(workers=1),
    runs_dir: str | os.PathLike | None = None,
    progress: bool = True,
    command: str | None = None,
    **old: Any,
) -> dict[str, Any]:
    """Tune every cell, train every seed at the chosen rate: the JSON dict.

    ``base`` supplies every field but the arm, seed and rate (its corpus
    SHA-256 is set here). ``options`` are ``open_engine``'s (``old``: its
    fields one by one, as ``workers=1``); ``runs_dir`` the runs folder (None:
    in memory).
    """
    unknown = [a for a in arms if a not in design.ARMS]
    if not arms or unknown or len(set(arms)) != len(arms):
        raise ValueError(
            f"arms must be distinct names from {tuple(design.ARMS)}, got {arms!r}"
        )
    tune_seeds = check_tune_seeds(tune_seeds, seeds)
    if not tune_seeds or len(learning_rates) < 2:
        raise ValueError("the probe tunes: give two rates or more and a tuning seed")
    corpus = stdlib_corpus(base.corpus)
    base = base.replace(corpus_sha256=corpus.sha256)
    cells: list[Cell] = [(arm, mix) for arm in arms for mix in design.MIXES]
    for arm in arms:  # every run's config checked before any runs
        for seed in [*seeds, *tune_seeds]:
            base.replace(scheme=arm, seed=seed)
    store, options = runs_store(runs_dir, stamp=STAMP), options.replace(**old)
    start = time.perf_counter()
    with open_runs(
        store,
        options,
        job=probe_job,
        progress=progress,
        label=label,
    ) as run:
        chosen, tuning_runs, runs = run.tuned(
            cells,
            learning_rates,
            lambda kind, cell, seed, rate: ProbeRun(
                base.replace(scheme=cell[0], seed=seed, learning_rate=rate), cell[1]
            ),
            _finite_score,
            tune_seeds=tune_seeds,
            seeds=seeds,
            max_rates=max_rates,
            description="measured",
        )
    result: dict[str, Any] = {
        "schema": RESULT_SCHEMA,
        "probe": "gradients",
        "design": design_record(),
        "commands": [] if command is None else [command],
        **options.header(),
        "corpus": corpus.about(),
        "config": {k: v for k, v in base.to_dict().items() if k not in SWEPT},
        "grid": {"arm": list(arms), "seed": list(seeds)},
        "tuning": {
            "grid": list(learning_rates),
            "seeds": list(tune_seeds),
            "max_rates": max_rates,
            "cells": [
                {
                    "arm": arm,
                    "objectives": list(mix),
                    "rates": chosen[arm, mix]["rates"],
                    "scores": chosen[arm, mix]["scores"],
                    "chosen": chosen[arm, mix]["chosen"],
                    "bracketed": chosen[arm, mix]["bracketed"],
                }
                for arm, mix in cells
            ],
            "runs": tuning_runs,
        },
        "runs": runs,
        "wall_seconds": time.perf_counter() - start,
    }
    result["run_seconds"] = sum(r["seconds"] for r in [*tuning_runs, *runs])
    result["summary"] = summarize(result)
    return result


__all__ = ["RESULT_SCHEMA", "STAMP", "SWEPT", "design_record", "run_probe"]
