"""The command line of ``python -m relpos.book.bench``: the parser and :func:`main`.

:func:`build_parser` declares every flag (lengths, backends, device, dtype,
sizes, skips, output path) plus the hidden ``--_measure-memory`` mode in which
the CPU memory measurement runs its fresh child process. :func:`main` parses
the arguments and checks all of them before any work starts: the flags of
:class:`~relpos.book.bench.config.BenchConfig` by building one (its checks are
the benchmark's own), the output path by trying its folder. A bad value stops
the command with one line naming the flag and exit status 2. Then it runs the
benchmark (or the child mode), prints the table to stdout and names the JSON
it wrote on stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

import torch

from .. import _cli
from .config import BENCH_BACKENDS, DEFAULT_LENGTHS, DTYPES, BenchConfig
from .measure import memory_child
from .report import format_table
from .run import run_benchmark

# Every field of BenchConfig is a flag of the same name, dashes for underscores.
FLAGS = {
    f.name: "--" + f.name.replace("_", "-") for f in dataclasses.fields(BenchConfig)
}


def _backends(text: str) -> list[str]:
    values = [part.strip() for part in text.split(",") if part.strip()]
    bad = [v for v in values if v not in BENCH_BACKENDS]
    if bad or not values or len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(
            f"expected distinct backends from {','.join(BENCH_BACKENDS)}, got {text!r}"
        )
    return values


def build_parser() -> _cli.OneLineParser:
    """The parser of ``python -m relpos.book.bench``; ``--help`` shows every default."""
    base = BenchConfig()
    default_device = "cuda" if torch.cuda.is_available() else "cpu"
    parser = _cli.OneLineParser(
        prog="python -m relpos.book.bench",
        description="Time and measure DeBERTa's disentangled attention: "
        "transformers vs relpos backends.",
    )
    add = parser.add_argument
    integer = _cli.integer()  # the ranges are BenchConfig's to check
    add(
        "--lengths",
        type=_cli.integers(1),
        default=list(DEFAULT_LENGTHS),
        metavar="N,N,...",
        help="comma-separated sequence lengths",
    )
    add(
        "--repeats",
        type=integer,
        default=base.repeats,
        help="timed runs per measurement; the median is kept",
    )
    add(
        "--backends",
        type=_backends,
        default=list(BENCH_BACKENDS),
        metavar="NAMES",
        help=f"comma-separated, from {','.join(BENCH_BACKENDS)}",
    )
    add(
        "--device",
        type=_cli.device,
        default=default_device,
        help="cpu, or cuda where torch sees a GPU",
    )
    add(
        "--dtype",
        choices=tuple(DTYPES),
        default=base.dtype,
        help="parameter and input dtype",
    )
    add("--batch", type=integer, default=base.batch, help="sequences per forward")
    add("--backward", action="store_true", help="also time forward plus backward")
    add(
        "--naive-max-length",
        type=integer,
        default=base.naive_max_length,
        help="skip the naive backend above this length",
    )
    add(
        "--max-memory-gb",
        type=_cli.number(),
        default=base.max_memory_gb,
        help="skip a measurement whose estimated memory exceeds this",
    )
    add(
        "--output",
        default="bench_results.json",
        metavar="PATH",
        help="JSON results path (its folder is made if missing)",
    )
    add(
        "--hidden",
        type=integer,
        default=base.hidden,
        help="model width; heads must divide it",
    )
    add("--heads", type=integer, default=base.heads, help="attention heads")
    add(
        "--max-relative-positions",
        type=integer,
        default=base.max_relative_positions,
        help="k without buckets; the distance of the last bucket with them",
    )
    add(
        "--position-buckets",
        type=integer,
        default=base.position_buckets,
        help="log buckets per side, or -1 for none",
    )
    add(
        "--seed", type=integer, default=base.seed, help="seed of the weights and inputs"
    )
    add(
        "--matmul-size",
        type=integer,
        default=base.matmul_size,
        help="side of the square matmul whose speed is the roofline",
    )
    add(
        "--_measure-memory", dest="measure_memory", default=None, help=argparse.SUPPRESS
    )
    return parser


def config_from_args(
    parser: _cli.OneLineParser, args: argparse.Namespace
) -> BenchConfig:
    """The run's :class:`BenchConfig`; a bad value is a one-line error naming the flag.
    """
    values = {name: getattr(args, name) for name in FLAGS}
    return _cli.config_or_exit(parser, lambda: BenchConfig(**values), FLAGS)


def build_costs_parser() -> _cli.OneLineParser:
    """The parser of ``python -m relpos.book.bench costs`` (what positions cost)."""
    from .costs import DEFAULT_COST_LENGTHS, CostsConfig

    base = CostsConfig()
    parser = _cli.OneLineParser(
        prog="python -m relpos.book.bench costs",
        description="What positions cost: every scheme on every backend, time and "
        "peak memory as multiples of plain attention at the same n.",
    )
    add = parser.add_argument
    integer, number = _cli.integer(), _cli.number()
    add("--lengths", type=_cli.integers(1), default=list(DEFAULT_COST_LENGTHS),
        metavar="N,N,...", help="comma-separated sequence lengths")
    add("--schemes", default=None, metavar="NAMES",
        help="comma-separated schemes (default: every one)")
    add("--backends", default=None, metavar="NAMES",
        help="comma-separated relpos backends (default: every one)")
    add("--device", type=_cli.device, default=base.device, help="cpu, or cuda")
    add("--dtype", choices=tuple(DTYPES), default=base.dtype, help="dtype")
    for name in ("hidden", "heads", "span", "batch", "repeats", "seed", "threads"):
        add(f"--{name}", type=integer, default=getattr(base, name), help=name)
    add("--max-memory-gb", type=number, default=base.max_memory_gb,
        help="skip a cell whose predicted peak exceeds this")
    add("--max-forward-s", type=number, default=base.max_forward_s,
        help="skip a cell whose predicted forward exceeds this")
    add("--budget-s", type=number, default=None,
        help="start no cell that would take the run past this many seconds")
    add("--output", default="bench_costs.json", metavar="PATH", help="JSON path")
    return parser


def costs_main(argv: list[str]) -> None:
    """``python -m relpos.book.bench costs``: check, run, print the table, write."""
    import shlex

    from .costs import CostsConfig, run_costs
    from .costs_report import cost_table

    parser = build_costs_parser()
    args = parser.parse_args(argv)
    fields = ("hidden", "heads", "span", "batch", "dtype", "device", "repeats",
              "seed", "threads", "max_memory_gb", "max_forward_s", "budget_s")
    values = {name: getattr(args, name) for name in fields}
    flags = {name: "--" + name.replace("_", "-") for name in fields}
    config = _cli.config_or_exit(parser, lambda: CostsConfig(**values), flags)
    _cli.output_flag(parser, "--output", args.output, make_parents=True)
    split = {}
    for name in ("schemes", "backends"):
        text = getattr(args, name)
        split[name] = None if text is None else [
            part.strip() for part in text.split(",") if part.strip()
        ]
    command = shlex.join(["python", "-m", "relpos.book.bench", "costs", *argv])
    try:
        data = run_costs(args.lengths, split["schemes"], split["backends"],
                         config=config, output=args.output, command=command)
    except ValueError as exc:
        parser.error(str(exc))
    print(cost_table(data))
    print(f"wrote {args.output}", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    """Parse and check ``argv``, run the benchmark, print the table, write the JSON.

    ``costs`` as the first argument runs :func:`costs_main` instead, ``shares``
    ``relpos.book.bench.shares.shares_main``.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["costs"]:
        costs_main(argv[1:])
        return
    if argv[:1] == ["shares"]:
        from .shares import shares_main

        shares_main(argv[1:])
        return
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.measure_memory is not None:
        memory_child(args.measure_memory)
        return
    config = config_from_args(parser, args)
    _cli.output_flag(parser, "--output", args.output, make_parents=True)
    data = run_benchmark(
        args.lengths,
        args.backends,
        output=args.output,
        **dataclasses.asdict(config),
    )
    print(format_table(data))
    print(f"wrote {args.output}", file=sys.stderr)


__all__ = [
    "FLAGS", "build_costs_parser", "build_parser", "config_from_args",
    "costs_main", "main",
]
