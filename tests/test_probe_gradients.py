"""Claim 4's probe (relpos.book.probes.gradients): its runs, their key, its numbers,
its resumption, its figure and its verdict rule on synthetic results."""

from __future__ import annotations

import json

import matplotlib
import pytest
import torch
import torch.nn.functional as F

import relpos
from relpos.book.experiments.store import RunStore, run_key
from relpos.book.experiments.verdicts import probe_gradients as verdicts
from relpos.book.probes.gradients import ARMS, AUX_TARGET, MIXES, OFFSET, design
from relpos.book.probes.gradients import analysis, cli, run, sweep
from relpos.book.probes.gradients.plot import probe_figure
from relpos.book.text import TextConfig
from relpos.book.text.gradients import initial_heads, objective_losses

matplotlib.use("Agg")

TINY = dict(
    setting="causal",
    train_length=8,
    eval_lengths=(8,),
    eval_bytes=64,
    steps=2,
    batch_size=2,
    hidden_size=16,
    num_heads=2,
    num_layers=1,
)
ALONE, BOTH = MIXES


def test_the_design_is_stated_and_names_the_three_arms():
    assert list(ARMS) == ["absolute", "tupe", "deberta"]
    for text in (design.PREDICTION, design.FALSIFIER, design.MECHANISM):
        assert isinstance(text, str) and len(text) > 200
    assert MIXES == (("content",), ("content", "position")) and OFFSET == 3
    assert 0 < AUX_TARGET < 1


def test_the_position_objective_recalls_the_byte_offset_back_on_a_hand_made_window():
    config = TextConfig(scheme="tupe", **TINY)
    heads = initial_heads(config, OFFSET)
    inputs = torch.tensor([[10, 11, 12, 13, 14, 15, 16, 17]])  # (1, 8)
    targets = torch.tensor([[11, 12, 13, 14, 15, 16, 17, 18]])
    losses = objective_losses(heads, inputs, targets)
    _, recall = heads(inputs)  # (1, 8, 256)
    # position t = 3 .. 7 recalls the byte at t - 3: 10 .. 14
    expected = F.cross_entropy(recall[0, 3:], torch.tensor([10, 11, 12, 13, 14]))
    assert losses["position"].item() == pytest.approx(expected.item(), rel=1e-6)


def test_a_run_is_keyed_on_its_objectives_and_the_probes_schema_not_relpos_version(
    monkeypatch,
):
    config = TextConfig(scheme="absolute", **TINY)
    alone, both = run.ProbeRun(config, ALONE), run.ProbeRun(config, BOTH)
    assert alone.to_dict()["objectives"] == ["content"]
    assert run_key("measured", alone, sweep.STAMP) != run_key("measured", both,
                                                              sweep.STAMP)
    before = run_key("measured", both, sweep.STAMP)
    default = run_key("measured", both)
    monkeypatch.setattr(relpos, "__version__", "9.9.9")
    assert run_key("measured", both, sweep.STAMP) == before
    assert run_key("measured", both) != default  # a sweep's key moves with relpos
    with pytest.raises(ValueError, match="objectives must be one of"):
        run.ProbeRun(config, ("position",))
    with pytest.raises(ValueError, match="stamp keys must be str, none of"):
        RunStore(None, stamp={"record": 1})


@pytest.mark.slow  # about 20 s: a tuned sweep of tiny runs, twice
def test_a_second_sweep_trains_nothing(tmp_path, monkeypatch):
    base = TextConfig(**TINY)
    kwargs = dict(arms=["absolute", "tupe"], seeds=[0, 1], learning_rates=[1e-3, 1e-2],
                  tune_seeds=[100], max_rates=3, workers=1, runs_dir=tmp_path,
                  progress=False)
    first = sweep.run_probe(base, **kwargs)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert len(first["runs"]) == 2 * 2 * 2  # arms x mixes x seeds
    assert len(files) == len(first["runs"]) + len(first["tuning"]["runs"])
    stored = json.loads((tmp_path / files[0]).read_text())
    assert stored["probe"] == "gradients" and "relpos" not in stored

    def refuse(*args, **kwargs):
        raise AssertionError("a stored run was trained again")

    monkeypatch.setattr(run, "train_run", refuse)
    second = sweep.run_probe(base, **kwargs)
    assert second["runs"] == first["runs"]
    assert sorted(p.name for p in tmp_path.iterdir()) == files
    assert {r["split"] for r in second["runs"]} == {"test"}
    assert {r["split"] for r in second["tuning"]["runs"]} == {"valid"}


def fake_result(costs: dict[str, list[float]], aux: float = 0.01,
                cosine: float = 0.0, bracketed: bool = True) -> dict:
    """A probe result of ten seeds whose content costs are ``costs[arm]``."""
    runs, cells = [], []
    for arm, values in costs.items():
        for mix in MIXES:
            cells.append({"arm": arm, "objectives": list(mix), "chosen": 3e-3,
                          "bracketed": bracketed})
        for seed, cost in enumerate(values):
            alone, step = 2.0 + 0.01 * seed, 0.01 * (seed - 4.5)
            for mix, content in ((ALONE, alone), (BOTH, alone + cost)):
                runs.append({
                    "arm": arm, "seed": seed, "objectives": list(mix),
                    "loss": {"content": content,
                             "position": aux if mix == BOTH else 5.0},
                    "cosines": {"projections": [cosine + step, cosine],
                                "embedding": [cosine, cosine - step]},
                })
    return {"grid": {"arm": list(costs)}, "runs": runs, "tuning": {"cells": cells}}


