"""The command line of ``python -m relpos.book.probes.positions``.

Runs both parts of the probe (``run.run_probe``) and writes the JSON to
``--output`` (and the figure to ``--plot``). The runs go to the engine and are
kept in ``--runs-dir`` with the flags every sweep takes
(``relpos.book.runner.add_engine_flags``); the default runs folder is the
committed one, so the same command resumes where any earlier session stopped.
Bad flags stop it before any training with one line naming the flag.
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
    check_outputs,
    engine_options,
)
from ...experiments.config import Config
from . import design
from .run import PARTS, run_probe

#: The committed results: the probe's JSON and figure, and its runs folder.
RESULTS = Path(__file__).resolve().parents[2] / "results" / "probes"
OUTPUT = RESULTS / f"{design.NAME}.json"
RUNS = RESULTS / design.NAME / "runs"
PROGRAM = "python -m relpos.book.probes.positions"


def build_parser() -> _cli.OneLineParser:
    """The parser: parts, schemes, seeds, steps, output, plot, the engine flags."""
    parser = _cli.OneLineParser(
        prog=PROGRAM,
        description="Claim 1's probe: the token 3 back, supervised in the first "
        "half of each window and scored in both, for every arm; and the "
        "data-efficiency curve from 8 training sequences. The protocol of "
        "chapter 12 (tuned rates, ten seeds).",
    )
    add = parser.add_argument
    add("--parts", type=_cli.names("parts", PARTS), default=list(PARTS),
        metavar="NAMES", help="comma-separated parts, or 'all'")
    add("--schemes", type=_cli.names("schemes", design.ARMS),
        default=list(design.ARMS), metavar="NAMES",
        help="the transfer part's arms, or 'all'")
    add("--seeds", type=_cli.integers(0), default=list(design.SEEDS),
        metavar="S,S,...", help="measured seeds")
    add("--steps", type=_cli.integer(1), default=None, metavar="N",
        help="optimiser steps of every run (default: the design's; fewer for a "
        "quick check of the command, not for results)")
    add("--output", default=str(OUTPUT), metavar="PATH", help="the JSON results")
    add("--plot", default=None, metavar="PATH", help="also draw the figure here")
    add_engine_flags(parser, runs_dir=str(RUNS))
    return parser


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse and check ``argv``, run the probe, write the JSON (and figure)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    changes = {} if args.steps is None else {"steps": args.steps}
    _cli.config_or_exit(parser, lambda: Config(**changes), {"steps": "--steps"})
    shared = sorted(set(args.seeds) & set(design.TUNE_SEEDS))
    if shared:
        parser.fail("--seeds", f"must not hold the tuning seeds, got {shared}")
    runs_dir = check_outputs(parser, args, make_parents=True)
    result = run_probe(
        parts=args.parts,
        schemes=args.schemes,
        seeds=args.seeds,
        changes=changes,
        **engine_options(args, runs_dir),
        command=shlex.join([PROGRAM, *argv]),
    )
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.output}", file=sys.stderr)
    if args.plot is not None:
        from .plot import probe_figure

        Path(args.plot).parent.mkdir(parents=True, exist_ok=True)
        probe_figure(result).savefig(args.plot, dpi=120)
        print(f"wrote {args.plot}", file=sys.stderr)
    return result


__all__ = ["OUTPUT", "RUNS", "build_parser", "main"]
