"""Causal decoding with ``relpos.KVCache`` equals recomputing the whole prefix, for
every module on every kernel (``_every.GRID``), alone, in an ``EncoderLayer`` and in
a causal ``DisentangledEncoder``; with padding in the prompt (left padding and
per-sequence positions) and with packed documents. The cache's bookkeeping
(length, positions, reset) and its refusal on a non-causal module; and a tiny
greedy decoder whose cached generation equals the uncached one.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

import relpos
from _every import (
    COMPILED,
    GRID,
    HEADS,
    HIDDEN,
    KERNELS,
    MODULES,
    build,
    call,
    spread,
    tolerance,
)

N = 9
#: How the 9 tokens are fed: a prompt of 5, then single tokens or chunks of 2.
SCHEDULES = {"singles": (5, 1, 1, 1, 1), "chunks": (5, 2, 2)}
SCHEDULE = pytest.mark.parametrize(
    "schedule", list(SCHEDULES.values()), ids=list(SCHEDULES)
)


def states(dtype: torch.dtype = torch.float64, b: int = 2) -> torch.Tensor:
    generator = torch.Generator().manual_seed(5)
    return torch.randn(b, N, HIDDEN, dtype=dtype, generator=generator)


def decode(model, x, schedule, cache, prompt_mask=None, **per_token):
    """Feed ``x`` in the chunks of ``schedule`` through ``model`` with ``cache``;
    each keyword in ``per_token`` (a ``(b, n)`` tensor) is sliced with its chunk;
    ``prompt_mask`` goes with the first chunk only (the later tokens are real).

    Shapes:
        x: ``(b, n, hidden)``; output: ``(b, n, hidden)``, the chunks' outputs
    """
    outputs, start = [], 0
    for size in schedule:
        chunk = slice(start, start + size)
        extra = {k: v[:, chunk] for k, v in per_token.items() if v is not None}
        mask = prompt_mask[:, chunk] if start == 0 and prompt_mask is not None else None
        with torch.no_grad():
            outputs.append(model(x[:, chunk], mask, cache=cache, **extra))
        assert cache.length == start + size
        start += size
    return torch.cat(outputs, dim=1)


def left_padding(b: int = 2, pad: int = 2):
    """Row 1 starts with ``pad`` padding tokens; positions count the real ones.

    Shapes:
        output: mask ``(b, n)`` bool, positions ``(b, n)``
    """
    mask = torch.ones(b, N, dtype=torch.bool)
    mask[1, :pad] = False
    return mask, (mask.cumsum(-1) - 1).clamp(min=0)


def packed_documents():
    """Row 0: documents of 3 and 6 tokens; row 1: of 6 and 3; positions restart.

    Shapes:
        output: ids ``(2, n)``, positions ``(2, n)``
    """
    ids = torch.tensor([[0] * 3 + [1] * 6, [0] * 6 + [1] * 3])
    first = torch.tensor([[0] * 3 + [3] * 6, [0] * 6 + [6] * 3])
    return ids, torch.arange(N) - first


# -- one attention module -------------------------------------------------------------


@pytest.mark.parametrize("name, backend", GRID)
@SCHEDULE
def test_cached_decoding_equals_the_full_forward(name, backend, schedule):
    module = build(name, backend, causal=True)
    x = states()
    full = call(module, x)
    cache = relpos.KVCache()
    got = decode(module, x, schedule, cache)
    torch.testing.assert_close(got, full, **tolerance(x.dtype))
    assert torch.equal(cache.positions, torch.arange(N)[None])


@pytest.mark.parametrize("name, backend", GRID)
def test_cached_decoding_with_left_padding(name, backend):
    module = build(name, backend, causal=True)
    x = states()
    mask, positions = left_padding()
    full = call(module, x, mask, positions=positions)
    schedule = SCHEDULES["singles"]
    # The prompt's mask covers the prompt; the new tokens are real (no mask).
    cache = relpos.KVCache()
    got = decode(module, x, schedule, cache, mask, positions=positions)
    tight = tolerance(x.dtype)
    torch.testing.assert_close(got[mask], full[mask], **tight)
    assert torch.equal(cache.positions, positions)
    assert torch.equal(cache.keys, mask)
    # A mask over every key so far, given with each chunk, reads the same.
    cache = relpos.KVCache()
    outputs = []
    for end in (schedule[0], *range(schedule[0] + 1, N + 1)):
        start = cache.length
        with torch.no_grad():
            outputs.append(module(
                x[:, start:end], mask[:, :end], positions=positions[:, start:end],
                cache=cache,
            ))
    torch.testing.assert_close(torch.cat(outputs, dim=1)[mask], full[mask], **tight)


@pytest.mark.parametrize("name, backend", GRID)
@SCHEDULE
def test_cached_decoding_with_document_ids(name, backend, schedule):
    module = build(name, backend, causal=True)
    x = states()
    ids, positions = packed_documents()
    full = call(module, x, document_ids=ids, positions=positions)
    cache = relpos.KVCache()
    got = decode(module, x, schedule, cache, document_ids=ids, positions=positions)
    torch.testing.assert_close(got, full, **tolerance(x.dtype))
    assert torch.equal(cache.documents, ids)
    # Forgetting the ids in one call with a cache is refused.
    with pytest.raises(ValueError, match="document_ids"):
        call(module, x[:, :1], cache=cache)


# -- layers and stacks ----------------------------------------------------------------


@pytest.mark.parametrize("name, backend", GRID)
def test_an_encoder_layer_around_a_scheme_decodes_with_a_cache(name, backend):
    torch.manual_seed(0)
    layer = relpos.EncoderLayer(MODULES[name](backend=backend, causal=True), HIDDEN, 32)
    spread(layer)
    layer = layer.double().eval()
    x = states()
    mask, positions = left_padding()
    full = call(layer, x, mask, positions=positions)
    cache = relpos.KVCache()
    got = decode(layer, x, SCHEDULES["singles"], cache, mask, positions=positions)
    torch.testing.assert_close(got[mask], full[mask], **tolerance(x.dtype))


def hand_made_stack(name: str, backend: str, numbered: bool) -> nn.ModuleList:
    """Two ``EncoderLayer``s around ``name``'s attention, stacked by hand."""
    torch.manual_seed(0)
    layers = nn.ModuleList(
        relpos.EncoderLayer(MODULES[name](backend=backend, causal=True), HIDDEN, 32)
        for _ in range(2)
    )
    if numbered:
        for index, layer in enumerate(layers):
            layer.attention.cache_index = index
    spread(layers)
    return layers.double().eval()


