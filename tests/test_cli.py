"""The command lines reject every bad value before any work, in one line naming it.

``python -m relpos.book.bench``, ``python -m relpos.book.bench.profile`` and
``python -m relpos.book.experiments`` run here in-process through their
``main(argv)``, with the function that does the work replaced by one that
records the call: a bad flag must stop the command (exit status 2, one line on
stderr naming the flag) without that call and without writing any file. A good
command line reaches the call (so the replacement is where the work starts),
and one subprocess per command checks the exit status from the shell. Every
option's default is in ``--help``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from relpos.book import _cli, bench
from relpos.book.bench import profile
from relpos.book.experiments import Config
from relpos.book.experiments import cli as experiments_cli
from relpos.book.experiments import sweep
from relpos.book.runner import EngineOptions

ROOT = Path(__file__).resolve().parent.parent


class Started(Exception):
    """Raised by the stand-in of the work: the command got past its checks."""


@pytest.fixture
def work(monkeypatch) -> list:
    """Replace each command's work by a recorder that stops the command."""
    calls: list = []

    def started(*args, **kwargs):
        calls.append((args, kwargs))
        raise Started

    monkeypatch.setattr(bench.cli, "run_benchmark", started)
    monkeypatch.setattr(profile, "profile_forward", started)
    monkeypatch.setattr(sweep, "run_sweep", started)
    return calls


def _rejects(main, argv, flag, capsys, calls, folder: Path) -> str:
    before = sorted(folder.rglob("*"))
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2, err
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert f"argument {flag}" in err, err
    assert calls == [], "the work started"
    assert sorted(folder.rglob("*")) == before, "a file was written"
    return err


# -- python -m relpos.book.bench ------------------------------------------------------

BENCH_BAD = [
    (["--repeats", "0"], "--repeats"),
    (["--repeats", "x"], "--repeats"),
    (["--batch", "0"], "--batch"),
    (["--hidden", "0"], "--hidden"),
    (["--heads", "0"], "--heads"),
    (["--hidden", "30", "--heads", "4"], "--hidden"),
    (["--max-relative-positions", "0"], "--max-relative-positions"),
    (["--position-buckets", "1"], "--position-buckets"),
    (["--position-buckets", "-2"], "--position-buckets"),
    (["--position-buckets", "600"], "--position-buckets"),  # > max_relative_positions
    (["--device", "tpu"], "--device"),
    (["--dtype", "float8"], "--dtype"),
    (["--lengths", "0"], "--lengths"),
    (["--lengths", "16,x"], "--lengths"),
    (["--backends", "gather,fast"], "--backends"),
    (["--backends", "gather,gather"], "--backends"),
    (["--naive-max-length", "0"], "--naive-max-length"),
    (["--max-memory-gb", "0"], "--max-memory-gb"),
    (["--max-memory-gb", "nan"], "--max-memory-gb"),
    (["--max-memory-gb", "inf"], "--max-memory-gb"),
    (["--matmul-size", "0"], "--matmul-size"),
    (["--seed", "1.5"], "--seed"),
]


@pytest.mark.parametrize("argv, flag", BENCH_BAD)
def test_bench_rejects_a_bad_value_before_any_work(argv, flag, work, capsys, tmp_path):
    output = tmp_path / "out" / "bench.json"
    _rejects(bench.main, [*argv, "--output", str(output)], flag, capsys, work, tmp_path)


