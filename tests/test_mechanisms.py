"""The six mechanism designs: their arms, their verdict rules, their records."""

from __future__ import annotations

import dataclasses
import json

import pytest

from relpos.book.experiments.interventions import mechanisms, retrained, run
from relpos.book.experiments.interventions import sinusoid
from relpos.book.experiments.verdicts import mechanisms as verdicts
from relpos.book.results import ledger
from relpos.book.results.build import FOLDER

LENGTHS = (16, 32, 64)
SEEDS = tuple(range(10))


def test_designs_are_stated_and_distinct():
    ids = [d.id for d in mechanisms.DESIGNS]
    assert len(ids) == len(set(ids)) == 6
    for design in mechanisms.DESIGNS:
        for field in dataclasses.fields(design):
            value = getattr(design, field.name)
            assert value, f"{design.id}.{field.name} is empty"


def test_retrained_arms_change_one_setting():
    sweep = json.loads((FOLDER / "protocol" / "sweep_tasks.json").read_text())
    for name, field, values in (
        ("mqar_rates", "learning_rate", run.MQAR_RATES),
        ("deberta_reach", "max_relative_positions", run.REACH_SPANS),
    ):
        configs = [run.cell_config(c, 3) for c in run.INTERVENTIONS[name].cells]
        assert [getattr(c, field) for c in configs] == list(values)
        rest = [dataclasses.replace(c, **{field: values[0]}) for c in configs]
        assert all(c == rest[0] for c in rest)  # nothing else differs
        first = configs[0]
        for key, value in sweep["config"].items():
            if key != field:
                assert getattr(first, key) == (
                    tuple(value) if isinstance(value, list) else value
                ), key
    reach = [run.cell_config(c, 0) for c in run.INTERVENTIONS["deberta_reach"].cells]
    assert {c.learning_rate for c in reach} == {0.004}  # the sweep's choice


def test_one_rate_arms_share_the_rate():
    configs = [run.cell_config(c, 0) for c in run.INTERVENTIONS[
        "sinusoid_one_rate"].cells]
    assert {c.learning_rate for c in configs} == {0.01}
    assert [c.scheme for c in configs] == [
        "sinusoidal", "sinusoidal-scale", "sinusoidal-scale-dims", "absolute"]
    # the sinusoid at two rates is one cell key, measured alike by two interventions
    assert run.intervention_of(configs[0]).measure is sinusoid.measure


def test_a_key_measured_two_ways_is_refused(monkeypatch):
    cell = run.Cell("sweep.json", "encoder", "relative", "sinusoidal", 32)
    clash = run.Intervention("clash", "c", "c", (cell,), retrained.measure,
                             retrained.spans)
    monkeypatch.setitem(run.INTERVENTIONS, "clash", clash)
    with pytest.raises(ValueError, match="two interventions"):
        run._measures()


def _records(field, values, accuracy):
    """Synthetic retrained records: ``accuracy(value, seed, n)``."""
    return [
        {"scheme": "deberta", "seed": seed, field: value, "train_size": 32768,
         "learning_rate": value if field == "learning_rate" else 0.004,
         "arms": {"trained": {str(n): accuracy(value, seed, n) for n in LENGTHS}}}
        for value in values for seed in SEEDS
    ]


def _result(name, records, comparisons):
    return {"interventions": {name: {"runs": records, "change": "one change",
                                     "comparisons": comparisons(records)}}}


def test_reach_verdict_holds_and_fails():
    def lifted(k, seed, n):
        return (0.95 + 0.001 * seed if k == 16 else 0.67) if n == 16 else 0.1

    def level(k, seed, n):
        return 0.67 + 0.01 * ((seed + k) % 3)

    field = "max_relative_positions"
    held = verdicts.deberta_reach(_result(
        "deberta_reach", _records(field, run.REACH_SPANS, lifted), retrained.spans))
    assert held["verdict"] == "holds" and held["seeds"] == 10
    failed = verdicts.deberta_reach(_result(
        "deberta_reach", _records(field, run.REACH_SPANS, level), retrained.spans))
    assert failed["verdict"] == "fails"
    assert "prediction" in held and "falsifier" in held


def test_rates_verdict_holds_and_fails():
    def split(rate, seed, n):  # half the seeds stranded at every rate
        return 0.28 if seed % 2 else 0.95

    def lifted(rate, seed, n):  # 0.008 lifts every seed
        return 0.98 if rate == 0.008 else split(rate, seed, n)

    name = "mqar_rates"
    held = verdicts.mqar_rates(_result(
        name, _records("learning_rate", run.MQAR_RATES, split), retrained.rates))
    assert held["verdict"] == "holds"
    failed = verdicts.mqar_rates(_result(
        name, _records("learning_rate", run.MQAR_RATES, lifted), retrained.rates))
    assert failed["verdict"] == "fails"