class Stack(nn.Module):
    """Calls each layer in turn with the same arguments (a hand-made stack)."""

    def __init__(self, layers: nn.ModuleList) -> None:
        super().__init__()
        self.layers = layers

    def forward(self, x, mask=None, **kwargs):
        for layer in self.layers:
            x = layer(x, mask, **kwargs)  # (b, n, hidden)
        return x


@pytest.mark.parametrize("name, backend", GRID)
def test_layers_stacked_by_hand_share_one_cache_only_when_numbered(name, backend):
    x = states()
    mask, positions = left_padding()
    # Unnumbered, every layer would write entry 0 and read the other's keys:
    # refused at the second layer of the first step, never misread.
    stack = Stack(hand_made_stack(name, backend, numbered=False))
    with pytest.raises(ValueError, match="two attention modules write cache entry 0"):
        decode(stack, x, SCHEDULES["singles"], relpos.KVCache(), mask,
               positions=positions)
    # Numbered, the layers called one by one with one cache equal the full forward.
    stack = Stack(hand_made_stack(name, backend, numbered=True))
    full = call(stack, x, mask, positions=positions)
    cache = relpos.KVCache()
    got = decode(stack, x, SCHEDULES["singles"], cache, mask, positions=positions)
    torch.testing.assert_close(got[mask], full[mask], **tolerance(x.dtype))
    assert sorted(cache._layers) == [0, 1]
    assert torch.equal(cache.positions, positions)


