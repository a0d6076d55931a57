"""relpos.book.experiments.interventions: each change touches only what it says.

Tiny models (width 8, a few steps); the hand-made attention patterns check the
path and bias measurements against numbers worked out by hand.
"""

from __future__ import annotations

import importlib
import json
import math
import subprocess
import sys

import pytest
import torch

from relpos.attention import DisentangledSelfAttention
from relpos.book.experiments import Config, TinyModel, get_task, model_seed, train
from relpos.book import results
from relpos.book.experiments.coverage import coverage
from relpos.book.experiments.interventions import (
    INTERVENTIONS,
    SCALED,
    Cell,
    ScaledSinusoidalPositions,
    Side,
    accuracy_with,
    cell_config,
    distance_mask,
    forward_layers,
    intervention_of,
    paired,
    redirect_row,
    rows_read,
    run_interventions,
)
from relpos.book.experiments.interventions.causal_t5 import bias_profile
from relpos.book.experiments.interventions.run import MEASURES, chosen_rate
from relpos.book.experiments.interventions import cli as interventions_cli
from relpos.book.experiments.interventions import two_hop
from relpos.book.experiments.interventions.two_hop import (
    cut_masks,
    hop_offsets,
    path_cut_accuracy,
    two_hop_weights,
)
from relpos.book.experiments.schemes import SinusoidalPositions
from relpos.book.experiments.train import initial_model
from relpos.positions import relative_positions
from relpos.schemes.t5 import t5_bucket

from _tiny import TINY, one_thread  # noqa: F401  (one_thread: autouse fixture)

TINY_CONFIG = Config(**{**TINY, "test_lengths": (8, 96)})


def _model(scheme: str, **changes: object) -> TinyModel:
    config = TINY_CONFIG.replace(scheme=scheme, **changes)
    return initial_model(config)


def _tokens(n: int, b: int = 3) -> torch.Tensor:
    return torch.randint(16, (b, n), generator=torch.Generator().manual_seed(n))


# -- the scaled sinusoid ---------------------------------------------------------------


@pytest.mark.parametrize("per_dimension", [False, True])
def test_scaled_sinusoid_starts_as_the_sinusoid(per_dimension: bool) -> None:
    fixed = SinusoidalPositions(8)
    scaled = ScaledSinusoidalPositions(8, per_dimension=per_dimension)
    assert scaled.scale.shape == ((1, 8) if per_dimension else (1, 1))
    assert torch.equal(scaled(40), fixed(40))
    with torch.no_grad():
        scaled.scale.mul_(2.0)
    assert torch.allclose(scaled(40), 2 * fixed(40))


@pytest.mark.parametrize("scheme", list(SCALED))
def test_scaled_scheme_differs_from_sinusoidal_by_its_factor_alone(scheme: str) -> None:
    """Built under sinusoidal's seed: every other weight and the logits are equal."""
    base = TINY_CONFIG.replace(scheme="sinusoidal")
    seed = model_seed(base)
    plain = initial_model(base, seed=seed)
    scaled = initial_model(base.replace(scheme=scheme), seed=seed)
    own = dict(scaled.named_parameters())
    assert set(own) - dict(plain.named_parameters()).keys() == {"input_positions.scale"}
    for name, value in plain.named_parameters():
        assert torch.equal(value, own[name]), name
    tokens = _tokens(24)
    assert torch.equal(plain(tokens), scaled(tokens))


def test_scaled_factor_trains_and_moves() -> None:
    config = TINY_CONFIG.replace(scheme="sinusoidal-scale", steps=5)
    trained = train(config).model.input_positions.scale.detach()
    assert not torch.equal(trained, ScaledSinusoidalPositions(8).scale.detach())


def test_scaled_coverage_reads_one_trained_factor() -> None:
    found = coverage(TINY_CONFIG.replace(scheme="sinusoidal-scale"), 16)
    assert found.kinds["scale"].learned and found.kinds["scale"].unseen == ()
    assert not found.kinds["query position"].learned
    assert found.untrained_touched == 0


def test_paired_seed_training_matches_the_default_seed() -> None:
    """``train(config, seed=model_seed(config))`` is ``train(config)``, bit for bit."""
    config = TINY_CONFIG.replace(scheme="absolute")
    a, b = train(config).model, train(config, seed=model_seed(config)).model
    for (name, x), y in zip(a.named_parameters(), b.parameters()):
        assert torch.equal(x, y), name


