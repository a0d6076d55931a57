"""The command line of ``python -m relpos.book.bench``: the argument parser and :func:`main`.

:func:`build_parser` declares every flag (lengths, backends, device, dtype,
sizes, skips, output path) plus the hidden ``--_measure-memory`` mode in which
the CPU memory measurement runs its fresh child process; :func:`main` parses
the arguments, runs the benchmark (or that child mode), prints the table to
stdout and names the JSON it wrote on stderr.
"""

from __future__ import annotations

import argparse
import sys

import torch

from .config import BENCH_BACKENDS, DEFAULT_LENGTHS, DTYPES
from .memory import _memory_child
from .report import format_table
from .run import run_benchmark

# -- command line -------------------------------------------------------------------------


def _comma_ints(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def _comma_backends(text: str) -> list[str]:
    values = [part.strip() for part in text.split(",") if part.strip()]
    bad = [v for v in values if v not in BENCH_BACKENDS]
    if bad or not values:
        raise argparse.ArgumentTypeError(
            f"backends must be drawn from {','.join(BENCH_BACKENDS)}, got {text!r}"
        )
    return values


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface of ``python -m relpos.book.bench``.

    Shapes:
        (no tensors)
    """
    default_device = "cuda" if torch.cuda.is_available() else "cpu"
    parser = argparse.ArgumentParser(
        prog="python -m relpos.book.bench",
        description="Time and measure DeBERTa's disentangled attention: transformers vs relpos backends.",
    )
    parser.add_argument("--lengths", type=_comma_ints, default=list(DEFAULT_LENGTHS),
                        help="comma-separated sequence lengths (default: 512,1024,2048,4096)")
    parser.add_argument(
        "--repeats", type=int, default=5, help="timed runs per measurement; the median is kept"
    )
    parser.add_argument("--backends", type=_comma_backends, default=list(BENCH_BACKENDS),
                        help=f"comma-separated, from {','.join(BENCH_BACKENDS)} (default: all)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default=default_device,
                        help=f"default: {default_device}")
    parser.add_argument("--dtype", choices=tuple(DTYPES), default="float32")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--backward", action="store_true", help="also time forward plus backward")
    parser.add_argument("--naive-max-length", type=int, default=1024,
                        help="skip the naive backend above this length (default: 1024)")
    parser.add_argument("--max-memory-gb", type=float, default=20.0,
                        help="skip a measurement whose estimated memory exceeds this (default: 20)")
    parser.add_argument("--output", default="bench_results.json", help="JSON results path")
    parser.add_argument("--hidden", type=int, default=768)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--max-relative-positions", type=int, default=512)
    parser.add_argument("--position-buckets", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--matmul-size", type=int, default=2048,
        help="side of the square matmul whose speed is the roofline (default: 2048)",
    )
    parser.add_argument("--_measure-memory", dest="measure_memory", default=None, help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> None:
    """Parse ``argv``, run the benchmark, print the table, write the JSON.

    Shapes:
        (no tensors)
    """
    args = build_parser().parse_args(argv)
    if args.measure_memory is not None:
        _memory_child(args.measure_memory)
        return
    data = run_benchmark(
        args.lengths,
        args.backends,
        repeats=args.repeats,
        device=args.device,
        dtype=args.dtype,
        batch=args.batch,
        backward=args.backward,
        hidden=args.hidden,
        heads=args.heads,
        max_relative_positions=args.max_relative_positions,
        position_buckets=args.position_buckets,
        naive_max_length=args.naive_max_length,
        max_memory_gb=args.max_memory_gb,
        seed=args.seed,
        matmul_size=args.matmul_size,
        output=args.output,
    )
    print(format_table(data))
    print(f"wrote {args.output}", file=sys.stderr)
