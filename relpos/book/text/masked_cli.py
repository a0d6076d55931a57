"""``python -m relpos.book.text.masked_cli``: the masked-baselines study, one JSON.

``make masked-baselines`` runs it: every arm of ``masked_baselines.ARMS`` at
the study's rate on the seeds, ``absolute`` at every rate of ``RATES`` on the
first seed, each run measured on the validation split, then the summary
(``masked_summary``) and the figure (``masked_plot``). Every finished run is a
record in ``--runs-dir`` (committed: ``relpos/book/results/probes/
masked_baselines/runs/``, keyed on the study's ``SCHEMA``, not relpos's
version), so the same command again trains only what is missing. Bad flags stop
it before any training with one line naming the flag (exit status 2).

The JSON (``RESULT_SCHEMA = 1``)::

    {"schema": 1, "study": "masked-baselines", "design": {prediction,
     falsifier, mechanism, arms, rate, rates, margin, curve_every,
     schema}, "commands",
     "machine", "torch", "relpos", "corpus", "config": {the TextConfig less
     scheme, seed and rate}, "runs": [train_run records],
     "summary": masked_summary.summarize, "wall_seconds", "run_seconds"}
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from .. import _cli
from ..runner import (
    EngineOptions,
    add_engine_flags,
    check_outputs,
    engine_options,
    open_runs,
    store,
)
from . import masked_baselines as study
from .config import TextConfig
from .corpus import stdlib_corpus
from .masked_summary import summarize

#: The JSON schema of the study's result.
RESULT_SCHEMA = 1
#: What stamps every record of the runs folder (instead of relpos's version).
STAMP = {"study": "masked-baselines", "schema": study.SCHEMA}
#: The measured seeds by default.
DEFAULT_SEEDS = (0, 1)


def plan(base: TextConfig, seeds: list[int]) -> list[study.MaskedRun]:
    """Every run: each arm at ``RATE`` on ``seeds``, absolute's rates on the first.

    Shapes:
        (no tensors)
    """
    runs = [
        (arm, seed, study.RATE) for arm in study.ARMS for seed in seeds
    ] + [("absolute", seeds[0], rate) for rate in study.RATES if rate != study.RATE]
    return [
        study.MaskedRun(
            arm,
            base.replace(
                scheme=study.ARM_PARTS[arm][0], seed=seed, learning_rate=rate
            ),
        )
        for arm, seed, rate in runs
    ]


def run_study(
    base: TextConfig,
    seeds: list[int],
    *,
    options: EngineOptions = EngineOptions(workers=1),
    runs_dir: Any = None,
    progress: bool = True,
    command: str | None = None,
) -> dict[str, Any]:
    """Run (or read) every run of :func:`plan` and summarise: the JSON dict.

    ``options``: where the runs go (``open_engine``'s).
    """
    corpus = stdlib_corpus(base.corpus)
    base = base.replace(corpus_sha256=corpus.sha256)
    start = time.perf_counter()
    with open_runs(
        store(runs_dir, stamp=STAMP),
        options,
        job=study.masked_job,
        progress=progress,
        label=study.label,
    ) as run:
        runs = run("measured", plan(base, seeds))
    swept = ("scheme", "seed", "learning_rate")
    return {
        "schema": RESULT_SCHEMA,
        "study": "masked-baselines",
        "design": {
            "prediction": study.PREDICTION,
            "falsifier": study.FALSIFIER,
            "mechanism": study.MECHANISM,
            "arms": dict(study.ARMS),
            "arm_parts": {k: list(v) for k, v in study.ARM_PARTS.items()},
            "rate": study.RATE,
            "rates": list(study.RATES),
            "margin": study.MARGIN,
            "curve_every": study.CURVE_EVERY,
            "schema": study.SCHEMA,
        },
        "commands": [] if command is None else [command],
        **options.header(),
        "corpus": corpus.about(),
        "config": {k: v for k, v in base.to_dict().items() if k not in swept},
        "runs": runs,
        "summary": summarize(runs),
        "wall_seconds": time.perf_counter() - start,
        "run_seconds": sum(r["seconds"] for r in runs),
    }


def build_parser() -> _cli.OneLineParser:
    """The parser: seeds, steps, where runs, the JSON and the figure go.

    Shapes:
        (no tensors)
    """
    parser = _cli.OneLineParser(
        prog="python -m relpos.book.text.masked_cli",
        description=(
            "Why masked absolute and sinusoidal sit on the plateau of none: "
            "none, absolute, sinusoidal, TUPE and DeBERTa in the masked byte "
            "model of text_masked.json, training curves and validation loss, "
            "plain and with each window's bytes scrambled."
        ),
    )
    add = parser.add_argument
    add("--seeds", type=_cli.integers(0), default=list(DEFAULT_SEEDS),
        metavar="S,S,...", help="seeds of every arm (absolute's rates: the first)")
    add("--steps", type=_cli.integer(1), default=study.STUDY["steps"], metavar="N",
        help="optimiser steps of every run (fewer: a quick check, not results)")
    add("--output", required=True, metavar="PATH", help="where to write the JSON")
    add("--plot", default=None, metavar="PATH", help="where to save the figure")
    add_engine_flags(parser)
    return parser


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse and check ``argv``, run the study, write the JSON (and figure).

    Shapes:
        (no tensors): the JSON-ready result
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    base = _cli.config_or_exit(
        parser,
        lambda: TextConfig(**{**study.STUDY, "steps": args.steps}),
        {"steps": "--steps"},
    )
    runs_dir = check_outputs(parser, args, make_parents=True)
    command = shlex.join(["python", "-m", "relpos.book.text.masked_cli", *argv])
    result = run_study(
        base, args.seeds, **engine_options(args, runs_dir), command=command
    )
    Path(args.output).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.output}", file=sys.stderr)
    if args.plot is not None:
        from .masked_plot import masked_figure

        masked_figure(result).savefig(args.plot, dpi=120, bbox_inches="tight")
        print(f"wrote {args.plot}", file=sys.stderr)
    return result


if __name__ == "__main__":
    main()


__all__ = ["DEFAULT_SEEDS", "RESULT_SCHEMA", "STAMP", "build_parser", "main", "plan"]
