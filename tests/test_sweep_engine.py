"""The sweep engine: parallel executors, resumable runs folder, learning-rate tuning.

Tiny configs (10 steps, width 8, lengths 8 and 12) keep every run well under a
second; the tests that start processes (a pool of 2, a Dask LocalCluster of 2)
are marked slow.
"""

from __future__ import annotations

import functools
import json
import pytest
import torch

import relpos
from relpos.book.experiments import (
    Config,
    RunStore,
    accuracy,
    tune_cells,
    evaluation_set,
    get_task,
    numbers_only,
    run_key,
    run_sweep,
    summary_cells,
    train,
    validation_loss,
    validation_set,
)
from relpos.book.experiments import engine
from relpos.book.stats import bootstrap_interval
from relpos.book.experiments.cli import main

TINY = dict(
    train_length=8,
    test_lengths=(8, 12),
    test_size=8,
    steps=10,
    batch_size=8,
    hidden_size=8,
    num_heads=2,
    intermediate_size=16,
)
GRID = dict(
    tasks=["relative"],
    schemes=["none", "deberta"],
    train_sizes=[8, 16],
    seeds=[0, 1],
    learning_rates=[1e-3, 1e-2],
    tune_seeds=[100, 101],
    max_rates=2,  # the grid as given: no rate added (extension: tested apart)
    progress=False,
)
# 2 schemes x 2 sizes x 2 rates x 2 tune seeds; 2 schemes x 2 sizes x 2 seeds
TUNING_RUNS, MEASURED_RUNS = 16, 8


@functools.cache
def _reference() -> dict:
    """The grid in this process, one run after the other, no runs folder."""
    return run_sweep(Config(**TINY), **GRID, workers=1)


REAL_RUN_ONE, REAL_TUNE_ONE = engine.run_one, engine.tune_one


class Stopped(Exception):
    """The injected failure that interrupts a sweep."""


class Counter:
    """Wraps engine.run_one and engine.tune_one: counts the runs that train.

    ``fail_after``: raise after that many runs (an interrupted sweep).
    """

    def __init__(self, monkeypatch, fail_after: int | None = None) -> None:
        self.measured, self.tuning, self.fail_after = 0, 0, fail_after
        real_run, real_tune = REAL_RUN_ONE, REAL_TUNE_ONE  # not an earlier Counter

        def run(config, **kwargs):
            self._tick()
            self.measured += 1
            return real_run(config, **kwargs)

        def tune(config):
            self._tick()
            self.tuning += 1
            return real_tune(config)

        monkeypatch.setattr(engine, "run_one", run)
        monkeypatch.setattr(engine, "tune_one", tune)

    def _tick(self) -> None:
        done = self.measured + self.tuning
        if self.fail_after is not None and done >= self.fail_after:
            raise Stopped


# -- (a) the same numbers whatever the parallelism -------------------------------------


@pytest.mark.slow  # starts 2 spawned processes (torch imported in each)
def test_two_local_processes_give_the_numbers_of_one(tmp_path):
    two = run_sweep(Config(**TINY), **GRID, workers=2, runs_dir=tmp_path / "runs")
    assert numbers_only(two) == numbers_only(_reference())
    assert two["machine"]["workers"] == 2


@pytest.mark.slow  # starts a Dask LocalCluster of one worker process
def test_a_dask_local_cluster_gives_the_numbers_of_one_process():
    # One worker: the runs leave this process for Dask's and come back through
    # as_completed, as on a cluster; runs finishing out of order across two
    # processes are test_two_local_processes_give_the_numbers_of_one's case.
    pytest.importorskip("distributed")
    dask = run_sweep(
        Config(**TINY), **GRID, engine="dask", scheduler="local", workers=1
    )
    assert numbers_only(dask) == numbers_only(_reference())
    assert dask["machine"]["engine"] == "dask"


def test_engine_arguments_are_checked():
    with pytest.raises(ValueError, match="engine must be one of"):
        with engine.open_engine("ray"):
            pass
    with pytest.raises(ValueError, match="workers must be an int >= 1"):
        with engine.open_engine("local", workers=0):
            pass
    with pytest.raises(ValueError, match="threads must be an int >= 1"):
        with engine.open_engine("local", workers=1, threads=0):
            pass
    with pytest.raises(ValueError, match="scheduler is for engine='dask'"):
        with engine.open_engine("local", workers=1, scheduler="local"):
            pass
    pytest.importorskip("distributed")
    with pytest.raises(ValueError, match="scheduler must be"):
        with engine.open_engine("dask", workers=1):
            pass


