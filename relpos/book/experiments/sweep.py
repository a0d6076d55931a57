"""A sweep: every (setting, task, scheme, training-set size, seed), trained, measured.

:func:`run_sweep` tunes the learning rate of every (setting, task, scheme)
(``tuning``), runs the grid at the chosen rates, and returns the JSON-ready
dict; the runs go to an executor (``engine``: local processes or a Dask
cluster) and each finished run is a record in a runs folder (``store``), so an
interrupted sweep resumes where it stopped. :func:`summarize` reduces the
seeds of each cell to mean, standard deviation, minimum, maximum and the value
of every seed. Each run's seeds come from ``(seed, task, scheme, train_size)``
(and the setting) alone (see ``relpos.book.experiments.config``), so a run's
numbers do not depend on what else the sweep contains, in which order it runs
or on how many workers.

The JSON (``SCHEMA = 3``)::

    {"schema": 2,
     "command": "python -m relpos.book.experiments ...",   (when run from the CLI)
     "machine": {"processor", "cpu_count", "torch_threads" (of each run),
                 "platform", "python", "date", "engine", "workers"},
     "torch": "2.x", "relpos": "0.x",
     "config": {every field of Config not swept, learning_rate excluded},
     "grid": {"setting": [...], "task": [...], "scheme": [...],
              "train_size": [...], "seed": [...]},
     "tuning": {"learning_rates": [the starting grid], "seeds": [...],
                "max_rates": N, "objective": "valid_loss",
                "runs": [{"setting", "task", "scheme", "train_size",
                          "learning_rate", "seed", "valid_loss",
                          "valid_accuracy", "final_loss", "train_seconds"}],
                "chosen": [{"setting", "task", "scheme", "train_size",
                            "learning_rate", "rates": [every rate tried],
                            "scores": [mean valid_loss per rate],
                            "valid_accuracy", "bracketed"}]},
     "tasks": {name: {"description", "kind", "param", "vocab_size", "chance"}},
     "runs": [{"setting", "task", "scheme", "train_size", "seed", "learning_rate",
               "model_seed", "parameters", "accuracy": {"<length>": float},
               "exact_match": {"<length>": float}, "final_loss", "train_seconds",
               "band": {"trained": [...], "initial": [...]} or null,
               "attention_peaks": [one distance per head] or null}],
     "summary": [{"setting", "task", "scheme", "train_size", "length",
                  "mean", "std", "min", "max", "n", "interval": [low, high],
                  "values": [one per seed]}],
     "exact": [the rows of "summary", over each run's exact_match],
     "coverage": [{"setting", "task", "scheme", "length", "kind", "learned",
                   "unseen", "touched", "pair_fraction"}],
     "wall_seconds": float, "run_seconds": float}

Every reader (the figures, the report, the exercise checks, the charts) reads
this JSON through :func:`load_sweep`: schema 2 as it is, schema 1 upgraded by
:func:`as_schema_2`, anything else refused with what to rerun.

``coverage`` is :func:`~relpos.book.experiments.coverage.coverage_table` of
every (setting, task, scheme) at every test length: per kind of position
entry the scheme reads (a table row, a bucket, an absolute row, a distance of
a fixed formula), the entries a test sequence reads that no training sequence
reads (``unseen``), and the share of scored query positions (``touched``)
and of scored pairs (``pair_fraction``) that read one. No training is involved;
a scheme registered without a coverage reader (``register_reader``) has no rows.

``tuning``: every (setting, task, scheme, training size) is tuned on its own
(see ``tuning``): the starting grid, extended past an edge holding the best
validation loss until the best rate is interior (``bracketed``) or the grid
holds ``max_rates`` rates; ``rates`` and ``scores`` are its validation curve.
With one learning rate there is nothing to tune (``seeds`` and ``runs`` are
empty, each chosen ``valid_accuracy`` null, ``bracketed`` false). Schema 2
(the sweeps before per-size tuning) tuned each (setting, task, scheme) once, on
a grid of three rates at one training size (``tuning.train_size``), by
validation accuracy. ``interval`` (schema 3) is the 95% bootstrap interval of
the mean over the seeds (``None`` for one seed). ``runs`` and ``summary`` are in the grid's order (setting,
task, scheme, train size, seed), whatever order the runs finished in;
``values`` holds one accuracy per seed, in the grid's seed order.
``run_seconds`` is the sum of every run's own training time (tuning runs
included, and runs read back from the runs folder); ``wall_seconds`` the time
of this invocation.

``exact_match`` is the share of a run's test sequences whose every scored
position is right (exact-match accuracy, the metric of Delétang et al. 2023
and Kazemnejad et al. 2023); ``exact`` summarises it as ``summary`` does
``accuracy``.

``band`` (DeBERTa schemes only) is :func:`band_profile` of the table's row
similarity after and before training: entry ``o`` is the mean cosine
similarity of rows ``o`` apart. ``attention_peaks`` (DeBERTa schemes only) is
:func:`attention_peaks`: the distance ``i - j`` each first-layer head attends
to most, on the test sequences of the training length.
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import time
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..runner import EngineOptions, machine_info, open_runs, run_header
from ..runner import store as runs_store
from ..stats import bootstrap_interval
from .config import SETTINGS, Config
from .coverage import READERS, coverage_table
from .engine import run_one
from .schemes import SCHEMES
from .store import SCHEMA
from .tasks import TASKS, get_task
from .tuning import Cell, tune_cells

#: The fields a sweep varies, in the grid's order.
GRID_FIELDS = tuple(
    f.name for f in dataclasses.fields(Config) if f.metadata.get("sweep")
)
_GRID_ORDER = ("setting", "task", "scheme", "train_size", "seed")
SummaryKey = tuple[str, str, str, int, int]


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


def summarize(
    runs: Iterable[dict[str, Any]], metric: str = "accuracy"
) -> list[dict[str, Any]]:
    """Mean, sample standard deviation, minimum, maximum, interval, every seed's value.

    One row per (setting, task, scheme, train size, length), in the order the
    runs come; ``values`` lists the ``metric`` (``"accuracy"`` or
    ``"exact_match"``) of each run of the cell in that order (one per seed);
    ``interval`` is the 95% bootstrap interval of the mean over the seeds
    (``relpos.book.stats``; ``None`` for one seed). A run without ``setting``
    (schema 1) is an encoder run; a run without the metric adds nothing.
    """
    cells: dict[SummaryKey, list[float]] = {}
    for run in runs:
        for length, acc in run.get(metric, {}).items():
            key = (
                run.get("setting", "encoder"),
                run["task"],
                run["scheme"],
                run["train_size"],
                int(length),
            )
            cells.setdefault(key, []).append(acc)
    rows = []
    for (setting, task, scheme, size, length), values in cells.items():
        rows.append(
            {
                "setting": setting,
                "task": task,
                "scheme": scheme,
                "train_size": size,
                "length": length,
                "mean": statistics.fmean(values),
                "std": statistics.stdev(values) if len(values) > 1 else 0.0,
                "min": min(values),
                "max": max(values),
                "n": len(values),
                "interval": bootstrap_interval(values) if len(values) > 1 else None,
                "values": list(values),
            }
        )
    return rows


def summary_cells(result: dict[str, Any] | list[dict]) -> dict[SummaryKey, dict]:
    """The summary of a sweep keyed by ``(setting, task, scheme, train_size, length)``.

    ``result`` is the JSON that ``run_sweep`` writes (or its ``"summary"`` list
    itself); each value is one summary row (``mean``, ``std``, ``min``, ``max``,
    ``n`` and ``values`` over the seeds). Rows without a setting (schema 1)
    are keyed as ``"encoder"``.
    """
    rows = result["summary"] if isinstance(result, dict) else result
    return {
        (
            r.get("setting", "encoder"),
            r["task"],
            r["scheme"],
            r["train_size"],
            r["length"],
        ): r
        for r in rows
    }


def _check_names(name: str, values: list[str], known: Iterable[str]) -> list[str]:
    known = tuple(known)
    if not values or any(v not in known for v in values):
        raise ValueError(
            f"{name} must be a non-empty list drawn from {known}, got {values!r}"
        )
    return list(values)


def _check_rates(learning_rates: Iterable[float]) -> list[float]:
    rates = list(learning_rates)
    if not rates or len(set(rates)) != len(rates):
        raise ValueError(
            f"learning_rates must be a non-empty list of distinct floats, got {rates!r}"
        )
    return rates


def check_tune_seeds(tune_seeds: Iterable[int], seeds: Iterable[int]) -> list[int]:
    """``tune_seeds`` as a list; ``ValueError`` if one of them is a measured seed.

    The tuning runs choose the learning rate; a seed used there and measured
    too would let the choice see the data it is judged on.
    """
    tune_seeds, seeds = list(tune_seeds), list(seeds)
    shared = sorted(set(tune_seeds) & set(seeds))
    if shared:
        raise ValueError(
            f"tune_seeds must be disjoint from the measured seeds {seeds}, "
            f"got {tune_seeds} (both hold {shared})"
        )
    return tune_seeds


def run_sweep(
    base: Config,
    *,
    tasks: list[str],
    schemes: list[str],
    train_sizes: list[int],
    seeds: list[int],
    settings: list[str] | None = None,
    learning_rates: list[float] | None = None,
    tune_seeds: list[int] = (),
    max_rates: int = 8,
    options: EngineOptions = EngineOptions(workers=1),
    runs_dir: str | os.PathLike | None = None,
    progress: bool = True,
    command: str | None = None,
    stamp: Mapping[str, Any] | None = None,
    **old: Any,
) -> dict[str, Any]:
    """Tune, train and measure every (setting, task, scheme, size, seed): the JSON dict.

    ``base`` supplies every other setting; ``settings`` defaults to
    ``[base.setting]`` and ``learning_rates`` to ``[base.learning_rate]`` (one
    rate: no tuning). With two rates or more, the rates are the starting grid
    of every (setting, task, scheme, training size): each trains at every rate
    on every seed of ``tune_seeds`` (disjoint from ``seeds``) with its own
    number of training sequences, the grid grows past an edge holding the best
    validation loss until the best is interior or the grid holds ``max_rates``
    rates (``tuning.tune_cells``), and the cell's measured runs use the best
    rate. ``options`` are :func:`open_engine`'s (``old``: its fields one by
    one, as ``workers=2``); ``runs_dir`` is the runs folder
    (``None``: records in memory only, nothing to resume from), ``stamp``
    what keys its records besides kind and config (``store.RunStore``; default
    the sweep schema and the version). The progress bars (tqdm, on stderr)
    count finished runs.
    """
    settings = [base.setting] if settings is None else list(settings)
    settings = _check_names("settings", settings, SETTINGS)
    tasks = _check_names("tasks", tasks, TASKS)
    schemes = _check_names("schemes", schemes, SCHEMES)
    rates = _check_rates(
        [base.learning_rate] if learning_rates is None else learning_rates
    )
    tuned = len(rates) > 1
    tune_seeds = check_tune_seeds(tune_seeds, seeds)
    if tuned and not tune_seeds:
        raise ValueError(
            "tune_seeds must hold at least one seed when learning_rates has "
            f"several values, got {tune_seeds!r}"
        )
    cells = [(s, t, m) for s in settings for t in tasks for m in schemes]
    grid = [
        base.replace(setting=s, task=t, scheme=m, train_size=n, seed=seed)
        for s, t, m in cells
        for n in train_sizes
        for seed in seeds
    ]  # every Config re-checks its fields before any run starts
    tune_grid = [(s, t, m, n) for s, t, m in cells for n in train_sizes]
    store = runs_store(runs_dir, stamp=stamp)
    start = time.perf_counter()
    options = options.replace(**old)
    with open_runs(store, options, progress=progress) as run:

        def run_tuning(jobs: list[tuple[Cell, float, int]]) -> list[dict[str, Any]]:
            configs = [
                base.replace(
                    setting=s, task=t, scheme=m, train_size=n, learning_rate=rate,
                    seed=seed,
                )
                for (s, t, m, n), rate, seed in jobs
            ]
            return run("tuning", configs)

        if tuned:
            chosen, tuning_runs = tune_cells(
                tune_grid, rates, tune_seeds, run_tuning, max_rates=max_rates
            )
        else:
            tuning_runs = []
            chosen = [
                {
                    "setting": s,
                    "task": t,
                    "scheme": m,
                    "train_size": n,
                    "learning_rate": rates[0],
                    "rates": [rates[0]],
                    "scores": [None],
                    "valid_accuracy": None,
                    "bracketed": False,
                }
                for s, t, m, n in tune_grid
            ]
        rate_of = {
            (c["setting"], c["task"], c["scheme"], c["train_size"]): c["learning_rate"]
            for c in chosen
        }
        grid = [
            c.replace(
                learning_rate=rate_of[(c.setting, c.task, c.scheme, c.train_size)]
            )
            for c in grid
        ]
        runs = run("measured", grid)
    config = {
        k: v
        for k, v in base.to_dict().items()
        if k not in GRID_FIELDS and k != "learning_rate"
    }
    result: dict[str, Any] = {"schema": SCHEMA}
    if command is not None:
        result["command"] = command
    result.update(
        {
            **options.header(),
            "config": config,
            "grid": {
                "setting": settings,
                "task": tasks,
                "scheme": schemes,
                "train_size": list(train_sizes),
                "seed": list(seeds),
            },
            "tuning": {
                "learning_rates": rates,
                "seeds": tune_seeds if tuned else [],
                "max_rates": max_rates if tuned else len(rates),
                "objective": "valid_loss",
                "runs": tuning_runs,
                "chosen": chosen,
            },
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
            "runs": runs,
            "summary": summarize(runs),
            "exact": summarize(runs, "exact_match"),
            "coverage": [
                row
                for s, t, m in cells
                if m in READERS  # a scheme registered without a reader has no rows
                for row in coverage_table(base.replace(setting=s, task=t, scheme=m))
            ],
            "wall_seconds": time.perf_counter() - start,
            "run_seconds": sum(r["train_seconds"] for r in [*tuning_runs, *runs]),
        }
    )
    return result


# What each schema's JSON must hold at the top (what every reader of it reads).
_NEEDED = {1: ("summary",), 2: ("grid", "summary"), 3: ("grid", "summary")}
_RERUN = (
    "rerun python -m relpos.book.experiments (with the command stored in the "
    "file's 'command') to write schema 3"
)


def load_sweep(
    result: Mapping[str, Any] | str | os.PathLike[str] | Traversable,
    *,
    needs: Iterable[str] = (),
    name: str = "result",
) -> dict[str, Any]:
    """A sweep's JSON in schema 2 or 3, checked: the one way the book reads a sweep.

    ``result`` is the dict ``python -m relpos.book.experiments`` writes, or the
    path of its file (a committed one: ``relpos.book.results.path(name)``).
    Schemas 2 and 3 (3: tuned per training size, intervals in the summary)
    come back as they are; schema 1 (the first committed sweeps: one
    learning rate, no setting) is upgraded by :func:`as_schema_2`, so an old
    file draws as an encoder sweep. Any other
    schema, or a dict without the fields its schema must have (``summary``;
    ``grid`` in schema 2; and the fields named in ``needs``), raises a
    ValueError that says what to rerun; a value that is neither a dict nor a
    path raises TypeError. The messages call it ``name``, the caller's argument.

    Shapes:
        returns ``{"schema": 2, "grid": {...}, "summary": [row, ...], ...}``
    """
    if isinstance(result, (str, os.PathLike)):
        result = Path(result)
    if not isinstance(result, Mapping) and hasattr(result, "read_text"):
        result = json.loads(result.read_text(encoding="utf-8"))  # a path, a resource
    if not isinstance(result, Mapping):
        raise TypeError(
            f"{name} must be a sweep's JSON (a dict) or the path of its file, got "
            f"{type(result).__name__}"
        )
    schema = result.get("schema")
    if isinstance(schema, bool) or schema not in _NEEDED:
        raise ValueError(
            f"{name} must be the JSON of python -m relpos.book.experiments in "
            f"schema 1, 2 or 3, got schema {schema!r}: {_RERUN}"
        )
    missing = [k for k in _NEEDED[schema] if k not in result]
    if missing:
        raise ValueError(
            f"{name} (schema {schema}) has no {', '.join(map(repr, missing))}: not "
            f"the JSON of python -m relpos.book.experiments; {_RERUN}"
        )
    upgraded = as_schema_2(dict(result))
    missing = [k for k in needs if k not in upgraded]
    if missing:
        raise ValueError(
            f"{name} has no {', '.join(map(repr, missing))}, which this reader "
            f"needs; {_RERUN}"
        )
    return upgraded


def _seed_values(result: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    """A schema-1 summary row with ``values``, its cell's accuracy of each run.

    Schema 1 kept the seeds' accuracies in the runs only; a row whose runs do
    not all hold its length comes back as it is.
    """
    if "values" in row:
        return row
    cell = (row["task"], row["scheme"], row["train_size"])
    runs = [
        r for r in result.get("runs", [])
        if (r.get("task"), r.get("scheme"), r.get("train_size")) == cell
    ]
    accuracies = [r.get("accuracy", {}).get(str(row["length"])) for r in runs]
    if not runs or None in accuracies or len(runs) != row.get("n", len(runs)):
        return row
    return {**row, "values": accuracies}


def as_schema_2(result: dict[str, Any]) -> dict[str, Any]:
    """A sweep's JSON in schema 2: a schema-1 result is read as an encoder sweep.

    The upgrade step of :func:`load_sweep` (which also checks the JSON; readers
    call that). Schema 1 (one learning rate, no setting) names its grid
    ``schemes``, ``train_sizes`` and ``seeds`` and its other fields
    ``settings``; its runs and summary rows gain ``setting: "encoder"``, its
    summary rows the accuracy of every seed (``values``, from the runs), its
    learning rate is the one every cell chose, untuned. A schema-2 or schema-3
    result comes back as it is.
    """
    if result.get("schema", SCHEMA) != 1:
        return result
    old = result.get("settings", {})
    tasks = list(result.get("tasks", {}))
    schemes = list(result.get("schemes", []))
    rate = old.get("learning_rate")
    upgraded = {
        k: v
        for k, v in result.items()
        if k not in ("settings", "schemes", "train_sizes", "seeds")
    }
    upgraded.update(
        {
            "schema": 2,
            "config": {
                k: v
                for k, v in old.items()
                if k not in GRID_FIELDS and k != "learning_rate"
            },
            "grid": {
                "setting": ["encoder"],
                "task": tasks,
                "scheme": schemes,
                "train_size": list(result.get("train_sizes", [])),
                "seed": list(result.get("seeds", [])),
            },
            "tuning": {
                "learning_rates": [rate],
                "seeds": [],
                "train_size": None,
                "runs": [],
                "chosen": [
                    {
                        "setting": "encoder",
                        "task": t,
                        "scheme": m,
                        "learning_rate": rate,
                        "valid_accuracy": None,
                    }
                    for t in tasks
                    for m in schemes
                ],
            },
            "runs": [
                {"setting": "encoder", **run, "learning_rate": rate}
                for run in result.get("runs", [])
            ],
            "summary": [
                {"setting": "encoder", **_seed_values(result, row)}
                for row in result.get("summary", [])
            ],
        }
    )
    return upgraded


# Fields that change from one run of the same command to the next (time, date).
VOLATILE = ("machine", "wall_seconds", "run_seconds", "train_seconds", "command")


def numbers_only(result: Any) -> Any:
    """``result`` without timings, date, machine and command: what a rerun reproduces.
    """

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in VOLATILE}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(result)


__all__ = [
    "GRID_FIELDS",
    "SCHEMA",
    "as_schema_2",
    "check_tune_seeds",
    "compare",
    "load_sweep",
    "machine_info",
    "run_header",
    "numbers_only",
    "run_one",
    "run_sweep",
    "summarize",
    "summary_cells",
]
