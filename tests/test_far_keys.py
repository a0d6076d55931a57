"""Chapter 11's masked rise by intervention (``relpos.book.text.far_keys``): the
pairs each cut keeps, the four readings on the same masked bytes (the full one is
the text sweep's own evaluation), the contrasts, and the ledger's verdict on
synthetic results whichever way they go."""

from __future__ import annotations

import math

import pytest
import torch

from relpos.book.experiments.verdicts import mechanisms as verdicts
from relpos.book.results import ledger
from relpos.book.text import far_keys
from relpos.book.text.config import TextConfig
from relpos.book.text.context import module_ids
from relpos.book.text.train import evaluate_length, initial_model


def test_each_cut_keeps_the_keys_it_names():
    """span 2 at W = 6: ``cut`` keeps |i - j| < 2, ``ahead`` drops keys 2 or more
    ahead, ``behind`` keys 2 or more behind; every query keeps its own key."""
    assert far_keys.keep_rule("full", 6, 2) is None
    cut, ahead, behind = (
        far_keys.keep_rule(r, 6, 2) for r in ("cut", "ahead", "behind")
    )
    assert cut[3].tolist() == [False, False, True, True, True, False]
    assert ahead[3].tolist() == [True, True, True, True, True, False]
    assert behind[3].tolist() == [False, False, True, True, True, True]
    assert (cut == (ahead & behind)).all()
    assert all(bool(m.diagonal().all()) for m in (cut, ahead, behind))
    with pytest.raises(ValueError, match="reading"):
        far_keys.keep_rule("left", 6, 2)


def _masked(span: int) -> TextConfig:
    return TextConfig(
        setting="masked", scheme="deberta", steps=2, train_length=8,
        eval_lengths=(8, 32), eval_bytes=4000, hidden_size=16, num_heads=2,
        batch_size=4, max_relative_positions=span,
    )


def test_full_reading_is_the_text_sweeps_evaluation_and_cuts_change_the_rest():
    """On one model: ``full`` equals ``train.evaluate_length`` at each W (same
    windows, same corrupted bytes); each cut changes the loss when keys lie k or
    more away; with k beyond the window every reading is the full one."""
    config = _masked(span=2)
    torch.manual_seed(0)
    model = initial_model(config).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.3 * torch.randn_like(parameter))
    generator = torch.Generator().manual_seed(0)
    stream = torch.randint(1, 256, (config.eval_bytes,), generator=generator)
    stream[499::500] = 0  # eight modules, each closed by its 0 as in the corpus
    stream = stream.to(torch.uint8)
    modules = int(module_ids(stream)[-1]) + 1
    for width in config.eval_lengths:
        found = far_keys.read_width(model, config, stream, width, modules)
        expected = evaluate_length(model, config, stream, width)
        assert found["full"]["loss"] == pytest.approx(expected["loss"], rel=1e-9)
        assert found["full"]["scored"] == expected["predicted"]
        assert sum(found["module_counts"]) == expected["predicted"]
        for name in far_keys.READINGS:
            assert sum(found[name]["module_sums"]) == pytest.approx(
                found[name]["loss"] * found[name]["scored"], rel=1e-3)
        for name in ("cut", "ahead", "behind"):
            assert found[name]["loss"] != found["full"]["loss"]
        # k = 64 beyond the window: every cut keeps every key (the full reading takes
        # the kernel's band and far fields, the cuts its general path: to rounding)
        wide = far_keys.read_width(model, _masked(span=64), stream, width, modules)
        for name in far_keys.READINGS:
            assert wide[name]["loss"] == pytest.approx(wide["full"]["loss"], rel=1e-6)


def _run(seed: int, rises: dict[str, float], scheme: str = "deberta") -> dict:
    """A synthetic measured run at L = 64: loss 1.0 up to 4L, then each reading's
    rise at 8L and twice it at 16L; two modules of equal weight."""
    widths = {"64": 0.0, "256": 0.0, "512": 1.0, "1024": 2.0}
    noise = 0.001 * seed
    run = {"scheme": scheme, "seed": seed, "module_sums": {}, "module_counts": {}}
    for name in far_keys.READINGS:
        losses = {w: 1.0 + f * rises[name] + noise for w, f in widths.items()}
        run[name] = {w: {"loss": v} for w, v in losses.items()}
        run["module_sums"][name] = {w: [10 * v, 10 * v] for w, v in losses.items()}
    run["module_counts"] = {w: [10, 10] for w in widths}
    return run


def _result(rises: dict[str, float]) -> dict:
    runs = [_run(s, rises, scheme) for scheme in ("deberta", "shaw") for s in range(10)]
    return {"config": {"train_length": 64}, "runs": runs,
            "contrasts": far_keys.contrasts(runs, 64)}


