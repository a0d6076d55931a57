"""The command line of ``python -m relpos.book.experiments``: flags in, sweep run, JSON out.

Every flag has a default, and the defaults are the committed sweep: running
the command with only ``--output`` and ``--plot`` reproduces
``relpos/results/sweep.json`` (every number, on the same machine; only the
timings, the date and the machine entry differ). A bad value stops the command
with one line on stderr that names the flag.

Shapes:
    (no tensors)
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import NoReturn

import torch

from .config import Config
from .schemes import SCHEMES
from .tasks import TASKS

DEFAULT_TRAIN_SIZES = (8, 32, 128, 512)
DEFAULT_SEEDS = (0, 1, 2)


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line, naming the flag."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _ints(minimum: int):
    def parse(text: str) -> list[int]:
        try:
            values = [int(part) for part in text.split(",")]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected comma-separated integers, got {text!r}"
            ) from None
        if min(values) < minimum:
            raise argparse.ArgumentTypeError(
                f"expected integers >= {minimum}, got {text!r}"
            )
        if len(set(values)) != len(values):
            raise argparse.ArgumentTypeError(
                f"expected distinct integers, got {text!r}"
            )
        return values

    parse.__name__ = "integers"
    return parse


def _int(minimum: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected an integer, got {text!r}"
            ) from None
        if value < minimum:
            raise argparse.ArgumentTypeError(
                f"expected an integer >= {minimum}, got {value}"
            )
        return value

    parse.__name__ = "integer"
    return parse


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def _names(kind: str, registry: dict[str, object]):
    def parse(text: str) -> list[str]:
        if text == "all":
            return list(registry)
        values = [part.strip() for part in text.split(",")]
        unknown = [v for v in values if v not in registry]
        if unknown or len(set(values)) != len(values):
            raise argparse.ArgumentTypeError(
                f"expected 'all' or distinct {kind} from {','.join(registry)}, "
                f"got {text!r}"
            )
        return values

    parse.__name__ = kind
    return parse


def build_parser() -> argparse.ArgumentParser:
    """The argument parser; its defaults are the committed sweep.

    Shapes:
        (no tensors)
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
    add = parser.add_argument
    add(
        "--task",
        "--tasks",
        dest="tasks",
        type=_names("tasks", TASKS),
        default=list(TASKS),
        metavar="NAMES",
        help=f"comma-separated tasks, or 'all' (default: all = {','.join(TASKS)})",
    )
    add(
        "--schemes",
        type=_names("schemes", SCHEMES),
        default=list(SCHEMES),
        metavar="NAMES",
        help="comma-separated position schemes, or 'all' (default: all registered = "
        f"{','.join(SCHEMES)})",
    )
    add(
        "--train-length",
        type=_int(1),
        default=base.train_length,
        metavar="L",
        help=f"length of every training sequence (default: {base.train_length})",
    )
    add(
        "--test-lengths",
        type=_ints(1),
        default=list(base.test_lengths),
        metavar="N,N,...",
        help="comma-separated lengths at which accuracy is measured "
        f"(default: {','.join(map(str, base.test_lengths))})",
    )
    add(
        "--train-sizes",
        type=_ints(1),
        default=list(DEFAULT_TRAIN_SIZES),
        metavar="N,N,...",
        help="comma-separated numbers of distinct training sequences "
        f"(default: {','.join(map(str, DEFAULT_TRAIN_SIZES))})",
    )
    add(
        "--seeds",
        type=_ints(0),
        default=list(DEFAULT_SEEDS),
        metavar="S,S,...",
        help=f"comma-separated seeds (default: {','.join(map(str, DEFAULT_SEEDS))})",
    )
    add(
        "--steps",
        type=_int(1),
        default=base.steps,
        help=f"optimiser steps per run (default: {base.steps})",
    )
    add(
        "--batch-size",
        type=_int(1),
        default=base.batch_size,
        help=f"sequences per step (default: {base.batch_size})",
    )
    add(
        "--learning-rate",
        type=_rate,
        default=base.learning_rate,
        metavar="LR",
        help=f"AdamW peak learning rate (default: {base.learning_rate})",
    )
    add(
        "--test-size",
        type=_int(1),
        default=base.test_size,
        help=f"test sequences per length (default: {base.test_size})",
    )
    add(
        "--hidden-size",
        type=_int(1),
        default=base.hidden_size,
        help="model width; the feed-forward width is twice it "
        f"(default: {base.hidden_size})",
    )
    add(
        "--num-heads",
        type=_int(1),
        default=base.num_heads,
        help=f"attention heads; must divide --hidden-size (default: {base.num_heads})",
    )
    add(
        "--layers",
        type=_int(1),
        default=base.num_layers,
        help=f"encoder layers (default: {base.num_layers})",
    )
    add(
        "--max-relative-positions",
        type=_int(2),
        default=base.max_relative_positions,
        metavar="K",
        help=f"clipping span k of 'deberta' (default: {base.max_relative_positions})",
    )
    add(
        "--position-buckets",
        type=_int(2),
        default=base.position_buckets,
        metavar="B",
        help="log buckets per side of 'deberta-buckets' "
        f"(default: {base.position_buckets})",
    )
    add(
        "--bucket-max-position",
        type=_int(3),
        default=base.bucket_max_position,
        metavar="M",
        help="distance of the last log bucket of 'deberta-buckets' "
        f"(default: {base.bucket_max_position})",
    )
    add(
        "--output",
        default="sweep.json",
        metavar="PATH",
        help="where to write the JSON results (default: sweep.json)",
    )
    add(
        "--plot",
        default=None,
        metavar="PATH",
        help="also draw the figure (length generalisation and data efficiency, with "
        "error bars) to this file, e.g. sweep.png (default: no figure)",
    )
    add(
        "--threads",
        type=_int(1),
        default=1,
        help="torch CPU threads during the sweep (default: 1: these tiny models run no "
        "faster with more, and another count can change the last digits of results)",
    )
    add("--quiet", action="store_true", help="no progress bar on stderr")
    return parser


