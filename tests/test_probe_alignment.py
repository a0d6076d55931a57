"""The alignment probe: its grammar and items exactly, its scoring, resumption,
its verdict rule on synthetic results that hold and that fail."""

from __future__ import annotations

import json
import random
import statistics
from collections import Counter

import pytest
import torch

import relpos
from relpos.book.experiments.store import run_key
from relpos.book.experiments.verdicts import alignment_probe
from relpos.book.probes.alignment import design, grammar, items as items_io
from relpos.book.probes.alignment import summary, sweep
from relpos.book.probes.alignment.run import (
    ProbeRun,
    decode_margins,
    encode_margins,
    item_margins,
)
from relpos.book.results import ledger


def closer_partner(text: str, index: int) -> int:
    """The index of the opener the closer at ``index`` matches (a stack)."""
    stack: list[int] = []
    for i, byte in enumerate(text[: index + 1]):
        if byte in grammar.BRACKETS:
            stack.append(i)
        elif byte in grammar.BRACKETS.values() and stack:
            opened = stack.pop()
            if i == index:
                return opened
    raise AssertionError(f"no opener for {index} in {text!r}")


def number(byte: str) -> str:
    return "plural" if byte.isupper() else "singular"


# -- the grammar -----------------------------------------------------------------------


@pytest.mark.parametrize("length", [0, 1, 2, 5, 17])
def test_balanced_has_the_length_asked_and_closes_every_bracket(length):
    rng = random.Random(length)
    for _ in range(50):
        text = grammar.balanced(rng, length)
        assert len(text) == length
        stack = []
        for byte in text:
            if byte in grammar.BRACKETS:
                stack.append(grammar.BRACKETS[byte])
            elif byte in grammar.BRACKETS.values():
                assert stack.pop() == byte
            else:
                assert byte in grammar.DIGITS
        assert not stack


@pytest.mark.parametrize("d", [2, 3, 9, 28])
def test_units_put_the_decided_byte_d_after_the_related_one(d):
    rng = random.Random(d)
    for _ in range(30):
        sentence = grammar.agreement_unit(rng, d)
        assert len(sentence) == d + 2 and sentence[0] == grammar.BOUNDARY
        subject, verb = sentence[1], sentence[1 + d]
        assert subject.lower() in grammar.SINGULAR_NOUNS
        assert verb.lower() in grammar.SINGULAR_VERBS
        assert number(subject) == number(verb)
        assert grammar.BOUNDARY not in sentence[1:]
        assert all(b.lower() in grammar.SINGULAR_OBLIQUE or b in grammar.DIGITS
                   for b in sentence[2:-1])
        bracket = grammar.bracket_unit(rng, d)
        assert len(bracket) == d + 1
        assert closer_partner(bracket, d) == 0


def test_the_stream_is_seeded_and_sized():
    a = grammar.grammar_stream("train", 3, 5000)
    assert a.dtype == torch.uint8 and a.shape == (5000,)
    assert torch.equal(a, grammar.grammar_stream("train", 3, 5000))
    assert not torch.equal(a, grammar.grammar_stream("train", 4, 5000))
    assert not torch.equal(a, grammar.grammar_stream("valid", 3, 5000))
    with pytest.raises(ValueError, match="size"):
        grammar.grammar_stream("train", 0, 0)


def test_the_stream_covers_every_tested_distance():
    rng = random.Random(0)
    seen = Counter(grammar.train_distance(rng) for _ in range(20000))
    assert set(seen) == set(grammar.TRAIN_DISTANCES)
    assert all(seen[d] > 200 for d in grammar.DISTANCES)
    assert max(grammar.OFFSETS) + max(grammar.DISTANCES) < ProbeRun().train_length


# -- the items -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def committed():
    return items_io.load_items()


def test_the_committed_items_are_the_generator_s(committed):
    text = items_io.ITEMS_PATH.read_text(encoding="utf-8")
    assert text == items_io.items_text(items_io.ITEMS_SEED)
    items, about = committed
    assert about == items_io.provenance(items_io.ITEMS_SEED)
    assert len(text.encode()) < 400_000


