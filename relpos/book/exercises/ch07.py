"""Checks for chapter 7, DeBERTa in practice.

Shape legend:
    ch7-ex1: a function ``(r (*), bucket_size, max_position) -> (*)``;
    ch7-ex2: ``(b, n, hidden)``; ch7-ex3: a ``relpos.DisentangledSelfAttention``
"""

from __future__ import annotations

import math
from typing import Any, Callable

import torch
from torch import nn

from relpos.attention import DisentangledSelfAttention
from relpos.positions import log_bucket_position
from ._core import as_tensor, call, close, exercise, fail, require_callable

SETTINGS = ((256, 512), (16, 64), (64, 4096))


def _rounded_down(r: torch.Tensor, buckets: int, max_position: int) -> torch.Tensor:
    """The log buckets with ``floor`` where the formula has ``ceil`` (a usual slip)."""
    mid = buckets // 2
    magnitude = r.abs().double().clamp(min=mid)
    ratio = torch.log(magnitude / mid) / math.log((max_position - 1) / mid)
    far = (mid + torch.floor((mid - 1) * ratio)).long() * r.sign()
    return torch.where(r.abs() <= mid, r, far)


@exercise("ch7-ex1")
def log_buckets_from_the_formula(answer: Callable[..., Any]) -> str:
    """``answer(r, bucket_size, max_position)``: the log bucket of each distance.

    Shapes:
        r: ``(*)`` integer; output: ``(*)``
    """
    function = require_callable(answer, "a function of (r, bucket_size, max_position)")
    for buckets, max_position in SETTINGS:
        r = torch.arange(-3 * max_position, 3 * max_position + 1)
        expected = log_bucket_position(r, buckets, max_position)
        what = f"f(r, {buckets}, {max_position})"
        got = as_tensor(call(function, r, buckets, max_position, what=what), "a tensor")
        if tuple(got.shape) != tuple(r.shape):
            fail(
                f"{what} should have r's shape {tuple(r.shape)}, got {tuple(got.shape)}"
            )
        got = got.round().long() if got.is_floating_point() else got.long()
        if torch.equal(got, expected):
            continue
        wrong = r[got != expected]
        if torch.equal(got[r > 0], expected[r > 0]):
            fail("keys ahead (r < 0) need negative buckets: bucket(-r) = -bucket(r)")
        if torch.equal(got, _rounded_down(r, buckets, max_position)):
            fail("some buckets come out one too small: round up with ceil, not down")
        fail(
            f"{what}: distance {int(wrong[0])} gets bucket {int(got[r == wrong[0]])}; "
            "check the log ratio, log(|r| / mid) / log((max_position - 1) / mid)"
        )
    return "equal to relpos.log_bucket_position in 3 settings, past max_position."


def _layer_contexts(model: nn.Module, tokens: torch.Tensor, mask: torch.Tensor) -> dict:
    seen = {}

    def record(layer: int):
        def hook(module, args, kwargs, output):
            seen[layer] = output[0]

        return hook

    handles = [
        layer.attention.self.register_forward_hook(record(number), with_kwargs=True)
        for number, layer in enumerate(model.encoder.layer)
    ]
    try:
        with torch.no_grad():
            result = model(tokens, attention_mask=mask, output_hidden_states=True)
    finally:
        for handle in handles:
            handle.remove()
    return {"contexts": seen, "hidden": result.hidden_states}


@exercise("ch7-ex2")
def second_layer(
    answer: Any, *, model: nn.Module, tokens: torch.Tensor, attention_mask: torch.Tensor
) -> str:
    """The second layer's attention context, reproduced with relpos.

    Shapes:
        answer: ``(b, n, hidden)``; tokens, attention_mask: ``(b, n)``
    """
    got = as_tensor(answer, "a (b, n, hidden) tensor")
    run = _layer_contexts(model, tokens, attention_mask)
    keep = attention_mask.bool()
    expected = run["contexts"][1]
    if tuple(got.shape) != tuple(expected.shape):
        fail(
            f"the context should have shape {tuple(expected.shape)}, "
            f"got {tuple(got.shape)}"
        )
    if close(got[keep], expected[keep], atol=2e-5):
        return "layer 1 takes hidden_states[1] and the same normalised table."
    second = DisentangledSelfAttention.from_transformers(
        model.encoder.layer[1].attention.self
    )
    encoder = model.encoder
    with torch.no_grad():
        table = encoder.get_rel_embedding()
        from_embeddings = second(
            run["hidden"][0], attention_mask, rel_embeddings=table
        )
        raw_table = second(
            run["hidden"][1], attention_mask,
            rel_embeddings=encoder.rel_embeddings.weight,
        )
    if close(got[keep], from_embeddings[keep], atol=2e-5):
        fail(
            "that is layer 1 run on hidden_states[0], the embeddings; its input is "
            "layer 0's output"
        )
    if close(got[keep], raw_table[keep], atol=2e-5):
        fail(
            "that uses the raw table; every layer receives the LayerNorm-ed one, "
            "encoder.get_rel_embedding()"
        )
    fail("copy layer 1's attention with from_transformers and feed it layer 1's input")


@exercise("ch7-ex3")
def separate_position_projections(answer: Any, *, reference: nn.Module) -> str:
    """A relpos copy of a ``transformers`` layer with ``share_att_key=False``.

    Shapes:
        answer(hidden_states, mask, rel_embeddings=table): ``(b, n, hidden)``,
            ``(b, n)``, ``(2k, hidden)`` -> ``(b, n, hidden)``
    """
    if not isinstance(answer, DisentangledSelfAttention):
        fail(f"give the relpos module; got {type(answer).__name__}")
    if answer.share_att_key:
        fail(
            "the copy has share_att_key=True: build it with from_transformers, which "
            "reads share_att_key=False and copies pos_key_proj and pos_query_proj"
        )
    for name in ("pos_key_proj", "pos_query_proj"):
        if not torch.equal(
            getattr(answer, name).weight, getattr(reference, name).weight
        ):
            fail(f"{name} differs from the reference's: copy the weights")
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(1, 20, answer.hidden_size, generator=generator)
    table = torch.randn(2 * answer.span, answer.hidden_size, generator=generator)
    from transformers.models.deberta_v2.modeling_deberta_v2 import (
        build_relative_position,
    )

    rel = build_relative_position(
        x,
        x,
        bucket_size=reference.position_buckets,
        max_position=reference.max_relative_positions,
    )
    with torch.no_grad():
        want = reference(
            x, torch.ones(1, 1, 20, 20), relative_pos=rel, rel_embeddings=table
        )[0]
        have = answer.eval()(x, rel_embeddings=table)
    if not close(have, want, atol=2e-5):
        fail("the copy's output differs from the reference's on a 20-token input")
    return "pos_key_proj and pos_query_proj copied; outputs equal."
