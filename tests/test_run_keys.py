"""Every sweep command keys its run records as the committed runs folders hold them.

Background sweeps resume from the committed folders
(``relpos/book/results/probes/*/runs``) and from ``.sweep-runs``: a change to
a command's defaults, its config building or its store's stamp would orphan
them. For each command, one known config is built the way the command builds
it (its parser's defaults), and its record's file name is computed by the
store the command uses and, independently, by the key's formula: SHA-256 of
the sorted JSON of kind, config and stamp, 32 hex digits. Where a committed
folder holds runs, the name must be a file there; where none is committed,
the config's own hash is pinned.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from pathlib import Path

import pytest

import relpos

ROOT = Path(__file__).resolve().parents[1]
PROBES = ROOT / "relpos" / "book" / "results" / "probes"


def _name(kind: str, config: dict, stamp: dict) -> str:
    """The key's formula, written out here apart from ``store.run_key``."""
    text = json.dumps({"kind": kind, "config": config, **stamp}, sort_keys=True)
    return f"{kind}-{hashlib.sha256(text.encode()).hexdigest()[:32]}.json"


def _parse(parser, flags: str):
    """``parser``'s namespace for the flags a make target passes."""
    return parser.parse_args(shlex.split(flags))


def _digest(config: dict) -> str:
    text = json.dumps(config, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@pytest.fixture(scope="module")
def docstrings_sha() -> str:
    from relpos.book.text.corpus import stdlib_corpus

    return stdlib_corpus("docstrings").sha256


def test_positions_transfer_and_data_names_are_committed() -> None:
    from relpos.book.experiments.store import RunStore
    from relpos.book.probes.positions import cli, run
    from relpos.book.probes.positions.transfer import transfer_config

    args = _parse(cli.build_parser(), "--quiet --workers 2 --runs-dir "
                  f"{PROBES}/positions/runs --output x.json")
    store = RunStore(args.runs_dir, stamp=run.stamp("transfer"))
    config = transfer_config("none", "first").replace(
        scheme="rotary", seed=9, learning_rate=0.01
    )
    name = "measured-002fe97145e9cc213d849b5bcb28a7a8.json"
    assert store.path("measured", config).name == name
    assert _name("measured", config.to_dict(), run.stamp("transfer")) == name
    assert (PROBES / "positions" / "runs" / name).is_file()

    from relpos.book.experiments.config import Config

    data = RunStore(args.runs_dir, stamp=run.stamp("data"))
    config = Config(task="relative").replace(
        setting="encoder", task="relative", scheme="transformer_xl",
        train_size=16, seed=3, learning_rate=0.0316,
    )
    name = "measured-006383b7668f9495212e01b476b52166.json"
    assert data.path("measured", config).name == name
    assert (PROBES / "positions" / "runs" / name).is_file()


def test_alignment_name_is_committed() -> None:
    from relpos.book.probes.alignment import cli, sweep
    from relpos.book.probes.alignment.run import ProbeRun

    args = _parse(cli.build_parser(), "--workers 2 --quiet --runs-dir "
                  f"{PROBES}/alignment/runs --steps 300")
    base = ProbeRun(steps=args.steps)
    run = base.replace(arm="none", seed=6, learning_rate=0.01)
    name = "measured-0499533533a69876e2df38c31c56fc14.json"
    assert sweep.probe_store(args.runs_dir).path("measured", run).name == name
    assert _name("measured", run.to_dict(), sweep.STAMP) == name
    assert (PROBES / "alignment" / "runs" / name).is_file()


def test_masked_baselines_name_is_committed(docstrings_sha: str) -> None:
    from relpos.book.experiments.store import RunStore
    from relpos.book.text import masked_baselines as study
    from relpos.book.text import masked_cli
    from relpos.book.text.config import TextConfig

    args = _parse(masked_cli.build_parser(), "--quiet --workers 2 --runs-dir "
                  f"{PROBES}/masked_baselines/runs --output x.json")
    base = TextConfig(**{**study.STUDY, "steps": args.steps})
    base = base.replace(corpus_sha256=docstrings_sha)
    runs = masked_cli.plan(base, args.seeds)
    run = next(
        r for r in runs
        if r.arm == "absolute" and r.config.learning_rate == 3.16e-4
    )
    folder = PROBES / "masked_baselines" / "runs"
    name = "measured-34f91adcfac6a0f3d9a83104e8387370.json"
    store = RunStore(folder, stamp=masked_cli.STAMP)
    assert store.path("measured", run).name == name
    assert _name("measured", run.to_dict(), masked_cli.STAMP) == name
    assert (folder / name).is_file()


def test_gradients_name_is_pinned(docstrings_sha: str) -> None:
    from relpos.book.experiments.store import RunStore
    from relpos.book.probes.gradients import cli, design, sweep
    from relpos.book.probes.gradients.run import STUDY, ProbeRun
    from relpos.book.text.config import TextConfig

    args = _parse(cli.build_parser(), "--quiet --workers 2 --runs-dir "
                  f"{PROBES}/gradients/runs --output x.json")
    base = TextConfig(**{**STUDY, "steps": args.steps})
    base = base.replace(corpus_sha256=docstrings_sha)
    run = ProbeRun(
        base.replace(scheme=args.arms[0], seed=args.seeds[0],
                     learning_rate=args.learning_rates[0]),
        design.MIXES[0],
    )
    stamp = {"probe": "gradients", "schema": design.SCHEMA}
    assert sweep.STAMP == stamp
    store = RunStore(PROBES / "gradients" / "runs", stamp=sweep.STAMP)
    assert store.path("measured", run).name == _name("measured", run.to_dict(), stamp)
    assert _digest(run.to_dict()) == "d176f02f9a0b985d"


def test_length_probe_name_is_pinned(docstrings_sha: str) -> None:
    from relpos.book.text import length_probe
    from relpos.book.text.cli import config_from_args

    parser = length_probe.build_parser()
    args = _parse(
        parser,
        "--quiet --workers 2 --schemes none,absolute,rotary,t5,alibi,kerple,fire,"
        "deberta,deberta-buckets --seeds 0,1,2,3,4,5,6,7,8,9 --tune-seeds 100,101 "
        "--train-length 64 --eval-lengths 64,128,256,512 --steps 1000 "
        "--learning-rates 1e-3,3.16e-3,1e-2 --max-rates 8",
    )
    assert Path(args.runs_dir) == PROBES / "length" / "runs"
    base = config_from_args(parser, args).replace(corpus_sha256=docstrings_sha)
    config = base.replace(setting="causal", scheme="deberta", seed=100,
                          learning_rate=args.learning_rate[0])
    stamp = {"probe": "length", "schema": length_probe.LENGTH_SCHEMA}
    store = length_probe.probe_store(args.runs_dir)
    assert store.path("tuning", config).name == _name(
        "tuning", config.to_dict(), stamp
    )
    assert _digest(config.to_dict()) == "615ac9530fbe4e1a"


def test_text_sweep_name_is_pinned(docstrings_sha: str) -> None:
    from relpos.book.experiments.store import RunStore
    from relpos.book.text import cli

    parser = cli.build_parser()
    args = _parse(
        parser,
        "--runs-dir .sweep-runs --quiet --schemes none,absolute,sinusoidal,shaw,"
        "transformer_xl,t5,alibi,rotary,deberta,deberta-buckets,deberta-emd,fire,"
        "kerple --seeds 0,1,2 --train-length 64 --eval-lengths 64,128,256,512,1024 "
        "--eval-bytes 32768 --steps 1000 --workers 2 --setting causal --output x.json",
    )
    base = cli.config_from_args(parser, args).replace(corpus_sha256=docstrings_sha)
    config = base.replace(setting="causal", scheme="alibi", seed=0)
    stamp = {"schema": 3, "relpos": relpos.__version__}
    assert RunStore(args.runs_dir).path("measured", config).name == _name(
        "measured", config.to_dict(), stamp
    )
    assert _digest(config.to_dict()) == "4c37ae06b673c0d6"


def test_experiments_name_is_pinned() -> None:
    from relpos.book.experiments import cli
    from relpos.book.experiments.store import RunStore

    parser = cli.build_parser()
    args = _parse(
        parser,
        "--runs-dir .sweep-runs --quiet --settings causal --tasks "
        "copy,reverse,mqar,addition --schemes none,absolute,rotary,t5,alibi,deberta,"
        "absolute-randomised,rotary-randomised --layers 2 --hidden-size 64 "
        "--train-length 16 --min-train-length 8 --test-lengths 16,32,64 --steps 1000 "
        "--t5-max-distance 16 --train-sizes 32768 --learning-rates 2e-3,4e-3,8e-3 "
        "--max-rates 5 --tune-seeds 100,101 --seeds 0,1,2,3,4,5,6,7,8,9 --workers 2 "
        "--output x.json",
    )
    base = cli.config_from_args(parser, args)
    config = base.replace(setting="causal", task="mqar", scheme="rotary-randomised",
                          train_size=32768, seed=101, learning_rate=4e-3)
    stamp = {"schema": 3, "relpos": relpos.__version__}
    assert RunStore(".sweep-runs").path("tuning", config).name == _name(
        "tuning", config.to_dict(), stamp
    )
    assert _digest(config.to_dict()) == "6a172ae379fd9c71"


def test_interventions_name_is_pinned() -> None:
    from relpos.book.experiments.interventions import cli
    from relpos.book.experiments.interventions.run import INTERVENTIONS, cell_config
    from relpos.book.experiments.store import RunStore

    args = _parse(cli.build_parser(), "--quiet --workers 2 --runs-dir "
                  ".sweep-runs/interventions --output x.json")
    cell = INTERVENTIONS[args.only[0]].cells[0]
    config = cell_config(cell, args.seeds[0], {})
    stamp = {"schema": 3, "relpos": relpos.__version__}
    assert RunStore(".sweep-runs").path("measured", config).name == _name(
        "measured", config.to_dict(), stamp
    )
    assert _digest(config.to_dict()) == "dbb2f15d842f83ec"
