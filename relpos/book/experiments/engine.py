"""Running runs: one pure function per run, handed to an executor.

:func:`run_one` trains one model and measures it; :func:`run_job` is what an
executor calls (a measured run or a tuning run, with the torch threads set
first, so a run's numbers are bit-identical whatever runs beside it).
:func:`open_engine` gives the executor of a sweep:

- ``"local"``: ``workers`` local processes (``concurrent.futures``'
  ``ProcessPoolExecutor``, started with ``spawn``); ``workers=1`` runs in
  this process.
- ``"dask"``: a Dask cluster (``dask.distributed.Client(scheduler)``, the
  ``cluster`` extra); ``scheduler="local"`` starts a ``LocalCluster`` of
  ``workers`` processes with one thread each. On a real cluster every worker
  needs ``relpos`` installed (the same version: it is part of a record's key).

:func:`execute` runs the jobs a runs folder (``store.RunStore``) does not hold
yet, writes each record the moment it comes back, and shows a progress bar
over finished runs on stderr.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import multiprocessing
import os
import sys
from typing import Any, Callable, Iterable, Iterator, Protocol

import torch
from tqdm import tqdm

from ..runner import ENGINES
from .config import Config, model_seed
from .measure import (
    attention_peaks,
    band_profile,
    evaluate,
    exact_match,
    table_similarity,
)
from .model import count_parameters
from .store import KINDS, RunStore
from .train import initial_model, train
from .tuning import mean_final_loss, tune_one


Job = tuple[str, Config]  # (kind, config): kind is "measured" or "tuning"
#: What an executor calls per job: ``job(kind, config, threads) -> record``.
JobFunction = Callable[[str, Any, int], dict[str, Any]]


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
    return {
        "setting": config.setting,
        "task": config.task,
        "scheme": config.scheme,
        "train_size": config.train_size,
        "seed": config.seed,
        "learning_rate": config.learning_rate,
        "model_seed": model_seed(config),
        "parameters": count_parameters(trained.model),
        "accuracy": {str(n): acc for n, acc in evaluate(trained.model, config).items()},
        "exact_match": {
            str(n): share
            for n, share in evaluate(trained.model, config, metric=exact_match).items()
        },
        "final_loss": mean_final_loss(trained.losses, config.steps),
        "train_seconds": trained.seconds,
        "band": band,
        "attention_peaks": attention_peaks(trained.model, config),
    }


def run_job(kind: str, config: Config, threads: int = 1) -> dict[str, Any]:
    """One job of an executor: ``run_one`` or ``tune_one`` on ``threads`` torch threads.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    torch.set_num_threads(threads)
    return run_one(config) if kind == "measured" else tune_one(config)


class Engine(Protocol):
    """An executor: runs jobs, yields ``(index, record)`` as each one finishes."""

    def run(self, jobs: list[Job]) -> Iterator[tuple[int, dict[str, Any]]]: ...


class InProcess:
    """Every job in this process, one after the other (``workers=1``)."""

    def __init__(self, threads: int, job: JobFunction = run_job) -> None:
        self.threads, self.job = threads, job

    def run(self, jobs: list[Job]) -> Iterator[tuple[int, dict[str, Any]]]:
        before = torch.get_num_threads()
        try:
            for index, (kind, config) in enumerate(jobs):
                yield index, self.job(kind, config, self.threads)
        finally:
            torch.set_num_threads(before)


class LocalProcesses:
    """Jobs over a ``ProcessPoolExecutor`` of ``workers`` spawned processes."""

    def __init__(
        self,
        pool: concurrent.futures.Executor,
        threads: int,
        job: JobFunction = run_job,
    ) -> None:
        self.pool, self.threads, self.job = pool, threads, job

    def run(self, jobs: list[Job]) -> Iterator[tuple[int, dict[str, Any]]]:
        futures = {
            self.pool.submit(self.job, kind, config, self.threads): index
            for index, (kind, config) in enumerate(jobs)
        }
        try:
            for future in concurrent.futures.as_completed(futures):
                yield futures[future], future.result()
        finally:
            for future in futures:
                future.cancel()


