"""Every intervention in one run: its cells, the jobs on the sweep's engine, the JSON.

Each intervention (``INTERVENTIONS``) names the cells it trains: the
committed sweep a claim rests on (its file), the setting, task, scheme and
training size, and whose chosen learning rate the cell trains at (its own,
or for a changed scheme the scheme it changes: both arms at one rate). The
cell's other settings (steps, sizes, layers, test lengths) are that sweep's
``config``. :func:`run_interventions` trains every cell at every seed through
``engine.execute`` (a runs folder, ``store.RunStore``, so a stopped run
resumes) and writes one JSON::

    {"schema": 1, "command": "python -m relpos.book.experiments.interventions ...",
     "machine": {..., "engine", "workers"}, "torch", "relpos",
     "seeds": [...], "changes": {field: value},   (changes to the sweeps' config)
     "interventions": {name: {"claim", "change",
                              "cells": [{"result", "setting", "task", "scheme",
                                         "num_layers", "train_size",
                                         "learning_rate", "rate_of"}],
                              "runs": [one record per cell and seed],
                              "comparisons": [paired tests, common.paired]}},
     "wall_seconds", "run_seconds"}

``run_seconds`` sums every job's own time (``job_seconds`` of each record:
training and measuring, records read back from the runs folder included);
``wall_seconds`` is this invocation's.

A run's record is its intervention's ``measure``'s (``row_zero``,
``sinusoid``, ``two_hop``, ``causal_t5``, ``retrained``); a cell's ``changes``
set one field of its sweep's config (an arm's rate or span); ``comparisons``
need two seeds or more (with one they are empty).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

import torch

from relpos.book import results

from ...runner import EngineOptions, open_runs
from ...runner import store as runs_store
from ..config import Config
from ..store import RunStore
from . import causal_t5, retrained, row_zero, sinusoid, two_hop
from .mechanisms import DEBERTA_REACH, MQAR_SPREAD, SINUSOID_ONE_RATE
from .sinusoid import PAIRED_WITH

#: The seeds of every compared pair (ten, as the headline verdicts need).
DEFAULT_SEEDS = tuple(range(10))
#: The version of this JSON.
SCHEMA = 1
#: The version of the measurements in a run's record: raise it whenever a
#: ``measure`` changes, and the records of older versions in a runs folder are
#: run again instead of read back.
MEASURES = 1
#: What keys a run's record besides its config: this version, not relpos's, so a
#: runs folder committed to git (``make mechanisms``) outlives a version bump.
STAMP = {"probe": "interventions", "schema": MEASURES}


@dataclass(frozen=True)
class Cell:
    """One trained cell: where its settings come from, and what it trains.

    ``result``: the committed sweep (``relpos.book.results``) whose ``config``
    and chosen learning rate the cell takes; ``rate_of``: the scheme whose
    chosen rate it trains at (``None``: its own); ``changes``: ``(field,
    value)`` pairs of ``Config`` set after the sweep's (an arm's one change:
    a rate, a span).
    """

    result: str
    setting: str
    task: str
    scheme: str
    train_size: int
    num_layers: int = 1
    rate_of: str | None = None
    changes: tuple[tuple[str, Any], ...] = ()

    @property
    def key(self) -> tuple[str, str, str, int]:
        """What picks a run's ``measure``: setting, task, scheme, layers."""
        return (self.setting, self.task, self.scheme, self.num_layers)


@dataclass(frozen=True)
class Intervention:
    """A claim, the change that tests it, its cells, and how to read the runs."""

    name: str
    claim: str
    change: str
    cells: tuple[Cell, ...]
    measure: Callable[[Config], dict[str, Any]]
    comparisons: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]


def _sinusoid_cells() -> tuple[Cell, ...]:
    arms = [(s, "sinusoidal") for s in ("sinusoidal", *PAIRED_WITH)]
    arms.append(("absolute", None))
    return tuple(
        Cell("sweep.json", "encoder", "relative", scheme, size, rate_of=rate_of)
        for size in (32,)
        for scheme, rate_of in arms
    )


def _one_rate_cells() -> tuple[Cell, ...]:
    """Every sinusoid arm and the table at the learned factor's tuned rate."""
    schemes = ("sinusoidal", *PAIRED_WITH, "absolute")
    return tuple(
        Cell("sweep_scale.json", "encoder", "relative", scheme, 32,
             rate_of="sinusoidal-scale")
        for scheme in schemes
    )


#: The rates of ``mqar_rates``: the sweep's choice for DeBERTa on mqar and its
#: neighbours on the sweep's grid.
MQAR_RATES = (0.002, 0.004, 0.008)
#: The spans of ``deberta_reach``: the sweep's k and one with a row for every
#: distance a training sequence of length 16 holds.
REACH_SPANS = (8, 16)

