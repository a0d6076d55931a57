"""A text sweep: each (setting, scheme, seed) tuned, trained at ``L``, measured beyond.

:func:`run_text_sweep` builds the corpus, tunes the learning rate of every
(setting, scheme) on validation text at ``L`` (``runner.Runs.tuned``: a grid
extended until its best rate is bracketed), trains every seed at the chosen
rate and evaluates it on the test split at every length. Runs go to the run
engine (``runner.open_runs``: local processes or Dask, one torch thread each)
and every finished run is a record in the runs folder (``RunStore``): a
stopped sweep resumes, and the corpus SHA-256 is part of
every run's key, so a record of another corpus is never reused.

The JSON (``TEXT_SCHEMA = 1``)::

    {"schema": 1, "commands": ["python -m relpos.book.text ...", ...],
     "machine": {"processor", "cpu_count", "torch_threads", "platform",
                 "python", "date", "engine", "workers"},
     "torch", "relpos",
     "corpus": {"kind", "sha256", "bytes", "python", "modules",
                "splits": {split: {"modules", "bytes"}}},
     "config": {every field of TextConfig but setting, scheme, seed, rate},
     "grid": {"setting": [...], "scheme": [...], "seed": [...]},
     "tuning": {"grid": [...], "seeds": [...], "max_rates": N,
                "cells": [{"setting", "scheme", "rates", "valid_bpb",
                           "chosen", "bracketed"}],
                "runs": [tuning records, train.tune_text]},
     "runs": [measured records, train.run_text],
     "summary": [{"setting", "scheme", "length", "mean", "std", "min", "max",
                  "n", "values", "per_position"}],
     "wall_seconds", "run_seconds"}

``summary`` rows hold bits per byte over the seeds (``values``: one per seed,
in the grid's order) and ``per_position``, the per-position loss in nats
averaged over the seeds. :func:`merge_results` adds a sweep's runs to an
existing results file (the CLI does when ``--output`` exists), and refuses
when the two differ in corpus (SHA-256) or config: one file, one corpus.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

import torch

from ..experiments.engine import JobFunction
from ..experiments.schemes import SCHEMES
from ..experiments.store import RunStore
from ..experiments.sweep import check_tune_seeds
from ..runner import EngineOptions, open_runs
from ..runner import store as runs_store
from .config import SETTINGS, TextConfig
from .corpus import stdlib_corpus
from .train import run_text, tune_text

#: The JSON schema of a text sweep.
TEXT_SCHEMA = 1
#: The fields of the config a sweep varies or chooses (not in the JSON's config).
SWEPT = ("setting", "scheme", "seed", "learning_rate")


def text_job(kind: str, config: TextConfig, threads: int = 1) -> dict[str, Any]:
    """One job of an executor: ``run_text`` (measured) or ``tune_text`` (tuning).

    Sets the torch threads first, so a run's numbers do not depend on what
    runs beside it.
    """
    if kind not in ("measured", "tuning"):
        raise ValueError(f"kind must be 'measured' or 'tuning', got {kind!r}")
    torch.set_num_threads(threads)
    return run_text(config) if kind == "measured" else tune_text(config)


def _label(kind: str, config: TextConfig) -> str:
    text = f"{config.setting}/{config.scheme} seed={config.seed}"
    return f"tuning {text} lr={config.learning_rate:g}" if kind == "tuning" else text


def _check_names(name: str, values: list[str], known: Any) -> list[str]:
    known = tuple(known)
    if not values or any(v not in known for v in values):
        raise ValueError(
            f"{name} must be a non-empty list drawn from {known}, got {values!r}"
        )
    return list(values)


def summarize_text(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Bits per byte over the seeds and the mean per-position loss, per cell.

    One row per (setting, scheme, length), in the order the runs come.
    ``per_position`` averages each position over the seeds that predicted there
    (``None`` where none did).
    """
    cells: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for run in runs:
        for length, measured in run["eval"].items():
            key = (run["setting"], run["scheme"], int(length))
            cells.setdefault(key, []).append(measured)
    rows = []
    for (setting, scheme, length), measured in cells.items():
        values = [m["bpb"] for m in measured]
        curve = []
        for at in zip(*(m["per_position"] for m in measured)):
            known = [v for v in at if v is not None]
            curve.append(statistics.fmean(known) if known else None)
        rows.append(
            {
                "setting": setting,
                "scheme": scheme,
                "length": length,
                "mean": statistics.fmean(values),
                "std": statistics.stdev(values) if len(values) > 1 else 0.0,
                "min": min(values),
                "max": max(values),
                "n": len(values),
                "values": values,
                "per_position": curve,
            }
        )
    return rows


