"""The command line of ``python -m relpos.book.text``: a text sweep, flags in, JSON out.

Example (the causal models of two schemes, three seeds, trained at 64 and
evaluated up to 1024)::

    python -m relpos.book.text --setting causal --schemes alibi,deberta \\
        --seeds 0,1,2 --train-length 64 --eval-lengths 64,128,256,512,1024 \\
        --steps 1000 --output relpos/book/results/text_causal.json \\
        --runs-dir .sweep-runs --workers 2

Every field of :class:`~relpos.book.text.config.TextConfig` is a flag (its
checks are the command's: a bad value stops it with one line naming the flag,
before any training); the swept ones take comma-separated lists. Every
finished run is written to ``--runs-dir`` at once, so the same command run
again trains only what is missing. When ``--output`` exists, the sweep's runs
are added to it, and the command refuses (before training) a file of another
corpus (its SHA-256: another Python) or of another config.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from .. import _cli
from ..experiments.schemes import RANDOMISED_SCHEMES, SCHEMES
from ..runner import (
    add_engine_flags,
    add_tuning_flags,
    check_outputs,
    engine_options,
    rate_list,
    tuning_from_args,
)
from .config import SETTINGS, TextConfig
from .corpus import KINDS

#: The fields of TextConfig with a flag of their own (the others: the sweep's).
HELP = {
    "corpus": "the corpus: docstrings (English prose) or source (code) of the stdlib",
    "train_length": "context L of every training window",
    "eval_lengths": "comma-separated evaluation window lengths (non-overlapping)",
    "eval_bytes": "bytes of the test split read at every length (at most the split)",
    "steps": "optimiser steps per run",
    "batch_size": "windows per step",
    "weight_decay": "AdamW decoupled weight decay",
    "mask_rate": "share of positions the masked LM predicts (80/10/10 as BERT)",
    "hidden_size": "model width",
    "num_heads": "attention heads; must divide --hidden-size",
    "num_layers": "encoder layers",
    "intermediate_size": "feed-forward width (0: twice --hidden-size)",
    "max_relative_positions": "clipping span k of 'deberta' and 'shaw'",
    "position_buckets": "log buckets per side of 'deberta-buckets' (t5: twice)",
    "bucket_max_position": "distance of the last log bucket of 'deberta-buckets'",
    "t5_max_distance": "distance from which 't5' puts every pair in its last bucket",
}
DEFAULT_SEEDS = (0, 1, 2)
DEFAULT_LEARNING_RATES = (1e-3, 3.16e-3, 1e-2)
DEFAULT_TUNE_SEEDS = (100,)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _converter(default: object) -> Any:
    if isinstance(default, tuple):
        return _cli.integers(2)
    if isinstance(default, int):
        return _cli.integer()
    if isinstance(default, float):
        return _cli.number()
    return str


def build_parser() -> _cli.OneLineParser:
    """The parser: one flag per ``TextConfig`` field, and the sweep's flags."""
    base = TextConfig()
    parser = _cli.OneLineParser(
        prog="python -m relpos.book.text",
        description=(
            "Train byte-level language models (causal or masked) with every "
            "position scheme on the Python standard library's docstrings or "
            "source, at one context, and measure bits per byte and the "
            "per-position loss at longer contexts."
        ),
    )
    add = parser.add_argument
    add(
        "--setting",
        "--settings",
        dest="setting",
        type=_cli.names("settings", SETTINGS),
        default=["causal"],
        metavar="NAMES",
        help="comma-separated: causal, masked",
    )
    add(
        "--schemes",
        dest="scheme",
        type=_cli.names("schemes", lambda: SCHEMES),
        # the randomised schemes' P = 256 positions cannot hold the text's lengths
        default=[name for name in SCHEMES if name not in RANDOMISED_SCHEMES],
        metavar="NAMES",
        help="comma-separated position schemes, or 'all' registered",
    )
    add(
        "--seeds",
        dest="seed",
        type=_cli.integers(0),
        default=list(DEFAULT_SEEDS),
        metavar="S,S,...",
        help="comma-separated seeds of the measured runs",
    )
    add(
        "--learning-rates",
        dest="learning_rate",
        type=rate_list(),
        default=list(DEFAULT_LEARNING_RATES),
        metavar="LR,LR,...",
        help="the log-spaced grid each (setting, scheme) is tuned on (validation "
        "text at L), extended past an edge holding the best rate; one rate: no "
        "tuning",
    )
    for field in dataclasses.fields(TextConfig):
        if field.name in HELP:
            default = getattr(base, field.name)
            add(
                _flag(field.name),
                dest=field.name,
                type=_converter(default),
                choices=KINDS if field.name == "corpus" else None,
                default=list(default) if isinstance(default, tuple) else default,
                help=HELP[field.name],
            )
    add_tuning_flags(parser, tune_seeds=DEFAULT_TUNE_SEEDS, max_rates=8)
    add(
        "--output",
        default="text.json",
        metavar="PATH",
        help="the JSON results; when it exists, this sweep's runs are added to it",
    )
    add_engine_flags(parser)
    return parser


