"""A sweep: every (task, scheme, training-set size, seed), trained, measured, saved.

:func:`run_one` trains one model and measures it; :func:`run_sweep` runs the
whole grid with a progress bar on stderr and returns the JSON-ready dict;
:func:`summarize` reduces the seeds of each cell to mean, standard deviation,
minimum and maximum. Each run's seeds come from ``(seed, task, scheme,
train_size)`` alone (see ``relpos.book.experiments.config``), so a run's numbers
do not depend on what else the sweep contains or in which order it runs.

The JSON (``SCHEMA = 1``)::

    {"schema": 1,
     "command": "python -m relpos.book.experiments ...",   (when run from the CLI)
     "machine": {"processor", "cpu_count", "torch_threads", "platform", "python",
                 "date"},
     "torch": "2.x",
     "settings": {every field of Config except task/scheme/train_size/seed},
     "tasks": {name: {"description", "kind", "param", "vocab_size", "chance"}},
     "schemes": [...], "train_sizes": [...], "seeds": [...],
     "runs": [{"task", "scheme", "train_size", "seed", "model_seed", "parameters",
               "accuracy": {"<length>": float}, "final_loss", "train_seconds",
               "band": {"trained": [...], "initial": [...]} or null,
               "attention_peaks": [one distance per head] or null}],
     "summary": [{"task", "scheme", "train_size", "length",
                  "mean", "std", "min", "max", "n"}],
     "wall_seconds": float}

``band`` (DeBERTa schemes only) is :func:`band_profile` of the table's row
similarity after and before training: entry ``o`` is the mean cosine
similarity of rows ``o`` apart. ``attention_peaks`` (DeBERTa schemes only) is
:func:`attention_peaks`: the distance ``i - j`` each first-layer head attends
to most, on the test sequences of the training length.
"""

from __future__ import annotations

import datetime
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Iterable

import torch
from tqdm import tqdm

from .config import Config, model_seed
from .measure import attention_peaks, band_profile, evaluate, table_similarity
from .model import count_parameters
from .schemes import SCHEMES
from .tasks import TASKS, get_task
from .train import initial_model, train

SCHEMA = 1
GRID_FIELDS = ("task", "scheme", "train_size", "seed")


def _processor_name() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
        match = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    except OSError:
        match = None
    return (
        match.group(1).strip()
        if match
        else (platform.processor() or platform.machine())
    )


def machine_info() -> dict[str, Any]:
    """The machine a sweep ran on: processor, cores, torch threads, platform, date."""
    return {
        "processor": _processor_name(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"
        ),
    }


