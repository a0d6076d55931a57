"""Claim 1's probe: its data, its scoring, resumption, the verdict rule, the live run.

The data is checked exactly (which positions the loss reads, which are scored
in each half); the scoring on hand-made predictions; the intervention against
a table rolled by hand; resumption by training nothing on a second run; the
verdict on synthetic results that hold, fail, are qualified or untested.
"""

from __future__ import annotations

import json
import os

import pytest
import torch

import relpos
from relpos.book.experiments import engine, tuning
from relpos.book.experiments.config import Config
from relpos.book.experiments.layouts import IGNORE
from relpos.book.experiments.measure import predict
from relpos.book.probes.positions import cli, design, transfer
from relpos.book.probes.positions.live import live
from relpos.book.probes.positions.plot import probe_figure
from relpos.book.probes.positions.run import run_probe
from relpos.book.experiments.store import RunStore, run_key
from relpos.book.experiments.sweep import numbers_only
from relpos.book.experiments.tasks import get_task
from relpos.book.experiments.train import initial_model, supervise, training_set
from relpos.book.experiments.tuning import validation_set
from relpos.book.experiments.verdicts import positions as verdict
from relpos.book.results import ledger

L, S = design.TRAIN_LENGTH, design.SUPERVISED


def test_the_loss_reads_the_first_half_and_both_halves_are_scored():
    config = transfer.transfer_config("absolute", "first", 3)
    assert (config.supervised_positions, config.max_relative_positions) == (16, 32)
    tokens, labels = training_set(config)[0]  # (512, 32) each
    assert tokens.shape == (design.TRANSFER_SIZE, L)
    masked = supervise(labels, config)
    assert torch.equal(masked[:, :S], labels[:, :S])
    assert (masked[:, S:] == IGNORE).all()
    assert torch.equal(labels[:, 5:], tokens[:, 2:-3])  # the token 3 back
    _, valid = validation_set(config)  # tuned on the supervised half only
    assert (valid[:, S:] == IGNORE).all() and (valid[:, 3:S] != IGNORE).all()
    first, second = transfer.halves(get_task("relative").scored_at(L), S)
    assert first.nonzero().flatten().tolist() == list(range(3, 16))
    assert second.nonzero().flatten().tolist() == list(range(16, 32))
    whole = transfer.transfer_config("absolute", "all", 3)
    assert supervise(labels, whole) is labels
    assert "supervised_positions" not in whole.to_dict()  # the sweep's key


def test_supervised_positions_is_checked_and_keeps_old_keys():
    with pytest.raises(ValueError, match="supervised_positions must be <= train"):
        Config(supervised_positions=33)
    with pytest.raises(ValueError, match="supervised_positions"):
        Config(supervised_positions=0)
    assert Config().to_dict() == Config(supervised_positions=None).to_dict()


def test_half_scores_on_a_hand_made_case():
    b = 4
    labels = torch.arange(L).repeat(b, 1)  # (4, 32)
    predicted = labels.clone()
    predicted[:2, S:] = -1  # half the sequences wrong in the second half
    predicted[0, 3] = -1  # one more wrong at position 3
    accuracy = transfer.position_accuracy(predicted, labels)
    scores = transfer.half_scores(accuracy, get_task("relative").scored_at(L))
    assert scores["per_position"][:3] == [None, None, None]
    assert scores["per_position"][3] == 0.75
    assert scores["first"] == pytest.approx((12 + 0.75) / 13)
    assert scores["second"] == pytest.approx(0.5)
    assert scores["gap"] == pytest.approx((12 + 0.75) / 13 - 0.5)
    mirror = torch.zeros(L)
    mirror[19:] = 1.0  # the positions 16 + 3 .. 16 + 15
    assert transfer.mirrored(mirror, get_task("relative").scored_at(L)) == 1.0
    with pytest.raises(ValueError, match="until"):
        transfer.halves(torch.ones(4, dtype=torch.bool), 4)


def test_rolled_rows_read_the_table_rolled_by_hand():
    config = transfer.transfer_config("absolute", "first", steps=1)
    model = initial_model(config)
    tokens, _ = get_task("relative").sample(8, L, seed=1)
    rolled = transfer.rolled_predict(model, tokens)
    by_hand = initial_model(config)
    with torch.no_grad():  # row i now holds row (i + 16) mod 32
        by_hand.input_positions.weight.copy_(
            model.input_positions.weight.roll(-S, dims=0)
        )
    assert torch.equal(rolled, predict(by_hand, tokens))
    assert transfer.row_drift(model, initial_model(config)) == [0.0] * L
    with pytest.raises(ValueError, match="positions to its tokens"):
        transfer.rolled_predict(initial_model(config.replace(scheme="t5")), tokens)


def test_a_stamped_store_outlives_the_version(tmp_path, monkeypatch):
    config = transfer.transfer_config("t5", "first")
    stamp = {"probe": "positions", "part": "transfer", "schema": 1}
    assert run_key("measured", config, stamp) != run_key("measured", config)
    RunStore(tmp_path, stamp=stamp).put("measured", config, {"gap": 0.5})
    RunStore(tmp_path).put("measured", config, {"gap": 0.25})
    monkeypatch.setattr(relpos, "__version__", "9.9.9")
    assert RunStore(tmp_path, stamp=stamp).get("measured", config) == {"gap": 0.5}
    assert RunStore(tmp_path).get("measured", config) is None  # keyed on the old one
    with pytest.raises(ValueError, match="stamp keys"):
        RunStore(tmp_path, stamp={"config": 1})


