"""The masked-baselines study: its scoring, its arms, its rule, its resumption.

Tiny models (width 16, one layer, ``L = 8``) on this interpreter's corpus.
"""

from __future__ import annotations

import math

import pytest
import torch
from matplotlib.figure import Figure

from relpos.book.text import masked_baselines as study
from relpos.book.text import masked_cli
from relpos.book.text.config import TextConfig
from relpos.book.text.lm import MASK, language_model
from relpos.book.text.masked_plot import masked_figure
from relpos.book.text.masked_summary import summarize, verdict
from relpos.book.text.train import initial_model, train_text

TINY = dict(
    study.STUDY,
    train_length=8,
    eval_lengths=(8,),
    eval_bytes=97,
    steps=2,
    batch_size=4,
    hidden_size=16,
    num_heads=2,
    num_layers=1,
    max_relative_positions=4,
    position_buckets=4,
    bucket_max_position=16,
    t5_max_distance=16,
)


def tiny(scheme: str, **changes) -> TextConfig:
    return TextConfig(**{**TINY, "scheme": scheme, **changes})


def test_the_curve_is_the_mean_of_each_block_in_bits():
    nats = [math.log(2) * v for v in (1.0, 3.0, 2.0, 4.0, 6.0)]
    assert study.curve(nats, every=2) == pytest.approx([2.0, 3.0, 6.0])
    with pytest.raises(ValueError, match="every"):
        study.curve(nats, every=0)


def test_scramble_is_one_fixed_permutation_per_length():
    order = study.scramble(64)
    assert sorted(order.tolist()) == list(range(64))
    assert torch.equal(order, study.scramble(64))
    assert not torch.equal(order, torch.arange(64))


def test_a_model_of_uniform_logits_scores_eight_bits_plain_and_scrambled():
    config = tiny("absolute")
    model = language_model(config)
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.zero_()
    stream = torch.arange(200, dtype=torch.uint8)  # (bytes,)
    for scrambled in (False, True):
        bpb = study.masked_bpb(model, config, stream, scrambled=scrambled)
        assert bpb == pytest.approx(8.0, abs=1e-5)  # log2(256)


def test_only_a_model_with_positions_pays_for_a_scrambled_window():
    stream = (torch.arange(400) * 7 % 251).to(torch.uint8)  # (bytes,)
    scores = {}
    for scheme in ("none", "absolute", "sinusoidal"):
        config = tiny(scheme, eval_bytes=400)
        model = initial_model(config)
        scores[scheme] = [
            study.masked_bpb(model, config, stream, scrambled=s) for s in (0, 1)
        ]
    assert scores["none"][0] == pytest.approx(scores["none"][1], abs=1e-6)
    for scheme in ("absolute", "sinusoidal"):
        assert abs(scores[scheme][0] - scores[scheme][1]) > 1e-4


@pytest.mark.parametrize("scheme", ["absolute", "sinusoidal"])
def test_the_masked_logits_of_the_tied_schemes_depend_on_the_order(scheme):
    model = initial_model(tiny(scheme)).eval()
    tokens = torch.randint(0, 256, (2, 8), generator=torch.Generator().manual_seed(0))
    tokens[:, 3] = MASK
    order = torch.tensor([3, 0, 1, 2, 7, 6, 5, 4])
    with torch.no_grad():
        plain = model(tokens)[:, 3]  # (b, classes): the masked position
        moved = model(tokens[:, order])[:, 0]  # the same masked byte, moved to 0
    assert (plain - moved).abs().max() > 1e-3


def test_an_arm_builds_its_scheme_with_its_scale():
    config = tiny("sinusoidal")
    plain = study.MaskedRun("sinusoidal", config).initial_model()
    large = study.MaskedRun("sinusoidal-x10", config).initial_model()
    assert torch.allclose(large.input_positions(8), 10 * plain.input_positions(8))
    key = study.MaskedRun("sinusoidal-x10", config).to_dict()
    assert key["arm"] == "sinusoidal-x10" and key["position_scale"] == 10.0
    with pytest.raises(ValueError, match="config.scheme"):
        study.MaskedRun("tupe", config)
    with pytest.raises(ValueError, match="arm"):
        study.MaskedRun("rotary", tiny("rotary"))
    with pytest.raises(ValueError, match="masked"):
        study.MaskedRun("sinusoidal", tiny("sinusoidal", setting="causal"))


