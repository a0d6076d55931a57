"""The command line of ``python -m relpos.book.probes.gradients``: the probe, one JSON.

``make probe-gradients`` runs it with the book's protocol (ten seeds, two
tuning seeds, a grid extended until interior) and writes
``relpos/book/results/probes/gradients.json`` and its figure. Every finished
run is a record in ``--runs-dir`` (committed:
``relpos/book/results/probes/gradients/runs/``), so the same command again
trains only what is missing. Bad flags stop it before any training with one
line naming the flag (exit status 2).
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

from ... import _cli
from ...runner import (
    add_engine_flags,
    add_tuning_flags,
    check_outputs,
    engine_options,
    rate_list,
    tuning_from_args,
)
from ...text.config import TextConfig
from . import design
from .run import STUDY

DEFAULT_SEEDS = tuple(range(10))
DEFAULT_TUNE_SEEDS = (100, 101)
DEFAULT_LEARNING_RATES = (1e-3, 3.16e-3, 1e-2)


def build_parser() -> _cli.OneLineParser:
    """The parser: arms, seeds, the grid, steps, where runs and results go.

    Shapes:
        (no tensors)
    """
    parser = _cli.OneLineParser(
        prog="python -m relpos.book.probes.gradients",
        description=(
            "Claim 4's probe: positions added to the input (absolute), as an "
            "untied attention term (tupe) or as DeBERTa's relative terms, each "
            "trained on next-byte prediction alone and with a position objective "
            "(recall the byte 3 back); the content cost of the position "
            "objective per arm, rates tuned per cell, paired by seed."
        ),
    )
    add = parser.add_argument
    add("--arms", type=_cli.names("arms", tuple(design.ARMS)),
        default=list(design.ARMS), metavar="NAMES", help="comma-separated arms")
    add("--seeds", type=_cli.integers(0), default=list(DEFAULT_SEEDS),
        metavar="S,S,...", help="measured seeds")
    add("--learning-rates", type=rate_list(2), default=list(DEFAULT_LEARNING_RATES),
        metavar="R,R,...", help="the first grid of rates, extended until interior")
    add_tuning_flags(parser, tune_seeds=DEFAULT_TUNE_SEEDS, max_rates=5)
    add("--steps", type=_cli.integer(1), default=STUDY["steps"], metavar="N",
        help="optimiser steps of every run (fewer: a quick check, not results)")
    add("--output", required=True, metavar="PATH", help="where to write the JSON")
    add("--plot", default=None, metavar="PATH", help="where to save the figure")
    add_engine_flags(parser)
    return parser


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse and check ``argv``, run the probe, write the JSON (and figure).

    Shapes:
        (no tensors): the JSON-ready result
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    base = _cli.config_or_exit(
        parser,
        lambda: TextConfig(**{**STUDY, "steps": args.steps}),
        {"steps": "--steps"},
    )
    tuning_from_args(
        parser,
        seeds=args.seeds,
        tune_seeds=args.tune_seeds,
        learning_rates=args.learning_rates,
        max_rates=args.max_rates,
    )
    runs_dir = check_outputs(parser, args, make_parents=True)

    from .plot import probe_figure
    from .sweep import run_probe

    result = run_probe(
        base,
        arms=args.arms,
        seeds=args.seeds,
        learning_rates=args.learning_rates,
        tune_seeds=args.tune_seeds,
        max_rates=args.max_rates,
        **engine_options(args, runs_dir),
        command=shlex.join(["python", "-m", "relpos.book.probes.gradients", *argv]),
    )
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.output}", file=sys.stderr)
    if args.plot is not None:
        probe_figure(result).savefig(args.plot, dpi=120, bbox_inches="tight")
        print(f"wrote {args.plot}", file=sys.stderr)
    return result


__all__ = ["build_parser", "main"]