INTERVENTIONS: dict[str, Intervention] = {
    item.name: item
    for item in (
        Intervention(
            "row_zero",
            row_zero.CLAIM,
            row_zero.CHANGE,
            tuple(
                Cell("sweep.json", "encoder", "relative", "deberta-buckets", size)
                for size in (32, 512)
            ),
            row_zero.measure,
            row_zero.comparisons,
        ),
        Intervention(
            "sinusoid_scale",
            sinusoid.CLAIM,
            sinusoid.CHANGE,
            _sinusoid_cells(),
            sinusoid.measure,
            sinusoid.comparisons,
        ),
        Intervention(
            "two_hop",
            two_hop.CLAIM,
            two_hop.CHANGE,
            tuple(
                Cell("sweep_layers.json", "encoder", "far", scheme, 512, num_layers=2)
                for scheme in ("t5", "deberta", "rotary")
            ),
            two_hop.measure,
            two_hop.comparisons,
        ),
        Intervention(
            "causal_t5",
            causal_t5.CLAIM,
            causal_t5.CHANGE,
            (
                Cell("sweep.json", "encoder", "relative", "t5", 512),
                Cell("sweep_causal.json", "causal", "relative", "t5", 512),
            ),
            causal_t5.measure,
            causal_t5.comparisons,
        ),
        Intervention(
            "mqar_rates",
            MQAR_SPREAD.claim,
            "the learning rate alone: the sweep's 0.004 against its grid "
            "neighbours 0.002 and 0.008; same seeds, data and initial weights",
            tuple(
                Cell("sweep_tasks.json", "causal", "mqar", "deberta", 32768,
                     num_layers=2, changes=(("learning_rate", rate),))
                for rate in MQAR_RATES
            ),
            retrained.measure,
            retrained.rates,
        ),
        Intervention(
            "sinusoid_one_rate",
            SINUSOID_ONE_RATE.claim,
            "the same sinusoid times a learned factor, every arm at one rate "
            "(the learned factor's tuned 0.01); same seed, data and batches",
            _one_rate_cells(),
            sinusoid.measure,
            sinusoid.comparisons,
        ),
        Intervention(
            "deberta_reach",
            DEBERTA_REACH.claim,
            "DeBERTa's span k = 16 (a row for every distance up to 15) against "
            "the sweep's k = 8, at the sweep's rate; same seeds, data, batches",
            tuple(
                Cell("sweep_tasks.json", "causal", "copy", "deberta", 32768,
                     num_layers=2, changes=(("max_relative_positions", k),))
                for k in REACH_SPANS
            ),
            retrained.measure,
            retrained.spans,
        ),
    )
}


def _measures() -> dict[tuple[str, str, str, int], Intervention]:
    """The intervention that measures each cell key; two may share a key only
    when they measure it alike (the sinusoid at two rates)."""
    found: dict[tuple[str, str, str, int], Intervention] = {}
    for item in INTERVENTIONS.values():
        for cell in item.cells:
            if found.get(cell.key, item).measure is not item.measure:
                raise ValueError(f"cell {cell.key} belongs to two interventions")
            found.setdefault(cell.key, item)
    return found


def intervention_of(config: Config) -> Intervention:
    """The intervention whose cells hold ``config`` (setting, task, scheme, layers).

    Shapes:
        (no tensors)
    """
    key = (config.setting, config.task, config.scheme, config.num_layers)
    found = _measures().get(key)
    if found is None:
        raise ValueError(f"config must be a cell of an intervention, got {key}")
    return found


def run_job(kind: str, config: Config, threads: int = 1) -> dict[str, Any]:
    """What the engine runs: the ``measure`` of the config's intervention.

    The record gains ``job_seconds`` (training and every measurement) and
    ``measures`` (``MEASURES``).

    Shapes:
        (no tensors): a JSON-ready record
    """
    torch.set_num_threads(threads)
    start = time.perf_counter()
    record = intervention_of(config).measure(config)
    return {**record, "job_seconds": time.perf_counter() - start, "measures": MEASURES}


#: The folder of the committed sweeps whose settings and rates the cells take.
SWEEPS = "protocol"


@functools.cache
def _committed(name: str) -> dict[str, Any]:
    return results.load(f"{SWEEPS}/{name}")


def chosen_rate(result: Mapping[str, Any], cell: Cell) -> float:
    """The rate a sweep chose for the cell's scheme (``rate_of``), setting and task.

    A sweep tuned per training size (its ``chosen`` entries hold
    ``train_size``) gives the cell's size; an older one a rate for all sizes.

    Shapes:
        (no tensors)
    """
    scheme = cell.rate_of or cell.scheme
    matches = [
        c
        for c in result["tuning"]["chosen"]
        if (c["setting"], c["task"], c["scheme"]) == (cell.setting, cell.task, scheme)
        and c.get("train_size", cell.train_size) == cell.train_size
    ]
    if len(matches) != 1:
        raise ValueError(
            f"{cell.result} must hold one chosen rate for {cell.setting}/{cell.task}/"
            f"{scheme} at {cell.train_size} sequences, got {len(matches)}"
        )
    return float(matches[0]["learning_rate"])


