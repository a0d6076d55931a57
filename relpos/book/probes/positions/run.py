"""The whole probe in one call: both parts under the protocol, one JSON.

:func:`run_probe` runs the transfer part (``transfer``: every arm of
``ARMS`` under both supervisions, each cell's rate tuned on ``TUNE_SEEDS``
over ``LEARNING_RATES`` extended until interior, then the measured seeds)
and the data-efficiency part (``sweep.run_sweep`` on the main sweep's
settings at ``DATA_SIZES``), each run on the engine (``open_engine``) and kept
in the runs folder (``store.RunStore``) keyed on the probe's stamp, never on
``relpos.__version__``: a committed folder resumes across sessions. The JSON::

    {"probe": "positions", "schema": 1, "command": "...",
     "design": {"prediction", "falsifier", "mechanism", "arms"},
     "machine": {..., "engine", "workers"}, "torch", "relpos",
     "transfer": {"config": {every field but scheme, seed, rate, supervision},
                  "seeds": [...], "tuning": {"seeds", "runs", "chosen"},
                  "runs": [one record per arm, supervision and seed]},
     "data_efficiency": the sweep's JSON (schema 3) without its coverage,
     "wall_seconds", "run_seconds"}
"""

from __future__ import annotations

import time
from typing import Any, Iterable, Mapping

from ...experiments.config import Config
from ...experiments.sweep import run_sweep
from ...runner import EngineOptions, Runs, open_runs
from ...runner import store as runs_store
from ...experiments.tuning import Cell, tune_cells
from . import design
from .transfer import run_job, supervision_of, transfer_config

#: The parts of the probe.
PARTS = ("transfer", "data")


def stamp(part: str) -> dict[str, Any]:
    """What keys a part's runs besides kind and config (``store.RunStore``)."""
    return {"probe": design.NAME, "part": part, "schema": design.SCHEMA}


def _label(kind: str, config: Config) -> str:
    text = f"{config.scheme} {supervision_of(config)} seed={config.seed}"
    return f"tuning {text} lr={config.learning_rate:g}" if kind == "tuning" else text


def run_transfer(
    run: Runs,
    *,
    schemes: Iterable[str],
    seeds: Iterable[int],
    tune_seeds: Iterable[int],
    changes: Mapping[str, Any],
) -> dict[str, Any]:
    """Tune every (scheme, supervision) cell, then train its measured seeds.

    ``run``: the open run loop (``runner.open_runs``); ``changes``: fields set
    on every config (fewer steps, for a test).

    Shapes:
        (no tensors): the JSON's ``transfer`` entry
    """
    schemes, seeds, tune_seeds = list(schemes), list(seeds), list(tune_seeds)
    chosen, tuned, runs = [], [], []
    for supervision in design.SUPERVISIONS:
        base = transfer_config("none", supervision, **changes)

        def tuning(jobs: list[tuple[Cell, float, int]]) -> list[dict[str, Any]]:
            configs = [
                base.replace(scheme=cell[2], learning_rate=rate, seed=seed)
                for cell, rate, seed in jobs
            ]
            return run("tuning", configs)

        cells = [(base.setting, base.task, s, base.train_size) for s in schemes]
        found, tuning_runs = tune_cells(
            cells, design.LEARNING_RATES, tune_seeds, tuning,
            max_rates=design.MAX_RATES,
        )
        chosen += [{**c, "supervision": supervision} for c in found]
        tuned += [{**r, "supervision": supervision} for r in tuning_runs]
        rate = {c["scheme"]: c["learning_rate"] for c in found}
        configs = [
            base.replace(scheme=s, seed=seed, learning_rate=rate[s])
            for s in schemes
            for seed in seeds
        ]
        runs += run("measured", configs, description=f"transfer ({supervision})")
    skip = ("scheme", "seed", "learning_rate", "supervised_positions")
    return {
        "config": {k: v for k, v in base.to_dict().items() if k not in skip},
        "supervised": design.SUPERVISED,
        "seeds": seeds,
        "tuning": {
            "learning_rates": list(design.LEARNING_RATES),
            "seeds": tune_seeds,
            "max_rates": design.MAX_RATES,
            "objective": "valid_loss on the supervised positions",
            "runs": tuned,
            "chosen": chosen,
        },
        "runs": runs,
    }


def run_probe(
    *,
    parts: Iterable[str] = PARTS,
    schemes: Iterable[str] = tuple(design.ARMS),
    data_schemes: Iterable[str] = design.DATA_SCHEMES,
    data_sizes: Iterable[int] = design.DATA_SIZES,
    seeds: Iterable[int] = design.SEEDS,
    tune_seeds: Iterable[int] = design.TUNE_SEEDS,
    changes: Mapping[str, Any] | None = None,
    options: EngineOptions = EngineOptions(workers=2),
    runs_dir: Any = None,
    progress: bool = True,
    command: str | None = None,
    **old: Any,
) -> dict[str, Any]:
    """Run the named parts of the probe (default both); the JSON-ready dict.

    ``runs_dir``: the runs folder (``None``: in memory); ``changes``: fields of
    ``Config`` set on every run of both parts (``{"steps": 5}`` for a test, not
    for results); ``data_sizes`` the data part's training sizes; ``options``
    are ``open_engine``'s (``old``: its fields one by one, as ``workers=1``).

    Shapes:
        (no tensors): the JSON-ready result (module docstring)
    """
    parts = list(parts)
    if not parts or any(p not in PARTS for p in parts) or len(set(parts)) != len(
        parts
    ):
        raise ValueError(f"parts must be distinct names of {PARTS}, got {parts!r}")
    seeds, tune_seeds = list(seeds), list(tune_seeds)
    changes, options = dict(changes or {}), options.replace(**old)
    start = time.perf_counter()
    result: dict[str, Any] = {"probe": design.NAME, "schema": design.SCHEMA}
    if command is not None:
        result["command"] = command
    result["design"] = {
        "prediction": design.PREDICTION,
        "falsifier": design.FALSIFIER,
        "mechanism": design.MECHANISM,
        "arms": design.ARMS,
    }
    seconds = 0.0
    if "transfer" in parts:
        with open_runs(
            runs_store(runs_dir, stamp=stamp("transfer")), options, job=run_job,
            progress=progress, label=_label,
        ) as run:
            result["transfer"] = run_transfer(
                run, schemes=schemes, seeds=seeds, tune_seeds=tune_seeds,
                changes=changes,
            )
        done = result["transfer"]
        seconds += sum(r["job_seconds"] for r in done["runs"])
        seconds += sum(r["train_seconds"] for r in done["tuning"]["runs"])
    if "data" in parts:
        sweep = run_sweep(
            Config(task="relative").replace(**changes),
            tasks=["relative"],
            schemes=list(data_schemes),
            train_sizes=list(data_sizes),
            seeds=seeds,
            learning_rates=list(design.LEARNING_RATES),
            tune_seeds=tune_seeds,
            max_rates=design.MAX_RATES,
            options=options,
            runs_dir=runs_dir,
            progress=progress,
            stamp=stamp("data"),
        )
        result["data_efficiency"] = {
            k: v for k, v in sweep.items() if k not in ("coverage", "machine")
        }
        seconds += sweep["run_seconds"]
    result.update(
        {
            **options.header(),
            "wall_seconds": time.perf_counter() - start,
            "run_seconds": seconds,
        }
    )
    return result


__all__ = ["PARTS", "run_probe", "run_transfer", "stamp"]