class DaskCluster:
    """Jobs over a ``dask.distributed.Client``; ``as_completed`` hands them back."""

    def __init__(self, client: Any, threads: int, job: JobFunction = run_job) -> None:
        self.client, self.threads, self.job = client, threads, job

    def run(self, jobs: list[Job]) -> Iterator[tuple[int, dict[str, Any]]]:
        from distributed import as_completed

        futures = [
            self.client.submit(self.job, kind, config, self.threads, pure=False)
            for kind, config in jobs
        ]
        index = {future.key: i for i, future in enumerate(futures)}
        try:
            for future in as_completed(futures):
                yield index[future.key], future.result()
        finally:
            self.client.cancel(futures)


@contextlib.contextmanager
def open_engine(
    engine: str = "local",
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    threads: int = 1,
    job: JobFunction = run_job,
) -> Iterator[Engine]:
    """The executor of a sweep, open for the ``with`` block.

    ``workers``: local processes (default ``os.cpu_count()``), or the size of
    a Dask ``LocalCluster``; ``scheduler``: a Dask scheduler address
    (``"tcp://host:8786"``) or ``"local"``; ``threads``: torch threads per run;
    ``job``: what runs a job (default :func:`run_job`; ``relpos.book.text``
    passes its own), a module-level function so that processes can pickle it.
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    workers = (os.cpu_count() or 1) if workers is None else workers
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be an int >= 1, got {workers!r}")
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be an int >= 1, got {threads!r}")
    if engine == "local":
        if scheduler is not None:
            raise ValueError("scheduler is for engine='dask' only, got engine='local'")
        if workers == 1:
            yield InProcess(threads, job)
            return
        context = multiprocessing.get_context("spawn")
        pool = concurrent.futures.ProcessPoolExecutor(workers, mp_context=context)
        with pool:
            try:
                yield LocalProcesses(pool, threads, job)
            finally:
                pool.shutdown(wait=True, cancel_futures=True)
        return
    try:
        from distributed import Client, LocalCluster
    except ImportError:  # pragma: no cover - the cluster extra is missing
        raise ImportError(
            "engine='dask' needs dask.distributed: pip install 'relpos[cluster]'"
        ) from None
    if scheduler is None:
        raise ValueError("scheduler must be a Dask scheduler address or 'local'")
    with contextlib.ExitStack() as stack:
        if scheduler == "local":
            cluster = stack.enter_context(
                LocalCluster(
                    n_workers=workers,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                    silence_logs=logging.ERROR,
                )
            )
            client = stack.enter_context(Client(cluster))
        else:
            client = stack.enter_context(Client(scheduler))
        yield DaskCluster(client, threads, job)


def _label(kind: str, config: Config) -> str:
    text = f"{config.setting}/{config.task}/{config.scheme} seed={config.seed}"
    if kind == "tuning":
        return f"tuning {text} lr={config.learning_rate:g}"
    return f"{text} size={config.train_size}"


def execute(
    jobs: Iterable[Job],
    store: RunStore,
    engine: Engine,
    *,
    progress: bool = True,
    description: str = "runs",
    label: Callable[[str, Any], str] | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """Every job's record, in the order of ``jobs``; the missing ones run on ``engine``.

    Records already in ``store`` are read, not run; each new record is written
    to ``store`` as soon as it comes back. Returns the records and how many
    jobs ran. ``label(kind, config)`` names a finished job on the progress bar
    (default: setting, task, scheme and seed of an experiments ``Config``).
    """
    label = _label if label is None else label
    jobs = list(jobs)
    records: list[dict[str, Any] | None] = [store.get(k, c) for k, c in jobs]
    missing = [i for i, record in enumerate(records) if record is None]
    with tqdm(
        total=len(jobs),
        initial=len(jobs) - len(missing),
        desc=description,
        unit="run",
        file=sys.stderr,
        disable=not progress,
        dynamic_ncols=True,
    ) as bar:
        for position, record in engine.run([jobs[i] for i in missing]):
            index = missing[position]
            kind, config = jobs[index]
            records[index] = store.put(kind, config, record)
            bar.set_postfix_str(label(kind, config))
            bar.update(1)
    return [r for r in records if r is not None], len(missing)


__all__ = [
    "ENGINES",
    "DaskCluster",
    "Engine",
    "InProcess",
    "LocalProcesses",
    "execute",
    "open_engine",
    "run_job",
    "run_one",
]