def test_every_cell_is_balanced_and_paired_by_core(committed):
    items, _ = committed
    cells = Counter((i["relation"], i["distance"], i["offset"]) for i in items)
    assert len(items) == 1200 and [i["id"] for i in items] == list(range(1200))
    assert set(cells.values()) == {grammar.CORES}
    assert len(cells) == 2 * len(grammar.DISTANCES) * len(grammar.OFFSETS)
    cores = Counter(i["core"] for i in items)
    assert set(cores.values()) == {len(grammar.OFFSETS)}
    by_core: dict[str, set] = {}
    for item in items:
        core_text = item["text"][item["offset"] - (item["relation"] == "agreement"):]
        by_core.setdefault(item["core"], set()).add((core_text, item["wrong"]))
    assert all(len(v) == 1 for v in by_core.values())  # same core at every offset


def test_each_item_is_a_minimal_pair_at_its_distance_and_offset(committed):
    items, _ = committed
    for item in items:
        text, o, d = item["text"], item["offset"], item["distance"]
        assert item["target"] == o + d and len(text) == o + d + 1
        good, wrong = text[-1], item["wrong"]
        if item["relation"] == "agreement":
            assert text[o - 1] == grammar.BOUNDARY
            assert grammar.BOUNDARY not in text[o:]
            assert number(text[o]) == number(good) != number(wrong)
            assert good.lower() == wrong.lower()  # the same verb, other number
            attractor = text[-2]
            assert attractor.lower() in grammar.SINGULAR_OBLIQUE
            assert not any(b.lower() in grammar.SINGULAR_NOUNS for b in text[o + 1:])
            assert number(attractor) != number(good)
        else:
            assert closer_partner(text, o + d) == o
            assert grammar.BRACKETS[text[o]] == good
            assert wrong in grammar.BRACKETS.values() and wrong != good
            assert text[-3:-1] in ("()", "[]") and text[-2] == wrong  # attractor


# -- scoring ---------------------------------------------------------------------------


class FixedLogits(torch.nn.Module):
    """Logit of byte v at position t: v * (t + 1) / 100 (no context read)."""

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        b, n = tokens.shape
        t = torch.arange(n, dtype=torch.float)[:, None] + 1  # (n, 1)
        v = torch.arange(256, dtype=torch.float)[None, :]  # (1, 256)
        return (v * t / 100).expand(b, n, 256)  # (b, n, 256)


def test_a_margin_is_the_log_probability_difference_at_the_decided_byte():
    items = [
        {"text": ".BcaX", "target": 4, "wrong": "x"},
        {"text": "012([])", "target": 6, "wrong": "]"},
    ]
    margins = item_margins(FixedLogits(), items, 64)
    # position target - 1 = t predicts the target; log-softmax cancels
    assert margins[0] == pytest.approx((ord("X") - ord("x")) * 4 / 100, abs=1e-5)
    assert margins[1] == pytest.approx((ord(")") - ord("]")) * 6 / 100, abs=1e-5)
    assert summary.correct(margins + [None, 0.0]) == [False, False, False, False]


def test_margins_are_kept_as_text_to_three_decimals():
    text = encode_margins([0.12345, -2.0, float("nan"), 0.0004])
    assert text == "0.123 -2.000 nan 0.000"
    assert decode_margins(text) == [0.123, -2.0, None, 0.0]


def test_scoring_refuses_an_item_that_is_no_pair():
    with pytest.raises(ValueError, match="items"):
        item_margins(FixedLogits(), [{"text": "ab", "target": 1, "wrong": "b"}], 64)
    with pytest.raises(ValueError, match="items"):
        item_margins(FixedLogits(), [{"text": "a" * 65, "target": 64, "wrong": "b"}],
                     64)


