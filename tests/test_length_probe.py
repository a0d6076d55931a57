"""The length probe: its windows, its scoring, its cut, its store and its verdict."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

import relpos
import relpos.book.experiments.store
from relpos.book.stats import clustered_interval
from relpos.book.text import length_probe
from relpos.book.text.config import TextConfig
from relpos.book.text.context import (
    band_mask,
    module_ids,
    nonoverlapping_plan,
    score_plan,
    sliding_plan,
)
from relpos.book.text.length_probe import contrasts, run_length_probe, use_verdict
from relpos.book.text.length_verdict import length_probe_record, passes
from relpos.book.text.train import initial_model


def _targets(plan) -> list[int]:
    """Every scored target byte of a plan (window k's position t is byte s + 1 + t)."""
    found = []
    for start, first in zip(plan.starts.tolist(), plan.first.tolist()):
        found += [start + 1 + t for t in range(first, plan.width)]
    return found


@pytest.mark.parametrize(
    "size, width, stride",
    [(100, 16, 8), (101, 16, 8), (17, 16, 8), (1000, 64, 32), (333, 32, 7), (40, 8, 8)],
)
def test_sliding_plan_scores_every_byte_once(size, width, stride):
    plan = sliding_plan(size, width, stride)
    assert sorted(_targets(plan)) == list(range(1, size))
    assert int((plan.starts + width + 1).max()) <= size  # every window in the stream
    assert all(f >= width - stride for f in plan.first[1:].tolist())  # its context
    assert int(plan.first[0]) == 0


def test_nonoverlapping_plan_is_chapter_11s_windows():
    plan = nonoverlapping_plan(100, 16)
    assert plan.starts.tolist() == [0, 16, 32, 48, 64, 80]  # (100 - 1) // 16 = 6
    assert sorted(_targets(plan)) == list(range(1, 97))
    with pytest.raises(ValueError, match="width"):
        nonoverlapping_plan(16, 16)
    with pytest.raises(ValueError, match="stride"):
        sliding_plan(100, 16, 17)


def test_module_ids_give_the_closing_zero_to_its_module():
    stream = torch.tensor(list(b"ab\0c\0de"), dtype=torch.uint8)
    assert module_ids(stream).tolist() == [0, 0, 0, 1, 1, 2, 2]


def test_band_mask_keeps_the_last_l_keys():
    mask = band_mask(6, 2)  # (i, j)
    assert mask[5].tolist() == [False, False, False, False, True, True]
    assert mask[0].tolist()[0] and mask[3, 2] and not mask[3, 1]


class EchoModel(nn.Module):
    """Predicts "the next byte repeats this one" with logit ``scale``; no attention."""

    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, tokens: torch.Tensor, mask: object = None) -> torch.Tensor:
        return self.scale * nn.functional.one_hot(tokens, 256).float()  # (b, n, 256)


def test_score_plan_against_hand_computed_losses():
    s = 2.0
    stream = torch.tensor(list(b"aab\0bb\0cc"), dtype=torch.uint8)
    hit = math.log(math.exp(s) + 255) - s  # target == input byte
    miss = math.log(math.exp(s) + 255)
    # targets 1..8: a(a) b(a) 0(b) b(0) b(b) 0(b) c(0) c(c): hit miss miss miss hit
    # miss miss hit; modules of the targets: 0 0 0 1 1 1 2 2
    expected = [hit + 2 * miss, 2 * miss + hit, miss + hit]
    for plan in (sliding_plan(9, 4, 2), sliding_plan(9, 8, 1)):
        reading = score_plan(EchoModel(s), stream, plan, modules=3, bin_size=2)
        assert reading["module_counts"] == [3, 3, 2]
        assert reading["module_sums"] == pytest.approx(expected, abs=1e-4)
        assert reading["loss"] == pytest.approx(sum(expected) / 8, rel=1e-6)
        assert reading["scored"] == 8