# -- surgery: per-layer masks ----------------------------------------------------------


@pytest.mark.parametrize(
    "scheme", ["absolute", "t5", "rotary", "deberta", "deberta-buckets", "shaw"]
)
@pytest.mark.parametrize("setting", ["encoder", "causal"])
def test_forward_layers_is_the_model(scheme: str, setting: str) -> None:
    model = _model(scheme, num_layers=2, setting=setting)
    tokens = _tokens(20)
    everything = torch.ones(20, 20, dtype=torch.bool)
    expected = model(tokens)
    logits, probs = forward_layers(model, tokens, probs=True)
    assert torch.allclose(logits, expected, atol=1e-6)
    assert len(probs) == 2 and probs[0].shape == (3, 2, 20, 20)
    masked, _ = forward_layers(model, tokens, [everything, None])
    assert torch.allclose(masked, expected, atol=1e-6)


def test_a_layer_mask_changes_that_layer_only() -> None:
    model = _model("t5", num_layers=2)
    tokens = _tokens(16)
    eye = torch.eye(16, dtype=torch.bool)
    _, (first, second) = forward_layers(model, tokens, [eye, None], probs=True)
    assert torch.allclose(first, torch.eye(16).expand_as(first))
    assert not torch.allclose(second, torch.eye(16).expand_as(second))
    logits, _ = forward_layers(model, tokens, [eye, None])
    assert not torch.allclose(logits, model(tokens))


def test_distance_mask_keeps_each_query_and_what_it_allows() -> None:
    mask = distance_mask(6, lambda rel: rel == 2)
    rel = relative_positions(6)
    assert torch.equal(mask, (rel == 2) | (rel == 0))
    with pytest.raises(ValueError, match="allowed"):
        distance_mask(6, lambda rel: rel[0])


def test_forward_layers_refuses_bad_masks_and_the_decoder() -> None:
    model = _model("deberta", num_layers=2)
    tokens = _tokens(10)
    with pytest.raises(ValueError, match="masks must be of shape"):
        forward_layers(model, tokens, torch.ones(9, 9, dtype=torch.bool))
    with pytest.raises(TypeError, match="bool"):
        forward_layers(model, tokens, torch.ones(10, 10))
    with pytest.raises(ValueError, match="list of 2"):
        forward_layers(model, tokens, [None])
    with pytest.raises(ValueError, match="deberta-emd"):
        forward_layers(_model("deberta-emd"), tokens)


# -- surgery: row 0 of deberta-buckets -------------------------------------------------


def test_redirect_changes_only_the_pairs_that_read_the_row() -> None:
    model = _model("deberta-buckets")
    with torch.no_grad():
        model.encoder.table.weight[0].normal_()  # make row 0 unlike row 1
    short, long = _tokens(64), _tokens(90)
    assert not (rows_read(model, 64) == 0).any()  # no key 64 ahead at n = 64
    assert (rows_read(model, 90) == 0).any()
    before = model.encoder.layers[0].attention.lookup.clone()
    with redirect_row(model, 0, 1):
        assert torch.equal(model(short), _model_copy(model)(short))
        redirected = model(long)
    assert torch.equal(model.encoder.layers[0].attention.lookup, before)  # restored
    assert not torch.allclose(redirected, model(long))
    twin = _model_copy(model)
    with torch.no_grad():
        twin.encoder.table.weight[0] = twin.encoder.table.weight[1]
    assert torch.allclose(redirected, twin(long), atol=1e-6)


def _model_copy(model: TinyModel) -> TinyModel:
    twin = TinyModel(model.config)
    twin.load_state_dict(model.state_dict())
    return twin


def test_masking_row_zero_changes_nothing_where_it_is_not_read() -> None:
    model = _model("deberta-buckets")
    task = get_task("relative")
    for n, same in ((64, True), (90, False)):
        tokens = _tokens(n, b=8)
        keep = rows_read(model, n) != 0
        logits, _ = forward_layers(model, tokens, keep)
        assert torch.allclose(logits, model(tokens), atol=1e-6) is same
        if same:
            labels = task.labels(tokens)
            assert accuracy_with(model, task, tokens, labels, keep) == accuracy_with(
                model, task, tokens, labels
            )