def test_mqar_spread_from_the_committed_sweep():
    sweep = json.loads((FOLDER / "protocol" / "sweep_tasks.json").read_text())
    record = verdicts.mqar_spread(sweep)
    values = [s for s in sweep["summary"] if (s["task"], s["scheme"], s["length"])
              == ("mqar", "deberta", 16)][0]["values"]
    reached = sum(v >= 0.9 for v in values)
    assert record["verdict"] == ("qualified" if 0 < reached < 10 else record["verdict"])
    assert f"{reached} of 10 seeds reach 90%" in record["mechanism"]
    low, high = record["interval"]
    assert low < sum(values) / 10 < high


def _text_sweep(rise, scheme="t5"):
    return {"config": {"eval_lengths": [64, 1024]}, "runs": [
        {"scheme": scheme, "seed": s,
         "eval": {"64": {"bpb": 2.0}, "1024": {"bpb": 2.0 + rise(s)}}}
        for s in SEEDS]}


def test_fire_verdict_holds_and_fails():
    def both(fire, quarter):
        found = _text_sweep(fire, "fire")
        found["runs"] += _text_sweep(quarter, "fire-quarter")["runs"]
        return found

    def rising(s):
        return 0.57 + 0.01 * s

    def flat(s):
        return 0.05 + 0.001 * s

    assert verdicts.fire_settings(both(rising, flat))["verdict"] == "holds"
    assert verdicts.fire_settings(both(rising, rising))["verdict"] == "fails"


def test_fire_quarter_changes_only_the_threshold():
    import torch

    from relpos.book.text.config import TextConfig
    from relpos.book.text.lm import language_model
    from relpos.schemes import FireBias

    def biases(scheme):
        torch.manual_seed(0)
        config = TextConfig(setting="causal", scheme=scheme, seed=0,
                            learning_rate=0.01, train_length=64)
        return [m for m in language_model(config).modules()
                if isinstance(m, FireBias)]

    plain, quarter = biases("fire"), biases("fire-quarter")
    assert len(plain) == len(quarter) == 2
    assert [float(b.initial_threshold) for b in plain] == [64.0, 64.0]
    assert [float(b.initial_threshold) for b in quarter] == [16.0, 16.0]
    for a, b in zip(plain, quarter):
        assert a.causal and b.causal and a.width == b.width == 32
        assert a.c.item() == b.c.item() == pytest.approx(0.1)


def test_t5_verdict_holds_and_fails():
    rising = _text_sweep(lambda s: 0.9 + 0.01 * s)
    flat = _text_sweep(lambda s: 0.02 + 0.001 * s)
    assert verdicts.rises(flat)[3] == pytest.approx(0.023)
    assert verdicts.t5_last_bucket(rising, flat)["verdict"] == "holds"
    assert verdicts.t5_last_bucket(rising, rising)["verdict"] == "fails"


def test_records_without_results_are_untested(tmp_path):
    found = verdicts.records(tmp_path)
    assert [r["id"] for r in found] == [
        "mechanism-mqar-spread", "mechanism-mqar-rates",
        "mechanism-sinusoid-one-rate", "mechanism-deberta-reach",
        "mechanism-t5-last-bucket", "mechanism-masked-far-keys",
        "mechanism-fire-settings"]
    assert {r["verdict"] for r in found} == {"untested"}
    assert "make mechanisms" in found[1]["mechanism"]
    for record in found:
        ledger.check_record(record)


def test_a_second_run_trains_nothing(tmp_path):
    kwargs = dict(seeds=[0], changes={"steps": 2, "test_size": 4}, workers=1,
                  runs_dir=tmp_path, progress=False)
    first = run.run_interventions(["deberta_reach"], **kwargs)
    records = first["interventions"]["deberta_reach"]["runs"]
    assert [r["max_relative_positions"] for r in records] == [8, 16]
    files = sorted(tmp_path.glob("*.json"))
    assert len(files) == 2
    written = [f.stat().st_mtime_ns for f in files]
    second = run.run_interventions(["deberta_reach"], **kwargs)
    # read back, not trained: each record's own job_seconds and file are the same
    assert second["interventions"]["deberta_reach"]["runs"] == records
    assert [f.stat().st_mtime_ns for f in sorted(tmp_path.glob("*.json"))] == written


def test_a_file_of_fewer_than_ten_seeds_states_no_verdict(tmp_path):
    def lifted(k, seed, n):
        return 0.95 if k == 16 else 0.67

    field = "max_relative_positions"
    runs = [r for r in _records(field, run.REACH_SPANS, lifted) if r["seed"] < 3]
    result = _result("deberta_reach", runs, retrained.spans)
    result["seeds"] = [0, 1, 2]
    (tmp_path / "protocol").mkdir()
    (tmp_path / "protocol" / verdicts.FILE).write_text(json.dumps(result))
    found = {r["id"]: r for r in verdicts.records(tmp_path)}
    assert found["mechanism-deberta-reach"]["verdict"] == "untested"
    result["seeds"] = list(SEEDS)
    result["interventions"]["deberta_reach"] = _result(
        "deberta_reach", _records(field, run.REACH_SPANS, lifted),
        retrained.spans)["interventions"]["deberta_reach"]
    (tmp_path / "protocol" / verdicts.FILE).write_text(json.dumps(result))
    found = {r["id"]: r for r in verdicts.records(tmp_path)}
    assert found["mechanism-deberta-reach"]["verdict"] == "holds"
