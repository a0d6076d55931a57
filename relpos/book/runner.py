"""The one run engine of every sweep command: flags, machine header, store, run loop.

Every command that trains runs (``python -m relpos.book.experiments``, its
``interventions``, ``relpos.book.text``, its ``masked_cli`` and
``length_probe``, and the probes in ``relpos.book.probes``) takes its run
machinery from here, so that a new experiment is a task, a config and a
verdict rule in one folder (plus its chapter), not another copy of it:

- the flags: :func:`add_engine_flags` (``--workers``, ``--engine``,
  ``--scheduler``, ``--runs-dir``, ``--threads``, ``--quiet``; one default
  for ``--workers``, :func:`default_workers`) and :func:`add_tuning_flags`
  (``--tune-seeds``, ``--max-rates``, at least :data:`MIN_RATES`), checked by
  :func:`engine_from_args`, :func:`runs_dir_from_args` and
  :func:`tuning_from_args` (a bad value: one line naming the flag, exit 2);
- :class:`EngineOptions`: the engine, workers, scheduler and threads, one
  frozen value built from those flags (``EngineOptions.from_args``; its default
  is theirs), which :func:`open_runs` and every sweep take in place of four
  keywords; :func:`engine_options`: the keyword arguments every sweep runner
  takes from the flags (the options, the runs folder, the progress bar);
- the machine header of every result JSON: :func:`run_header`;
- the run loop: :func:`open_runs` opens the executor (local processes or Dask,
  ``experiments.engine.open_engine``) over a runs store
  (``experiments.store.RunStore``: one JSON record per finished run, keyed on
  the run's config and a stamp); the :class:`Runs` it yields trains what the
  store lacks, reads what it holds, and writes each record as it finishes, so
  the same command resumes after a stop;
- the tuning of chapter 12: :func:`tune_on_seeds`, the one path every sweep's
  rates are tuned by (``Runs.tuned``, and ``experiments.tuning.tune_cells``
  in the sweep's words): every cell at every rate on every tuning seed, scored
  by the mean over the seeds (:func:`mean_by_job`), the grid grown by
  ``rate_grid.tune_rates``.

The experiments' modules are imported when called, not at import, so that
``relpos.book.experiments`` may import this module without a circle.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import os
import platform
import re
import statistics
from pathlib import Path
from typing import Any, Callable, Hashable, Iterator, Sequence

import torch

import relpos

from . import _cli

#: The executors a sweep can hand its runs to (``experiments.engine.ENGINES``).
ENGINES = ("local", "dask")
#: The fewest rates ``--max-rates`` accepts: a grid of one rate tunes nothing.
MIN_RATES = 2


def default_workers() -> int:
    """The default of ``--workers`` for every command: one process per CPU."""
    return os.cpu_count() or 1


# -- the flags --------------------------------------------------------------------


def add_engine_flags(
    parser: argparse.ArgumentParser,
    *,
    runs_help: str = "",
    runs_dir: str | None = None,
) -> None:
    """Add where a sweep's runs go and are kept: ``--workers``, ``--engine``,
    ``--scheduler``, ``--runs-dir``, ``--threads`` and ``--quiet``.

    ``runs_dir``: the default runs folder (None: ``--output`` with the suffix
    ``.runs``); ``runs_help``: more words on it.
    """
    add = parser.add_argument
    add(
        "--workers",
        type=_cli.integer(1),
        default=default_workers(),
        metavar="N",
        help="runs at the same time: local processes, or the processes of "
        "--scheduler local; the default is the CPU count",
    )
    add(
        "--engine",
        choices=ENGINES,
        default="local",
        help="where the runs go: local processes, or a Dask cluster (needs "
        "--scheduler and the cluster extra, pip install 'relpos[cluster]')",
    )
    add(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="with --engine dask: the scheduler's address (tcp://host:8786), "
        "or 'local' for a LocalCluster of --workers processes",
    )
    where = "the --output path with the suffix .runs" if runs_dir is None else runs_dir
    add(
        "--runs-dir",
        default=runs_dir,
        metavar="DIR",
        help="folder of the finished runs' records, read back on a rerun "
        f"(default: {where}){runs_help}",
    )
    add(
        "--threads",
        type=_cli.integer(1, _cli.MAX_THREADS),
        default=1,
        metavar="N",
        help="torch CPU threads of each run: these tiny models run no faster "
        "with more, and another count can change the last digits of results",
    )
    add("--quiet", action="store_true", help="no progress bar on stderr")


def rate_list(
    minimum: int = 1, *, positive: bool = True
) -> Callable[[str], list[float]]:
    """A converter of ``"1e-3,3.16e-3"`` to at least ``minimum`` distinct rates.

    ``positive``: every rate ``> 0`` (else any finite number; the config checks).
    """

    def parse(text: str) -> list[float]:
        number = _cli.number(0.0, above=True) if positive else _cli.number()
        values = [number(part.strip()) for part in text.split(",")]
        if len(values) < minimum or len(set(values)) != len(values):
            some = "two or more distinct" if minimum == 2 else "distinct"
            kind = "rates" if positive else "numbers"
            raise argparse.ArgumentTypeError(f"expected {some} {kind}, got {text!r}")
        return values

    parse.__name__ = "rates"
    return parse


def add_tuning_flags(
    parser: argparse.ArgumentParser,
    *,
    tune_seeds: Sequence[int],
    max_rates: int,
    tune_help: str = "seeds of the tuning runs (disjoint from --seeds)",
    max_help: str = "most rates a tuned grid grows to",
) -> None:
    """Add ``--tune-seeds`` and ``--max-rates`` (at least :data:`MIN_RATES`)."""
    parser.add_argument(
        "--tune-seeds",
        type=_cli.integers(0),
        default=list(tune_seeds),
        metavar="S,S,...",
        help=tune_help,
    )
    parser.add_argument(
        "--max-rates",
        type=_cli.integer(MIN_RATES),
        default=max_rates,
        metavar="N",
        help=max_help,
    )


def tuning_from_args(
    parser: _cli.OneLineParser,
    *,
    seeds: Sequence[int],
    tune_seeds: Sequence[int],
    learning_rates: Sequence[float],
    max_rates: int,
) -> None:
    """Refuse tuning seeds that are measured too, or fewer ``--max-rates`` than
    ``--learning-rates``: one line naming the flag."""
    shared = sorted(set(tune_seeds) & set(seeds))
    if shared:
        parser.fail(
            "--tune-seeds",
            f"must be disjoint from --seeds, both hold {_cli.show_default(shared)}",
        )
    if max_rates < len(learning_rates):
        parser.fail(
            "--max-rates",
            f"must be at least the {len(learning_rates)} --learning-rates",
        )


def engine_from_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Check --engine and --scheduler together (a one-line error naming the flag)."""
    if args.engine == "local" and args.scheduler is not None:
        parser.fail("--scheduler", "needs --engine dask")
    if args.engine == "dask":
        if args.scheduler is None:
            parser.fail("--engine", "dask needs --scheduler ADDRESS (or 'local')")
        try:
            import distributed  # noqa: F401
        except ImportError:
            parser.fail(
                "--engine",
                "dask needs dask.distributed: pip install 'relpos[cluster]'",
            )