def _stream(size: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    stream = torch.randint(1, 256, (size,), generator=g, dtype=torch.uint8)
    stream[[50, 120, 200]] = 0  # three module ends
    return stream


@pytest.mark.parametrize("scheme", ["deberta", "alibi", "rotary", "absolute", "t5"])
def test_cut_at_the_training_length_is_the_full_reading(scheme):
    config = TextConfig(
        scheme=scheme, train_length=16, eval_lengths=(16, 64), eval_bytes=300,
        hidden_size=16, num_heads=2,
    )
    model = initial_model(config)
    stream = _stream(300)
    plan = sliding_plan(300, 16, 8)
    full = score_plan(model, stream, plan, modules=4)
    cut = score_plan(model, stream, plan, modules=4, cut=16)
    assert cut == full
    far = score_plan(model, stream, sliding_plan(300, 64, 32), modules=4, cut=16)
    wide = score_plan(model, stream, sliding_plan(300, 64, 32), modules=4)
    assert far["loss"] != wide["loss"]  # beyond L the cut does change something


def _previous_token_model() -> nn.Module:
    """A T5 model whose every head reads only the key one back (the first: itself)."""
    config = TextConfig(
        scheme="t5", train_length=4, eval_lengths=(4, 16), eval_bytes=300,
        hidden_size=16, num_heads=2,
    )
    model = initial_model(config)
    with torch.no_grad():
        for layer in model.encoder.layers:
            attention = layer.attention
            attention.query_proj.weight.zero_()
            attention.query_proj.bias.zero_()
            bias = attention.position_bias
            reach = (bias.lookup.shape[0] - 1) // 2
            bias.embedding.weight.zero_()
            bias.embedding.weight[bias.lookup[reach + 1]] = 1e4  # distance 1
    return model


def test_a_model_reading_the_previous_byte_loses_nothing_to_the_cut():
    model = _previous_token_model()
    stream = _stream(300)
    plan = sliding_plan(300, 16, 8)
    full = score_plan(model, stream, plan, modules=4)
    cut = score_plan(model, stream, plan, modules=4, cut=4)
    assert cut["module_sums"] == pytest.approx(full["module_sums"], abs=1e-3)
    assert cut["loss"] == pytest.approx(full["loss"], abs=1e-6)
    shares = length_probe.attention_beyond(model, stream, 16, 4)
    assert shares == pytest.approx([0.0, 0.0], abs=1e-6)


def test_clustered_interval():
    counts = [10, 20, 30]
    constant = [[0.1 * c for c in counts]] * 3  # 0.1 nats per byte everywhere
    low, high = clustered_interval(constant, counts)
    assert low == pytest.approx(0.1) and high == pytest.approx(0.1)
    rng = np.random.default_rng(0)
    noisy = rng.normal(0.0, 1.0, (5, 40)) + 0.5
    low, high = clustered_interval(noisy, [1.0] * 40)
    assert low < 0.5 < high
    with pytest.raises(ValueError, match="counts"):
        clustered_interval(constant, [1, 2])
    with pytest.raises(ValueError, match="differences"):
        clustered_interval([1.0, 2.0], [1, 2])  # not (seeds, clusters)


def _tiny() -> TextConfig:
    return TextConfig(
        steps=4, train_length=8, eval_lengths=(8, 16), eval_bytes=3000,
        hidden_size=16, num_heads=2, batch_size=4,
    )


@pytest.mark.slow
def test_a_second_run_trains_nothing_and_ignores_the_version(tmp_path, monkeypatch):
    kwargs = dict(
        schemes=["deberta"], seeds=[0, 1], learning_rates=[1e-3], tune_seeds=[],
        runs_dir=tmp_path, progress=False,
    )
    first = run_length_probe(_tiny(), **kwargs)
    assert len(list(tmp_path.glob("measured-*.json"))) == 2

    def refuse(config):
        raise AssertionError("a stored run was trained again")

    monkeypatch.setattr(length_probe, "run_length", refuse)
    monkeypatch.setattr(relpos, "__version__", "9.9.9")
    second = run_length_probe(_tiny(), **kwargs)
    assert second["contrasts"] == first["contrasts"]
    assert second["compared"] == first["compared"]  # chapter 11's side by side
    assert [row["best"] for row in first["compared"]] == [["deberta"]] * len(
        first["compared"])
    assert second["runs"] == first["runs"]
    assert "module_sums" not in second["runs"][0]


def test_contrasts_of_synthetic_runs():
    def run(seed: int, shift: float) -> dict:
        reading = {"8": {"loss": 1.0}, "16": {"loss": 1.0}}
        cut = {"8": {"loss": 1.0}, "16": {"loss": 1.0 + shift}}
        counts = {"8": [10, 10], "16": [10, 10]}
        return {
            "scheme": "deberta", "seed": seed,
            "nonoverlapping": reading, "sliding": reading, "cut": cut,
            "attention_beyond": {"16": [0.1, 0.3]},
            "module_sums": {
                "nonoverlapping": {"8": [10.0, 10.0], "16": [10.0, 10.0]},
                "sliding": {"8": [10.0, 10.0], "16": [10.0, 10.0]},
                "cut": {"8": [10.0, 10.0], "16": [10 + 10 * shift] * 2},
            },
            "module_counts": {"nonoverlapping": counts, "sliding": counts},
        }

    rows = contrasts([run(s, 0.01 * (1 + s)) for s in range(10)], train_length=8)
    at_l, beyond = rows
    assert at_l["verdict"] is None and at_l["cut_minus_full"]["mean"] == 0
    assert beyond["cut_minus_full"]["mean"] == pytest.approx(0.055)
    assert beyond["cut_minus_full"]["interval"][0] > 0
    assert beyond["verdict"] == "uses"
    assert beyond["attention_beyond"] == pytest.approx([0.1, 0.3])


@pytest.mark.parametrize(
    "interval, p, word",
    [([0.01, 0.02], 0.002, "uses"), ([-0.01, 0.02], 0.002, "survives"),
     ([0.01, 0.02], 0.2, "survives"), ([-0.02, -0.01], 0.01, "hurt")],
)
def test_use_verdict(interval, p, word):
    assert use_verdict({"interval": interval, "p_value": p}) == word


def _result(words: dict[str, str]) -> dict:
    rows = []
    for scheme, word in words.items():
        for length in (64, 128, 256):
            rows.append({
                "scheme": scheme, "length": length, "seeds": list(range(10)),
                "cut_minus_full": {"mean": 0.01, "interval": [0.005, 0.02]},
                "sliding": 1.0 + length / 1000,
                "attention_beyond": [0.1, 0.2] if length > 64 else None,
                "verdict": None if length == 64 else word,
            })
    return {"config": {"train_length": 64}, "contrasts": rows}


def test_the_verdict_on_synthetic_results():
    words = {"deberta": "uses", "alibi": "uses", "none": "survives"}
    holds = length_probe_record(_result(words))
    assert holds["verdict"] == "holds" and holds["seed_claim"] == "length"
    assert holds["seeds"] == 10 and holds["interval"] == [0.005, 0.02]
    assert holds["prediction"] == length_probe.PREDICTION
    assert holds["falsifier"] == length_probe.FALSIFIER
    fails = length_probe_record(_result({"deberta": "survives", "alibi": "uses"}))
    assert fails["verdict"] == "fails"
    mixed = _result({"deberta": "uses", "alibi": "survives"})
    assert length_probe_record(mixed)["verdict"] == "qualified"
    assert passes(mixed) == {"deberta": True, "alibi": False}
    with pytest.raises(ValueError, match="deberta"):
        length_probe_record(_result({"alibi": "uses"}))


def test_the_probe_store_keys_on_its_schema_not_the_version(tmp_path, monkeypatch):
    config = _tiny()
    store = length_probe.probe_store(tmp_path)
    store.put("measured", config, {"loss": 1.0})
    before = store.path("measured", config)
    monkeypatch.setattr(relpos, "__version__", "9.9.9")
    assert store.path("measured", config) == before
    assert store.get("measured", config) == {"loss": 1.0}
    other = relpos.book.experiments.store.RunStore(
        tmp_path, stamp={"probe": "length", "schema": 99}
    )
    assert other.get("measured", config) is None  # another schema: not reused


def test_the_figure_draws_every_scheme_with_labelled_axes():
    from relpos.book.text.length_plot import length_figure

    figure = length_figure(_result({"deberta": "uses", "alibi": "survives"}))
    cut, loss, mass = figure.axes
    for ax in figure.axes:
        assert ax.get_xlabel() and ax.get_ylabel()
    assert [line.get_label() for line in loss.lines] == ["deberta", "alibi"]
    assert list(loss.lines[0].get_xdata()) == [1, 2, 4]
    assert list(mass.lines[0].get_ydata()) == pytest.approx([0.15, 0.15])
    with pytest.raises(ValueError, match="contrasts"):
        length_figure({"config": {}})


# ``live_check`` itself (a model trained, its two facts asserted) runs in chapter
# 11's live cell, which ``make test`` executes under nbval (tests/colab): it is not
# trained a second time here.


def test_read_model_keeps_one_sum_per_module():
    config = TextConfig(
        scheme="alibi", train_length=16, eval_lengths=(16, 32), eval_bytes=301,
        hidden_size=16, num_heads=2,
    )
    stream = torch.cat([_stream(300), torch.zeros(1, dtype=torch.uint8)])  # (301,)
    found = length_probe.read_model(initial_model(config), config, stream)
    assert len(found["module_sums"]["cut"]["32"]) == 4  # three ends inside, one last
    assert sum(found["module_counts"]["sliding"]["32"]) == 300
    assert found["stride"] == {"16": 8, "32": 16}
    assert set(found["attention_beyond"]) == {"32"}
