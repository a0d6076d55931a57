"""The ``transformers`` wrapper (``relpos.hf``): config, save and load, generate.

- ``save_pretrained`` then ``from_pretrained`` (the class's and
  ``AutoModelForCausalLM``'s) gives identical logits for ALiBi, rotary and DeBERTa,
  the unsaved buffers (ALiBi's slopes, T5's bucket lookup) included; the config
  comes back field for field.
- ``transformers``' own ``generate`` (with the wrapper's cache, and without)
  gives exactly ``relpos.generate``'s tokens, greedy and sampled with a seed;
  a left-padded batch gives each row the tokens it gets alone (FIRE and TUPE
  read a token's own position: positions count from the first real token).
- The loss with ``labels`` is the next-token cross-entropy computed by hand.
- A bad config value raises naming its field.
"""

from __future__ import annotations

import inspect
import math

import pytest
import torch
from transformers import AutoConfig, AutoModelForCausalLM

import relpos
from _every import spread
from relpos.hf import LM_FIELDS, RelposCache, RelposConfig, RelposForCausalLM

VOCAB = 24
SCHEMES = ("alibi", "rotary", "deberta")
PROMPT = torch.tensor([[1, 5, 7, 3, 2], [2, 2, 9, 4, 11]])


def model_of(scheme: str, **options) -> RelposForCausalLM:
    """A two-layer wrapped LM in float32, its parameters spread out (seed 0)."""
    torch.manual_seed(0)
    settings = dict(vocab_size=VOCAB, scheme=scheme, num_layers=2, hidden_size=16,
                    num_heads=2, intermediate_size=32)
    config = RelposConfig(**{**settings, **options})
    model = RelposForCausalLM(config)
    spread(model)
    return model.eval()


def fields(config: RelposConfig) -> dict:
    """The config as saved, less where it was loaded from."""
    return {k: v for k, v in config.to_dict().items() if k != "_name_or_path"}


# -- the config --------------------------------------------------------------------


def test_the_config_holds_every_argument_of_transformer_lm():
    arguments = set(inspect.signature(relpos.TransformerLM).parameters)
    arguments |= set(inspect.signature(relpos.Transformer).parameters)
    arguments -= {"stack_arguments"}
    assert set(LM_FIELDS) == arguments
    config = RelposConfig(num_layers=3, num_heads=8, num_kv_heads=2)
    assert (config.num_hidden_layers, config.num_attention_heads) == (3, 8)
    assert config.num_key_value_heads == 2


def test_the_config_round_trips_through_json(tmp_path):
    config = RelposConfig(
        vocab_size=50, scheme="t5", num_layers=1, hidden_size=32, num_heads=4,
        intermediate_size=40, backend="naive", num_kv_heads=2, norm_first=True,
        norm="rms", activation="swiglu", dropout=0.1, layer_norm_eps=1e-5,
        attention_settings={"num_buckets": 8, "max_distance": 16},
        eos_token_id=3,
    )
    config.save_pretrained(tmp_path)
    for loaded in (RelposConfig.from_pretrained(tmp_path),
                   AutoConfig.from_pretrained(tmp_path)):
        assert type(loaded) is RelposConfig
        assert fields(loaded) == fields(config)
        assert loaded.lm_arguments() == config.lm_arguments()
        assert loaded.eos_token_id == 3


@pytest.mark.parametrize("field, value", [
    ("vocab_size", 0), ("scheme", "no-such-scheme"), ("num_layers", 0),
    ("hidden_size", -1), ("num_heads", 0), ("intermediate_size", 0),
    ("backend", "cuda"), ("num_kv_heads", 3), ("norm", "batch"),
    ("activation", "relu"), ("dropout", 1.5), ("layer_norm_eps", 0.0),
    ("attention_settings", {"pairs": (1, 2)}),
])
def test_a_bad_config_value_raises_naming_its_field(field, value):
    with pytest.raises(ValueError, match=field):
        RelposConfig(**{field: value})


def test_a_config_value_of_the_wrong_type_raises_naming_its_field():
    with pytest.raises(TypeError, match="causal"):
        RelposConfig(causal="yes")
    with pytest.raises(TypeError, match="attention_settings"):
        RelposConfig(attention_settings=[("num_buckets", 8)])
    with pytest.raises(ValueError, match="hidden_size must be a multiple"):
        RelposConfig(hidden_size=30, num_heads=4)