def runs_dir_from_args(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> Path:
    """The runs folder (default: --output with the suffix .runs), made if missing."""
    folder = (
        Path(args.output).with_suffix(".runs")
        if args.runs_dir is None
        else Path(args.runs_dir)
    )
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _cli.check_writable("--runs-dir", folder / "probe.json", make_parents=False)
    except (OSError, ValueError) as error:
        parser.fail("--runs-dir", f"cannot write to {str(folder)!r} ({error})")
    return folder


def check_outputs(
    parser: _cli.OneLineParser,
    args: argparse.Namespace,
    *,
    make_parents: bool,
    paths: Sequence[str] = ("--output", "--plot"),
) -> Path:
    """Everything checked before the first run: --engine with --scheduler, each
    output path of ``paths`` (``--plot``'s figure format too; a None path is
    skipped), the runs folder (made). Returns the runs folder."""
    engine_from_args(parser, args)
    for flag in paths:
        path = getattr(args, flag.removeprefix("--").replace("-", "_"))
        _cli.output_flag(
            parser, flag, path, make_parents=make_parents, plot=flag == "--plot"
        )
    return runs_dir_from_args(parser, args)


@dataclasses.dataclass(frozen=True)
class EngineOptions:
    """Where a sweep's runs go: ``experiments.engine.open_engine``'s options.

    ``engine``: ``"local"`` processes or ``"dask"``; ``workers``: runs at the
    same time; ``scheduler``: the Dask scheduler (None with ``"local"``);
    ``threads``: torch threads of each run. The default is the flags' own
    (:func:`add_engine_flags`): local, one worker per CPU, one thread.
    """

    engine: str = "local"
    workers: int = dataclasses.field(default_factory=default_workers)
    scheduler: str | None = None
    threads: int = 1

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> EngineOptions:
        """The options :func:`add_engine_flags`' flags were given."""
        return cls(args.engine, args.workers, args.scheduler, args.threads)

    def replace(self, **fields: Any) -> EngineOptions:
        """These options with ``fields`` (any of the four, by name) changed: how
        a sweep takes the old keywords ``engine=``, ``workers=``, ... one by one."""
        return dataclasses.replace(self, **fields)

    def header(self) -> dict[str, Any]:
        """The machine header of a result JSON run with these options
        (:func:`run_header`)."""
        return run_header(self.threads, self.engine, self.workers)


def engine_options(args: argparse.Namespace, runs_dir: Any) -> dict[str, Any]:
    """The keyword arguments every sweep runner takes from :func:`add_engine_flags`'
    flags: ``options`` (an :class:`EngineOptions`), ``runs_dir`` and
    ``progress``."""
    return dict(
        options=EngineOptions.from_args(args),
        runs_dir=runs_dir,
        progress=not args.quiet,
    )


# -- the machine header -----------------------------------------------------------


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


def run_header(threads: int, engine: str, workers: int) -> dict[str, Any]:
    """What every sweep's JSON says of where and with what it ran: ``machine``
    (:func:`machine_info`, the threads of every run, the engine and its
    workers), ``torch`` and ``relpos`` (their versions)."""
    return {
        "machine": {
            **machine_info(),
            "torch_threads": threads,  # of every run, whatever this process has
            "engine": engine,
            "workers": workers,
        },
        "torch": torch.__version__,
        "relpos": relpos.__version__,
    }


# -- the run loop -----------------------------------------------------------------


class Runs:
    """An open executor over a runs store: ``runs(kind, configs)`` -> records.

    Records the store holds are read, the others run on the executor and are
    written as each finishes (``experiments.engine.execute``); the records
    come back in the order of ``configs``.
    """

    def __init__(
        self,
        executor: Any,
        store: Any,
        *,
        progress: bool,
        label: Callable[[str, Any], str] | None,
    ) -> None:
        self.executor, self.store = executor, store
        self.progress, self.label = progress, label

    def __call__(
        self, kind: str, configs: Sequence[Any], *, description: str | None = None
    ) -> list[dict[str, Any]]:
        from .experiments.engine import execute

        records, _ = execute(
            [(kind, c) for c in configs],
            self.store,
            self.executor,
            progress=self.progress,
            description=("runs" if kind == "measured" else kind)
            if description is None
            else description,
            label=self.label,
        )
        return records

    def tuned(
        self,
        cells: Sequence[Hashable],
        learning_rates: Sequence[float],
        make: Callable[[str, Any, int, float], Any],
        score: Callable[[dict[str, Any]], float | None],
        *,
        tune_seeds: Sequence[int],
        seeds: Sequence[int],
        max_rates: int,
        description: str | None = None,
    ) -> tuple[dict[Hashable, dict[str, Any]], list[dict], list[dict]]:
        """Chapter 12's protocol over ``cells``: each cell's rate tuned, then its seeds.

        The rates are tuned by :func:`tune_on_seeds` (``score`` of one tuning
        run's record); each cell's ``seeds`` then train at its chosen rate.
        ``make(kind, cell, seed, rate)`` is the job of one run. With one rate
        nothing is tuned: every cell trains at it (``scores`` ``[None]``,
        ``bracketed`` None). Returns ``(chosen, tuning records, measured
        records)``; ``chosen`` is ``tune_rates``' (``rates``, ``scores``,
        ``chosen``, ``bracketed`` per cell), the records in the order of
        cells, then rates, then seeds.
        """
        rates = list(learning_rates)

        def run(jobs: list[tuple[Hashable, float, int]]) -> list[dict[str, Any]]:
            configs = [make("tuning", cell, seed, rate) for cell, rate, seed in jobs]
            return self("tuning", configs)

        if len(rates) > 1:
            chosen, tuning = tune_on_seeds(
                cells, rates, run, score, tune_seeds=tune_seeds, max_rates=max_rates
            )
        else:
            chosen, tuning = {cell: _untuned(rates[0]) for cell in cells}, []
        jobs = [
            make("measured", cell, seed, chosen[cell]["chosen"])
            for cell in cells
            for seed in seeds
        ]
        return chosen, tuning, self("measured", jobs, description=description)


def _untuned(rate: float) -> dict[str, Any]:
    return {"rates": [rate], "scores": [None], "chosen": rate, "bracketed": None}


def tune_on_seeds(
    cells: Sequence[Hashable],
    grid: Sequence[float],
    run: Callable[[list[tuple[Hashable, float, int]]], list[dict[str, Any]]],
    score: Callable[[dict[str, Any]], float | None],
    *,
    tune_seeds: Sequence[int],
    max_rates: int,
) -> tuple[dict[Hashable, dict[str, Any]], list[dict[str, Any]]]:
    """Chapter 12's tuning of the rates of ``cells``: the one path every sweep takes.

    ``run(jobs)`` trains one tuning run per ``(cell, rate, seed)`` job and
    returns their records in the same order. Every cell trains at every rate
    of ``grid`` on every seed of ``tune_seeds``; its score at a rate is the
    mean ``score`` of those runs (:func:`mean_by_job`; None, a diverged run,
    where one scores None); the grid grows past an edge holding the best
    until the best is interior or it holds ``max_rates`` rates
    (``rate_grid.tune_rates``). Returns ``(chosen, records)``: ``tune_rates``'
    ``rates``, ``scores``, ``chosen`` and ``bracketed`` per cell, and every
    tuning record, round by round, in the order of cells, then rates, then seeds.
    """
    from .experiments.rate_grid import tune_rates

    seeds = list(tune_seeds)
    if not seeds:
        raise ValueError(f"tune_seeds must hold at least one seed, got {seeds!r}")
    records: list[dict[str, Any]] = []

    def measure(jobs: list[tuple[Hashable, float]]) -> list[float | None]:
        found = run([(cell, rate, seed) for cell, rate in jobs for seed in seeds])
        records.extend(found)
        return mean_by_job(found, len(seeds), score)

    return tune_rates(list(cells), grid, measure, max_rates=max_rates), records


@contextlib.contextmanager
def open_runs(
    store: Any,
    options: EngineOptions | None = None,
    *,
    job: Callable[[str, Any, int], dict[str, Any]] | None = None,
    progress: bool = True,
    label: Callable[[str, Any], str] | None = None,
    **old: Any,
) -> Iterator[Runs]:
    """The run loop of a sweep, open for the ``with`` block.

    ``store``: a ``RunStore`` (:func:`store`); ``options`` (default
    :class:`EngineOptions`'; ``old``: its fields one by one, as
    ``workers=1``) and ``job`` (default: the experiments' ``run_job``) are
    ``experiments.engine.open_engine``'s; ``label`` names a finished run on
    the progress bar.
    """
    from .experiments.engine import open_engine

    options = (EngineOptions() if options is None else options).replace(**old)
    extra = {} if job is None else {"job": job}
    with open_engine(
        options.engine,
        workers=options.workers,
        scheduler=options.scheduler,
        threads=options.threads,
        **extra,
    ) as executor:
        yield Runs(executor, store, progress=progress, label=label)


def store(folder: Any = None, *, stamp: Any = None) -> Any:
    """The runs store of ``folder`` (None: in memory) keyed on ``stamp``
    (None: the sweep schema and relpos's version; a probe passes its own)."""
    from .experiments.store import RunStore

    return RunStore(folder, stamp=stamp)


def mean_by_job(
    records: Sequence[dict[str, Any]],
    size: int,
    score: Callable[[dict[str, Any]], float | None],
) -> list[float | None]:
    """Each job's mean ``score`` over its ``size`` consecutive records (its tuning
    seeds); None where a record scores None."""
    scores = [score(r) for r in records]
    per_job = [scores[i : i + size] for i in range(0, len(scores), size)]
    return [None if None in s else statistics.fmean(s) for s in per_job]


__all__ = [
    "ENGINES",
    "MIN_RATES",
    "EngineOptions",
    "Runs",
    "add_engine_flags",
    "add_tuning_flags",
    "check_outputs",
    "default_workers",
    "engine_from_args",
    "engine_options",
    "machine_info",
    "mean_by_job",
    "open_runs",
    "rate_list",
    "run_header",
    "runs_dir_from_args",
    "store",
    "tune_on_seeds",
    "tuning_from_args",
]