def test_training_with_row_zero_redirected_is_the_same_model(monkeypatch) -> None:
    """At L no pair reads row 0: training with it redirected changes no weight."""
    config = TINY_CONFIG.replace(scheme="deberta-buckets", steps=4)
    plain = train(config).model
    trainer = importlib.import_module("relpos.book.experiments.train")
    original = trainer.initial_model

    def redirected_start(config: Config, *, seed: int | None = None) -> TinyModel:
        model = original(config, seed=seed)
        for attention in model.modules():
            if isinstance(attention, DisentangledSelfAttention):
                attention.lookup[attention.lookup == 0] = 1
        return model

    monkeypatch.setattr(trainer, "initial_model", redirected_start)
    redirected = trainer.train(config).model
    assert not (redirected.encoder.layers[0].attention.lookup == 0).any()
    for (name, a), b in zip(plain.named_parameters(), redirected.parameters()):
        assert torch.equal(a, b), name


def test_redirect_refuses_other_schemes_and_rows() -> None:
    with pytest.raises(ValueError, match="DeBERTa"):
        with redirect_row(_model("t5"), 0, 1):
            pass
    with pytest.raises(ValueError, match="rows 0 .. 15"):
        with redirect_row(_model("deberta-buckets"), 0, 16):
            pass


# -- the two-hop path ------------------------------------------------------------------


def _shift_probs(n: int, shift: int, heads: int = 2) -> torch.Tensor:
    """Every head attends to the key ``shift`` back (itself where there is none)."""
    rel = relative_positions(n)
    target = (rel == shift) | ((rel == 0) & (torch.arange(n)[:, None] < shift))
    return target.float().expand(1, heads, n, n).clone()  # (1, h, n, n)


def test_two_hop_weights_by_hand() -> None:
    first, second = _shift_probs(20, 5), _shift_probs(20, 7)
    weights = two_hop_weights(first, second, 12)
    assert torch.allclose(weights, torch.ones(2, 2))  # 7 back, then 5 further
    assert hop_offsets(first, second, 12, (0, 0))[0] == [7, pytest.approx(1.0)]
    direct = two_hop_weights(_shift_probs(20, 0), _shift_probs(20, 12), 12)
    assert torch.allclose(direct, torch.zeros(2, 2))  # one hop: not through another
    with pytest.raises(ValueError, match="distance"):
        two_hop_weights(first, second, 20)


def test_cut_masks_remove_each_querys_routes_only() -> None:
    first, second = cut_masks(20, [12, 15], 12, "no_one_hop")
    assert (~first).sum() == 2 and not first[0, 12, 0] and not second[1, 15, 3]
    assert torch.equal(first, second)
    first, second = cut_masks(20, [15], 12, "no_two_hop")
    assert second.all() and (~first).sum() == 18 and first[0, 15, 3] and first[0, 3, 3]
    assert not first[0, :, 3].sum() > 2
    first, second = cut_masks(20, [15], 12, "no_first_hop")
    assert second.all() and (~first).sum() == 1 and not first[0, 15, 3]
    with pytest.raises(ValueError, match="cut"):
        cut_masks(20, [15], 12, "both")


@pytest.mark.parametrize("scheme", ["t5", "deberta"])
def test_both_cuts_together_leave_no_route_from_the_key(scheme: str) -> None:
    """The two kinds are every route: with both cut, x[i - 12] cannot reach i."""
    model = _model(scheme, num_layers=2)
    tokens = _tokens(24, b=1)
    changed = tokens.clone()
    changed[0, 5] = (changed[0, 5] + 1) % 16  # the key 12 back of query 17
    outputs = {}
    for cuts in (("no_one_hop",), ("no_two_hop",), ("no_one_hop", "no_two_hop")):
        masks = [torch.ones(1, 24, 24, dtype=torch.bool)] * 2
        for cut in cuts:
            masks = [a & b for a, b in zip(masks, cut_masks(24, [17], 12, cut))]
        pair = [forward_layers(model, t, masks)[0][0, 17] for t in (tokens, changed)]
        outputs[cuts] = torch.allclose(*pair, atol=1e-6)
    assert outputs == {
        ("no_one_hop",): False,
        ("no_two_hop",): False,
        ("no_one_hop", "no_two_hop"): True,
    }