def test_a_bidirectional_model_has_no_cache():
    assert RelposConfig(causal=False).use_cache is False
    assert RelposConfig().use_cache is True
    with pytest.raises(ValueError, match="use_cache"):
        RelposConfig(causal=False, use_cache=True)
    model = model_of("rotary", causal=False)
    with pytest.raises(ValueError, match="use_cache"):
        model(PROMPT, use_cache=True)
    # transformers' generate recomputes: relpos.generate's tokens without a cache
    ours = relpos.generate(model.model, PROMPT, 4, use_cache=False)
    assert torch.equal(model.generate(PROMPT, max_new_tokens=4), ours)


# -- save and load -----------------------------------------------------------------


@pytest.mark.parametrize("scheme", SCHEMES)
def test_save_and_load_give_identical_logits(scheme, tmp_path):
    model = model_of(scheme)
    with torch.no_grad():
        expected = model(PROMPT).logits
    model.save_pretrained(tmp_path)
    for cls in (RelposForCausalLM, AutoModelForCausalLM):
        loaded = cls.from_pretrained(tmp_path).eval()
        assert type(loaded) is RelposForCausalLM
        assert fields(loaded.config) == fields(model.config)
        with torch.no_grad():
            assert torch.equal(loaded(PROMPT).logits, expected)


def test_loading_computes_the_buffers_that_are_not_saved(tmp_path):
    # transformers builds on the meta device and leaves unsaved buffers empty:
    # T5's bucket lookup (indices) and ALiBi's slopes must be computed again.
    for scheme in ("t5", "alibi"):
        model = model_of(scheme)
        model.save_pretrained(tmp_path / scheme)
        loaded = RelposForCausalLM.from_pretrained(tmp_path / scheme)
        buffers = dict(model.named_buffers())
        loaded_buffers = dict(loaded.named_buffers())
        assert buffers.keys() == loaded_buffers.keys() and buffers
        for name, buffer in buffers.items():
            assert torch.equal(loaded_buffers[name], buffer), name


def test_loading_leaves_the_random_state_alone(tmp_path):
    model_of("alibi").save_pretrained(tmp_path)
    torch.manual_seed(7)
    RelposForCausalLM.from_pretrained(tmp_path)
    after = torch.rand(3)
    torch.manual_seed(7)
    assert torch.equal(torch.rand(3), after)


# -- the forward call --------------------------------------------------------------


def test_the_loss_is_the_next_token_cross_entropy():
    model = model_of("alibi")
    labels = PROMPT.clone()
    labels[1, 2] = -100  # ignored
    output = model(PROMPT, labels=labels)
    logits = output.logits.detach()
    terms = []
    for row in range(2):
        for i in range(PROMPT.shape[1] - 1):
            target = int(labels[row, i + 1])
            if target != -100:
                terms.append(-torch.log_softmax(logits[row, i], -1)[target].item())
    assert len(terms) == 7
    assert output.loss.item() == pytest.approx(math.fsum(terms) / 7, rel=1e-6)
    summed = model(PROMPT, labels=labels, num_items_in_batch=10).loss
    assert summed.item() == pytest.approx(math.fsum(terms) / 10, rel=1e-6)
    output.loss.backward()  # it trains
    assert model.model.embed.weight.grad is not None


