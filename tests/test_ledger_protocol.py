"""Where the sweep records come from (chapters 9 and 10: the protocol folder;
chapter 12: the first pass, archived) and the interventions' rules, each moving
its verdict with the numbers it reads.
"""

from __future__ import annotations

import json

import pytest

from relpos.book.experiments.interventions import row_zero as row_zero_runs
from relpos.book.experiments.interventions import sinusoid as sinusoid_runs
from relpos.book.experiments.verdicts import first_pass, interventions, protocol
from relpos.book.results import ledger


def _record(id_: str, verdict: str = "holds", file: str = "sweep.json") -> dict:
    return {"id": id_, "chapter": 9, "claim": "a claim", "verdict": verdict,
            "mechanism": "why", "evidence": {"file": file, "keys": ["summary"]},
            "seeds": 5}


def test_a_first_pass_record_moves_to_chapter_12_and_the_subfolder():
    moved = first_pass.as_first_pass(_record("encoder-far-txl"))
    assert moved["id"] == "first-pass-encoder-far-txl" and moved["chapter"] == 12
    assert moved["evidence"] == {"file": "first_pass/sweep.json", "keys": ["summary"]}


def test_the_chapters_records_come_from_the_protocol_the_archive_from_the_first_pass():
    records = ledger.load_ledger()
    for record in records:
        file = record["evidence"]["file"]
        if record["chapter"] in (9, 10):
            assert file.startswith("protocol/") and record["seeds"] == 10, record["id"]
        if record["id"].startswith(first_pass.PREFIX):
            assert file.startswith("first_pass/") and record["chapter"] == 12
            assert record["seeds"] == 5, record["id"]
    ids = {r["id"] for r in records}
    for name in protocol.TESTED_ELSEWHERE:  # kept as history, answered elsewhere
        assert name not in ids and first_pass.PREFIX + name in ids
    assert not [i for i in ids if i.startswith("protocol-")]


def test_the_ledger_finds_evidence_in_a_subfolder_and_nowhere_else(tmp_path):
    (tmp_path / "protocol").mkdir()
    (tmp_path / "protocol" / "sweep.json").write_text(json.dumps({"summary": []}))
    ok = {"schema": 1, "claims": [_record("a", file="protocol/sweep.json")]}
    assert ledger.check_ledger(ok, tmp_path)[0]["id"] == "a"
    for file in ("protocol/other.json", "../protocol/sweep.json", "a/b/sweep.json",
                 "first_pass/sweep.json"):
        bad = {"schema": 1, "claims": [_record("a", file=file)]}
        with pytest.raises(ValueError, match="must be among the results"):
            ledger.check_ledger(bad, tmp_path)


def test_a_rule_whose_sweep_has_not_run_gives_no_record(tmp_path):
    (tmp_path / "protocol").mkdir()
    with pytest.raises(protocol.NotYetRun):
        protocol.FolderSweeps(tmp_path / "protocol")("sweep.json")
    assert protocol.records(tmp_path) == []
    assert first_pass.records(tmp_path) == []
    assert interventions.records(tmp_path) == []


def test_the_changes_pair_each_first_pass_record_with_the_protocols():
    old = [first_pass.as_first_pass(_record("x", "holds")),
           first_pass.as_first_pass(_record("y", "fails"))]
    now = [dict(_record("x", "qualified"), seeds=10, interval=[0.2, 0.25]),
           dict(_record("y", "fails"), seeds=10, interval=[0.2, 0.25])]
    rows = first_pass.verdict_changes(now + old + [_record("first-pass-z")])
    assert [(r["id"], r["changed"]) for r in rows] == [("x", True), ("y", False)]
    assert rows[0]["first pass"] == "holds (5 seeds)"
    assert rows[0]["protocol"] == "qualified (10 seeds)"
    assert rows[0]["interval"] == "20 to 25%"