def test_a_layer_out_of_step_with_its_stack_is_refused():
    layers = hand_made_stack("t5", "gather", numbered=True)
    x = states()
    cache = relpos.KVCache()
    with torch.no_grad():
        Stack(layers)(x[:, :5], cache=cache)
        layers[0](x[:, 5:6], cache=cache)  # layer 1 skips this step
        with pytest.raises(ValueError, match="must each run once per step"):
            layers[1](layers[0](x[:, 6:7], cache=cache), cache=cache)
    # A module given a prepared call for other cached keys is refused too.
    first, second = (layer.attention for layer in layers)
    cache = relpos.KVCache()
    with torch.no_grad():
        Stack(layers)(x[:, :5], cache=cache)
        layers[0](x[:, 5:6], cache=cache)
        prepared = first.prepare(x[:, 6:7], cache=cache)  # 6 cached positions
        with pytest.raises(ValueError, match="prepared for 6"):
            second._attend(x[:, 6:7], prepared)  # entry 1 holds 5 keys
    # reset forgets the writers: another stack may use the cache afterwards.
    cache.reset()
    other = Stack(hand_made_stack("t5", "gather", numbered=True))
    with torch.no_grad():
        other(x[:, :5], cache=cache)
    assert cache.length == 5


def causal_encoder(backend: str, buckets: int = -1) -> relpos.DisentangledEncoder:
    torch.manual_seed(0)
    encoder = relpos.DisentangledEncoder(
        2, HIDDEN, HEADS, 32, causal=True, backend=backend,
        max_relative_positions=32 if buckets > 0 else 4, position_buckets=buckets,
    )
    spread(encoder)
    return encoder.double().eval()


@pytest.mark.parametrize("backend", KERNELS)
@pytest.mark.parametrize("buckets", [-1, 4], ids=["clipped", "buckets"])
@SCHEDULE
def test_a_causal_encoder_stack_decodes_with_a_cache(backend, buckets, schedule):
    encoder = causal_encoder(backend, buckets)
    x = states()
    full = call(encoder, x)
    cache = relpos.KVCache()
    got = decode(encoder, x, schedule, cache)
    torch.testing.assert_close(got, full, **tolerance(x.dtype))
    assert len(cache._layers) == encoder.num_layers
    # With left padding and with packed documents too.
    mask, positions = left_padding()
    full = call(encoder, x, mask, positions=positions)
    got = decode(encoder, x, schedule, relpos.KVCache(), mask, positions=positions)
    torch.testing.assert_close(got[mask], full[mask], **tolerance(x.dtype))
    ids, positions = packed_documents()
    full = call(encoder, x, document_ids=ids, positions=positions)
    got = decode(encoder, x, schedule, relpos.KVCache(), document_ids=ids,
                 positions=positions)
    torch.testing.assert_close(got, full, **tolerance(x.dtype))


# -- the cache itself -----------------------------------------------------------------


@pytest.mark.parametrize("name", list(MODULES))
def test_a_cache_on_a_non_causal_module_is_refused(name):
    module = build(name, "gather")
    cache = relpos.KVCache()
    with pytest.raises(ValueError, match="cache is for causal attention"):
        call(module, states(), cache=cache)
    assert cache.length == 0 and cache.layer(0) is None
    encoder = relpos.DisentangledEncoder(1, HIDDEN, HEADS, 32)
    with pytest.raises(ValueError, match="causal=True"):
        encoder(states(torch.float32), cache=cache)
    with pytest.raises(TypeError, match="cache must be a relpos.KVCache"):
        call(build(name, "gather", causal=True), states(), cache={})