def test_forward_with_a_cache_equals_the_full_forward():
    model = model_of("rotary")
    with torch.no_grad():
        full = model(PROMPT).logits
        first = model(PROMPT[:, :3], use_cache=True)
        assert isinstance(first.cache, RelposCache)
        assert first.cache.get_seq_length() == 3
        rest = model(PROMPT[:, 3:], cache=first.cache).logits
        assert model(PROMPT, use_cache=False).cache is None
    torch.testing.assert_close(torch.cat([first.logits, rest], 1), full,
                               atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("scheme", ["alibi", "tupe"])
def test_a_left_padded_forward_counts_positions_from_the_first_token(scheme):
    # Without position_ids, a 0/1 mask sets them: TUPE reads them, ALiBi not.
    model = model_of(scheme)
    row = torch.tensor([[4, 9, 1, 6]])
    padded = torch.cat([torch.zeros(1, 2, dtype=torch.long), row], 1)
    mask = torch.tensor([[0, 0, 1, 1, 1, 1]])
    with torch.no_grad():
        alone = model(row).logits
        logits = model(padded, attention_mask=mask).logits[:, 2:]
        cache = model(padded[:, :4], attention_mask=mask[:, :4]).cache
        stepped = model(padded[:, 4:], attention_mask=mask, cache=cache).logits
    torch.testing.assert_close(logits, alone, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(stepped, alone[:, 2:], atol=1e-5, rtol=1e-5)


def test_the_forward_refuses_what_it_cannot_read():
    model = model_of("alibi")
    with pytest.raises(TypeError, match="unsupported keyword 'inputs_embeds'"):
        model(PROMPT, inputs_embeds=torch.zeros(2, 5, 16))
    with pytest.raises(TypeError, match="RelposCache"):
        model(PROMPT, cache=relpos.KVCache())
    with pytest.raises(ValueError, match="not both"):
        model(PROMPT, cache=RelposCache(), past_key_values=RelposCache())
    # beam search reorders the cache, which RelposCache refuses; recomputing works
    with pytest.raises(ValueError, match="use_cache=False"):
        model.generate(PROMPT, max_new_tokens=2, num_beams=2)
    beams = model.generate(PROMPT, max_new_tokens=2, num_beams=2, use_cache=False)
    assert beams.shape == (2, 7)


# -- generate ----------------------------------------------------------------------


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("use_cache", [True, False], ids=["cache", "recompute"])
def test_transformers_greedy_generate_equals_relpos_generate(scheme, use_cache):
    model = model_of(scheme)
    ours = relpos.generate(model.model, PROMPT, 8)
    theirs = model.generate(PROMPT, max_new_tokens=8, do_sample=False,
                            use_cache=use_cache)
    assert torch.equal(theirs, ours)
    assert torch.equal(ours, relpos.generate(model.model, PROMPT, 8, use_cache=False))
    assert len(set(ours[:, 5:].flatten().tolist())) > 1  # not one token repeated


def test_transformers_generate_decodes_with_the_cache():
    model = model_of("deberta")
    fed = []  # the length of every call's input_ids
    model.model.register_forward_pre_hook(lambda _, args: fed.append(args[0].shape))
    out = model.generate(PROMPT, max_new_tokens=4, return_dict_in_generate=True)
    assert [shape[1] for shape in fed] == [5, 1, 1, 1]
    assert isinstance(out.cache, RelposCache)
    assert out.cache.get_seq_length() == 8  # the last token is never fed


@pytest.mark.parametrize("scheme", SCHEMES)
def test_transformers_sampling_equals_relpos_sampling_with_a_seed(scheme):
    model = model_of(scheme)
    options = dict(do_sample=True, temperature=0.8, top_k=10, top_p=0.9)
    torch.manual_seed(3)
    ours = relpos.generate(model.model, PROMPT, 8, **options)
    torch.manual_seed(3)
    theirs = model.generate(PROMPT, max_new_tokens=8, **options)
    assert torch.equal(theirs, ours)
    torch.manual_seed(4)
    assert not torch.equal(model.generate(PROMPT, max_new_tokens=8, **options), ours)


#: Schemes that read a token's own position, not only i - j: padding counted as
#: positions would change their tokens.
ABSOLUTE = {"fire": {"width": 4}, "tupe": {}}


@pytest.mark.parametrize("scheme", [*SCHEMES, *ABSOLUTE])
def test_left_padding_gives_each_row_its_tokens_alone(scheme):
    model = model_of(scheme, attention_settings=ABSOLUTE.get(scheme) or None)
    pad = 0
    rows = [torch.tensor([4, 9, 1]), torch.tensor([7, 3, 8, 2, 5])]
    width = max(len(r) for r in rows)
    batch = torch.full((2, width), pad)
    mask = torch.zeros(2, width, dtype=torch.long)
    for i, row in enumerate(rows):
        batch[i, width - len(row):] = row
        mask[i, width - len(row):] = 1
    padded = model.generate(batch, attention_mask=mask, max_new_tokens=6,
                            do_sample=False, pad_token_id=pad)
    assert torch.equal(
        padded, relpos.generate(model.model, batch, 6, attention_mask=mask)
    )
    for i, row in enumerate(rows):
        alone = model.generate(row[None], max_new_tokens=6, do_sample=False,
                               pad_token_id=pad)
        assert torch.equal(padded[i, width:], alone[0, len(row):]), i