def test_contrasts_read_the_rise_and_the_share_each_cut_removes():
    result = _result({"full": 0.2, "cut": 0.0, "ahead": 0.1, "behind": 0.1})
    row = next(r for r in result["contrasts"]
               if (r["scheme"], r["length"]) == ("deberta", 1024))
    assert row["rise_over_4l"]["full"] == pytest.approx(0.4)
    assert row["share_removed"]["cut"] == pytest.approx(1.0)
    assert row["share_removed"]["ahead"] == pytest.approx(0.5)
    difference = row["full_minus"]["cut"]
    assert difference["mean"] == pytest.approx(0.4)
    assert difference["interval"][0] > 0 and difference["p_value"] < 0.05
    flat = next(r for r in result["contrasts"] if r["length"] == 256)
    assert flat["share_removed"]["cut"] is None  # nothing rose to remove


@pytest.mark.parametrize(
    "rises, verdict",
    [
        ({"full": 0.2, "cut": 0.0, "ahead": 0.1, "behind": 0.1}, "holds"),
        ({"full": 0.2, "cut": 0.1, "ahead": 0.15, "behind": 0.15}, "qualified"),
        ({"full": 0.2, "cut": 0.2, "ahead": 0.2, "behind": 0.2}, "fails"),
        ({"full": 0.2, "cut": 0.3, "ahead": 0.2, "behind": 0.2}, "fails"),
    ],
    ids=["recovered", "partly", "nothing", "worse"],
)
def test_the_verdict_whichever_way_it_goes(rises, verdict):
    record = verdicts.masked_far_keys(_result(rises))
    assert record["verdict"] == verdict
    assert record["id"] == "mechanism-masked-far-keys" and record["seeds"] == 10
    assert record["prediction"].startswith("On the same trained masked DeBERTa")
    assert "shaw at 16L" in record["mechanism"]
    ledger.check_record(record)


def test_a_file_of_fewer_than_ten_seeds_states_no_verdict(tmp_path):
    result = _result({"full": 0.2, "cut": 0.0, "ahead": 0.1, "behind": 0.1})
    result["runs"] = [r for r in result["runs"] if r["seed"] < 3]
    path = tmp_path / verdicts.FAR_KEYS_FILE
    path.parent.mkdir(parents=True)
    path.write_text(__import__("json").dumps(result))
    found = {r["id"]: r for r in verdicts.records(tmp_path)}
    assert found["mechanism-masked-far-keys"]["verdict"] == "untested"
    assert "make mechanism-far-keys" in found["mechanism-masked-far-keys"]["mechanism"]


def test_the_cli_defaults_are_the_design():
    args = far_keys.build_parser().parse_args([])
    assert args.setting == ["masked"] and args.scheme == ["deberta", "shaw"]
    assert args.seed == list(range(10)) and args.tune_seeds == [100, 101]
    assert args.eval_lengths == [64, 256, 512, 1024]
    assert math.isclose(args.eval_bytes, far_keys.WHOLE_SPLIT)


def test_the_figure_draws_the_committed_losses_and_differences():
    from relpos.book import results
    from relpos.book.text.far_keys_plot import bits, far_keys_figure

    result = results.load("probes/far_keys.json")
    rows = {(r["scheme"], r["length"]): r for r in result["contrasts"]}
    L = result["config"]["train_length"]
    figure = far_keys_figure(result)
    *panels, cut_panel = figure.axes
    assert [ax.get_title() for ax in panels] == list(far_keys.SCHEMES)
    for ax in panels:
        scheme = ax.get_title()
        for line, reading in zip(ax.lines, far_keys.READINGS):
            for x, y in line.get_xydata().tolist():
                assert y == pytest.approx(bits(rows[scheme, round(x * L)][reading]))
    assert {bars.get_label() for bars in cut_panel.containers} == set(far_keys.SCHEMES)
    for bars in cut_panel.containers:
        for x, y in bars.lines[0].get_xydata().tolist():
            row = rows[bars.get_label(), round(x * L)]
            assert y == pytest.approx(bits(row["full_minus"]["cut"]["mean"]))
    assert all(ax.get_xlabel() and ax.get_ylabel() for ax in figure.axes)


def test_the_figure_refuses_schemes_the_result_lacks():
    from relpos.book import results
    from relpos.book.text.far_keys_plot import far_keys_figure

    result = results.load("probes/far_keys.json")
    with pytest.raises(ValueError, match="schemes"):
        far_keys_figure(result, ["alibi"])
    with pytest.raises(ValueError, match="far-keys JSON"):
        far_keys_figure({"contrasts": []})
    assert len(far_keys_figure(result, ["shaw"]).axes) == 2