def test_a_difference_is_shown_only_with_a_small_p_and_an_interval_off_zero():
    assert interventions.shown({"p_value": 0.01, "interval": [0.1, 0.3],
                                "mean": 0.2}) == 1
    assert interventions.shown({"p_value": 0.01, "interval": [-0.3, -0.1],
                                "mean": -0.2}) == -1
    assert interventions.shown({"p_value": 0.2, "interval": [0.1, 0.3],
                                "mean": 0.2}) == 0
    assert interventions.shown({"p_value": 0.01, "interval": [-0.1, 0.3],
                                "mean": 0.1}) == 0


def _row_zero_result(gain: float) -> dict:
    """Ten seeds of row 0's arms: intact falls from 1.0 to 0.8; redirect gains
    ``gain``."""
    runs = []
    for size in (32, 512):
        for seed in range(10):
            wobble = 0.01 * (seed % 3)
            intact = {"32": 1.0, "256": 0.8 - wobble}
            runs.append({
                "train_size": size, "seed": seed,
                "arms": {"intact": intact,
                         "redirected": {"32": 1.0, "256": 0.8 - wobble + gain},
                         "masked": {"32": 1.0, "256": 0.8 - wobble}},
                "reads": {"256": {"queries": 0.75}},
            })
    return {"interventions": {"row_zero": {
        "change": "row 0's reads redirected", "runs": runs,
        "comparisons": row_zero_runs.comparisons(runs)}}}


@pytest.mark.parametrize("gain, verdict", [(0.15, "holds"), (0.05, "qualified"),
                                           (0.0, "fails")])
def test_row_zeros_verdict_moves_with_what_the_redirect_wins_back(gain, verdict):
    record = interventions.row_zero(_row_zero_result(gain))
    assert record["verdict"] == verdict and record["seeds"] == 10
    assert record["interval"][0] == pytest.approx(gain)
    assert record["intervention"] == "row 0's reads redirected"


def _sinusoid_result(scaled: float, rms: float = 0.06) -> dict:
    runs = []
    for seed in range(10):
        for scheme, accuracy, size in (("sinusoidal", 0.1, 0.02),
                                       ("sinusoidal-scale", scaled, rms),
                                       ("sinusoidal-scale-dims", 0.1, 0.02),
                                       ("absolute", 0.98, 0.2)):
            runs.append({"scheme": scheme, "train_size": 32, "seed": seed,
                         "learning_rate": 0.01,
                         "arms": {"trained": {"32": accuracy + 0.001 * seed}},
                         "trained": {"positions_rms": size}})
    return {"interventions": {"sinusoid_scale": {
        "change": "a learned scale", "runs": runs,
        "comparisons": sinusoid_runs.comparisons(runs)}}}


@pytest.mark.parametrize("scaled, rms, verdict", [(0.95, 0.06, "fails"),
                                                  (0.5, 0.06, "qualified"),
                                                  (0.1, 0.06, "holds"),
                                                  (0.1, 0.021, "untested")])
def test_the_sinusoids_verdict_moves_with_what_the_scale_buys(scaled, rms, verdict):
    record = interventions.sinusoid_scale(_sinusoid_result(scaled, rms))
    assert record["verdict"] == verdict and record["seeds"] == 10


def test_a_comparison_the_file_lacks_is_an_error():
    with pytest.raises(ValueError, match="must hold one comparison"):
        interventions.comparison(_row_zero_result(0.1), "row_zero", "no such")


def _comparison(name: str, a: list[float], b: list[float]) -> dict:
    from relpos.book.stats import bootstrap_interval, paired_test

    return {"name": name, "a": "a", "b": "b", "a_values": a, "b_values": b,
            "a_interval": bootstrap_interval(a), "b_interval": bootstrap_interval(b),
            **paired_test(a, b)}


def _shifted(base: float, by: float) -> tuple[list[float], list[float]]:
    b = [base + 0.01 * (s % 4) for s in range(10)]
    return [v + by for v in b], b