def run_one(config: Config, *, on_step: Any = None) -> dict[str, Any]:
    """Train one model of ``config`` and measure it: one entry of the JSON's ``runs``.
    """
    trained = train(config, on_step=on_step)
    band = None
    similarity = table_similarity(trained.model)
    if similarity is not None:
        band = {
            "trained": band_profile(similarity),
            "initial": band_profile(table_similarity(initial_model(config))),
        }
    tail = trained.losses[-max(1, config.steps // 10) :]
    return {
        "task": config.task,
        "scheme": config.scheme,
        "train_size": config.train_size,
        "seed": config.seed,
        "model_seed": model_seed(config),
        "parameters": count_parameters(trained.model),
        "accuracy": {str(n): acc for n, acc in evaluate(trained.model, config).items()},
        "final_loss": sum(tail) / len(tail),
        "train_seconds": trained.seconds,
        "band": band,
        "attention_peaks": attention_peaks(trained.model, config),
    }


def compare(
    config: Config, schemes: Iterable[str] | None = None
) -> dict[str, dict[str, Any]]:
    """Train and measure one model per scheme (default: all registered) on ``config``.

    The live version of a sweep cell, for a notebook: ``config.scheme`` is
    replaced by each scheme in turn; returns ``{scheme: run_one(...)}``.
    """
    names = list(SCHEMES) if schemes is None else list(schemes)
    _check_names("schemes", names, SCHEMES)
    return {name: run_one(config.replace(scheme=name)) for name in names}


def summarize(runs: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean, sample standard deviation, minimum, maximum over seeds, per cell, length.
    """
    cells: dict[tuple[str, str, int, int], list[float]] = {}
    for run in runs:
        for length, acc in run["accuracy"].items():
            key = (run["task"], run["scheme"], run["train_size"], int(length))
            cells.setdefault(key, []).append(acc)
    rows = []
    for (task, scheme, size, length), values in cells.items():
        rows.append(
            {
                "task": task,
                "scheme": scheme,
                "train_size": size,
                "length": length,
                "mean": statistics.fmean(values),
                "std": statistics.stdev(values) if len(values) > 1 else 0.0,
                "min": min(values),
                "max": max(values),
                "n": len(values),
            }
        )
    return rows


def summary_cells(result: dict[str, Any]) -> dict[tuple[str, str, int, int], dict]:
    """The summary of a sweep keyed by ``(task, scheme, train_size, length)``.

    ``result`` is the JSON that ``run_sweep`` writes (or its ``"summary"`` list
    itself); each value is one summary row (``mean``, ``std``, ``min``, ``max``,
    ``n`` over the seeds).
    """
    rows = result["summary"] if isinstance(result, dict) else result
    return {(r["task"], r["scheme"], r["train_size"], r["length"]): r for r in rows}


def _check_names(name: str, values: list[str], known: Iterable[str]) -> list[str]:
    known = tuple(known)
    if not values or any(v not in known for v in values):
        raise ValueError(
            f"{name} must be a non-empty list drawn from {known}, got {values!r}"
        )
    return list(values)


def run_sweep(
    base: Config,
    *,
    tasks: list[str],
    schemes: list[str],
    train_sizes: list[int],
    seeds: list[int],
    progress: bool = True,
    command: str | None = None,
) -> dict[str, Any]:
    """Train and measure every (task, scheme, train size, seed); return the JSON dict.

    ``base`` supplies every other setting. The progress bar (tqdm, on stderr)
    counts optimiser steps and names the run in progress.
    """
    tasks = _check_names("tasks", tasks, TASKS)
    schemes = _check_names("schemes", schemes, SCHEMES)
    configs = [
        base.replace(task=t, scheme=s, train_size=n, seed=seed)
        for t in tasks
        for s in schemes
        for n in train_sizes
        for seed in seeds
    ]  # every Config re-checks its train_size and seed
    start = time.perf_counter()
    runs = []
    with tqdm(
        total=len(configs) * base.steps,
        unit="step",
        file=sys.stderr,
        disable=not progress,
        dynamic_ncols=True,
    ) as bar:
        for config in configs:
            bar.set_postfix_str(
                f"{config.task}/{config.scheme} "
                f"size={config.train_size} seed={config.seed}"
            )
            runs.append(run_one(config, on_step=lambda step, loss: bar.update(1)))
    settings = {k: v for k, v in base.to_dict().items() if k not in GRID_FIELDS}
    result: dict[str, Any] = {"schema": SCHEMA}
    if command is not None:
        result["command"] = command
    result.update(
        {
            "machine": machine_info(),
            "torch": torch.__version__,
            "settings": settings,
            "tasks": {
                name: {
                    "description": task.description,
                    "kind": task.kind,
                    "param": task.param,
                    "vocab_size": task.vocab_size,
                    "chance": task.chance,
                }
                for name, task in ((t, get_task(t)) for t in tasks)
            },
            "schemes": schemes,
            "train_sizes": list(train_sizes),
            "seeds": list(seeds),
            "runs": runs,
            "summary": summarize(runs),
            "wall_seconds": time.perf_counter() - start,
        }
    )
    return result


# Fields that change from one run of the same command to the next (time, date).
VOLATILE = ("machine", "wall_seconds", "train_seconds", "command")


def numbers_only(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` without timings, date and machine: what a rerun must reproduce."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in VOLATILE}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(result)


__all__ = [
    "SCHEMA",
    "compare",
    "machine_info",
    "numbers_only",
    "run_one",
    "run_sweep",
    "summarize",
]