def test_path_cut_accuracy_matches_one_query_at_a_time(monkeypatch) -> None:
    config = TINY_CONFIG.replace(scheme="t5", num_layers=2, task="far")
    model = initial_model(config)
    task = get_task("far")
    tokens = _tokens(20, b=4)
    labels = task.labels(tokens)
    right = 0
    for i in range(12, 20):
        masks = [m[0] for m in cut_masks(20, [i], 12, "no_two_hop")]
        logits, _ = forward_layers(model, tokens, masks)
        right += (logits[:, i].argmax(-1) == labels[:, i]).sum().item()
    expected = right / task.scored(labels).sum().item()
    monkeypatch.setattr(two_hop, "CUT_BATCH", 3 * 4 * 20 * 20)  # batches of 3 queries
    assert path_cut_accuracy(model, config, tokens, labels, "no_two_hop") == expected


# -- causal T5: gap, competitors -------------------------------------------------------


def _profile(visible: torch.Tensor, n: int, gap: float) -> dict:
    buckets = t5_bucket(relative_positions(n), num_buckets=16, max_distance=32)
    rows = torch.zeros(1, 16)
    rows[0, 3] = gap
    scored = torch.arange(n) >= 3
    return bias_profile(rows, buckets, visible, scored, 3)


def test_bias_profile_by_hand() -> None:
    n, gap = 40, 2.0
    found = _profile(torch.ones(n, n, dtype=torch.bool), n, gap)
    assert found["gap"] == [pytest.approx(gap)]
    assert found["competitors"] == n - 1
    assert found["share"][0] == pytest.approx(math.exp(gap) / (math.exp(gap) + n - 1))
    assert found["effective_gap"][0] == pytest.approx(gap, abs=1e-4)
    behind = _profile(torch.ones(n, n, dtype=torch.bool).tril(), n, gap)
    assert behind["competitors"] == pytest.approx(sum(range(3, n)) / (n - 3))
    assert behind["share"][0] > found["share"][0]  # fewer keys, same gap
    assert behind["effective_gap"][0] == pytest.approx(gap, abs=1e-4)


def test_bias_profile_refuses_a_target_nobody_sees() -> None:
    with pytest.raises(ValueError, match="no scored query"):
        _profile(torch.eye(10, dtype=torch.bool), 10, 1.0)


# -- comparisons and the run -----------------------------------------------------------


def test_paired_aligns_seeds_and_refuses_a_mismatch() -> None:
    records = [
        {"seed": s, "arm": a, "value": v}
        for s, a, v in [(1, "x", 0.9), (0, "x", 0.5), (0, "y", 0.4), (1, "y", 0.6)]
    ]
    found = paired(
        records,
        "x - y",
        Side("x", {"arm": "x"}, lambda r: r["value"]),
        Side("y", {"arm": "y"}, lambda r: r["value"]),
    )
    assert found["seeds"] == [0, 1]
    assert found["a_values"] == [0.5, 0.9] and found["b_values"] == [0.4, 0.6]
    assert found["mean"] == pytest.approx(0.2) and found["wins"] == 2
    with pytest.raises(ValueError, match="same two or more seeds"):
        paired(records[:3], "x - y", Side("x", {"arm": "x"}, lambda r: r["value"]),
               Side("y", {"arm": "y"}, lambda r: r["value"]))


def test_cells_take_the_committed_sweeps_settings_and_rates() -> None:
    layers = cell_config(INTERVENTIONS["two_hop"].cells[1], 3)
    assert (layers.scheme, layers.num_layers, layers.task) == ("deberta", 2, "far")
    chosen = [
        c["learning_rate"]
        for c in results.load("protocol/sweep_layers.json")["tuning"]["chosen"]
        if (c["scheme"], c["task"], c["train_size"]) == ("deberta", "far", 512)
    ]
    assert [layers.learning_rate] == chosen and layers.seed == 3
    scaled = [c for c in INTERVENTIONS["sinusoid_scale"].cells if c.scheme in SCALED]
    sines = cell_config(Cell("sweep.json", "encoder", "relative", "sinusoidal", 32), 0)
    for cell in scaled:
        assert cell_config(cell, 0).learning_rate == sines.learning_rate
    assert intervention_of(layers).name == "two_hop"
    with pytest.raises(ValueError, match="cell of an intervention"):
        intervention_of(TINY_CONFIG.replace(scheme="alibi"))


