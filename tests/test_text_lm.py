"""The language models of relpos.book.text: both settings, every scheme, beyond L.

A small stream (the module docstrings of a few stdlib modules, encoded) keeps
these tests off the full corpus; the models are tiny (width 16, one layer).
"""

from __future__ import annotations

import math

import pytest
import torch

import relpos.book.experiments.schemes as schemes_module
import relpos.book.text.train as text_train
from relpos.book.experiments.schemes import SCHEMES
from relpos.book.experiments import rate_grid
from relpos.book.text import corpus, lm, sweep
from relpos.book.text.config import SETTINGS, TextConfig
from relpos.book.text.corpus import encode
from relpos.book.text.lm import IGNORE, MASK, mask_bytes, objective_batch
from relpos.book.text.train import evaluate_length, initial_model, train_text

TINY = dict(
    train_length=8,
    eval_lengths=(8, 32),
    eval_bytes=32 * 3 + 1,
    steps=20,
    batch_size=16,
    hidden_size=16,
    num_heads=2,
    num_layers=1,
    learning_rate=1e-2,
    max_relative_positions=4,
    position_buckets=4,
    bucket_max_position=16,
    t5_max_distance=16,
)
TEXT = "\n\n".join(
    m.__doc__ for m in (corpus, lm, sweep, rate_grid, text_train, schemes_module)
)


@pytest.fixture(scope="module")
def stream():
    return encode(TEXT).to(torch.uint8)


@pytest.mark.parametrize("setting", SETTINGS)
def test_a_tiny_model_learns_in_each_setting_and_is_deterministic(setting, stream):
    config = TextConfig(setting=setting, scheme="alibi", **TINY)
    trained = train_text(config, stream)
    losses = trained.losses
    assert len(losses) == 20 and all(math.isfinite(x) for x in losses)
    assert sum(losses[-4:]) / 4 < sum(losses[:4]) / 4 - 0.5  # from ln 256 = 5.5 down
    assert train_text(config, stream).losses == losses


@pytest.mark.parametrize("setting", SETTINGS)
@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_every_scheme_evaluates_at_four_times_the_training_length(
    scheme, setting, stream
):
    config = TextConfig(setting=setting, scheme=scheme, **TINY)
    measured = evaluate_length(initial_model(config), config, stream, 32)
    assert measured["windows"] == 3
    assert len(measured["per_position"]) == 32
    assert math.isfinite(measured["loss"]) and 4 < measured["loss"] < 7  # ~ ln 256
    assert measured["bpb"] == pytest.approx(measured["loss"] / math.log(2))
    if setting == "causal":  # every byte of the windows predicted once
        assert measured["predicted"] == 3 * 32
        assert all(math.isfinite(v) for v in measured["per_position"])
    else:  # about 15% of them
        assert 0 < measured["predicted"] < 3 * 32 // 2
        known = [v for v in measured["per_position"] if v is not None]
        assert len(known) > 0 and all(math.isfinite(v) for v in known)


def test_causal_targets_are_the_next_bytes(stream):
    config = TextConfig(setting="causal", scheme="none", **TINY)
    starts = torch.tensor([0, 8])
    inputs, targets = objective_batch(config, stream, starts, 8, torch.Generator())
    assert torch.equal(inputs[1], stream[8:16].long())
    assert torch.equal(targets[1], stream[9:17].long())


def test_masking_follows_bert_80_10_10():
    windows = torch.randint(256, (200, 500), generator=torch.Generator().manual_seed(1))
    generator = torch.Generator().manual_seed(2)
    inputs, targets = mask_bytes(windows, 0.15, generator)
    chosen = targets != IGNORE
    assert chosen.float().mean().item() == pytest.approx(0.15, abs=0.005)
    assert torch.equal(targets[chosen], windows[chosen])
    assert torch.equal(inputs[~chosen], windows[~chosen])  # the others untouched
    masked = (inputs == MASK)[chosen].float().mean().item()
    kept = (inputs == windows)[chosen].float().mean().item()
    assert masked == pytest.approx(0.8, abs=0.01)
    assert kept == pytest.approx(0.1 + 0.1 / 256, abs=0.01)  # kept, or drew itself
    again = mask_bytes(windows, 0.15, torch.Generator().manual_seed(2))
    assert torch.equal(again[0], inputs)  # the generator alone decides


def test_absolute_has_a_row_for_every_evaluated_position():
    config = TextConfig(
        scheme="absolute", **{**TINY, "eval_lengths": (8, 128), "eval_bytes": 129}
    )
    assert initial_model(config).input_positions.max_length == 128


def test_bad_configs_name_the_field():
    with pytest.raises(ValueError, match="setting must be one of"):
        TextConfig(setting="encoder")
    with pytest.raises(ValueError, match="eval_bytes must hold one window"):
        TextConfig(eval_lengths=(64, 1024), eval_bytes=1000)
    with pytest.raises(ValueError, match="mask_rate"):
        TextConfig(mask_rate=1.0)
    with pytest.raises(ValueError, match="divisible|num_heads"):
        TextConfig(hidden_size=10, num_heads=4)


def test_a_run_refuses_another_corpus_hash():
    config = TextConfig(corpus_sha256="0" * 64, **TINY)
    with pytest.raises(ValueError, match="corpus_sha256 must be"):
        text_train.corpus_of(config)