def config_from_args(
    parser: _cli.OneLineParser, args: argparse.Namespace
) -> TextConfig:
    """The base ``TextConfig``; every run's config checked (a bad value: one line)."""
    values = {name: getattr(args, name) for name in HELP}
    values["eval_lengths"] = tuple(values["eval_lengths"])
    flags = {name: _flag(name) for name in HELP}
    flags.update(
        setting="--setting",
        scheme="--schemes",
        seed="--seeds",
        learning_rate="--learning-rates",
    )

    def build() -> TextConfig:
        base = TextConfig(**values, learning_rate=args.learning_rate[0])
        for rate in args.learning_rate:
            base.replace(learning_rate=rate)
        for setting in args.setting:
            for scheme in args.scheme:
                try:
                    base.replace(setting=setting, scheme=scheme)
                except ValueError as error:  # a scheme these lengths do not suit
                    raise ValueError(f"scheme {scheme!r}: {error}") from None
        return base

    base = _cli.config_or_exit(parser, build, flags)
    if len(args.learning_rate) > 1:
        tuning_from_args(
            parser,
            seeds=args.seed,
            tune_seeds=args.tune_seeds,
            learning_rates=args.learning_rate,
            max_rates=args.max_rates,
        )
    return base


#: A probe's measured seeds and tuning seeds (chapter 12's protocol).
PROBE_SEEDS, PROBE_TUNE_SEEDS = list(range(10)), [100, 101]
#: The evaluation bytes that read the whole test split (it holds about 127 KB).
WHOLE_SPLIT = 1 << 20


def probe_parser(module: str, description: str, **defaults: Any) -> _cli.OneLineParser:
    """The text sweep's parser for a probe run as ``python -m module``: ten seeds,
    two tuning seeds, the whole test split, and ``defaults`` (its schemes, window
    lengths, output and runs folder)."""
    parser = build_parser()
    parser.prog = f"python -m {module}"
    parser.description = description
    parser.set_defaults(
        seed=PROBE_SEEDS, tune_seeds=PROBE_TUNE_SEEDS, eval_bytes=WHOLE_SPLIT,
        **defaults,
    )
    return parser


def probe_command(
    parser: _cli.OneLineParser, argv: list[str], setting: str, module: str
) -> tuple[argparse.Namespace, TextConfig, Any, str]:
    """A probe's command line on the text sweep's flags, in one ``setting``.

    Returns the parsed flags, the base config in ``setting`` (every run's config
    checked), the runs folder (``--output``'s folder made) and the command as
    typed (``python -m module ...``). A ``--setting`` other than ``setting``:
    one line naming the flag, exit 2.
    """
    args = parser.parse_args(argv)
    if args.setting != [setting]:
        parser.fail("--setting", f"must be {setting} here, got {args.setting}")
    base = config_from_args(parser, args).replace(setting=setting)
    runs_dir = check_outputs(parser, args, make_parents=True, paths=("--output",))
    return args, base, runs_dir, shlex.join(["python", "-m", module, *argv])


def probe_keywords(args: argparse.Namespace, runs_dir: Any, command: str) -> dict:
    """The keywords a probe's runner takes from its flags: the sweep's cells, its
    tuning, the engine options, the runs folder and the command."""
    return dict(
        schemes=args.scheme,
        seeds=args.seed,
        learning_rates=args.learning_rate,
        tune_seeds=args.tune_seeds,
        max_rates=args.max_rates,
        **engine_options(args, runs_dir),
        command=command,
    )


def existing_output(
    parser: _cli.OneLineParser, path: str, base: TextConfig
) -> dict[str, Any] | None:
    """The results already at ``path`` (None if none), refused if another corpus.

    Compared before any training: the corpus's SHA-256 and the config.
    """
    if not Path(path).exists():
        return None
    from .corpus import stdlib_corpus
    from .sweep import SWEPT, check_same_corpus

    try:
        old = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        parser.fail("--output", f"{path!r} exists and is not a results file ({error})")
    corpus = stdlib_corpus(base.corpus)
    base = base.replace(corpus_sha256=corpus.sha256)
    planned = {
        "corpus": corpus.about(),
        "config": {k: v for k, v in base.to_dict().items() if k not in SWEPT},
    }
    try:
        check_same_corpus(old, planned)
    except ValueError as error:
        parser.fail("--output", f"{path!r}: {error}")
    return old


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse ``argv``, run the sweep, write (or add to) the JSON, return it."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    base = config_from_args(parser, args)
    runs_dir = check_outputs(parser, args, make_parents=False, paths=("--output",))
    old = existing_output(parser, args.output, base)

    from .sweep import format_text_table, merge_results, run_text_sweep

    result = run_text_sweep(
        base,
        settings=args.setting,
        schemes=args.scheme,
        seeds=args.seed,
        learning_rates=args.learning_rate,
        tune_seeds=args.tune_seeds,
        max_rates=args.max_rates,
        **engine_options(args, runs_dir),
        command=shlex.join(["python", "-m", "relpos.book.text", *argv]),
    )
    if old is not None:
        result = merge_results(old, result)
    Path(args.output).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(format_text_table(result))
    print(f"wrote {args.output}", file=sys.stderr)
    return result


__all__ = [
    "HELP",
    "build_parser",
    "config_from_args",
    "existing_output",
    "main",
    "PROBE_SEEDS",
    "PROBE_TUNE_SEEDS",
    "WHOLE_SPLIT",
    "probe_command",
    "probe_keywords",
    "probe_parser",
]
