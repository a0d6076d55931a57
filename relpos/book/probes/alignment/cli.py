"""``python -m relpos.book.probes.alignment``: the probe's sweep, one command.

Tunes every arm's rate on the tuning seeds, trains the measured seeds, scores
the committed items, and writes the JSON (summary, comparisons, the verdict's
record), the per-item table and the figure. Every finished run is a record in
``--runs-dir`` (default: the committed ``results/probes/alignment/runs/``), so
the same command resumes after a stop, in this session or the next. Where the
runs go: the run engine's flags (``relpos.book.runner.add_engine_flags``). Bad
flags stop it before any training, one line naming the flag.
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
from .design import ABSOLUTE_ARMS, ARM_CONFIGS, FULL_STEPS, MAIN_ARM, VERDICT_STEPS
from .items import ITEMS_PATH

#: Where the results go (the runs folder, the per-item table beside the JSON).
RESULTS = ITEMS_PATH.parent
DEFAULT_SEEDS = tuple(range(10))
DEFAULT_TUNE_SEEDS = (100, 101)
DEFAULT_RATES = (1e-3, 3.16e-3, 1e-2)


def build_parser() -> _cli.OneLineParser:
    """The parser: arms, seeds, rates, steps, outputs and where the runs go."""
    parser = _cli.OneLineParser(
        prog="python -m relpos.book.probes.alignment",
        description="The linguistic-alignment probe: byte LMs trained on a small "
        "grammar (agreement across attractors, Dyck-2), scored on minimal pairs "
        "by distance and offset inside L.",
    )
    add = parser.add_argument
    add("--arms", type=_cli.names("arms", tuple(ARM_CONFIGS)),
        default=list(ARM_CONFIGS), metavar="NAMES", help="comma-separated arms")
    add("--seeds", type=_cli.integers(0), default=list(DEFAULT_SEEDS),
        metavar="S,S,...", help="measured seeds")
    add("--learning-rates", type=rate_list(2),
        default=list(DEFAULT_RATES), metavar="LR,LR,...",
        help="the log-spaced grid each arm is tuned on, extended past an edge")
    add_tuning_flags(parser, tune_seeds=DEFAULT_TUNE_SEEDS, max_rates=6,
                     tune_help="tuning seeds (disjoint from --seeds)",
                     max_help="most rates a grid grows to")
    add("--steps", type=_cli.integer(1), default=VERDICT_STEPS, metavar="N",
        help="optimiser steps of every run (the verdict's budget; the full "
        f"budget is {FULL_STEPS})")
    add("--items", default=str(ITEMS_PATH), metavar="PATH",
        help="the committed items")
    add("--output", default=str(RESULTS.parent / "alignment.json"), metavar="PATH",
        help="the JSON results")
    add("--per-item", default=str(RESULTS / "per_item.json"), metavar="PATH",
        help="per arm, each item's share of seeds right and mean margin")
    add("--plot", default=str(RESULTS.parent / "alignment.png"), metavar="PATH",
        help="the figure")
    add_engine_flags(parser, runs_help="; the probe's committed "
                     "folder, which make probe-alignment passes, is "
                     "relpos/book/results/probes/alignment/runs")
    return parser


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse, run the sweep, write the JSON, the per-item table and the figure."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    from .run import ProbeRun

    base = _cli.config_or_exit(parser, lambda: ProbeRun(steps=args.steps),
                               {"steps": "--steps"})
    tuning_from_args(parser, seeds=args.seeds, tune_seeds=args.tune_seeds,
                     learning_rates=args.learning_rates, max_rates=args.max_rates)
    runs_dir = check_outputs(parser, args, make_parents=True,
                             paths=("--output", "--per-item", "--plot"))
    from .items import file_sha256, load_items

    try:
        items, about = load_items(args.items)
    except (OSError, ValueError, KeyError) as error:
        parser.fail("--items", str(error))
    from ...experiments.verdicts.alignment_probe import alignment_record
    from .plot import accuracy_by_distance
    from .summary import per_item, summarize
    from .sweep import run_probe

    result = run_probe(
        base, items, arms=args.arms, seeds=args.seeds,
        learning_rates=args.learning_rates, tune_seeds=args.tune_seeds,
        max_rates=args.max_rates, **engine_options(args, runs_dir),
        command=shlex.join(["python", "-m", "relpos.book.probes.alignment", *argv]),
    )
    result["items"] = {"file": Path(args.items).name, "sha256": file_sha256(args.items),
                       "count": len(items), "provenance": about}
    result["summary"], result["comparisons"] = summarize(result, items)
    table = per_item(result, items)
    for run in result["runs"]:
        run.pop("margins")
    judged = MAIN_ARM in args.arms and set(ABSOLUTE_ARMS) & set(args.arms)
    result["record"] = alignment_record(result) if judged else None
    texts = ((args.output, json.dumps(result, indent=1)),
             (args.per_item, json.dumps(table, separators=(",", ":"))))
    for path, text in texts:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text + "\n", encoding="utf-8")
        print(f"wrote {path}", file=sys.stderr)
    accuracy_by_distance(result).savefig(args.plot, dpi=120)
    print(f"wrote {args.plot}", file=sys.stderr)
    record = result["record"]
    if record is not None:
        print(f"{record['id']}: {record['verdict']} ({record['mechanism']})")
    return result


__all__ = ["DEFAULT_RATES", "DEFAULT_SEEDS", "DEFAULT_TUNE_SEEDS", "build_parser",
           "main"]