def test_train_text_trains_the_model_it_is_given():
    config = tiny("absolute")
    start = initial_model(config)
    before = start.input_positions.weight.detach().clone()
    stream = (torch.arange(300) * 7 % 251).to(torch.uint8)  # (bytes,)
    trained = train_text(config, stream, model=start)
    assert trained.model is start
    assert not torch.equal(start.input_positions.weight, before)
    with pytest.raises(TypeError, match="model"):
        train_text(config, stream, model="absolute")


def record(arm: str, seed: int, bpb: float, scrambled: float | None = None,
           rate: float = study.RATE) -> dict:
    return {
        "arm": arm, "seed": seed, "learning_rate": rate, "curve": [5.0, bpb],
        "valid_bpb": bpb, "scrambled_bpb": bpb if scrambled is None else scrambled,
    }  # fmt: skip


def runs(absolute: float, tupe: float, order: float = 0.0) -> list[dict]:
    found = []
    for seed in (0, 1):
        found += [
            record("none", seed, 4.1),
            record("absolute", seed, absolute, absolute + order),
            record("sinusoidal", seed, 4.1),
            record("sinusoidal-x10", seed, 3.0),
            record("tupe", seed, tupe),
            record("deberta", seed, 2.0),
        ]
    return found + [record("absolute", 0, 4.2, rate=3.16e-2)]


def test_the_rule_holds_when_the_tied_arms_stay_and_the_others_leave():
    summary = summarize(runs(absolute=4.0, tupe=2.7))
    assert summary["verdict"] == "holds"
    cell = next(c for c in summary["cells"] if c["arm"] == "tupe")
    assert cell["below_none"] == pytest.approx([1.4, 1.4])
    assert cell["left_plateau"] and cell["curve"] == pytest.approx([5.0, 2.7])


@pytest.mark.parametrize(
    "changes",
    [
        dict(absolute=3.5, tupe=2.7),  # absolute left the plateau
        dict(absolute=4.0, tupe=4.0),  # TUPE did not
        dict(absolute=4.0, tupe=2.7, order=0.5),  # absolute reads the order
    ],
)
def test_the_rule_fails_otherwise(changes):
    assert summarize(runs(**changes))["verdict"] == "fails"


def test_the_rule_is_untested_without_an_arm_and_refuses_without_none():
    cells = summarize(runs(absolute=4.0, tupe=2.7))["cells"]
    assert verdict([c for c in cells if c["arm"] != "tupe"]) == "untested"
    with pytest.raises(ValueError, match="none"):
        summarize([r for r in runs(4.0, 2.7) if r["arm"] != "none"])


def test_the_figure_labels_every_axis():
    result = {
        "design": {"rate": study.RATE, "margin": study.MARGIN, "curve_every": 50},
        "summary": summarize(runs(absolute=4.0, tupe=2.7)),
    }
    fig = masked_figure(result)
    assert isinstance(fig, Figure) and len(fig.axes) == 3
    for ax in fig.axes:
        assert ax.get_xlabel() and ax.get_ylabel()


@pytest.mark.slow  # builds the corpus (tens of seconds on a loaded machine)
def test_a_rerun_of_the_study_trains_nothing(tmp_path, monkeypatch):
    calls = []
    job = study.masked_job

    def counted(kind, run, threads=1):
        calls.append(run.arm)
        return job(kind, run, threads)

    monkeypatch.setattr(study, "masked_job", counted)
    base = TextConfig(**TINY)
    first = masked_cli.run_study(base, [0], runs_dir=tmp_path, progress=False)
    assert len(calls) == len(masked_cli.plan(base, [0])) == 8
    assert len(list(tmp_path.iterdir())) == 8
    again = masked_cli.run_study(base, [0], runs_dir=tmp_path, progress=False)
    assert len(calls) == 8
    assert again["runs"] == first["runs"] and again["summary"] == first["summary"]
