"""The one run engine (``relpos.book.runner``): every sweep command takes its flags,
defaults and bounds from it, and its run loop resumes."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from relpos.book import runner

ROOT = Path(__file__).resolve().parents[1]
#: Every sweep command: its module and the flags it needs besides the defaults.
COMMANDS = {
    "relpos.book.experiments.cli": [],
    "relpos.book.experiments.interventions.cli": ["--output", "x.json"],
    "relpos.book.text.cli": [],
    "relpos.book.text.masked_cli": ["--output", "x.json"],
    "relpos.book.text.length_probe": [],
    "relpos.book.probes.alignment.cli": [],
    "relpos.book.probes.gradients.cli": ["--output", "x.json"],
    "relpos.book.probes.positions.cli": [],
}
TUNED = [
    "relpos.book.experiments.cli",
    "relpos.book.text.cli",
    "relpos.book.text.length_probe",
    "relpos.book.probes.alignment.cli",
    "relpos.book.probes.gradients.cli",
]


def _parser(module: str):
    return importlib.import_module(module).build_parser()


@pytest.mark.parametrize("module", COMMANDS)
def test_every_command_has_the_engine_flags_and_one_workers_default(module):
    args = _parser(module).parse_args(COMMANDS[module])
    assert args.workers == runner.default_workers()
    assert (args.engine, args.scheduler, args.threads, args.quiet) == (
        "local", None, 1, False
    )


@pytest.mark.parametrize("module", TUNED)
def test_every_tuned_command_takes_max_rates_from_two(module, capsys):
    parser = _parser(module)
    assert parser.parse_args([*COMMANDS[module], "--max-rates", "2"]).max_rates == 2
    with pytest.raises(SystemExit) as stop:
        parser.parse_args([*COMMANDS[module], "--max-rates", "1"])
    assert stop.value.code == 2
    assert "argument --max-rates: expected an integer >= 2" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--workers", "--max-rates", "--tune-seeds"])
def test_no_command_writes_its_own_copy_of_the_run_flags(flag):
    for module in COMMANDS:
        path = ROOT / (module.replace(".", "/") + ".py")
        assert not re.search(rf"add(_argument)?\(\s*\"{flag}\"", path.read_text()), (
            f"{path} adds {flag} itself; use relpos.book.runner"
        )


def test_rate_list_and_tuning_checks_name_their_flag(capsys):
    assert runner.rate_list()("1e-3, 1e-2") == [1e-3, 1e-2]
    for text, minimum in (("1e-3", 2), ("1e-3,1e-3", 1), ("0", 1), ("x", 1)):
        with pytest.raises(Exception):
            runner.rate_list(minimum)(text)
    parser = _parser("relpos.book.probes.gradients.cli")
    for keywords, flag in (
        (dict(seeds=[0, 1], tune_seeds=[1], learning_rates=[1e-3], max_rates=2),
         "--tune-seeds"),
        (dict(seeds=[0], tune_seeds=[1], learning_rates=[1, 2, 3], max_rates=2),
         "--max-rates"),
    ):
        with pytest.raises(SystemExit):
            runner.tuning_from_args(parser, **keywords)
        assert f"argument {flag}:" in capsys.readouterr().err


def test_the_run_loop_trains_what_is_missing_and_resumes(tmp_path):
    calls = []

    def job(kind, config, threads):
        calls.append(config)
        return {"kind": kind, "value": config.seed * 10}

    from relpos.book.experiments.config import Config

    configs = [Config(seed=s, steps=1) for s in (0, 1, 2)]
    store = runner.store(tmp_path, stamp={"probe": "test", "schema": 1})
    with runner.open_runs(store, workers=1, job=job, progress=False) as run:
        first = run("measured", configs[:2])
    with runner.open_runs(store, workers=1, job=job, progress=False) as run:
        second = run("measured", configs)
    assert [r["value"] for r in first] == [0, 10]
    assert [r["value"] for r in second] == [0, 10, 20]
    assert [c.seed for c in calls] == [0, 1, 2]  # the second trained seed 2 alone
    assert len(list(tmp_path.glob("measured-*.json"))) == 3


def test_mean_by_job_and_the_header():
    records = [{"s": 1.0}, {"s": 3.0}, {"s": None}, {"s": 2.0}]
    assert runner.mean_by_job(records, 2, lambda r: r["s"]) == [2.0, None]
    header = runner.run_header(1, "local", 2)
    assert set(header) == {"machine", "torch", "relpos"}
    assert header["machine"]["workers"] == 2
    assert header["machine"]["torch_threads"] == 1


def _bowl(kind, config, threads):
    """A job whose tuning score is lowest at rate 1e-2 (a bowl in log rate)."""
    import math

    score = (math.log10(config.learning_rate) + 2) ** 2 + config.seed * 1e-3
    return {"score": score, "seed": config.seed, "rate": config.learning_rate}


def test_tuned_extends_the_grid_until_interior_then_measures_each_seed(tmp_path):
    from relpos.book.experiments.config import Config

    def make(kind, cell, seed, rate):
        return Config(seed=seed, learning_rate=rate, steps=1, train_size=cell)

    store = runner.store(tmp_path, stamp={"probe": "test", "schema": 1})
    with runner.open_runs(store, workers=1, job=_bowl, progress=False) as run:
        chosen, tuning, measured = run.tuned(
            [8, 16], [1e-4, 1e-3], make, lambda r: r["score"],
            tune_seeds=[100, 101], seeds=[0, 1, 2], max_rates=4,
        )
    assert chosen[8]["chosen"] == chosen[16]["chosen"] == 1e-2
    assert chosen[8]["rates"] == [1e-4, 1e-3, 1e-2, 1e-1]
    assert chosen[8]["bracketed"] is True
    assert len(tuning) == 2 * 4 * 2  # cells x rates x tuning seeds
    assert [(r["seed"], r["rate"]) for r in measured] == [
        (s, 1e-2) for _ in (8, 16) for s in (0, 1, 2)
    ]
    with runner.open_runs(store, workers=1, job=None, progress=False) as run:
        again = run.tuned(  # every record stored: the default job never runs
            [8, 16], [1e-4, 1e-3], make, lambda r: r["score"],
            tune_seeds=[100, 101], seeds=[0, 1, 2], max_rates=4,
        )
    assert again == (chosen, tuning, measured)


def test_tuned_with_one_rate_tunes_nothing():
    from relpos.book.experiments.config import Config

    store = runner.store(None, stamp={"probe": "test", "schema": 1})
    with runner.open_runs(store, workers=1, job=_bowl, progress=False) as run:
        chosen, tuning, measured = run.tuned(
            ["a"], [1e-3], lambda k, c, s, r: Config(seed=s, learning_rate=r),
            lambda r: r["score"], tune_seeds=[], seeds=[0], max_rates=2,
        )
    assert chosen == {"a": {"rates": [1e-3], "scores": [None], "chosen": 1e-3,
                            "bracketed": None}}
    assert tuning == [] and [r["rate"] for r in measured] == [1e-3]