def run_text_sweep(
    base: TextConfig,
    *,
    settings: list[str],
    schemes: list[str],
    seeds: list[int],
    learning_rates: list[float],
    tune_seeds: list[int] = (100,),
    max_rates: int = 8,
    options: EngineOptions = EngineOptions(workers=1),
    runs_dir: str | os.PathLike | None = None,
    progress: bool = True,
    command: str | None = None,
    job: JobFunction = text_job,
    store: RunStore | None = None,
) -> dict[str, Any]:
    """Tune, train and evaluate every (setting, scheme, seed): the JSON dict.

    ``base`` supplies every other field (its corpus SHA-256 is set here).
    With two or more ``learning_rates`` each (setting, scheme) is tuned on
    ``tune_seeds`` (disjoint from ``seeds``), the grid extended up to
    ``max_rates`` rates; with one rate every cell trains at it, untuned.
    ``options`` are ``open_engine``'s; ``runs_dir`` the runs folder (None: in
    memory), or ``store`` a runs store of its own (a probe's, keyed on the
    probe's schema). ``job`` runs a job (default :func:`text_job`; a probe
    passes one whose measured runs record more, with the same ``eval``).
    """
    settings = _check_names("settings", settings, SETTINGS)
    schemes = _check_names("schemes", schemes, SCHEMES)
    rates = list(learning_rates)
    if not rates or len(set(rates)) != len(rates):
        raise ValueError(
            f"learning_rates must be a non-empty list of distinct floats, got {rates!r}"
        )
    tuned = len(rates) > 1
    tune_seeds = check_tune_seeds(tune_seeds, seeds) if tuned else []
    if tuned and not tune_seeds:
        raise ValueError("tune_seeds must hold a seed when learning_rates has several")
    corpus = stdlib_corpus(base.corpus)
    base = base.replace(corpus_sha256=corpus.sha256)
    cells = [(setting, scheme) for setting in settings for scheme in schemes]
    for setting, scheme in cells:  # every run's config checked before any runs
        for seed in [*seeds, *tune_seeds]:
            base.replace(setting=setting, scheme=scheme, seed=seed)
    if store is None:
        store = runs_store(runs_dir)
    elif runs_dir is not None:
        raise ValueError("runs_dir and store must not both be given")
    start = time.perf_counter()
    with open_runs(
        store,
        options,
        job=job,
        progress=progress,
        label=_label,
    ) as run:
        chosen, tuning_runs, runs = run.tuned(
            cells,
            rates,
            lambda kind, cell, seed, rate: base.replace(
                setting=cell[0], scheme=cell[1], seed=seed, learning_rate=rate
            ),
            lambda record: record["valid_bpb"],
            tune_seeds=tune_seeds,
            seeds=seeds,
            max_rates=max_rates,
        )
    result: dict[str, Any] = {
        "schema": TEXT_SCHEMA,
        "commands": [] if command is None else [command],
        **options.header(),
        "corpus": corpus.about(),
        "config": {k: v for k, v in base.to_dict().items() if k not in SWEPT},
        "grid": {"setting": settings, "scheme": schemes, "seed": list(seeds)},
        "tuning": {
            "grid": rates,
            "seeds": tune_seeds,
            "max_rates": max_rates,
            "cells": [
                {
                    "setting": s,
                    "scheme": m,
                    "rates": chosen[(s, m)]["rates"],
                    "valid_bpb": chosen[(s, m)]["scores"],
                    "chosen": chosen[(s, m)]["chosen"],
                    "bracketed": chosen[(s, m)]["bracketed"],
                }
                for s, m in cells
            ],
            "runs": tuning_runs,
        },
        "runs": runs,
        "summary": summarize_text(runs),
        "wall_seconds": time.perf_counter() - start,
    }
    result["run_seconds"] = _run_seconds(result)
    return result


def _run_seconds(result: dict[str, Any]) -> float:
    records = [*result["tuning"]["runs"], *result["runs"]]
    return sum(r["train_seconds"] + r.get("eval_seconds", 0.0) for r in records)