def test_accuracy_and_offset_spread_by_hand():
    items = [{"offset": o, "relation": "r", "distance": 3} for o in (2, 2, 9, 9)]
    right = [True, True, True, False]
    assert summary.accuracy(items, right, ("offset",)) == {(2,): 1.0, (9,): 0.5}
    assert summary.offset_spread(items, right) == 0.5


# -- the store and resumption ----------------------------------------------------------


def test_the_probe_s_key_outlives_a_release(monkeypatch):
    run = ProbeRun()
    before = run_key("measured", run, sweep.STAMP)
    versioned = run_key("measured", run)
    monkeypatch.setattr(relpos, "__version__", "9.9.9")
    assert run_key("measured", run, sweep.STAMP) == before
    assert run_key("measured", run) != versioned
    bumped = {**sweep.STAMP, "schema": design.PROBE_SCHEMA + 1}
    assert run_key("measured", run, bumped) != before


TINY = dict(steps=3, hidden_size=16, num_heads=2, num_layers=1, batch_size=4,
            stream_bytes=4096, valid_bytes=1024)


def test_a_second_sweep_trains_nothing(tmp_path, monkeypatch, committed):
    items = committed[0][:12]
    base = ProbeRun(**TINY)
    kwargs = dict(arms=["none", "deberta-unclipped"], seeds=[0, 1],
                  learning_rates=[1e-3, 1e-2], tune_seeds=[100], max_rates=2,
                  runs_dir=tmp_path, progress=False)
    first = sweep.run_probe(base, items, **kwargs)
    files = sorted(p.name for p in tmp_path.glob("*.json"))
    assert len(files) == 2 * 2 + 2 * 2  # tuning: arms x rates; measured: arms x seeds
    assert all(len(decode_margins(r["margins"])) == 12 for r in first["runs"])
    assert max(p.stat().st_size for p in tmp_path.glob("*.json")) < 4000

    def refuse(*args, **kwargs):
        raise AssertionError("a stored run was trained again")

    monkeypatch.setattr(sweep, "probe_run", refuse)
    monkeypatch.setattr(relpos, "__version__", "9.9.9")  # a release keeps the runs
    second = sweep.run_probe(base, items, **kwargs)
    assert second["runs"] == first["runs"]
    stored = json.loads((tmp_path / files[0]).read_text())
    assert stored["schema"] == design.PROBE_SCHEMA and "relpos" not in stored


def test_a_run_of_the_probe_is_seeded():
    items = items_io.load_items()[0][:6]
    run = ProbeRun(arm="alibi", **TINY)
    a = sweep.probe_job("measured", (run, tuple(items)))
    b = sweep.probe_job("measured", (run, tuple(items)))
    assert a["margins"] == b["margins"] and a["valid_bpb"] == b["valid_bpb"]
    with pytest.raises(ValueError, match="arm"):
        ProbeRun(arm="bogus")


# -- the verdict -----------------------------------------------------------------------


def synthetic(accuracies: dict[str, float | dict[str, float]],
              spreads: dict[str, float]) -> dict:
    """A probe JSON's summary: ten seeds per arm and cell around the given means.

    An accuracy is a float (both relations) or ``{relation: mean}``; a spread
    is set across the offsets, the same at every distance."""
    jitter = [(-1) ** s * 0.004 * (s % 3) for s in range(10)]
    offsets = grammar.OFFSETS
    cells, overall = [], {}
    for arm, means in accuracies.items():
        if not isinstance(means, dict):
            means = {rel: means for rel in grammar.RELATIONS}
        for rel in grammar.RELATIONS:
            for d in grammar.DISTANCES:
                for k, offset in enumerate(offsets):
                    shift = spreads[arm] * (k / (len(offsets) - 1) - 0.5)
                    cells.append({"arm": arm, "relation": rel, "distance": d,
                                  "offset": offset, "values": [
                                      means[rel] + shift + j for j in jitter]})
        overall[arm] = statistics.fmean(means.values())
    return {
        "config": {"steps": design.VERDICT_STEPS},
        "grid": {"arm": list(accuracies), "seed": list(range(10))},
        "summary": {
            "cells": cells,
            "overall": {a: {"mean": m, "values": [m + j for j in jitter]}
                        for a, m in overall.items()},
        },
    }