def test_one_process_sets_the_threads_of_a_run_and_restores_them(monkeypatch):
    seen = []
    monkeypatch.setattr(
        engine, "run_one", lambda config: seen.append(torch.get_num_threads()) or {}
    )
    before = torch.get_num_threads()
    jobs = [("measured", Config(**TINY))]
    with engine.open_engine("local", workers=1, threads=before + 1) as executor:
        assert list(executor.run(jobs)) == [(0, {})]
    assert seen == [before + 1] and torch.get_num_threads() == before


# -- (b) interrupted and resumed -------------------------------------------------------


def test_a_rerun_trains_only_the_missing_runs(tmp_path, monkeypatch):
    folder = tmp_path / "runs"
    counter = Counter(monkeypatch)
    first = run_sweep(Config(**TINY), **GRID, runs_dir=folder)
    assert (counter.tuning, counter.measured) == (TUNING_RUNS, MEASURED_RUNS)
    assert numbers_only(first) == numbers_only(_reference())
    measured = sorted(folder.glob("measured-*.json"))
    tuning = sorted(folder.glob("tuning-*.json"))
    assert (len(tuning), len(measured)) == (TUNING_RUNS, MEASURED_RUNS)
    for record in (*measured[:3], tuning[0]):
        record.unlink()
    counter = Counter(monkeypatch)
    again = run_sweep(Config(**TINY), **GRID, runs_dir=folder)
    assert (counter.tuning, counter.measured) == (1, 3)
    assert numbers_only(again) == numbers_only(first)


def test_an_interrupted_sweep_resumes_from_the_runs_it_finished(tmp_path, monkeypatch):
    folder = tmp_path / "runs"
    Counter(monkeypatch, fail_after=TUNING_RUNS + 3)  # the tuning runs, 3 measured
    with pytest.raises(Stopped):
        run_sweep(Config(**TINY), **GRID, runs_dir=folder)
    assert len(list(folder.glob("*.json"))) == TUNING_RUNS + 3
    assert not list(folder.glob(".tmp-*"))  # every record whole, no temporary left
    counter = Counter(monkeypatch)
    resumed = run_sweep(Config(**TINY), **GRID, runs_dir=folder)
    assert (counter.tuning, counter.measured) == (0, MEASURED_RUNS - 3)
    assert numbers_only(resumed) == numbers_only(_reference())


def test_a_record_of_another_config_is_never_reused(tmp_path, monkeypatch):
    folder = tmp_path / "runs"
    run_sweep(Config(**TINY), **GRID, runs_dir=folder)
    counter = Counter(monkeypatch)  # one more step: every run is another run
    run_sweep(Config(**{**TINY, "steps": 11}), **GRID, runs_dir=folder)
    assert (counter.tuning, counter.measured) == (TUNING_RUNS, MEASURED_RUNS)
    # A file under a run's name that holds another run's record is not read.
    store = RunStore(folder)
    config = Config(**TINY).replace(scheme="deberta", train_size=8, learning_rate=1e-3)
    other = config.replace(seed=5)
    store.put("measured", other, {"accuracy": {"8": 1.0}})
    store.path("measured", other).replace(store.path("measured", config))
    assert store.get("measured", config) is None
    # ... nor one of another relpos version, nor one that is not JSON.
    data = {
        "kind": "measured",
        "config": config.to_dict(),
        "schema": 3,
        "relpos": relpos.__version__ + ".other",
        "record": {},
    }
    store.path("measured", config).write_text(json.dumps(data))
    assert store.get("measured", config) is None
    store.path("measured", config).write_text("{not json")
    assert store.get("measured", config) is None
    assert store.put("measured", config, {"a": (1, 2)}) == {"a": [1, 2]}
    assert store.get("measured", config) == {"a": [1, 2]}


def test_a_run_key_depends_on_every_field_and_the_kind():
    base = Config(**TINY)
    keys = {
        run_key("measured", base),
        run_key("tuning", base),
        run_key("measured", base.replace(learning_rate=1e-2)),
        run_key("measured", base.replace(test_lengths=(8,))),
        run_key("measured", base.replace(setting="causal")),
    }
    assert len(keys) == 5
    assert run_key("measured", base) == run_key("measured", Config(**TINY))
    with pytest.raises(ValueError, match="kind must be one of"):
        run_key("other", base)


