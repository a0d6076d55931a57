"""The experiment schemes: causal forms, the ablations of deberta, deberta-sinusoidal,
and the window task.

Every model here is untrained (or trained a few steps) at width 8.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from relpos.book.experiments import SCHEMES, TASKS, Config, TinyModel, get_task
from relpos.book.experiments.schemes import sinusoidal_start
from relpos.book.experiments.tasks import NO_TOKEN, window_labels
from relpos.embedding import sinusoidal_table

from _tiny import TINY, one_thread  # noqa: F401  (autouse fixture)



def model_of(scheme: str, setting: str = "encoder", **changes) -> TinyModel:
    torch.manual_seed(0)
    config = Config(scheme=scheme, setting=setting, **{**TINY, **changes})
    return TinyModel(config).eval()


def later_tokens_changed(
    n: int = 10, cut: int = 5
) -> tuple[torch.Tensor, torch.Tensor]:
    """Two batches equal at positions ``< cut`` and different at every later one."""
    generator = torch.Generator().manual_seed(1)
    tokens = torch.randint(16, (3, n), generator=generator)
    changed = tokens.clone()
    changed[:, cut:] = (changed[:, cut:] + 1 + torch.arange(n - cut) % 15) % 16
    assert (changed[:, cut:] != tokens[:, cut:]).all()
    return tokens, changed


# -- causal forms ----------------------------------------------------------------


@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_causal_form_ignores_later_tokens(scheme):
    model = model_of(scheme, "causal")
    for cut in (1, 4, 7):
        tokens, changed = later_tokens_changed(cut=cut)
        before, after = model(tokens), model(changed)  # (b, n, classes)
        assert torch.allclose(before[:, :cut], after[:, :cut], atol=1e-5), cut
        assert not torch.allclose(before[:, cut:], after[:, cut:], atol=1e-4)


@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_encoder_form_reads_later_tokens(scheme):
    # the negative control: without the causal mask, a later token reaches every
    # position (every scheme attends over all keys)
    model = model_of(scheme, "encoder")
    tokens, changed = later_tokens_changed(cut=5)
    before, after = model(tokens), model(changed)
    assert not torch.allclose(before[:, :5], after[:, :5], atol=1e-4)


@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_causal_form_has_the_same_parameters(scheme):
    encoder = model_of(scheme, "encoder")
    causal = model_of(scheme, "causal")
    shapes = [(name, p.shape) for name, p in encoder.named_parameters()]
    assert shapes == [(name, p.shape) for name, p in causal.named_parameters()]


def test_t5_and_alibi_take_their_own_causal_forms():
    for setting, causal in (("encoder", False), ("causal", True)):
        t5 = model_of("t5", setting).encoder.layers[0].attention.position_bias
        assert (t5.bidirectional, t5.num_buckets) == (not causal, 16)  # 2 * 8 buckets
        alibi = model_of("alibi", setting).encoder.layers[0].attention.position_bias
        assert alibi.causal is causal
    deberta = model_of("deberta-emd", "causal")
    assert all(layer.attention.config.causal for layer in deberta.encoder.layers)


@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_causal_form_with_padding(scheme):
    model = model_of(scheme, "causal")
    tokens = torch.randint(16, (2, 7))
    mask = torch.tensor([[1] * 7, [1] * 4 + [0] * 3])
    logits = model(tokens, mask)
    assert torch.isfinite(logits).all()
    # the first four positions of row 1 see only themselves and earlier tokens
    assert torch.allclose(logits[1, :4], model(tokens[1:, :4])[0], atol=1e-5)


# -- the ablations ---------------------------------------------------------------


def attention_config(model: TinyModel) -> dict:
    return dataclasses.asdict(model.encoder.config)


def differences(a: dict, b: dict) -> dict:
    return {k: (a[k], b[k]) for k in a if a[k] != b[k]}


@pytest.mark.parametrize(
    "scheme, field, values",
    [
        ("deberta-c2p", "pos_att_type", (("c2p", "p2c"), ("c2p",))),
        ("deberta-p2c", "pos_att_type", (("c2p", "p2c"), ("p2c",))),
        ("deberta-separate-keys", "share_att_key", (True, False)),
    ],
)
def test_attention_ablation_changes_one_setting(scheme, field, values):
    deberta, ablation = model_of("deberta"), model_of(scheme)
    assert differences(attention_config(deberta), attention_config(ablation)) == {
        field: values
    }
    assert ablation.encoder.norm_rel_ebd and deberta.encoder.norm_rel_ebd
    for layer in ablation.encoder.layers:
        assert dataclasses.asdict(layer.attention.config) == attention_config(ablation)


def test_deberta_shares_position_keys_and_separate_keys_has_its_own():
    deberta, separate = model_of("deberta"), model_of("deberta-separate-keys")
    names = {name for name, _ in deberta.named_parameters()}
    extra = {name for name, _ in separate.named_parameters()} - names
    assert deberta.encoder.config.share_att_key is True
    assert {name.split(".")[-2] for name in extra} == {"pos_key_proj", "pos_query_proj"}
    assert not any("pos_" in name for name in names)


def test_no_norm_ablation_reads_the_raw_table():
    deberta, no_norm = model_of("deberta"), model_of("deberta-no-norm")
    assert differences(attention_config(deberta), attention_config(no_norm)) == {}
    assert deberta.encoder.table_norm is not None and no_norm.encoder.table_norm is None
    assert torch.equal(no_norm.encoder.rel_embeddings(), no_norm.encoder.table.weight)
    named = {name for name, _ in deberta.named_parameters()}
    assert named - {n for n, _ in no_norm.named_parameters()} == {
        "encoder.table_norm.weight",
        "encoder.table_norm.bias",
    }


def test_shaw_keys_has_no_relative_values():
    shaw, keys = model_of("shaw"), model_of("shaw-keys")
    for full, ablated in zip(shaw.encoder.layers, keys.encoder.layers):
        assert full.attention.relative_values and not ablated.attention.relative_values
        assert ablated.attention.value_table is None
        assert ablated.attention.max_relative_positions == (
            full.attention.max_relative_positions
        )
        assert ablated.attention.key_table.shape == full.attention.key_table.shape
    names = {name for name, _ in shaw.named_parameters()}
    assert names - {n for n, _ in keys.named_parameters()} == {
        "encoder.layers.0.attention.value_table"
    }


# -- deberta-sinusoidal ----------------------------------------------------------


def test_sinusoidal_table_starts_as_scaled_sinusoids():
    model = model_of("deberta-sinusoidal")
    k = Config(**TINY).max_relative_positions
    # even width: each sine/cosine pair has mean square 1/2, so the scale is
    # 0.02 * sqrt(2) for a root mean square of 0.02, the random table's std
    expected = sinusoidal_table(k, 8) * (0.02 * math.sqrt(2.0))
    weight = model.encoder.table.weight.detach()
    assert torch.allclose(weight, expected, atol=1e-7)
    assert weight.pow(2).mean().sqrt().item() == pytest.approx(0.02, rel=1e-5)
    deberta = model_of("deberta")
    assert attention_config(model) == attention_config(deberta)
    assert not torch.allclose(deberta.encoder.table.weight, expected, atol=1e-3)


def test_sinusoidal_start_scale_and_bad_rows():
    odd = sinusoidal_start(6, 5)  # an odd width: the scale is computed, not sqrt(2)
    assert odd.pow(2).mean().sqrt().item() == pytest.approx(0.02, rel=1e-5)
    assert torch.allclose(odd / odd[0, 1] * sinusoidal_table(3, 5)[0, 1],
                          sinusoidal_table(3, 5), atol=1e-6)
    with pytest.raises(ValueError, match="rows must be even"):
        sinusoidal_start(7, 4)


def test_sinusoidal_table_is_trained():
    from relpos.book.experiments import train

    config = Config(scheme="deberta-sinusoidal", **{**TINY, "steps": 5})
    trained = train(config).model
    k = config.max_relative_positions
    start = sinusoidal_table(k, 8) * (0.02 * math.sqrt(2.0))
    assert not torch.allclose(trained.encoder.table.weight.detach(), start, atol=1e-5)


# -- the window task -------------------------------------------------------------


def test_window_labels_by_hand():
    tokens = torch.tensor([[9, 1, 4, 1, 5, 2, 3, 6, 0, 7]])
    labels = window_labels(tokens, 6)
    assert labels.tolist() == [[NO_TOKEN] * 6 + [9, 5, 6, 6]]  # x[i] is not read
    assert window_labels(tokens, 3).tolist() == [
        [NO_TOKEN] * 3 + [9, 4, 5, 5, 5, 6, 6]
    ]
    short = tokens[:, :6]
    assert window_labels(short, 6).tolist() == [[NO_TOKEN] * 6]


def test_window_task_follows_its_rule():
    task = TASKS["window"]
    assert (task.kind, task.param) == ("window", 6)
    tokens, labels = get_task("window").sample(4, 30, seed=2)
    for b in range(4):
        for i in range(30):
            want = NO_TOKEN if i < 6 else int(tokens[b, i - 6 : i].max())
            assert int(labels[b, i]) == want
    scored = task.scored(labels)
    assert not scored[:, :6].any() and scored[:, 6:].all()
    assert task.num_classes == task.vocab_size + 1
    assert task.chance == 1 / task.vocab_size


def test_a_task_checks_its_rule():
    from relpos.book.experiments.tasks import Task

    with pytest.raises(ValueError, match="kind"):
        Task("odd", "palindrome", 3)  # not a kind ("reverse" is one now)
    with pytest.raises(ValueError, match="param"):
        Task("odd", "position", 1)


def test_a_window_model_has_its_classes():
    model = model_of("deberta", task="window")
    logits = model(torch.randint(16, (2, 8)))
    assert logits.shape == (2, 8, 17)


def test_the_book_lists_its_schemes_in_the_order_it_had_before_deberta_registered():
    from relpos.book.experiments.schemes import SCHEMES, book_order
    from relpos.schemes import REGISTRY, scheme_names

    # relpos 0.3's order: the schemes with no shared input, DeBERTa's family,
    # then the other variants; the book's own entries around them
    before = [
        "none", "absolute", "sinusoidal", "shaw", "transformer_xl", "t5", "alibi",
        "rotary", "fire", "kerple", "tupe", "deberta", "deberta-buckets",
        "deberta-emd", "deberta-sinusoidal", "deberta-c2p", "deberta-p2c",
        "deberta-no-norm", "deberta-separate-keys", "shaw-keys", "kerple-power",
        "absolute-randomised", "rotary-randomised",
    ]
    assert list(SCHEMES)[: len(before)] == before
    assert sorted(book_order()) == sorted(scheme_names())
    assert list(REGISTRY)[0] == "deberta"  # the registry's own order is not the book's