def test_bench_without_a_gpu_rejects_cuda(work, capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    argv = ["--device", "cuda", "--output", str(tmp_path / "bench.json")]
    err = _rejects(bench.main, argv, "--device", capsys, work, tmp_path)
    assert "torch.cuda.is_available() is False" in err


def _unwritable(tmp_path: Path) -> list[tuple[str, str]]:
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    return [
        (str(tmp_path), "folder"),  # a folder, not a file
        (str(a_file / "out.json"), "is a file, not a folder"),
        ("/proc/relpos-no-such-folder/out.json", "cannot be written"),
    ]


@pytest.mark.parametrize("case", range(3))
def test_bench_rejects_an_unwritable_output_before_any_work(
    case, work, capsys, tmp_path
):
    path, why = _unwritable(tmp_path)[case]
    err = _rejects(bench.main, ["--output", path], "--output", capsys, work, tmp_path)
    assert why in err


def test_bench_gets_to_the_work_with_good_flags(work, tmp_path):
    output = tmp_path / "new" / "bench.json"  # a missing folder is made, later
    with pytest.raises(Started):
        bench.main(
            [
                "--lengths",
                "16,32",
                "--repeats",
                "2",
                "--position-buckets",
                "-1",
                "--device",
                "cpu",
                "--output",
                str(output),
            ]
        )
    (lengths, backends), keywords = work[0]
    assert lengths == [16, 32] and backends == list(bench.BENCH_BACKENDS)
    assert keywords["repeats"] == 2 and keywords["position_buckets"] == -1
    assert keywords["output"] == str(output)
    assert not output.parent.exists()


def test_bench_profile_rejects_bad_values_before_any_work(work, capsys, tmp_path):
    output = str(tmp_path / "profile.json")
    for argv, flag in (
        [["--n", "0"], "--n"],
        [["--repeats", "x"], "--repeats"],
        [["--threads", "0"], "--threads"],
    ):
        _rejects(
            profile.main, [*argv, "--output", output], flag, capsys, work, tmp_path
        )
    for path, _ in _unwritable(tmp_path):
        _rejects(profile.main, ["--output", path], "--output", capsys, work, tmp_path)
    with pytest.raises(Started):
        profile.main(["--n", "64", "--output", output])


# -- python -m relpos.book.experiments -------------------------------------------------

EXPERIMENTS_BAD = [
    (["--steps", "0"], "--steps"),
    (["--steps", "many"], "--steps"),
    (["--schemes", "deberta,nope"], "--schemes"),
    (["--tasks", "nope"], "--task"),
    (["--task", "relative,relative"], "--task"),
    (["--train-length", "0"], "--train-length"),
    (["--test-lengths", "8,x"], "--test-lengths"),
    (["--test-lengths", "0"], "--test-lengths"),
    (["--test-lengths", "8,8"], "--test-lengths"),
    (["--test-size", "0"], "--test-size"),
    (["--train-sizes", "0"], "--train-sizes"),
    (["--seeds", "-1"], "--seeds"),
    (["--batch-size", "0"], "--batch-size"),
    (["--learning-rate", "fast"], "--learning-rate"),
    (["--learning-rate", "-1"], "--learning-rate"),
    (["--learning-rate", "nan"], "--learning-rate"),
    (["--weight-decay", "-0.5"], "--weight-decay"),
    (["--hidden-size", "0"], "--hidden-size"),
    (["--hidden-size", "10", "--num-heads", "4"], "--hidden-size"),
    (["--num-heads", "0"], "--num-heads"),
    (["--layers", "0"], "--layers"),
    (["--intermediate-size", "0"], "--intermediate-size"),
    (["--max-relative-positions", "1"], "--max-relative-positions"),
    (["--position-buckets", "64", "--bucket-max-position", "16"], "--position-buckets"),
    (["--bucket-max-position", "2", "--position-buckets", "2"], "--position-buckets"),
    (["--threads", "0"], "--threads"),
    (["--learning-rates", "1e-3,1e-3"], "--learning-rates"),
    (["--learning-rates", "1e-3,x"], "--learning-rates"),
    (["--seeds", "0,100", "--tune-seeds", "100,101"], "--tune-seeds"),
    (["--tune-seeds", "-1"], "--tune-seeds"),
    (["--max-rates", "0"], "--max-rates"),
    (["--learning-rates", "1e-3,3e-3,1e-2", "--max-rates", "2"], "--max-rates"),
    (["--workers", "0"], "--workers"),
    (["--engine", "ray"], "--engine"),
    (["--engine", "dask"], "--engine"),
    (["--scheduler", "local"], "--scheduler"),
]


def _experiment_paths(tmp_path: Path) -> list[str]:
    return [
        "--output",
        str(tmp_path / "sweep.json"),
        "--plot",
        str(tmp_path / "sweep.png"),
    ]


@pytest.mark.parametrize("argv, flag", EXPERIMENTS_BAD)
def test_experiments_reject_a_bad_value_before_any_work(
    argv, flag, work, capsys, tmp_path
):
    argv = [*argv, *_experiment_paths(tmp_path)]
    _rejects(experiments_cli.main, argv, flag, capsys, work, tmp_path)


@pytest.mark.parametrize("case", range(3))
@pytest.mark.parametrize("flag", ["--output", "--plot"])
def test_experiments_reject_an_unwritable_path_before_any_work(
    case, flag, work, capsys, tmp_path
):
    path, why = _unwritable(tmp_path)[case]
    argv = [*_experiment_paths(tmp_path), flag, path]
    err = _rejects(experiments_cli.main, argv, flag, capsys, work, tmp_path)
    assert why in err or "does not exist" in err


def test_experiments_reject_a_figure_format_matplotlib_cannot_write(
    work, capsys, tmp_path
):
    argv = [
        "--output",
        str(tmp_path / "sweep.json"),
        "--plot",
        str(tmp_path / "sweep.xyz"),
    ]
    err = _rejects(experiments_cli.main, argv, "--plot", capsys, work, tmp_path)
    assert "'xyz'" in err and "png" in err


def test_experiments_get_to_the_work_with_good_flags(work, tmp_path):
    with pytest.raises(Started):
        experiments_cli.main(
            [
                "--schemes",
                "none,deberta",
                "--seeds",
                "0,1",
                "--hidden-size",
                "16",
                *_experiment_paths(tmp_path),
            ]
        )
    (base,), keywords = work[0]
    assert keywords["schemes"] == ["none", "deberta"] and keywords["seeds"] == [0, 1]
    # twice the width; the first rate of the grid
    assert base == Config(hidden_size=16, intermediate_size=32, learning_rate=1e-3)
    assert keywords["learning_rates"] == [1e-3, 3e-3, 1e-2]
    assert keywords["tune_seeds"] == [100, 101] and keywords["max_rates"] == 8
    assert keywords["settings"] == ["encoder"]
    assert keywords["options"] == EngineOptions("local", os.cpu_count() or 1, None, 1)
    assert keywords["options"] == EngineOptions()  # the flags' defaults are its own
    assert keywords["runs_dir"] == tmp_path / "sweep.runs"


def test_experiments_hand_the_engine_flags_to_the_sweep(work, tmp_path):
    with pytest.raises(Started):
        experiments_cli.main(
            [
                "--setting",
                "encoder,causal",
                "--learning-rates",
                "0.002",
                "--tune-seeds",
                "0",
                "--engine",
                "dask",
                "--scheduler",
                "tcp://127.0.0.1:8786",
                "--workers",
                "3",
                "--threads",
                "2",
                "--runs-dir",
                str(tmp_path / "records"),
                *_experiment_paths(tmp_path),
            ]
        )
    (base,), keywords = work[0]
    assert base.learning_rate == 0.002 and keywords["learning_rates"] == [0.002]
    assert keywords["tune_seeds"] == []  # one rate: nothing to tune, no overlap
    assert keywords["settings"] == ["encoder", "causal"]
    assert keywords["options"] == EngineOptions(
        engine="dask", workers=3, scheduler="tcp://127.0.0.1:8786", threads=2
    )
    assert keywords["runs_dir"] == tmp_path / "records"
    assert (tmp_path / "records").is_dir()


def test_every_config_field_is_a_flag_with_its_default():
    parser = experiments_cli.build_parser()
    dests = {action.dest for action in parser._actions}
    assert {field.name for field in dataclasses.fields(Config)} <= dests
    defaults = parser.parse_args([])
    base = Config()
    for field in dataclasses.fields(Config):
        if field.metadata["sweep"] or field.name in (
            "intermediate_size",
            "learning_rate",  # a grid: --learning-rates
        ):
            continue
        value = getattr(base, field.name)
        assert getattr(defaults, field.name) == (
            list(value) if isinstance(value, tuple) else value
        )
    rates = list(experiments_cli.DEFAULT_LEARNING_RATES)
    assert defaults.learning_rate == rates and base.learning_rate in rates
    built = experiments_cli.config_from_args(parser, defaults)
    assert built == Config(learning_rate=rates[0])


def test_a_config_error_names_the_flag_of_the_field(capsys):
    parser = _cli.OneLineParser(prog="prog")

    def build():
        return Config(hidden_size=10, num_heads=4)

    with pytest.raises(SystemExit):
        _cli.config_or_exit(parser, build, experiments_cli.flags())
    err = capsys.readouterr().err
    assert err.startswith("prog: error: argument --hidden-size: --hidden-size must be")
    assert "--num-heads=4" in err and "num_heads" not in err


# -- --help: every option and its default ----------------------------------------------


def _squeezed(text: str) -> str:
    return "".join(text.split())


@pytest.mark.parametrize(
    "build",
    [bench.build_parser, profile.build_parser, experiments_cli.build_parser],
    ids=["bench", "profile", "experiments"],
)
def test_help_shows_every_default(build):
    parser = build()
    text = _squeezed(parser.format_help())
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
            continue
        for option in action.option_strings:
            assert option in text
        assert action.help, action.option_strings
        if action.default is None:  # the help says what no value means
            said = "(default:" in action.help
            assert said or _squeezed(f"{action.help} (default: none)") in text
            continue
        shown = _squeezed(f"(default: {_cli.show_default(action.default)})")
        assert shown in text, (action.option_strings, shown)


def test_the_hidden_child_mode_stays_out_of_the_help():
    assert "--_measure-memory" not in bench.build_parser().format_help()


# -- from the shell: exit status 2, one line -------------------------------------------


@pytest.mark.slow  # a fresh Python process imports torch: seconds each
@pytest.mark.parametrize(
    "module, argv, flag",
    [
        ("relpos.book.bench", ["--repeats", "0"], "--repeats"),
        ("relpos.book.experiments", ["--plot", "figure.xyz"], "--plot"),
    ],
)
def test_the_commands_exit_with_status_2(module, argv, flag, tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", module, *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and f"argument {flag}" in done.stderr, (
        done.stderr
    )
    assert done.stdout == "" and list(tmp_path.iterdir()) == []
