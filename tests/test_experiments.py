"""relpos.book.experiments: tasks, schemes, model, trainer, measures, sweep and CLI.

Every training run here is tiny (a few steps, width 8-32) except one: the
deberta scheme learning the relative task, a few hundred steps of a width-32
model (a couple of seconds), against the no-position scheme as a control.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from relpos.book.experiments import (
    NO_TOKEN,
    SCHEMES,
    TASKS,
    Config,
    TinyModel,
    attention_peaks,
    band_profile,
    build_scheme,
    by_distance,
    compare,
    data_seed,
    derive_seed,
    evaluate,
    get_task,
    mean_scores,
    model_seed,
    numbers_only,
    register_scheme,
    run_one,
    run_sweep,
    table_similarity,
    train,
)
from relpos.book.experiments.cli import main
from relpos.book.experiments.tasks import Task, position_labels, shifted_labels

from _tiny import TINY, one_thread  # noqa: E402, F401  (one_thread: autouse fixture)


@pytest.fixture
def registry():
    """Restore ``SCHEMES`` after a test that registers schemes."""
    saved = dict(SCHEMES)
    yield SCHEMES
    SCHEMES.clear()
    SCHEMES.update(saved)


# -- tasks -----------------------------------------------------------------------------


def test_shifted_labels_by_hand():
    tokens = torch.tensor([[5, 1, 2, 3, 4], [0, 0, 7, 9, 15]])
    expected = torch.tensor(
        [[NO_TOKEN, NO_TOKEN, 5, 1, 2], [NO_TOKEN, NO_TOKEN, 0, 0, 7]]
    )
    assert torch.equal(shifted_labels(tokens, 2), expected)
    assert torch.equal(shifted_labels(tokens, 7), torch.full_like(tokens, NO_TOKEN))


def test_position_labels_by_hand():
    tokens = torch.zeros(2, 7, dtype=torch.long)
    assert position_labels(tokens, 4).tolist() == [[0, 1, 2, 3, 0, 1, 2]] * 2
    assert position_labels(tokens, 3)[0].tolist() == [0, 1, 2, 0, 1, 2, 0]


def test_registered_tasks_follow_their_rule():
    tokens, labels = get_task("relative").sample(3, 20, seed=1)
    shift = TASKS["relative"].param
    assert torch.equal(labels[:, shift:], tokens[:, :-shift])
    assert (labels[:, :shift] == NO_TOKEN).all()
    far = TASKS["far"]
    assert far.param > Config().max_relative_positions  # beyond the clipping window
    tokens, labels = far.sample(2, 30, seed=0)
    assert torch.equal(labels[:, far.param :], tokens[:, : 30 - far.param])
    _, labels = get_task("absolute").sample(2, 9, seed=0)
    assert labels[0].tolist() == [i % TASKS["absolute"].param for i in range(9)]


def test_sampling_is_seeded():
    task = get_task("relative")
    a, la = task.sample(4, 12, seed=7)
    b, lb = task.sample(4, 12, seed=7)
    c, _ = task.sample(4, 12, seed=8)
    assert torch.equal(a, b) and torch.equal(la, lb)
    assert not torch.equal(a, c)
    assert int(a.min()) >= 0 and int(a.max()) < task.vocab_size


def test_scored_positions_and_classes():
    task = Task("t", "shift", 2)
    labels = task.labels(torch.arange(6)[None])
    assert task.scored(labels).tolist() == [[False, False, True, True, True, True]]
    assert task.num_classes == task.vocab_size + 1
    position = Task("p", "position", 5)
    assert position.scored(position.labels(torch.zeros(1, 4, dtype=torch.long))).all()
    assert position.num_classes == 5


def test_task_errors():
    with pytest.raises(ValueError, match="task"):
        get_task("nope")
    with pytest.raises(ValueError, match="shift"):
        shifted_labels(torch.zeros(1, 3, dtype=torch.long), 0)
    with pytest.raises(ValueError, match="length"):
        get_task("relative").sample(2, 0, seed=0)
    with pytest.raises(TypeError, match="seed"):
        get_task("relative").sample(2, 4, seed=1.5)


# -- config and seeds ------------------------------------------------------------


def test_config_rejects_bad_values():
    with pytest.raises(ValueError, match="steps"):
        Config(steps=0)
    with pytest.raises(ValueError, match="hidden_size must be divisible by num_heads"):
        Config(hidden_size=30, num_heads=4)
    with pytest.raises(TypeError, match="test_lengths"):
        Config(test_lengths=[32, 64])
    with pytest.raises(ValueError, match="learning_rate"):
        Config(learning_rate=-1.0)
    assert Config(train_length=40, test_lengths=(8, 16)).max_length == 40


def test_seeds_depend_on_their_parts_only():
    config = Config(seed=3, task="far", scheme="deberta", train_size=64)
    other_scheme = config.replace(scheme="none")
    assert data_seed(config, 32, "train") == data_seed(other_scheme, 32, "train")
    assert data_seed(config, 64, "test") == data_seed(
        config.replace(train_size=8), 64, "test"
    )
    assert model_seed(config) != model_seed(other_scheme)
    assert model_seed(config) == model_seed(config.replace(steps=7, hidden_size=64))
    assert model_seed(config) != model_seed(config.replace(seed=4))
    assert data_seed(config, 32, "train") != data_seed(config, 32, "test")
    assert 0 <= derive_seed("x") < 2**63


@pytest.mark.slow  # a fresh Python process imports torch
def test_derived_seed_is_the_same_in_a_fresh_process():
    code = (
        "from relpos.book.experiments import derive_seed; "
        "print(derive_seed('model', 1, 'far'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert int(out.stdout) == derive_seed("model", 1, "far")


# -- schemes and model -----------------------------------------------------------


@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_every_scheme_runs_with_padding(scheme):
    config = Config(scheme=scheme, **TINY)
    model = TinyModel(config).eval()
    tokens = torch.randint(16, (2, 7))
    mask = torch.tensor([[1] * 7, [1] * 4 + [0] * 3])
    logits = model(tokens, mask)
    assert logits.shape == (2, 7, get_task(config.task).num_classes)
    assert torch.isfinite(logits).all()
    changed = tokens.clone()
    changed[1, 4:] = (changed[1, 4:] + 5) % 16  # only padded tokens differ
    again = model(changed, mask)
    assert torch.allclose(
        again[1, :4], logits[1, :4], atol=1e-5
    ), "padding leaked into tokens"
    assert torch.allclose(again[0], logits[0], atol=1e-6)
    unmasked = model(changed)
    assert not torch.allclose(
        unmasked[1, :4], logits[1, :4], atol=1e-5
    ), "mask had no effect"


def test_position_information_reaches_the_model_only_through_the_scheme():
    tokens = torch.randint(16, (1, 9))
    rolled = tokens.roll(3, dims=1)
    outputs = {}
    for scheme in ("none", "absolute", "deberta"):
        model = TinyModel(Config(scheme=scheme, **TINY)).eval()
        outputs[scheme] = (model(tokens), model(rolled))
    plain, moved = outputs["none"]
    assert torch.allclose(moved, plain.roll(3, dims=1), atol=1e-5)  # a bag of tokens
    for scheme in ("absolute", "deberta"):
        plain, moved = outputs[scheme]
        assert not torch.allclose(moved, plain.roll(3, dims=1), atol=1e-4)


def test_absolute_table_refuses_longer_sequences():
    model = TinyModel(Config(scheme="absolute", **TINY))
    assert model.input_positions.weight.shape[0] == 16  # the longest test length
    with pytest.raises(ValueError, match="seq_len must be <= max_length=16"):
        model(torch.zeros(1, 17, dtype=torch.long))


def test_sinusoidal_positions_work_at_any_length():
    model = TinyModel(Config(scheme="sinusoidal", **TINY)).eval()
    assert model(torch.zeros(1, 40, dtype=torch.long)).shape[1] == 40
    assert sum(p.numel() for p in model.input_positions.parameters()) == 0


def test_registry_errors(registry):
    def builder(config):
        return build_scheme("none", config)

    with pytest.raises(ValueError, match="already a scheme"):
        register_scheme("deberta", builder)
    with pytest.raises(ValueError, match="name must be"):
        register_scheme("Bad,Name", builder)
    with pytest.raises(TypeError, match="builder must be callable"):
        register_scheme("fine", 3)
    with pytest.raises(ValueError, match="scheme must be one of"):
        build_scheme("nope", Config())
    register_scheme("junk", lambda config: "not a pair")
    with pytest.raises(TypeError, match="scheme 'junk'"):
        TinyModel(Config(scheme="junk", **TINY))
    register_scheme("junk", lambda config: (None, "not a module"), replace=True)
    with pytest.raises(TypeError, match="encoder must be an nn.Module"):
        TinyModel(Config(scheme="junk", **TINY))


def test_a_registered_scheme_trains_without_other_changes(registry, tmp_path):
    register_scheme("none-again", SCHEMES["none"])
    base = Config(task="relative", **TINY)
    ours = TinyModel(base.replace(scheme="none-again"))
    plain = TinyModel(base.replace(scheme="none"))
    assert [(name, p.shape) for name, p in ours.named_parameters()] == [
        (name, p.shape) for name, p in plain.named_parameters()
    ]
    output = tmp_path / "out.json"
    flags = ["--schemes", "none-again", "--task", "relative", *TINY_FLAGS]
    main([*flags, "--output", str(output)])
    data = json.loads(output.read_text())
    assert data["grid"]["scheme"] == ["none-again"]
    (run,) = data["runs"]  # one task, size and seed
    assert run["scheme"] == "none-again" and set(run["accuracy"]) == {"8", "16"}
    # the numbers of an ordinary run of the scheme, trained here again
    assert numbers_only(run) == numbers_only(run_one(base.replace(scheme="none-again")))
    assert {row["scheme"] for row in data["summary"]} == {"none-again"}


# -- training and measurements ---------------------------------------------------


def test_training_is_deterministic():
    config = Config(task="far", scheme="deberta-buckets", **{**TINY, "steps": 12})
    first, second = train(config), train(config)
    assert first.losses == second.losses
    for (name, a), (_, b) in zip(
        first.model.state_dict().items(), second.model.state_dict().items()
    ):
        assert torch.equal(a, b), name
    assert evaluate(first.model, config) == evaluate(second.model, config)
    assert train(config.replace(seed=1)).losses != first.losses


@pytest.mark.slow
def test_deberta_learns_the_relative_task_and_no_positions_cannot():
    # 150 steps reach 100% at both lengths for seeds 0-4; 0.9 leaves room for others.
    config = Config(
        task="relative",
        scheme="deberta",
        train_size=256,
        steps=150,
        test_lengths=(32, 128),
        test_size=32,
    )
    model = train(config).model
    learned = evaluate(model, config)
    assert learned[32] > 0.9 and learned[128] > 0.9, learned
    # some head has learnt to look exactly `shift` positions back
    assert TASKS["relative"].param in attention_peaks(model, config)
    blind = evaluate(train(config.replace(scheme="none")).model, config)
    assert blind[32] < 0.4, blind


def test_band_profile_and_by_distance_by_hand():
    assert band_profile(torch.eye(3)) == [1.0, 0.0, 0.0]
    assert band_profile(torch.ones(4, 4)) == [1.0] * 4
    with pytest.raises(ValueError, match="square"):
        band_profile(torch.ones(2, 3))
    n = 4
    rel = (
        torch.arange(n)[:, None] - torch.arange(n)[None, :]
    ).double()  # (i, j) = i - j
    distances, means = by_distance(torch.stack([rel, 2 * rel]))
    assert distances == list(range(-3, 4))
    assert means[0].tolist() == [float(d) for d in distances]
    assert means[1].tolist() == [2.0 * d for d in distances]


def test_table_measurements():
    config = Config(scheme="deberta", **TINY)
    model = TinyModel(config)
    similarity = table_similarity(model)
    span = config.max_relative_positions
    assert similarity.shape == (2 * span, 2 * span)
    assert torch.allclose(
        similarity.diagonal(), torch.ones(2 * span, dtype=similarity.dtype)
    )
    assert table_similarity(TinyModel(config.replace(scheme="absolute"))) is None
    scores = mean_scores(model, torch.randint(16, (3, 6)))
    assert scores.c2p.shape == scores.p2c.shape == (1, config.num_heads, 6, 6)
    assert torch.allclose(scores.probs.sum(-1), torch.ones(1, config.num_heads, 6))
    with pytest.raises(ValueError, match="DeBERTa scheme"):
        mean_scores(
            TinyModel(config.replace(scheme="none")),
            torch.zeros(1, 4, dtype=torch.long),
        )


def test_run_record_and_band_entries():
    record = run_one(Config(scheme="deberta", **TINY))
    assert set(record["accuracy"]) == {"8", "16"}
    assert all(0.0 <= a <= 1.0 for a in record["accuracy"].values())
    span = Config().max_relative_positions
    assert len(record["band"]["trained"]) == len(record["band"]["initial"]) == 2 * span
    assert record["band"]["initial"][0] == pytest.approx(1.0)
    assert len(record["attention_peaks"]) == Config(**TINY).num_heads
    assert all(-8 < d < 8 for d in record["attention_peaks"])  # distances at length 8
    plain = run_one(Config(scheme="absolute", **TINY))
    assert plain["band"] is None and plain["attention_peaks"] is None


def test_compare_trains_one_model_per_scheme():
    runs = compare(Config(**TINY), ["none", "deberta"])
    assert list(runs) == ["none", "deberta"]
    assert [r["scheme"] for r in runs.values()] == ["none", "deberta"]
    assert runs["deberta"] == run_one(Config(scheme="deberta", **TINY)) | {
        "train_seconds": runs["deberta"]["train_seconds"]
    }
    with pytest.raises(ValueError, match="schemes must be"):
        compare(Config(**TINY), ["nope"])


def test_adding_a_scheme_to_a_sweep_changes_no_other_number():
    base = Config(**TINY)
    grid = dict(tasks=["relative"], train_sizes=[8], seeds=[0], progress=False)
    alone = run_sweep(base, schemes=["deberta"], **grid)
    more = run_sweep(base, schemes=["none", "deberta"], **grid)
    ours = [r for r in more["runs"] if r["scheme"] == "deberta"]
    assert numbers_only(ours) == numbers_only(alone["runs"])


# -- command line ----------------------------------------------------------------

TINY_FLAGS = [
    "--train-length",
    "8",
    "--test-lengths",
    "8,16",
    "--test-size",
    "4",
    "--steps",
    "3",
    "--batch-size",
    "4",
    "--hidden-size",
    "8",
    "--num-heads",
    "2",
    "--train-sizes",
    "8",
    "--seeds",
    "0",
    "--learning-rates",
    "3e-3",
    "--workers",
    "1",
    "--quiet",
]


def main_quiet(argv, tmp_path=None):
    import tempfile
    from pathlib import Path

    folder = Path(tmp_path or tempfile.mkdtemp())
    return main([*argv, "--output", str(folder / "out.json")])


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["--steps", "0"], "--steps"),
        (["--steps", "many"], "--steps"),
        (["--schemes", "deberta,nope"], "--schemes"),
        (["--task", "relative,relative"], "--task"),
        (["--test-lengths", "8,x"], "--test-lengths"),
        (["--train-sizes", "0"], "--train-sizes"),
        (["--seeds", "-1"], "--seeds"),
        (["--learning-rate", "fast"], "--learning-rate"),
        (["--learning-rates", "0.1", "--learning-rates", "-1"], "--learning-rates"),
        (["--hidden-size", "10", "--num-heads", "4"], "--num-heads"),
        (
            ["--position-buckets", "64", "--bucket-max-position", "16"],
            "--position-buckets",
        ),
        (["--output", "/no/such/folder/out.json"], "--output"),
        (["--plot", "/no/such/folder/fig.png"], "--plot"),
    ],
)
def test_cli_errors_are_one_line_naming_the_flag(argv, flag, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and flag in err, err


def test_cli_writes_json_and_figure_and_reproduces(tmp_path):
    # argparse keeps the last value of a repeated flag: two seeds, not TINY_FLAGS' one
    argv = [
        "--task",
        "relative,absolute",
        "--schemes",
        "none,deberta",
        *TINY_FLAGS,
        "--seeds",
        "0,1",
    ]
    output, figure = tmp_path / "sweep.json", tmp_path / "sweep.png"
    main([*argv, "--output", str(output), "--plot", str(figure)])
    data = json.loads(output.read_text())
    assert figure.stat().st_size > 0
    assert data["schema"] == 3 and data["torch"] == torch.__version__
    assert {"processor", "cpu_count", "torch_threads", "platform", "date"} <= set(
        data["machine"]
    )
    assert data["machine"]["torch_threads"] == 1
    assert data["command"].startswith(
        "python -m relpos.book.experiments --task relative,absolute"
    )
    assert data["grid"] == {
        "setting": ["encoder"],
        "task": ["relative", "absolute"],
        "scheme": ["none", "deberta"],
        "train_size": [8],
        "seed": [0, 1],
    }
    assert data["tuning"]["learning_rates"] == [3e-3] and data["tuning"]["runs"] == []
    assert {c["learning_rate"] for c in data["tuning"]["chosen"]} == {3e-3}
    assert {r["learning_rate"] for r in data["runs"]} == {3e-3}
    assert set(data["tasks"]) == {"relative", "absolute"}
    assert data["tasks"]["absolute"]["param"] == TASKS["absolute"].param
    assert data["tasks"]["relative"]["vocab_size"] == TASKS["relative"].vocab_size
    assert data["config"]["steps"] == 3 and data["config"]["test_lengths"] == [8, 16]
    assert not {"task", "scheme", "seed", "learning_rate"} & set(data["config"])
    assert len(data["runs"]) == 2 * 2 * 2
    assert len(data["summary"]) == 2 * 2 * 2  # task x scheme x length (one size)
    for row in data["summary"]:
        values = [
            r["accuracy"][str(row["length"])]
            for r in data["runs"]
            if (r["task"], r["scheme"], r["train_size"])
            == (row["task"], row["scheme"], row["train_size"])
        ]
        assert row["values"] == values  # seed 0, then seed 1
        assert row["n"] == 2 and row["mean"] == pytest.approx(sum(values) / 2)
        assert row["min"] == min(values) and row["max"] == max(values)
    assert isinstance(data["wall_seconds"], float)
    assert data["run_seconds"] == pytest.approx(
        sum(r["train_seconds"] for r in data["runs"])
    )
    assert len(list((tmp_path / "sweep.runs").glob("measured-*.json"))) == 8
    again = tmp_path / "again.json"
    main([*argv, "--output", str(again)])
    assert numbers_only(json.loads(again.read_text())) == numbers_only(data)


def test_summary_cells_key_every_row_of_the_committed_sweep():
    # The protocol's main sweep (schema 3) and the first pass's (schema 2).
    from relpos.book import results
    from relpos.book.experiments import load_sweep, summary_cells

    for name, schema in (("protocol/sweep.json", 3), ("first_pass/sweep.json", 2)):
        assert load_sweep(results.path(name))["schema"] == schema
    sweep = load_sweep(results.path("protocol/sweep.json"))
    cells = summary_cells(sweep)
    assert cells == summary_cells(sweep["summary"])
    grid = sweep["grid"]
    expected = {
        (setting, task, scheme, size, n)
        for setting in grid["setting"]
        for task in grid["task"]
        for scheme in grid["scheme"]
        for size in grid["train_size"]
        for n in sweep["config"]["test_lengths"]
    }
    assert set(cells) == expected
    for key, row in cells.items():
        assert key == (
            row["setting"],
            row["task"],
            row["scheme"],
            row["train_size"],
            row["length"],
        )
        assert row["n"] == len(grid["seed"])