def test_chosen_rate_per_training_size() -> None:
    cell = Cell("sweep.json", "encoder", "relative", "t5", 32)
    chosen = [
        {"setting": "encoder", "task": "relative", "scheme": "t5", "train_size": z,
         "learning_rate": rate}
        for z, rate in ((8, 0.02), (32, 0.005))
    ]
    assert chosen_rate({"tuning": {"chosen": chosen}}, cell) == 0.005
    with pytest.raises(ValueError, match="one chosen rate"):
        chosen_rate({"tuning": {"chosen": chosen[:1]}}, cell)


@pytest.mark.slow
def test_run_writes_every_arm_and_comparison(tmp_path) -> None:
    changes = {"steps": 2, "test_size": 4, "test_lengths": (32, 96)}
    result = run_interventions(
        ["row_zero", "causal_t5"], seeds=[0, 1], changes=changes, workers=1,
        runs_dir=tmp_path, progress=False,
    )
    row = result["interventions"]["row_zero"]
    assert len(row["runs"]) == 4 and {r["target"] for r in row["runs"]} == {1}
    arms = {"intact", "redirected", "masked"}
    assert all(set(r["arms"]) == arms for r in row["runs"])
    at_l = [c for c in row["comparisons"] if c["name"].endswith("n = 32")]
    assert at_l and all(c["mean"] == 0 for c in at_l)  # nothing reads row 0 at L
    t5 = result["interventions"]["causal_t5"]
    assert {r["setting"] for r in t5["runs"]} == {"encoder", "causal"}
    assert len(t5["comparisons"]) == 2 * 12 and result["seeds"] == [0, 1]
    readout = t5["runs"][0]["readout"]["keys_behind"]["96"]
    assert len(readout["attention"]) == 4 and 0 <= readout["no_token"] <= 1
    stale = sorted(tmp_path.glob("measured-*.json"))[0]
    data = json.loads(stale.read_text())
    data["record"].update(measures=MEASURES - 1, final_loss=-1.0)
    stale.write_text(json.dumps(data))
    again = run_interventions(
        ["row_zero", "causal_t5"], seeds=[0, 1], changes=changes, workers=1,
        runs_dir=tmp_path, progress=False,
    )
    runs = [r for item in again["interventions"].values() for r in item["runs"]]
    assert all(r["measures"] == MEASURES and r["final_loss"] >= 0 for r in runs)
    def numbers(runs: list[dict]) -> list[dict]:
        return [{k: v for k, v in r.items() if not k.endswith("seconds")} for r in runs]

    # read back, or (the stale one) run again to the same numbers
    assert numbers(again["interventions"]["row_zero"]["runs"]) == numbers(row["runs"])


@pytest.mark.slow
def test_cli_refuses_bad_flags_in_one_line(tmp_path, capsys) -> None:
    # The command itself once (python -m: its exit status and stderr), then the
    # same parser in this process for the other flags (each a Python start less).
    output = ["--output", str(tmp_path / "x.json")]
    done = subprocess.run(
        [sys.executable, "-m", "relpos.book.experiments.interventions",
         "--only", "nope", *output],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2, done.stderr
    assert "--only" in done.stderr and done.stderr.count("\n") == 1
    for flags, flag in ((["--steps", "0"], "--steps"), (["--seeds", "1,1"], "--seeds")):
        with pytest.raises(SystemExit) as exited:
            interventions_cli.main([*flags, *output])
        assert exited.value.code == 2
        stderr = capsys.readouterr().err
        assert flag in stderr and stderr.count("\n") == 1, stderr
    assert not (tmp_path / "x.json").exists()
    json.dumps(INTERVENTIONS["row_zero"].claim)  # the claims are plain text


@pytest.mark.parametrize(
    "module, changes",
    [
        ("row_zero", {"scheme": "deberta"}),
        ("causal_t5", {"scheme": "alibi"}),
        ("two_hop", {"scheme": "t5", "task": "far"}),  # one layer
        ("sinusoid", {"scheme": "rotary"}),
    ],
)
def test_each_measure_refuses_a_cell_it_cannot_read(module: str, changes: dict) -> None:
    measure = importlib.import_module(
        f"relpos.book.experiments.interventions.{module}"
    ).measure
    with pytest.raises(ValueError, match="scheme|num_layers"):
        measure(TINY_CONFIG.replace(**changes))