# -- (c) the learning rate, tuned fairly -----------------------------------------------


def _fake_runs(loss_of):
    """A tuning ``run`` whose valid_loss is ``loss_of(cell, rate, seed)``."""
    calls = []

    def run(jobs):
        calls.append(list(jobs))
        return [
            {"valid_loss": loss_of(cell, rate, seed), "valid_accuracy": 1 / (1 + rate)}
            for cell, rate, seed in jobs
        ]

    return run, calls


def test_tune_cells_extends_each_cell_until_its_best_rate_is_interior():
    import math

    small = ("encoder", "relative", "none", 8)
    large = ("encoder", "relative", "none", 512)
    best = {small: 1e-4, large: 0.1}  # below and above the grid 1e-3 .. 1e-2

    def loss(cell, rate, seed):
        return (math.log10(rate) - math.log10(best[cell])) ** 2 + seed * 1e-3

    run, calls = _fake_runs(loss)
    chosen, runs = tune_cells([small, large], [1e-3, 3.16e-3, 1e-2], [100, 101], run)
    by_size = {c["train_size"]: c for c in chosen}
    assert by_size[8]["learning_rate"] == pytest.approx(1e-4, rel=0.01)
    assert by_size[512]["learning_rate"] == pytest.approx(0.1, rel=0.01)
    assert all(c["bracketed"] for c in chosen)
    for c in chosen:  # the curve: every rate tried, its mean loss over both seeds
        assert c["rates"] == sorted(c["rates"]) and len(c["scores"]) == len(c["rates"])
        cell = (c["setting"], c["task"], c["scheme"], c["train_size"])
        assert c["scores"] == pytest.approx(
            [(loss(cell, r, 100) + loss(cell, r, 101)) / 2 for r in c["rates"]]
        )
        inside = c["rates"].index(c["learning_rate"])
        assert 0 < inside < len(c["rates"]) - 1
    # the first round is the whole grid on both seeds; later rounds one rate a cell
    assert len(calls[0]) == 2 * 3 * 2 and all(len(c) <= 2 * 2 for c in calls[1:])
    assert len(runs) == sum(len(c) for c in calls)


def test_tune_cells_stops_at_max_rates_and_says_the_best_is_at_an_edge():
    run, _ = _fake_runs(lambda cell, rate, seed: -rate)  # ever larger is better
    chosen, _ = tune_cells([("encoder", "far", "t5", 32)], [1e-3, 1e-2], [100], run,
                           max_rates=4)
    assert len(chosen[0]["rates"]) == 4 and not chosen[0]["bracketed"]
    assert chosen[0]["learning_rate"] == max(chosen[0]["rates"])


def test_tune_cells_scores_a_diverged_rate_as_the_worst():
    def loss(cell, rate, seed):
        return float("inf") if rate > 5e-3 else 1.0 - rate

    run, _ = _fake_runs(loss)
    chosen, _ = tune_cells([("causal", "far", "t5", 32)], [1e-3, 3e-3, 1e-2], [100],
                           run)
    assert chosen[0]["learning_rate"] == 3e-3 and chosen[0]["bracketed"]
    assert chosen[0]["scores"][-1] is None


def test_the_measured_runs_use_the_rate_the_tuning_runs_choose():
    result = _reference()
    tuning = result["tuning"]
    rate = {(c["scheme"], c["train_size"]): c["learning_rate"] for c in tuning["chosen"]}
    for chosen in tuning["chosen"]:
        mine = [
            r
            for r in tuning["runs"]
            if (r["scheme"], r["train_size"]) == (chosen["scheme"], chosen["train_size"])
        ]
        means = {
            lr: sum(r["valid_loss"] for r in mine if r["learning_rate"] == lr) / 2
            for lr in GRID["learning_rates"]
        }
        assert chosen["scores"] == pytest.approx([means[lr] for lr in chosen["rates"]])
        assert means[chosen["learning_rate"]] == pytest.approx(min(means.values()))
    assert all(
        r["learning_rate"] == rate[r["scheme"], r["train_size"]] for r in result["runs"]
    )


