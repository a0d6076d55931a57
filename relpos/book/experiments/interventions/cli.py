"""The command line of ``python -m relpos.book.experiments.interventions``.

Trains every cell of the chosen interventions at every seed (``run``) and writes
the JSON to ``--output``. The runs go to ``--workers`` local processes or a Dask
cluster, as a sweep's, and every finished run is a record in ``--runs-dir``
(default: the output path with the suffix ``.runs``): the same command again
after an interruption trains only what is missing. Bad flags stop it before
any training with one line naming the flag (exit status 2).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from ... import _cli
from ...runner import (
    add_engine_flags,
    check_outputs,
    engine_options,
)
from ..config import Config
from .run import DEFAULT_SEEDS, INTERVENTIONS, run_interventions


def build_parser() -> _cli.OneLineParser:
    """The parser: which interventions, seeds, where the runs go, the output.

    Shapes:
        (no tensors)
    """
    parser = _cli.OneLineParser(
        prog="python -m relpos.book.experiments.interventions",
        description=(
            "Test the mechanisms chapters 9 and 10 assert by changing each suspected "
            "cause alone, paired by seed, at the committed sweeps' settings and "
            "chosen learning rates."
        ),
    )
    add = parser.add_argument
    add(
        "--only",
        type=_cli.names("interventions", INTERVENTIONS),
        default=list(INTERVENTIONS),
        metavar="NAMES",
        help="comma-separated interventions, or 'all'",
    )
    add(
        "--seeds",
        type=_cli.integers(0),
        default=list(DEFAULT_SEEDS),
        metavar="S,S,...",
        help="seeds of every compared pair",
    )
    add(
        "--steps",
        type=_cli.integer(1),
        default=None,
        metavar="N",
        help="optimiser steps of every run (default: each sweep's own; fewer for "
        "a quick check of the command, not for results)",
    )
    add(
        "--output",
        required=True,
        default=argparse.SUPPRESS,
        metavar="PATH",
        help="where to write the JSON (required)",
    )
    add_engine_flags(
        parser, runs_help="; keep it apart from the sweeps' runs folders"
    )
    return parser


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse and check ``argv``, run the interventions, write the JSON, return it.

    Shapes:
        (no tensors): the JSON-ready result
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    changes = {} if args.steps is None else {"steps": args.steps}
    _cli.config_or_exit(parser, lambda: Config(**changes), {"steps": "--steps"})
    runs_dir = check_outputs(parser, args, make_parents=False, paths=("--output",))
    result = run_interventions(
        args.only,
        seeds=args.seeds,
        changes=changes,
        **engine_options(args, runs_dir),
        command=shlex.join(
            ["python", "-m", "relpos.book.experiments.interventions", *argv]
        ),
    )
    Path(args.output).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.output}", file=sys.stderr)
    return result


__all__ = ["build_parser", "main"]