def config_from_args(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> Config:
    """The base ``Config`` of the sweep; inconsistent flags end in ``parser.error``.

    Shapes:
        (no tensors)
    """
    if args.hidden_size % args.num_heads:
        parser.error(
            f"argument --num-heads: must divide --hidden-size={args.hidden_size}, "
            f"got {args.num_heads}"
        )
    if args.position_buckets > args.bucket_max_position or (
        args.bucket_max_position - 1 <= args.position_buckets // 2
    ):
        parser.error(
            "argument --position-buckets: must be <= --bucket-max-position and leave "
            f"--bucket-max-position > B // 2 + 1, got B={args.position_buckets} and "
            f"M={args.bucket_max_position}"
        )
    return Config(
        train_length=args.train_length,
        test_lengths=tuple(args.test_lengths),
        test_size=args.test_size,
        steps=args.steps,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        hidden_size=args.hidden_size,
        num_heads=args.num_heads,
        num_layers=args.layers,
        intermediate_size=2 * args.hidden_size,
        max_relative_positions=args.max_relative_positions,
        position_buckets=args.position_buckets,
        bucket_max_position=args.bucket_max_position,
    )


def main(argv: list[str] | None = None) -> dict:
    """Parse ``argv``, run the sweep, write the JSON (and figure); return the results.

    Shapes:
        (no tensors)
    """
    from ..plot import experiment_sweep
    from .report import format_table
    from .sweep import run_sweep

    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    base = config_from_args(parser, args)
    for flag, path in (("--output", args.output), ("--plot", args.plot)):
        if path is not None and not Path(path).parent.is_dir():
            parser.error(
                f"argument {flag}: folder {str(Path(path).parent)!r} does not exist"
            )
    threads = torch.get_num_threads()
    torch.set_num_threads(args.threads)
    try:
        result = run_sweep(
            base,
            tasks=args.tasks,
            schemes=args.schemes,
            train_sizes=args.train_sizes,
            seeds=args.seeds,
            progress=not args.quiet,
            command=shlex.join(["python", "-m", "relpos.book.experiments", *argv]),
        )
    finally:
        torch.set_num_threads(threads)
    Path(args.output).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(format_table(result))
    print(f"wrote {args.output}", file=sys.stderr)
    if args.plot is not None:
        experiment_sweep(result).savefig(args.plot, dpi=120)
        print(f"wrote {args.plot}", file=sys.stderr)
    return result


__all__ = [
    "DEFAULT_SEEDS",
    "DEFAULT_TRAIN_SIZES",
    "build_parser",
    "config_from_args",
    "main",
]