def test_the_cache_length_and_positions_advance_and_reset_forgets():
    module = build("rotary", "gather", causal=True)
    x = states()
    cache = relpos.KVCache()
    assert len(cache) == 0 and cache.positions is None
    call(module, x[:, :5], cache=cache)
    assert len(cache) == cache.length == 5
    assert torch.equal(cache.positions, torch.arange(5)[None])
    key, value = cache.layer(0)
    assert key.shape == value.shape == (2, HEADS, 5, HIDDEN // HEADS)
    call(module, x[:, 5:6], cache=cache)
    assert cache.length == 6 and cache.layer(0)[0].shape[-2] == 6
    assert torch.equal(cache.positions, torch.arange(6)[None])
    # Positions given per sequence are kept as given.
    call(module, x[:, 6:8], cache=cache, positions=torch.tensor([[6, 7], [16, 17]]))
    assert torch.equal(cache.positions[1, -2:], torch.tensor([16, 17]))
    assert repr(cache) == "KVCache(length=8, layers=1)"
    cache.reset()
    assert cache.length == 0 and cache.layer(0) is None
    assert cache.positions is None and cache.keys is None and cache.documents is None
    # After reset a new sequence decodes as on a fresh cache.
    y = x.flip(1)
    full = call(module, y)
    got = decode(module, y, SCHEDULES["chunks"], cache)
    torch.testing.assert_close(got, full, **tolerance(y.dtype))


def test_a_cache_for_another_batch_is_refused():
    module = build("t5", "gather", causal=True)
    cache = relpos.KVCache()
    call(module, states(), cache=cache)
    with pytest.raises(ValueError, match="one cache per model and batch"):
        call(module, states(b=3)[:, :1], cache=cache)


# -- compiled flex (float32 on the CPU) -----------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", COMPILED)  # every module: eagerly, in GRID
def test_cached_decoding_on_compiled_flex(name):
    module = build(name, "flex", causal=True, dtype=torch.float32)
    x = states(torch.float32)
    full = call(module, x)
    got = decode(module, x, SCHEDULES["singles"], relpos.KVCache())
    torch.testing.assert_close(got, full, **tolerance(x.dtype))


# -- a tiny greedy decoder (the engineers' page shows this code) ----------------------


class TinyLM(nn.Module):
    """Token embedding, a causal DeBERTa stack and a linear head."""

    def __init__(self, vocab: int = 20, hidden: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.encoder = relpos.DisentangledEncoder(
            2, hidden, heads, 4 * hidden, causal=True, max_relative_positions=8
        )
        self.head = nn.Linear(hidden, vocab)

    def forward(self, tokens, cache=None):
        return self.head(self.encoder(self.embed(tokens), cache=cache))  # (b, n, vocab)


@torch.no_grad()
def generate(model, prompt, steps, cached):
    """Greedy decoding: ``steps`` tokens after ``prompt``, with or without a cache."""
    tokens, cache = prompt, relpos.KVCache() if cached else None
    new = prompt
    for _ in range(steps):
        if cached:
            logits = model(new, cache=cache)[:, -1]  # only the new tokens
        else:
            logits = model(tokens)[:, -1]  # the whole prefix again
        new = logits.argmax(-1, keepdim=True)  # (b, 1)
        tokens = torch.cat([tokens, new], dim=1)
    return tokens


def test_greedy_generation_with_a_cache_equals_without():
    torch.manual_seed(0)
    model = TinyLM().eval()
    prompt = torch.tensor([[1, 5, 7], [2, 2, 9]])
    uncached = generate(model, prompt, 10, cached=False)
    cached = generate(model, prompt, 10, cached=True)
    assert uncached.shape == (2, 13)
    assert torch.equal(cached, uncached)
    # The generation is not trivial: more than one distinct token follows.
    assert len(set(uncached[:, 3:].flatten().tolist())) > 1