def test_tuning_uses_only_the_tune_seeds_and_the_training_length():
    result = _reference()
    runs = result["tuning"]["runs"]
    assert {r["seed"] for r in runs} == {100, 101}
    assert not {r["seed"] for r in runs} & {r["seed"] for r in result["runs"]}
    assert [
        (r["scheme"], r["train_size"], r["learning_rate"], r["seed"]) for r in runs
    ] == [
        (scheme, size, rate, seed)
        for scheme in GRID["schemes"]
        for size in GRID["train_sizes"]
        for rate in GRID["learning_rates"]
        for seed in GRID["tune_seeds"]
    ]
    # One tuning run again by hand: its cell's size, validation set at L only.
    first = runs[0]
    config = Config(**TINY).replace(
        scheme=first["scheme"],
        learning_rate=first["learning_rate"],
        seed=first["seed"],
        train_size=first["train_size"],
    )
    tokens, labels = validation_set(config)
    assert tokens.shape == (config.test_size, config.train_length)
    test_tokens, _ = evaluation_set(config, config.train_length)
    assert not torch.equal(tokens, test_tokens)  # a split of its own
    model = train(config).model
    assert first["valid_accuracy"] == accuracy(
        model, get_task(config.task), tokens, labels
    )
    assert first["valid_loss"] == validation_loss(
        model, get_task(config.task), tokens, labels
    )


def test_tune_seeds_must_be_disjoint_from_the_measured_seeds():
    with pytest.raises(ValueError, match="tune_seeds must be disjoint"):
        run_sweep(Config(**TINY), **{**GRID, "tune_seeds": [1, 100]})
    with pytest.raises(ValueError, match="tune_seeds must hold at least one seed"):
        run_sweep(Config(**TINY), **{**GRID, "tune_seeds": []})
    with pytest.raises(ValueError, match="learning_rates must be"):
        run_sweep(Config(**TINY), **{**GRID, "learning_rates": [1e-3, 1e-3]})


def test_one_learning_rate_tunes_nothing(monkeypatch):
    counter = Counter(monkeypatch)
    grid = {**GRID, "learning_rates": [2e-3], "train_sizes": [8], "seeds": [0]}
    result = run_sweep(Config(**TINY), **grid)
    assert (counter.tuning, counter.measured) == (0, 2)
    assert result["tuning"] == {
        "learning_rates": [2e-3],
        "seeds": [],
        "max_rates": 1,
        "objective": "valid_loss",
        "runs": [],
        "chosen": [
            {
                "setting": "encoder",
                "task": "relative",
                "scheme": scheme,
                "train_size": 8,
                "learning_rate": 2e-3,
                "rates": [2e-3],
                "scores": [None],
                "valid_accuracy": None,
                "bracketed": False,
            }
            for scheme in GRID["schemes"]
        ],
    }
    assert {r["learning_rate"] for r in result["runs"]} == {2e-3}


# -- (d) the JSON, schema 3 ------------------------------------------------------------


def test_schema_2_fields():
    result = _reference()
    assert set(result) == {
        "schema",
        "machine",
        "torch",
        "relpos",
        "config",
        "grid",
        "tuning",
        "tasks",
        "runs",
        "summary",
        "exact",
        "coverage",
        "wall_seconds",
        "run_seconds",
    }
    covered = {(r["scheme"], r["length"]) for r in result["coverage"]}
    assert covered == {
        (s, n) for s in result["grid"]["scheme"] if s != "none"
        for n in result["config"]["test_lengths"]
    }
    assert result["schema"] == 3 and result["relpos"] == relpos.__version__
    assert result["grid"] == {
        "setting": ["encoder"],
        "task": ["relative"],
        "scheme": ["none", "deberta"],
        "train_size": [8, 16],
        "seed": [0, 1],
    }
    expected_config = {
        k: v
        for k, v in Config(**TINY).to_dict().items()
        if k not in ("setting", "task", "scheme", "train_size", "seed", "learning_rate")
    }
    assert result["config"] == expected_config
    tuning = result["tuning"]
    assert set(tuning) == {
        "learning_rates", "seeds", "max_rates", "objective", "runs", "chosen"
    }
    assert (tuning["learning_rates"], tuning["seeds"], tuning["max_rates"]) == (
        [1e-3, 1e-2],
        [100, 101],
        2,
    )
    assert {"setting", "task", "scheme", "learning_rate", "seed"} <= set(
        tuning["runs"][0]
    )
    assert {"valid_accuracy", "valid_loss", "final_loss", "train_size"} <= set(
        tuning["runs"][0]
    )
    assert [r[k] for r in result["runs"] for k in ("scheme", "train_size", "seed")] == [
        v
        for scheme in GRID["schemes"]
        for size in GRID["train_sizes"]
        for seed in GRID["seeds"]
        for v in (scheme, size, seed)
    ]  # the grid's order
    assert all(
        r["setting"] == "encoder" and "learning_rate" in r for r in result["runs"]
    )
    assert result["run_seconds"] == pytest.approx(
        sum(r["train_seconds"] for r in [*tuning["runs"], *result["runs"]])
    )
    stripped = numbers_only(result)
    assert not {"machine", "wall_seconds", "run_seconds"} & set(stripped)
    assert "train_seconds" not in stripped["runs"][0]


