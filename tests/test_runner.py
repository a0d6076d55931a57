"""The one run engine (``relpos.book.runner``): every sweep command takes its flags,
defaults and bounds from it, and its run loop resumes."""

from __future__ import annotations

import dataclasses
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


#: The best rate of each cell (a training size) of :func:`_golden_record`'s fake:
#: below the grid 1e-3 .. 1e-2, inside it, and above it (where 0.1 diverges).
_BEST = {8: 3e-4, 32: 2e-3, 128: 2e-2}
#: What the two tuning paths gave before they were one (relpos 0.4.0's
#: ``tuning.tune_cells`` and ``runner.Runs.tuned``, run on the same fake):
#: each cell's rates, scores, chosen rate and whether it is bracketed ...
_GOLDEN_CURVES = {
    8: ([0.0001, 0.000316, 0.001, 0.00316, 0.01],
        [0.290145, 0.06300900000000001, 0.335902, 1.108141, 2.38166], 0.000316),
    32: ([0.001, 0.00316, 0.01], [0.153119, 0.101965, 0.551059], 0.00316),
    128: ([0.001, 0.00316, 0.01, 0.0316, 0.1],
          [1.755179, 0.70465, 0.153119, 0.101965, None], 0.0316),
}
#: ... the chosen rate's mean validation accuracy (``tune_cells`` only) ...
_GOLDEN_ACCURACY = {8: 1.069868, 32: 0.8603780000000001, 128: 0.340885}
#: ... and the order of the tuning records: the grid on every cell, then one
#: round per extension (8 down, 128 up), cells, then rates, then seeds.
_GOLDEN_ORDER = [
    (size, rate, seed)
    for size, rate in [
        *((n, r) for n in (8, 32, 128) for r in (0.001, 0.00316, 0.01)),
        (8, 0.000316), (128, 0.0316), (8, 0.0001), (128, 0.1),
    ]
    for seed in (100, 101)
]


def _golden_record(size, rate, seed):
    """A tuning run's record, a fixed function of its cell, rate and seed."""
    import math

    loss = (
        math.inf if rate > 0.05
        else round(math.log10(rate / _BEST[size]) ** 2 + (seed - 100) / 8, 6)
    )
    accuracy = round(1 / (1 + 100 * rate) + seed / 1000, 6)
    return {"size": size, "rate": rate, "seed": seed, "valid_loss": loss,
            "valid_accuracy": accuracy}


def test_both_tuning_paths_give_the_rates_and_record_order_they_gave_before():
    from relpos.book.experiments.config import Config
    from relpos.book.experiments.tuning import finite_loss, tune_cells

    cells = [("encoder", "relative", "t5", n) for n in _BEST]
    chosen, runs = tune_cells(
        cells, [1e-3, 3.16e-3, 1e-2], [100, 101],
        lambda jobs: [_golden_record(c[3], r, s) for c, r, s in jobs], max_rates=5,
    )
    assert [(r["size"], r["rate"], r["seed"]) for r in runs] == _GOLDEN_ORDER
    keys = ["setting", "task", "scheme", "train_size", "learning_rate", "rates",
            "scores", "valid_accuracy", "bracketed"]
    assert all(list(c) == keys for c in chosen)  # the JSON's keys, in its order
    for cell, c in zip(cells, chosen):
        rates, scores, best = _GOLDEN_CURVES[cell[3]]
        assert c == {"setting": "encoder", "task": "relative", "scheme": "t5",
                     "train_size": cell[3], "learning_rate": best, "rates": rates,
                     "scores": scores, "valid_accuracy": _GOLDEN_ACCURACY[cell[3]],
                     "bracketed": True}

    def job(kind, config, threads):
        return _golden_record(config.train_size, config.learning_rate, config.seed)

    store = runner.store(None, stamp={"probe": "test", "schema": 1})
    with runner.open_runs(store, job=job, progress=False, workers=1) as run:
        curves, tuning, measured = run.tuned(
            list(_BEST), [1e-3, 3.16e-3, 1e-2],
            lambda kind, n, seed, rate: Config(seed=seed, learning_rate=rate,
                                               steps=1, train_size=n),
            finite_loss, tune_seeds=[100, 101], seeds=[0, 1], max_rates=5,
        )
    assert [(r["size"], r["rate"], r["seed"]) for r in tuning] == _GOLDEN_ORDER
    assert curves == {
        n: {"rates": rates, "scores": scores, "chosen": best, "bracketed": True}
        for n, (rates, scores, best) in _GOLDEN_CURVES.items()
    }
    assert [(r["size"], r["rate"], r["seed"]) for r in measured] == [
        (n, _GOLDEN_CURVES[n][2], s) for n in _BEST for s in (0, 1)
    ]


def test_tune_on_seeds_needs_a_tuning_seed_and_calls_run_once_a_round():
    calls = []

    def run(jobs):
        calls.append(jobs)
        return [_golden_record(n, r, s) for n, r, s in jobs]

    with pytest.raises(ValueError, match="tune_seeds must hold at least one seed"):
        runner.tune_on_seeds([8], [1e-3, 1e-2], run, lambda r: 1.0, tune_seeds=[],
                             max_rates=3)
    assert calls == []
    curves, records = runner.tune_on_seeds(
        [8], [1e-3, 1e-2], run, lambda r: r["valid_loss"], tune_seeds=[7],
        max_rates=4,
    )
    assert [len(c) for c in calls] == [2, 1, 1]  # the grid, then one rate a round
    assert [r["rate"] for r in records] == [1e-3, 1e-2, 1e-4, 1e-5]  # step 10
    assert curves[8]["chosen"] == 1e-4 and curves[8]["bracketed"] is True


def test_engine_options_are_the_flags_and_the_old_keywords_still_set_them():
    parser = _parser("relpos.book.experiments.cli")
    default = runner.EngineOptions.from_args(parser.parse_args([]))
    assert default == runner.EngineOptions() == runner.EngineOptions(
        "local", runner.default_workers(), None, 1
    )
    args = parser.parse_args(["--workers", "3", "--threads", "2", "--quiet"])
    assert runner.engine_options(args, "here") == {
        "options": runner.EngineOptions("local", 3, None, 2),
        "runs_dir": "here",
        "progress": False,
    }
    assert default.replace(workers=1, threads=4) == runner.EngineOptions(
        "local", 1, None, 4
    )
    with pytest.raises(TypeError):
        default.replace(seeds=[0])  # not an option: refused, not dropped
    with pytest.raises(dataclasses.FrozenInstanceError):
        default.workers = 2
    assert default.replace(workers=2).header()["machine"]["workers"] == 2
