"""The command line of ``python -m relpos.book.experiments``: flags in, JSON out.

The flags are :class:`~relpos.book.experiments.config.Config`'s fields, read
from ``dataclasses.fields(Config)`` (each field's ``metadata`` holds its help),
so adding a field adds a flag. The fields a sweep varies (setting, task,
scheme, training-set size, seed) take comma-separated lists, and so does
``--learning-rates`` (the grid the learning rate is tuned over, on the seeds of
``--tune-seeds``); the others one value. The runs go to ``--workers`` local
processes, or to a Dask cluster (``--engine dask --scheduler ADDRESS``), and
every finished run is written to ``--runs-dir`` at once: the same command run
again after an interruption trains only the runs that are missing.
The ranges and cross-field rules are ``Config``'s own checks: the command
builds every run's ``Config`` before any training, and a value they reject
stops it with one line on stderr that names the flag (exit status 2), as does
an output or figure path that cannot be written or a figure format matplotlib
does not know.

Every flag has a default; the sweeps the book reads are ``make sweeps``, one
command each, and each JSON file records its command: rerunning it reproduces
every number on the same machine (only the timings, the date and the machine
entry differ).
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import shlex
import sys
from pathlib import Path
from typing import Any, Callable

from .. import _cli
from .._cli import OneLineParser
from ..runner import (
    add_engine_flags,
    add_tuning_flags,
    check_outputs,
    engine_from_args,
    engine_options,
    rate_list,
    runs_dir_from_args,
    tuning_from_args,
)
from .config import SETTINGS, Config
from .schemes import SCHEMES
from .tasks import TASKS

DEFAULT_TRAIN_SIZES = (8, 32, 128, 512)
DEFAULT_SEEDS = (0, 1, 2, 3, 4)
DEFAULT_LEARNING_RATES = (1e-3, 3e-3, 1e-2)
DEFAULT_TUNE_SEEDS = (100, 101)
DEFAULT_MAX_RATES = 8
# The sweep's own defaults for the fields it varies: every task, every scheme.
SWEEP_DEFAULTS: dict[str, Callable[[], list[Any]]] = {
    "task": lambda: list(TASKS),
    "setting": lambda: ["encoder"],
    "scheme": lambda: list(SCHEMES),
    "seed": lambda: list(DEFAULT_SEEDS),
    "train_size": lambda: list(DEFAULT_TRAIN_SIZES),
}
_CONVERTERS: dict[str, Callable[[], Callable[[str], Any]]] = {
    "int": _cli.integer,
    "int | None": _cli.integer,  # a field that is off (None) unless given
    "float": _cli.number,
    "tuple[int, ...]": _cli.integers,
    "str": lambda: str,
}


def flags() -> dict[str, str]:
    """Each field of ``Config`` and its flag (the first, where it has two)."""
    return {
        field.name: (field.metadata.get("flags") or (_dashed(field.name),))[0]
        for field in dataclasses.fields(Config)
    }


def _dashed(name: str) -> str:
    return "--" + name.replace("_", "-")


def _converter(field: dataclasses.Field) -> Callable[[str], Any]:
    if field.name == "learning_rate":
        return rate_list(positive=False)
    if field.name == "task":
        return _cli.names("tasks", TASKS)
    if field.name == "scheme":
        return _cli.names("schemes", lambda: SCHEMES)
    if field.name == "setting":
        return _cli.names("settings", SETTINGS)
    if field.metadata.get("sweep"):
        return _cli.integers()
    if str(field.type) not in _CONVERTERS:
        raise TypeError(
            f"Config.{field.name} has type {field.type}; the command line reads "
            f"only {', '.join(_CONVERTERS)}"
        )
    return _CONVERTERS[str(field.type)]()


def build_parser() -> OneLineParser:
    """The parser: one flag per ``Config`` field, and output, plot, threads, quiet.

    Its defaults are the committed sweep; ``--help`` shows every one.
    """
    base = Config()
    parser = OneLineParser(
        prog="python -m relpos.book.experiments",
        description=(
            "Train tiny encoders with different position schemes on synthetic tasks "
            "and measure length generalisation and data efficiency. Every run is "
            "seeded from (seed, task, scheme, train size): the same command on the "
            "same machine gives "
            "the same numbers. The defaults reproduce the committed sweep."
        ),
    )
    for field in dataclasses.fields(Config):
        about = field.metadata
        names = about.get("flags") or (_dashed(field.name),)
        if about.get("sweep"):
            default: Any = SWEEP_DEFAULTS[field.name]()
        elif field.name == "learning_rate":
            default = list(DEFAULT_LEARNING_RATES)
        elif field.name == "intermediate_size":
            default = None  # twice --hidden-size
        else:
            default = getattr(base, field.name)
            default = list(default) if isinstance(default, tuple) else default
        parser.add_argument(
            *names,
            dest=field.name,
            type=_converter(field),
            default=default,
            metavar=about.get("metavar") or ("N" if field.type == "int" else None),
            help=about["help"],
        )
    add = parser.add_argument
    add(
        "--output",
        default="sweep.json",
        metavar="PATH",
        help="where to write the JSON results (its folder must exist)",
    )
    add(
        "--plot",
        default=None,
        metavar="PATH",
        help="also draw the figure (per task, every scheme's mean accuracy at every "
        "test length with the seeds' range, at the largest training set, first "
        "setting) to this file, e.g. sweep.png; its suffix is the format "
        "(default: no figure)",
    )
    add_tuning_flags(
        parser,
        tune_seeds=DEFAULT_TUNE_SEEDS,
        max_rates=DEFAULT_MAX_RATES,
        tune_help="seeds of the tuning runs only (disjoint from --seeds); unused "
        "with one learning rate",
        max_help="the most rates a cell's grid grows to while its best rate sits "
        "at an edge (each cell: setting, task, scheme, training size; at least the "
        "number of --learning-rates)",
    )
    add_engine_flags(parser)
    return parser


def config_from_args(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> Config:
    """The sweep's base ``Config``, every run's checked; a bad value: ``parser.error``.

    Every combination of the swept values (and every learning rate) is made
    into a ``Config`` here, so every value a run will use has passed
    ``Config``'s checks before the first run starts; the base's learning rate
    is the first of ``--learning-rates``. Tuning seeds shared with ``--seeds``
    are refused (when there is a rate to tune).
    """
    names = flags()
    sweep = [f.name for f in dataclasses.fields(Config) if f.metadata.get("sweep")]
    values = {name: getattr(args, name) for name in names if name not in sweep}
    values["test_lengths"] = tuple(values["test_lengths"])
    rates = values.pop("learning_rate")
    values["learning_rate"] = rates[0]
    if values["intermediate_size"] is None:
        values["intermediate_size"] = 2 * values["hidden_size"]

    def build() -> Config:
        base = Config(**values)
        for rate in rates:
            base.replace(learning_rate=rate)
        for grid in itertools.product(*(getattr(args, name) for name in sweep)):
            base.replace(**dict(zip(sweep, grid)))
        return base

    base = _cli.config_or_exit(parser, build, names)
    if len(rates) > 1:
        tuning_from_args(
            parser,
            seeds=args.seed,
            tune_seeds=args.tune_seeds,
            learning_rates=rates,
            max_rates=args.max_rates,
        )
    return base


def main(argv: list[str] | None = None) -> dict:
    """Parse and check ``argv``, run the sweep, write the JSON (and figure), return it.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    base = config_from_args(parser, args)
    runs_dir = check_outputs(parser, args, make_parents=False)

    from ..plot import accuracy_grid
    from .report import format_table
    from .sweep import run_sweep

    result = run_sweep(
        base,
        settings=args.setting,
        tasks=args.task,
        schemes=args.scheme,
        train_sizes=args.train_size,
        seeds=args.seed,
        learning_rates=args.learning_rate,
        tune_seeds=args.tune_seeds if len(args.learning_rate) > 1 else [],
        max_rates=args.max_rates,
        **engine_options(args, runs_dir),
        command=shlex.join(["python", "-m", "relpos.book.experiments", *argv]),
    )
    Path(args.output).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(format_table(result))
    print(f"wrote {args.output}", file=sys.stderr)
    if args.plot is not None:
        accuracy_grid(result).savefig(args.plot, dpi=120)
        print(f"wrote {args.plot}", file=sys.stderr)
    return result


__all__ = [
    "DEFAULT_LEARNING_RATES",
    "DEFAULT_SEEDS",
    "DEFAULT_TRAIN_SIZES",
    "DEFAULT_TUNE_SEEDS",
    "DEFAULT_MAX_RATES",
    "OneLineParser",
    "add_engine_flags",
    "engine_options",
    "build_parser",
    "config_from_args",
    "engine_from_args",
    "flags",
    "main",
    "runs_dir_from_args",
]