RELATIVE = {arm: 0.9 for arm in design.RELATIVE_ARMS}
FLAT = {arm: 0.01 for arm in design.ARM_CONFIGS}


def test_the_verdict_holds_when_every_relative_arm_wins_flat():
    result = synthetic({**RELATIVE, "absolute": 0.7, "sinusoidal": 0.75, "none": 0.6},
                       FLAT)
    record = alignment_probe.alignment_record(result)
    assert record["verdict"] == "holds" and record["seed_claim"] == "linguistic"
    assert record["seeds"] == 10 and record["interval"][0] > 0.1
    assert record["prediction"] == design.PREDICTION
    assert record["falsifier"] == design.FALSIFIER
    assert ledger.check_record(record) is record
    result["config"]["steps"] = design.FULL_STEPS
    full = alignment_probe.alignment_record(result)
    assert full["id"] == f"probe-alignment-{design.FULL_STEPS}-steps"
    assert "seed_claim" not in full and full["verdict"] == "holds"
    assert full["evidence"]["file"] == alignment_probe.FULL_EVIDENCE  # not the 300's


def test_the_verdict_is_qualified_when_another_relative_arm_loses():
    result = synthetic({**RELATIVE, "alibi": 0.7, "absolute": 0.7,
                        "sinusoidal": 0.7}, FLAT)
    assert alignment_probe.alignment_record(result)["verdict"] == "qualified"


@pytest.mark.parametrize("change", ["tie", "offset", "chance"])
def test_the_verdict_fails_when_deberta_ties_moves_or_guesses(change):
    accuracies = {**RELATIVE, "absolute": 0.7, "sinusoidal": 0.7}
    spreads = dict(FLAT)
    if change == "tie":
        accuracies["sinusoidal"] = 0.9
    elif change == "offset":
        spreads[design.MAIN_ARM] = 0.08
    else:  # above the absolute arms, but at chance
        accuracies.update({design.MAIN_ARM: 0.5, "absolute": 0.4, "sinusoidal": 0.4})
    record = alignment_probe.alignment_record(synthetic(accuracies, spreads))
    assert record["verdict"] == "fails"


def test_a_half_no_arm_learns_is_untested_and_the_other_judged_alone():
    at_chance = {arm: {"agreement": 0.5, "brackets": 0.9}
                 for arm in design.RELATIVE_ARMS}
    lower = {"agreement": 0.5, "brackets": 0.7}
    result = synthetic({**at_chance, "absolute": lower, "sinusoidal": lower}, FLAT)
    agreement = alignment_probe.half_verdict(result, "agreement")
    assert agreement["verdict"] == "untested"
    assert agreement["reason"] == (
        f"no arm learned agreement at {design.VERDICT_STEPS} steps")
    assert alignment_probe.half_verdict(result, "brackets")["verdict"] == "holds"
    record = alignment_probe.alignment_record(result)
    assert record["verdict"] == "holds"
    assert f"no arm learned agreement at {design.VERDICT_STEPS} steps" in (
        record["mechanism"])
    assert 0.15 < record["interval"][0] < 0.25  # brackets alone: 0.9 - 0.7


def test_deberta_below_the_best_absolute_arm_on_the_learned_half_fails():
    at_chance = {arm: {"agreement": 0.5, "brackets": 0.8}
                 for arm in design.RELATIVE_ARMS}
    result = synthetic({**at_chance, "absolute": {"agreement": 0.5, "brackets": 0.9},
                        "sinusoidal": {"agreement": 0.5, "brackets": 0.7}}, FLAT)
    record = alignment_probe.alignment_record(result)
    assert record["verdict"] == "fails" and record["interval"][1] < 0
    assert "Agreement: untested" in record["mechanism"]