def cell_config(
    cell: Cell, seed: int, changes: Mapping[str, Any] | None = None
) -> Config:
    """The cell's ``Config`` at ``seed``: its sweep's settings and rate, ``changes``.

    Shapes:
        (no tensors)
    """
    result = _committed(cell.result)
    fields = {f.name for f in dataclasses.fields(Config)}
    values = {
        k: tuple(v) if isinstance(v, list) else v
        for k, v in result["config"].items()
        if k in fields
    }
    if values.get("num_layers", 1) != cell.num_layers:
        raise ValueError(
            f"cell {cell.key} needs num_layers={cell.num_layers}, but {cell.result} "
            f"has {values.get('num_layers')}"
        )
    config = Config(
        **values,
        setting=cell.setting,
        task=cell.task,
        scheme=cell.scheme,
        train_size=cell.train_size,
        seed=seed,
        learning_rate=chosen_rate(result, cell),
    )
    return config.replace(**{**dict(cell.changes), **dict(changes or {})})


def _drop_stale(store: RunStore, config: Config) -> None:
    """Remove the stored record of ``config`` if older measurements made it."""
    record = store.get("measured", config)
    path = store.path("measured", config)
    if record is not None and record.get("measures") != MEASURES and path is not None:
        path.unlink()


def _label(kind: str, config: Config) -> str:
    return (
        f"{config.setting}/{config.task}/{config.scheme} {config.num_layers}L "
        f"size={config.train_size} seed={config.seed}"
    )


def run_interventions(
    names: Iterable[str] | None = None,
    *,
    seeds: Iterable[int] = DEFAULT_SEEDS,
    changes: Mapping[str, Any] | None = None,
    options: EngineOptions = EngineOptions(workers=2),
    runs_dir: Any = None,
    progress: bool = True,
    command: str | None = None,
    **old: Any,
) -> dict[str, Any]:
    """Train every cell of the named interventions (default all) at every seed.

    ``changes``: fields of ``Config`` set on every cell after its sweep's
    (a shorter run for a test: ``{"steps": 5}``). ``options`` are
    ``open_engine``'s (``old``: its fields one by one, as ``workers=1``);
    ``runs_dir`` the runs folder (``None``: in memory). Returns the JSON-ready
    dict (module docstring).

    Shapes:
        (no tensors): the JSON-ready result
    """
    names = list(INTERVENTIONS) if names is None else list(names)
    unknown = [n for n in names if n not in INTERVENTIONS]
    if unknown or not names or len(set(names)) != len(names):
        raise ValueError(
            f"names must be distinct interventions of {tuple(INTERVENTIONS)}, "
            f"got {names!r}"
        )
    seeds = list(seeds)
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct and at least one, got {seeds!r}")
    changes = dict(changes or {})
    planned = [
        (name, cell, cell_config(cell, seed, changes))
        for name in names
        for cell in INTERVENTIONS[name].cells
        for seed in seeds
    ]
    store = runs_store(runs_dir, stamp=STAMP)
    for _, _, config in planned:
        _drop_stale(store, config)
    start = time.perf_counter()
    options = options.replace(**old)
    with open_runs(
        store, options, job=run_job, progress=progress, label=_label
    ) as run:
        records = run(
            "measured",
            [config for _, _, config in planned],
            description="interventions",
        )
    found: dict[str, Any] = {}
    for name in names:
        item = INTERVENTIONS[name]
        mine = [r for (owner, _, _), r in zip(planned, records) if owner == name]
        cells = [(cell, config) for owner, cell, config in planned if owner == name]
        found[name] = {
            "claim": item.claim,
            "change": item.change,
            "cells": [
                {
                    **dataclasses.asdict(cell),
                    "learning_rate": config.learning_rate,
                }
                for cell, config in cells
                if config.seed == seeds[0]
            ],
            "runs": mine,
            "comparisons": item.comparisons(mine) if len(seeds) > 1 else [],
        }
    result: dict[str, Any] = {"schema": SCHEMA}
    if command is not None:
        result["command"] = command
    result.update(
        {
            **options.header(),
            "seeds": seeds,
            "changes": changes,
            "interventions": found,
            "wall_seconds": time.perf_counter() - start,
            "run_seconds": sum(r["job_seconds"] for r in records),
        }
    )
    return result


__all__ = [
    "Cell",
    "DEFAULT_SEEDS",
    "INTERVENTIONS",
    "Intervention",
    "MEASURES",
    "MQAR_RATES",
    "REACH_SPANS",
    "SCHEMA",
    "STAMP",
    "cell_config",
    "chosen_rate",
    "intervention_of",
    "run_interventions",
    "run_job",
]