SPREAD = [0.001 * k for k in range(-2, 8)]  # ten small values around +0.0025


def test_the_cost_is_the_content_loss_with_the_position_objective_minus_without():
    result = fake_result({"absolute": [0.05 + v for v in SPREAD],
                          "tupe": SPREAD, "deberta": SPREAD})
    values = analysis.arm_values(result["runs"], "absolute")
    assert values["seeds"] == list(range(10))
    assert values["cost"] == pytest.approx([0.05 + v for v in SPREAD])
    assert values["content_alone"][3] == pytest.approx(2.03)
    assert values["aux"] == [0.01] * 10 and values["aux_untrained"] == [5.0] * 10
    # seed 2 (step -0.025): projections (-0.025 + 0) / 2, embedding (0 + 0.025) / 2
    assert values["cosine"]["projections"][2] == pytest.approx(-0.0125)
    assert values["cosine"]["embedding"][2] == pytest.approx(0.0125)
    summary = analysis.summarize(result)
    diff = summary["differences"]["absolute-tupe"]
    assert diff["mean"] == pytest.approx(0.05) and diff["wins"] == 10
    assert summary["matched"] and summary["bracketed"]


def test_the_verdict_holds_fails_is_qualified_or_untested_as_written_before():
    holds = verdicts.probe_record(fake_result(
        {"absolute": [0.05 + v for v in SPREAD], "tupe": SPREAD, "deberta": SPREAD}))
    assert holds["verdict"] == "holds" and holds["seed_claim"] == "gradient"
    assert holds["seeds"] == 10 and holds["interval"][0] > 0
    assert holds["prediction"] == design.PREDICTION
    assert holds["falsifier"] == design.FALSIFIER
    assert "absolute: the position objective" in holds["mechanism"]
    same = [0.05 + v for v in SPREAD]
    fails = verdicts.probe_record(fake_result(
        {"absolute": same, "tupe": same, "deberta": same}))
    assert fails["verdict"] == "fails" and fails["interval"] == [0.0, 0.0]
    qualified = verdicts.probe_record(fake_result(
        {"absolute": same, "tupe": SPREAD, "deberta": same}))
    assert qualified["verdict"] == "qualified"
    unmatched = verdicts.probe_record(fake_result(
        {"absolute": same, "tupe": SPREAD, "deberta": SPREAD}, aux=2 * AUX_TARGET))
    assert unmatched["verdict"] == "untested"
    assert unmatched["mechanism"].startswith("Untested: the position objective")
    edge = verdicts.probe_record(fake_result(
        {"absolute": same, "tupe": SPREAD, "deberta": SPREAD}, bracketed=False))
    assert edge["verdict"] == "untested"


def test_interference_is_a_cosine_whose_interval_excludes_zero():
    away = analysis.summarize(fake_result({"absolute": SPREAD, "tupe": SPREAD},
                                          cosine=-0.2))
    assert verdicts.interferes(away["arms"]["absolute"])
    near = analysis.summarize(fake_result({"absolute": SPREAD, "tupe": SPREAD},
                                          cosine=0.0))
    assert not verdicts.interferes(near["arms"]["tupe"])
    assert "do not interfere" in verdicts.mechanism_text(near)


def test_the_figure_labels_every_axis():
    result = fake_result({"absolute": SPREAD, "tupe": SPREAD, "deberta": SPREAD})
    result["summary"] = analysis.summarize(result)
    fig = probe_figure(result)
    assert len(fig.axes) == 3
    for ax in fig.axes:
        assert ax.get_xlabel() and ax.get_ylabel() and ax.get_title()
        assert [t.get_text() for t in ax.get_xticklabels()] == list(ARMS)
    with pytest.raises(ValueError, match="result must be the probe's JSON"):
        probe_figure({"runs": []})


def test_a_bad_flag_stops_the_command_with_one_line(tmp_path, capsys):
    out = str(tmp_path / "g.json")
    for argv, flag in (
        (["--output", out, "--arms", "rotary"], "--arms"),
        (["--output", out, "--seeds", "0,100"], "--tune-seeds"),
        (["--output", out, "--learning-rates", "1e-3"], "--learning-rates"),
        (["--output", out, "--steps", "0"], "--steps"),
    ):
        with pytest.raises(SystemExit) as stop:
            cli.main(argv)
        assert stop.value.code == 2
        error = capsys.readouterr().err.strip()
        assert "\n" not in error and flag in error


def test_only_the_untied_term_keeps_its_gradient_off_the_content_projections():
    from relpos.book.probes.gradients.live import term_reaches_content

    reached = {arm: term_reaches_content(arm) for arm in ARMS}
    assert reached == {"absolute": True, "tupe": False, "deberta": True}
    with pytest.raises(ValueError, match="arm must be one of"):
        term_reaches_content("rotary")


@pytest.mark.slow  # the chapter's live cell: under a minute on one core
def test_the_live_probe_learns_the_position_objective_in_every_arm():
    from relpos.book.probes.gradients.live import live_probe

    found = live_probe()
    assert list(found) == list(ARMS)
    for arm, row in found.items():
        assert row["aux"] < row["aux_untrained"] - 1.0, arm
        assert all(-1 <= c <= 1 for c in row["cosine"].values())