def check_same_corpus(old: dict[str, Any], new: dict[str, Any]) -> None:
    """ValueError unless ``old`` and ``new`` share their corpus and config.

    The message names the corpus (kind, SHA-256, Python) or the config fields
    that differ.
    """
    a, b = old.get("corpus", {}), new.get("corpus", {})
    if a.get("sha256") != b.get("sha256"):
        raise ValueError(
            "output holds runs of another corpus: "
            f"{a.get('kind')} {a.get('sha256')} (Python {a.get('python')}); "
            f"this sweep's is {b.get('kind')} {b.get('sha256')} "
            f"(Python {b.get('python')}); write to another file"
        )
    config_a, config_b = old.get("config", {}), new.get("config", {})
    differ = sorted(
        k for k in {*config_a, *config_b} if config_a.get(k) != config_b.get(k)
    )
    if differ:
        raise ValueError(
            f"output holds runs of another config (fields {', '.join(differ)} "
            "differ); write to another file"
        )


def _union(first: list, second: list) -> list:
    return [*first, *(v for v in second if v not in first)]


def merge_results(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``old`` with the runs of ``new`` added (a new run replaces the same one).

    Runs are keyed by (setting, scheme, seed), tuning cells by (setting,
    scheme), tuning runs by (setting, scheme, seed, rate); the grid is the
    union, the summary recomputed, the commands appended, the machine and the
    wall time ``new``'s. Refuses (``check_same_corpus``) a different corpus or
    config.
    """
    check_same_corpus(old, new)

    def keyed(records: list[dict], *fields: str) -> dict[tuple, dict]:
        return {tuple(r[f] for f in fields): r for r in records}

    runs = keyed(old["runs"], "setting", "scheme", "seed")
    runs.update(keyed(new["runs"], "setting", "scheme", "seed"))
    cells = keyed(old["tuning"]["cells"], "setting", "scheme")
    cells.update(keyed(new["tuning"]["cells"], "setting", "scheme"))
    tuning = keyed(old["tuning"]["runs"], "setting", "scheme", "seed", "learning_rate")
    tuning.update(
        keyed(new["tuning"]["runs"], "setting", "scheme", "seed", "learning_rate")
    )
    grid = {k: _union(old["grid"][k], new["grid"][k]) for k in new["grid"]}
    order = {name: i for i, name in enumerate(grid["scheme"])}
    settings = {name: i for i, name in enumerate(grid["setting"])}

    def rank(key: tuple) -> tuple:
        return (settings[key[0]], order[key[1]], *key[2:])

    merged = {
        **new,
        "commands": [*old.get("commands", []), *new.get("commands", [])],
        "grid": grid,
        "tuning": {
            **new["tuning"],
            "seeds": _union(old["tuning"]["seeds"], new["tuning"]["seeds"]),
            "cells": [cells[k] for k in sorted(cells, key=rank)],
            "runs": [tuning[k] for k in sorted(tuning, key=rank)],
        },
        "runs": [runs[k] for k in sorted(runs, key=rank)],
    }
    merged["summary"] = summarize_text(merged["runs"])
    merged["run_seconds"] = _run_seconds(merged)
    return merged


def format_text_table(result: dict[str, Any]) -> str:
    """Bits per byte (mean +- std over seeds) per (setting, scheme) and length."""
    lengths = sorted({row["length"] for row in result["summary"]})
    rows = {(r["setting"], r["scheme"], r["length"]): r for r in result["summary"]}
    rate = {(c["setting"], c["scheme"]): c for c in result["tuning"]["cells"]}
    corpus, config = result["corpus"], result["config"]
    width = max(len(s) for s in result["grid"]["scheme"]) + 2
    lines = [
        f"bits per byte on the test split of the {corpus['kind']} corpus "
        f"(Python {corpus['python']}, sha256 {corpus['sha256'][:12]}), trained at "
        f"L={config['train_length']} for {config['steps']} steps; "
        "mean +- std over seeds (* rate not bracketed)"
    ]
    for setting in result["grid"]["setting"]:
        lines += ["", setting]
        lines.append(
            f"{'scheme':<{width}}{'lr':>10}"
            + "".join(f"{'n=' + str(n):>14}" for n in lengths)
        )
        for scheme in result["grid"]["scheme"]:
            cell = rate.get((setting, scheme))
            chosen = "-"
            if cell is not None:
                mark = "*" if cell["bracketed"] is False else ""
                chosen = f"{cell['chosen']:g}{mark}"
            text = f"{scheme:<{width}}{chosen:>10}"
            for n in lengths:
                row = rows.get((setting, scheme, n))
                text += (
                    f"{row['mean']:>8.3f} +-{row['std']:>4.2f}" if row else f"{'-':>14}"
                )
            lines.append(text)
    return "\n".join(lines)


__all__ = [
    "SWEPT",
    "TEXT_SCHEMA",
    "check_same_corpus",
    "format_text_table",
    "merge_results",
    "run_text_sweep",
    "summarize_text",
    "text_job",
]
