"""One stack for every scheme (``relpos.Transformer``, ``relpos.TransformerLM``) and
decoding with ``relpos.generate``.

- A two-layer causal language model of every scheme the stack takes, DeBERTa and
  content attention included, on every kernel, decodes with one shared cache
  exactly as by recomputing the whole sequence: the same tokens, and every step's
  logits within 1e-5.
- Pre-norm with RMSNorm and SwiGLU, and post-norm with LayerNorm and GELU, are the
  blocks written out by hand; the DeBERTa stack with post-norm is
  ``DisentangledEncoder`` (its state dict loads as it is).
- Left padding changes no sequence's tokens; sampling (temperature, top-k, top-p)
  with a seeded generator draws the same tokens with a cache as without; a
  finished sequence is padded and decoding stops when all are.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import relpos
from _every import SIZES, backend_param, spread
from relpos.generate import next_token_scores
from relpos.transformer import stack_schemes

VOCAB, HIDDEN, HEADS = 20, 16, 2
PROMPT = torch.tensor([[1, 5, 7, 3], [2, 2, 9, 4]])

#: Every scheme on every kernel (off the quick kernel: marked slow).
STACK_GRID = [
    backend_param(backend, scheme, id=f"{scheme}-{backend}")
    for scheme in stack_schemes()
    for backend in relpos.BACKENDS
]


def lm(scheme: str, backend: str = "gather", **options) -> relpos.TransformerLM:
    """A two-layer causal LM in float64, its parameters spread out (seed 0)."""
    torch.manual_seed(0)
    sizes = SIZES.get(scheme.split("-")[0], {})
    model = relpos.TransformerLM(
        VOCAB, scheme, 2, HIDDEN, HEADS, 32, backend=backend,
        attention_settings=sizes or None, **options,
    )
    spread(model)
    return model.double().eval()


@pytest.mark.parametrize("scheme, backend", STACK_GRID)
def test_decoding_with_one_cache_equals_recomputing(scheme, backend):
    model = lm(scheme, backend, norm_first=True, norm="rms", activation="swiglu")
    cached = model.generate(PROMPT, 6)
    recomputed = model.generate(PROMPT, 6, use_cache=False)
    assert cached.shape == (2, 10)
    assert torch.equal(cached, recomputed)
    assert len(set(cached[:, 4:].flatten().tolist())) > 1  # not one token repeated
    with torch.no_grad():  # every step's logits, cached against the full forward
        cache = relpos.KVCache()
        steps = [model(cached[:, :4], cache=cache)]
        steps += [model(cached[:, t : t + 1], cache=cache) for t in range(4, 10)]
        full = model(cached)
    torch.testing.assert_close(torch.cat(steps, dim=1), full, rtol=0, atol=1e-5)
    assert sorted(cache._layers) == [0, 1] and cache.length == 10


@pytest.mark.parametrize("backend", ["naive", "gather"])
@pytest.mark.parametrize("scheme", stack_schemes())
def test_decoding_in_float32_equals_recomputing_within_1e_5(scheme, backend):
    # The float64 test above is exact to rounding; in float32 the cached logits
    # stay within 1e-5 of the recomputed ones. (flex in float32 compiles on the
    # CPU: its cached decoding is tested in test_cache.py.)
    model = lm(scheme, backend).float()
    tokens = model.generate(PROMPT, 6)
    assert torch.equal(tokens, model.generate(PROMPT, 6, use_cache=False))
    with torch.no_grad():
        cache = relpos.KVCache()
        steps = [model(tokens[:, :4], cache=cache)]
        steps += [model(tokens[:, t : t + 1], cache=cache) for t in range(4, 10)]
        full = model(tokens)
    torch.testing.assert_close(torch.cat(steps, dim=1), full, rtol=0, atol=1e-5)


def test_a_stack_numbers_its_layers_and_refuses_a_bad_scheme():
    stack = relpos.Transformer("t5", 3, HIDDEN, HEADS, causal=True)
    assert [layer.attention.cache_index for layer in stack.layers] == [0, 1, 2]
    assert stack.layers[0].intermediate_size == 4 * HIDDEN
    with pytest.raises(ValueError, match="scheme must be one of"):
        relpos.Transformer("rope", 2, HIDDEN, HEADS)
    with pytest.raises(TypeError, match="attention_settings must be a dict"):
        relpos.Transformer("t5", 2, HIDDEN, HEADS, attention_settings=[32])
    with pytest.raises(ValueError, match="backend must be one of"):
        relpos.Transformer("t5", 2, HIDDEN, HEADS, backend="cuda")
    with pytest.raises(ValueError, match="norm must be one of"):
        relpos.Transformer("t5", 2, HIDDEN, HEADS, norm="batch")
    # A variant brings its own arguments, and the settings reach the attention.
    stack = relpos.Transformer(
        "kerple-power", 1, HIDDEN, HEADS, attention_settings={"dropout": 0.0}
    )
    assert stack.layers[0].attention.position_bias.kernel == "power"
    stack = relpos.Transformer(
        "t5", 1, HIDDEN, HEADS, attention_settings={"num_buckets": 8}
    )
    assert stack.layers[0].attention.position_bias.num_buckets == 8


def by_hand(layer: relpos.EncoderLayer, x: torch.Tensor) -> torch.Tensor:
    """The pre-norm block: ``a = x + W_o attn(norm(x))``, ``a + W_2 ffn(norm(a))``."""
    context = layer.attention(layer.attention_norm(x))  # (b, n, hidden)
    a = x + layer.attention_output(context)
    h = layer.output_norm(a)
    if layer.gate is None:
        inner = F.gelu(layer.intermediate(h))
    else:
        inner = F.silu(layer.gate(h)) * layer.intermediate(h)
    return a + layer.output(inner)


@pytest.mark.parametrize("activation", ["gelu", "swiglu"])
@pytest.mark.parametrize("norm", ["layer", "rms"])
def test_a_pre_norm_block_is_the_block_written_out(norm, activation):
    stack = lm("alibi", norm_first=True, norm=norm, activation=activation).stack
    layer = stack.layers[0]
    x = torch.randn(2, 6, HIDDEN, dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(layer(x), by_hand(layer, x))
        # RMSNorm has no bias and centres nothing: x / rms(x) * weight.
        norm_layer = layer.attention_norm
        if norm == "rms":
            rms = x.pow(2).mean(-1, keepdim=True).add(norm_layer.eps).sqrt()
            torch.testing.assert_close(norm_layer(x), x / rms * norm_layer.weight)
        # The stack ends with its final norm.
        out = x
        for block in stack.layers:
            out = by_hand(block, out)
        torch.testing.assert_close(stack(x), stack.final_norm(out))


def test_the_deberta_stack_with_post_norm_is_the_disentangled_encoder():
    torch.manual_seed(0)
    encoder = relpos.DisentangledEncoder(
        2, HIDDEN, HEADS, 32, max_relative_positions=4, causal=True
    )
    spread(encoder)
    stack = relpos.Transformer(
        "deberta", 2, HIDDEN, HEADS, 32, causal=True,
        attention_settings={"max_relative_positions": 4},
    )
    stack.load_state_dict(encoder.state_dict())  # the same names, strict
    encoder, stack = encoder.double().eval(), stack.double().eval()
    x = torch.randn(2, 7, HIDDEN, dtype=torch.float64)
    keep = torch.ones(2, 7, dtype=torch.bool)
    keep[1, :2] = False
    with torch.no_grad():
        torch.testing.assert_close(stack(x, keep), encoder(x, keep), rtol=0, atol=0)


def test_left_padding_changes_no_sequence():
    model = lm("rotary")
    short = torch.tensor([[4, 8, 1]])
    padded = torch.tensor([[0, 0, 4, 8, 1], [3, 1, 4, 1, 5]])
    mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    together = model.generate(padded, 5, attention_mask=mask)
    assert torch.equal(together[0, 2:], model.generate(short, 5)[0])
    assert torch.equal(together[1], model.generate(padded[1:], 5)[0])
    assert torch.equal(
        together, model.generate(padded, 5, attention_mask=mask, use_cache=False)
    )
    with pytest.raises(ValueError, match="pad on the left"):
        model.generate(padded, 1, attention_mask=mask.flip(-1))


def test_sampling_draws_the_same_tokens_with_a_cache_and_narrows_to_greedy():
    model = lm("t5")
    greedy = model.generate(PROMPT, 6)
    for narrow in ({"top_k": 1}, {"top_p": 1e-6}, {"temperature": 1e-4}):
        sampled = model.generate(
            PROMPT, 6, do_sample=True, generator=torch.Generator().manual_seed(0),
            **narrow,
        )
        assert torch.equal(sampled, greedy), narrow
    draws = [
        model.generate(
            PROMPT, 8, do_sample=True, temperature=1.5, top_k=10, top_p=0.9,
            generator=torch.Generator().manual_seed(seed), use_cache=cached,
        )
        for seed, cached in ((1, True), (1, False), (2, True))
    ]
    assert torch.equal(draws[0], draws[1])
    assert not torch.equal(draws[0], draws[2])  # another seed, other tokens


def test_next_token_scores_cut_as_top_k_and_top_p_say():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    kept = next_token_scores(logits, top_k=2).isfinite()
    assert kept.tolist() == [[True, True, False, False]]
    # top_p = 0.8: 0.5 + 0.3 reaches it, so the third token is cut.
    kept = next_token_scores(logits, top_p=0.8).isfinite()
    assert kept.tolist() == [[True, True, False, False]]
    kept = next_token_scores(logits, top_p=0.81).isfinite()
    assert kept.tolist() == [[True, True, True, False]]
    torch.testing.assert_close(next_token_scores(logits, temperature=2.0), logits / 2)


def test_a_finished_sequence_is_padded_and_decoding_stops():
    model = lm("alibi")
    free = model.generate(PROMPT, 8)
    eos = int(free[0, 5])  # the second token row 0 decodes
    out = model.generate(PROMPT, 8, eos_token_id=eos, pad_token_id=0)
    row0 = out[0, 4:].tolist()
    stop = row0.index(eos)
    assert all(token == 0 for token in row0[stop + 1 :])
    if eos not in free[1, 4:].tolist():  # row 1 never ends: all 8 steps run
        assert out.shape[1] == 12
    same = model.generate(PROMPT[:1], 8, eos_token_id=eos)
    assert same.shape[1] == 4 + stop + 1  # stops when every sequence is finished


def test_generate_refuses_bad_options_by_name():
    model = lm("t5")
    cases = [
        ({"temperature": 0.0}, ValueError, "temperature"),
        ({"top_p": 1.5}, ValueError, "top_p"),
        ({"top_k": 0}, ValueError, "top_k"),
        ({"do_sample": 1}, TypeError, "do_sample"),
    ]
    for options, error, name in cases:
        with pytest.raises(error, match=name):
            model.generate(PROMPT, 2, **options)
    with pytest.raises(TypeError, match="input_ids"):
        model.generate(PROMPT.float(), 2)
    with pytest.raises(ValueError, match="max_new_tokens"):
        model.generate(PROMPT, -1)


def test_the_stack_has_one_forward_that_prepares_the_input_once(monkeypatch):
    # DisentangledEncoder and the book's enhanced mask decoder run the stack's own
    from relpos.book.experiments.emd import EnhancedMaskDecoder
    from relpos.transformer import DisentangledEncoder

    for subclass in (DisentangledEncoder, EnhancedMaskDecoder):
        assert "run_layers" not in vars(subclass)
    assert "forward" not in vars(DisentangledEncoder)
    calls = []
    prepare = relpos.SelfAttention.prepare

    def counted(self, *args, **kwargs):
        calls.append(self)
        return prepare(self, *args, **kwargs)

    monkeypatch.setattr(relpos.SelfAttention, "prepare", counted)
    for scheme in ("alibi", "deberta"):
        torch.manual_seed(0)
        stack = relpos.Transformer(scheme, 3, HIDDEN, HEADS).double().eval()
        x = torch.randn(2, 7, HIDDEN, dtype=torch.float64)
        mask = torch.tensor([[1] * 7, [1] * 5 + [0] * 2])
        calls.clear()
        whole = stack(x, mask)
        assert calls == [stack.layers[0].attention]  # one check for three layers
        # some layers, then the rest: the same as the whole stack
        part = stack.run_layers(x, mask, stack.layers[:1])
        rest = stack.run_layers(part, mask, stack.layers[1:])
        assert torch.equal(rest, whole)
        by_layer = x
        for layer in stack.layers:
            by_layer = layer(by_layer, mask, **(
                {} if stack.table is None
                else {"rel_embeddings": stack.shared_input()}
            ))
        assert torch.equal(by_layer, whole)