def test_summary_holds_every_seed_in_seed_order():
    result = _reference()
    cells = summary_cells(result)
    assert len(cells) == len(result["summary"]) == 2 * 2 * 2  # scheme x size x length
    for (setting, task, scheme, size, length), row in cells.items():
        values = [
            run["accuracy"][str(length)]
            for seed in GRID["seeds"]
            for run in result["runs"]
            if (run["setting"], run["task"], run["scheme"], run["train_size"])
            == (setting, task, scheme, size)
            and run["seed"] == seed
        ]
        assert row["values"] == values and row["n"] == 2
        assert (row["min"], row["max"]) == (min(values), max(values))
        assert row["mean"] == pytest.approx(sum(values) / 2)
        assert row["interval"] == bootstrap_interval(values)
        assert row["interval"][0] <= row["mean"] <= row["interval"][1]


def test_the_settings_are_a_grid_field():
    grid = {**GRID, "learning_rates": [3e-3], "schemes": ["none"], "train_sizes": [8]}
    result = run_sweep(Config(**TINY), settings=["encoder", "causal"], **grid)
    assert result["grid"]["setting"] == ["encoder", "causal"]
    assert [(r["setting"], r["seed"]) for r in result["runs"]] == [
        ("encoder", 0),
        ("encoder", 1),
        ("causal", 0),
        ("causal", 1),
    ]
    keys = set(summary_cells(result))
    assert ("causal", "relative", "none", 8, 12) in keys
    with pytest.raises(ValueError, match="settings must be"):
        run_sweep(Config(**TINY), settings=["decoder"], **grid)


# -- (e) the command line --------------------------------------------------------------

FLAGS = [
    "--task",
    "relative",
    "--schemes",
    "none,deberta",
    "--train-length",
    "8",
    "--test-lengths",
    "8,12",
    "--test-size",
    "8",
    "--steps",
    "10",
    "--batch-size",
    "8",
    "--hidden-size",
    "8",
    "--num-heads",
    "2",
    "--train-sizes",
    "8,16",
    "--seeds",
    "0,1",
    "--learning-rates",
    "1e-3,1e-2",
    "--tune-seeds",
    "100,101",
    "--max-rates",
    "2",
    "--workers",
    "1",
    "--quiet",
]


def test_the_command_tunes_writes_records_and_resumes(tmp_path, monkeypatch, capsys):
    output = tmp_path / "sweep.json"
    counter = Counter(monkeypatch)
    main([*FLAGS, "--output", str(output)])
    assert (counter.tuning, counter.measured) == (TUNING_RUNS, MEASURED_RUNS)
    data = json.loads(output.read_text())
    assert numbers_only(data) == numbers_only(_reference())
    folder = tmp_path / "sweep.runs"
    assert len(list(folder.glob("*.json"))) == TUNING_RUNS + MEASURED_RUNS
    table = capsys.readouterr().out
    assert "encoder, relative" in table and "lr" in table
    counter = Counter(monkeypatch)
    again = tmp_path / "again.json"
    main([*FLAGS, "--output", str(again), "--runs-dir", str(folder)])
    assert (counter.tuning, counter.measured) == (0, 0)  # every run read back
    assert numbers_only(json.loads(again.read_text())) == numbers_only(data)


def test_the_command_refuses_an_unwritable_runs_folder(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(SystemExit) as stop:
        main([*FLAGS, "--output", str(tmp_path / "s.json"), "--runs-dir", str(blocker)])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1
    assert "argument --runs-dir" in err, err