def _two_hop_result(drops: dict[str, float]) -> dict:
    comparisons = []
    for scheme in ("t5", "deberta", "rotary"):
        for cut in ("no_two_hop", "no_one_hop", "no_first_hop"):
            by = -drops.get(scheme, 0.0) if cut == "no_two_hop" else 0.0
            comparisons.append(_comparison(f"{scheme}: {cut} - intact, n = 32",
                                           *_shifted(0.5, by)))
    runs = [{"scheme": s, "arms": {"no_two_hop": {"32": 0.5}, "intact": {"32": 0.9}},
             "paths": {"two_hop_best": 0.2}} for s in ("t5", "deberta", "rotary")]
    return {"interventions": {"two_hop": {"change": "paths cut", "runs": runs,
                                          "comparisons": comparisons}}}


@pytest.mark.parametrize("drops, verdict", [
    ({"t5": 0.4, "deberta": 0.4}, "holds"),
    ({"deberta": 0.4}, "qualified"),
    ({"t5": 0.05, "deberta": 0.05}, "fails"),  # shown, but under a fall
    ({"rotary": 0.4}, "fails"),  # the control alone
])
def test_the_two_hop_verdict_counts_the_windowed_schemes_that_use_it(drops, verdict):
    record = interventions.two_hop(_two_hop_result(drops))
    assert record["verdict"] == verdict and record["seeds"] == 10


def _causal_result(gap: float, keys: float) -> dict:
    n = 256
    comparisons = [
        _comparison(f"gap of the reading head: causal - encoder, n = {n}",
                    *_shifted(2.0, gap)),
        _comparison(f"encoder keys_behind - encoder, n = {n}", *_shifted(0.0, keys)),
        _comparison(f"causal - encoder, n = {n}", *_shifted(0.0, 0.8)),
        _comparison(f"causal - encoder keys_behind, n = {n}", *_shifted(0.0, 0.1)),
    ]
    runs = [{"arms": {"intact": {"32": 1.0, str(n): 0.8}}}]
    return {"interventions": {"causal_t5": {"change": "keys cut", "runs": runs,
                                            "comparisons": comparisons}}}


@pytest.mark.parametrize("gap, keys, verdict", [(-0.3, 0.5, "fails"),
                                                (0.3, 0.0, "holds"),
                                                (0.3, 0.5, "qualified")])
def test_causal_t5s_verdict_reads_the_gap_then_the_keys(gap, keys, verdict):
    record = interventions.causal_t5(_causal_result(gap, keys))
    assert record["verdict"] == verdict
    assert record["interval"][0] == pytest.approx(gap)


def _scale_sweep(scaled: float) -> dict:
    rows = [{"setting": "encoder", "task": "relative", "scheme": scheme,
             "train_size": 32, "length": 32,
             "values": [accuracy + 0.001 * s for s in range(10)]}
            for scheme, accuracy in (("sinusoidal", 0.07), ("sinusoidal-scale", scaled),
                                     ("sinusoidal-scale-dims", 0.07),
                                     ("absolute", 0.98))]
    return {"config": {"train_length": 32},
            "grid": {"scheme": [r["scheme"] for r in rows], "train_size": [32]},
            "tuning": {"chosen": [{"scheme": r["scheme"], "train_size": 32,
                                   "learning_rate": 0.01} for r in rows]},
            "summary": rows}


@pytest.mark.parametrize("scaled, verdict", [(0.99, "fails"), (0.5, "qualified"),
                                             (0.07, "holds")])
def test_the_tuned_sinusoids_verdict_moves_with_what_the_scale_buys(scaled, verdict):
    record = interventions.sinusoid_tuned(_scale_sweep(scaled))
    assert record["verdict"] == verdict and record["seeds"] == 10
    assert record["evidence"]["file"] == "protocol/sweep_scale.json"