def test_both_halves_at_chance_leave_the_claim_untested():
    result = synthetic({arm: 0.5 for arm in design.ARM_CONFIGS}, FLAT)
    record = alignment_probe.alignment_record(result)
    assert record["verdict"] == "untested" and record["seeds"] == 10


def test_halves_that_disagree_qualify_the_claim():
    assert alignment_probe.combine_halves(["holds", "fails"]) == "qualified"
    assert alignment_probe.combine_halves(["untested", "fails"]) == "fails"
    assert alignment_probe.combine_halves(["holds", "holds"]) == "holds"
    assert alignment_probe.combine_halves(["untested", "untested"]) == "untested"


def test_the_committed_result_leaves_agreement_untested_and_judges_brackets():
    from relpos.book import results

    result = results.load("probes/alignment.json")
    for arm in result["grid"]["arm"]:  # a mean over cells is a mean over items
        assert alignment_probe.relation_values(result, arm) == pytest.approx(
            result["summary"]["overall"][arm]["values"])
    halves = {r: alignment_probe.half_verdict(result, r) for r in grammar.RELATIONS}
    assert halves["agreement"]["verdict"] == "untested"
    assert halves["brackets"]["verdict"] in ledger.VERDICTS[:3]
    record = alignment_probe.alignment_record(result)
    assert record["verdict"] == halves["brackets"]["verdict"]


def test_fewer_than_ten_seeds_leave_the_claim_untested():
    result = synthetic({**RELATIVE, "absolute": 0.7, "sinusoidal": 0.7}, FLAT)
    for row in result["summary"]["cells"]:
        row["values"] = row["values"][:3]
    result["grid"]["seed"] = [0, 1, 2]
    record = alignment_probe.alignment_record(result)
    assert record["verdict"] == "untested" and "interval" not in record


def test_the_ledger_refuses_an_empty_prediction():
    record = alignment_probe.alignment_record(
        synthetic({**RELATIVE, "absolute": 0.7}, FLAT))
    assert record["verdict"] == "holds"
    with pytest.raises(ValueError, match="prediction"):
        ledger.check_record({**record, "prediction": " "})


# -- the command line and the live cell ------------------------------------------------


@pytest.mark.parametrize("argv, flag", [
    (["--seeds", "0,1", "--tune-seeds", "1"], "--tune-seeds"),
    (["--learning-rates", "1e-3"], "--learning-rates"),
    (["--arms", "deberta,bogus"], "--arms"),
    (["--steps", "0"], "--steps"),
])
def test_a_bad_flag_stops_before_any_run(argv, flag, capsys, tmp_path):
    from relpos.book.probes.alignment.cli import main

    with pytest.raises(SystemExit) as stop:
        main([*argv, "--runs-dir", str(tmp_path / "runs"),
              "--output", str(tmp_path / "a.json")])
    assert stop.value.code == 2
    error = capsys.readouterr().err
    assert flag in error and len(error.strip().splitlines()) == 1
    assert not list(tmp_path.glob("runs/*.json"))


# ``live_probe`` and ``live_check`` (a model trained, every offset's share
# asserted) run in chapter 14's live cells, which ``make test`` executes under nbval
# (tests/colab): they are not trained a second time here.


def test_the_figure_fits_the_page_and_labels_every_axis():
    from relpos.book import results
    from relpos.book.plot._style import PAGE_WIDTH
    from relpos.book.probes.alignment.plot import accuracy_by_distance

    result = results.load("probes/alignment.json")
    figure = accuracy_by_distance(result)
    assert figure.get_size_inches()[0] <= PAGE_WIDTH
    arms, offsets = len(result["grid"]["arm"]), len(result["items"]["provenance"]
                                                    ["offsets"])
    for ax in figure.axes:
        assert ax.get_xlabel() and ax.get_ylabel() and ax.get_title()
        assert len(ax.lines) == arms * offsets + 1  # and chance