def _tiny(runs_dir) -> dict:
    return run_probe(
        schemes=["absolute", "deberta"],
        data_schemes=["absolute", "deberta"],
        data_sizes=[8],
        seeds=[0, 1],
        changes={"steps": 2, "train_size": 8, "test_size": 4, "test_lengths": (L,)},
        workers=1,
        runs_dir=runs_dir,
        progress=False,
    )


def test_a_second_run_trains_nothing(tmp_path, monkeypatch):
    first = _tiny(tmp_path)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert len(files) == len(first["transfer"]["runs"]) + len(
        first["transfer"]["tuning"]["runs"]
    ) + len(first["data_efficiency"]["runs"]) + len(
        first["data_efficiency"]["tuning"]["runs"]
    )

    def refuse(*args, **kwargs):
        raise AssertionError("a stored run was trained again")

    for module in (engine, tuning, transfer):
        monkeypatch.setattr(module, "train", refuse)
    second = _tiny(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == files
    assert numbers_only(second) == numbers_only(first)
    record = json.loads(next(tmp_path.glob("measured-*.json")).read_text())
    assert record["probe"] == "positions" and "relpos" not in record
    assert len(probe_figure(first).axes) == 3


def _runs(scheme: str, first: float, gaps: list[float]) -> list[dict]:
    return [
        {"scheme": scheme, "supervision": "first", "seed": seed, "first": first,
         "second": first - gap, "gap": gap,
         "rolled": {"first": 0.05, "second": 0.8, "mirrored": 1.0}}
        for seed, gap in enumerate(gaps)
    ]


def _sweep(accuracy: dict[str, dict[int, float]]) -> dict:
    rows = [
        {"setting": "encoder", "task": "relative", "scheme": scheme,
         "train_size": size, "length": L, "mean": value,
         "values": [value + 0.001 * s for s in range(10)]}
        for scheme, by_size in accuracy.items()
        for size, value in by_size.items()
    ]
    return {"schema": 3, "config": {"train_length": L},
            "grid": {"setting": ["encoder"], "task": ["relative"],
                     "scheme": list(accuracy), "train_size": [8, 16, 128],
                     "seed": list(range(10))},
            "summary": rows}


def _result(deberta_gap=0.0, deberta_first=1.0, absolute_gap=0.9, t5_data=0.99):
    wiggle = [0.01 * ((s % 3) - 1) for s in range(10)]
    runs = (
        _runs("absolute", 1.0, [absolute_gap + w for w in wiggle])
        + _runs("deberta", deberta_first, [deberta_gap + w for w in wiggle])
        + _runs("t5", 1.0, [w for w in wiggle])
        + _runs("alibi", 0.1, [0.0] * 10)
    )
    data = {
        "absolute": {8: 0.1, 16: 0.2, 128: 1.0},
        "deberta": {8: 0.99, 16: 0.99, 128: deberta_first},
        "t5": {8: t5_data, 16: 0.99, 128: 1.0},
        "alibi": {8: 0.1, 16: 0.1, 128: 0.15},
    }
    return {"transfer": {"runs": runs}, "data_efficiency": _sweep(data)}


def test_the_verdict_on_synthetic_results():
    held = verdict.record(_result())
    assert held["verdict"] == "holds" and held["seed_claim"] == "generalisation"
    assert held["seeds"] == 10 and held["interval"][0] <= 0 <= held["interval"][1]
    assert held["prediction"] == design.PREDICTION
    assert ledger.check_record(held) is held
    judged = verdict.scheme_verdicts(_result())
    assert judged["alibi"]["verdict"] == "untested"  # never learned the rule
    assert verdict.record(_result(deberta_gap=0.3))["verdict"] == "fails"
    # the absolute table transferring as well: DeBERTa is not better, it fails
    assert verdict.record(_result(absolute_gap=0.0))["verdict"] == "fails"
    # T5 no better than absolute at 8 sequences: one relative scheme fails
    assert verdict.record(_result(t5_data=0.1))["verdict"] == "qualified"
    # a gap whose interval straddles the margin
    assert verdict.record(_result(deberta_gap=0.05))["verdict"] == "qualified"
    # absolute's gap under 25 points: the contrast is weaker than predicted
    assert verdict.record(_result(absolute_gap=0.2))["verdict"] == "qualified"
    assert verdict.record(_result(deberta_first=0.5))["verdict"] == "untested"


def test_the_cli_reuses_the_engine_flags_and_the_committed_folder():
    args = cli.build_parser().parse_args([])
    workers = os.cpu_count() or 1  # the one default of every sweep command
    assert (args.workers, args.engine, args.threads) == (workers, "local", 1)
    assert args.runs_dir == str(cli.RUNS)
    assert cli.RUNS.parts[-4:] == ("results", "probes", "positions", "runs")
    with pytest.raises(SystemExit):
        cli.main(["--seeds", "0,100", "--output", "/dev/null/x.json"])


def test_live_holds_at_a_small_setting():
    found = live(seeds=(0,), steps=150, train_size=256)
    assert found["verdict"] == "holds", found["gaps"]
    assert set(found["gaps"]) == {"deberta", "absolute"}
