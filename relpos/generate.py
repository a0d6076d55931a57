"""Decoding a causal language model with a ``KVCache``: greedy or sampled.

``generate(model, input_ids, max_new_tokens)`` runs the prompt once, keeping every
layer's keys and values in a cache, then feeds back one token per step: each
step's query reads the cached keys and its own. ``model`` is any module called
as ``model(input_ids, attention_mask, positions=..., cache=...)`` that returns
logits ``(b, n, v)`` (``relpos.TransformerLM``). ``use_cache=False`` runs the
whole sequence again at every step instead: the same tokens, for testing.

The next token is the most likely one (greedy), or with ``do_sample=True`` a
draw from the softmax of ``logits / temperature``, restricted to the ``top_k``
most likely tokens and to the smallest set whose probability reaches ``top_p``
(nucleus sampling, Holtzman et al. 2020). A sequence that emits
``eos_token_id`` is finished: its later tokens are ``pad_token_id``
(default: ``eos_token_id``); decoding stops when all are finished.

A left-padded batch (``attention_mask`` ``(b, n)``, 0 or False for padding)
counts each sequence's positions from its first real token, so that padding
changes no sequence's tokens.

Shapes:
    input_ids: ``(b, n)`` long; output: ``(b, n + m)`` long, ``m <= max_new_tokens``
    logits: ``(b, v)``
"""

from __future__ import annotations

import numbers

import torch
from torch import nn

from .cache import KVCache
from .checks import check_bool, check_int


def next_token_scores(
    logits: torch.Tensor,
    *,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
) -> torch.Tensor:
    """The logits a sample is drawn from: scaled, with the cut tokens at ``-inf``.

    Shapes:
        logits: ``(b, v)``; output: ``(b, v)``
    """
    scores = logits / temperature
    if top_k is not None and top_k < scores.shape[-1]:
        kth = scores.topk(top_k, dim=-1).values[..., -1:]  # (b, 1)
        scores = scores.masked_fill(scores < kth, float("-inf"))
    if top_p is not None and top_p < 1.0:
        ordered, order = scores.sort(dim=-1, descending=True)  # (b, v)
        probs = ordered.softmax(-1)
        before = probs.cumsum(-1) - probs  # mass of the tokens ranked above
        cut = before >= top_p  # the most likely token is never cut
        ordered = ordered.masked_fill(cut, float("-inf"))
        scores = torch.full_like(scores, float("-inf")).scatter(-1, order, ordered)
    return scores


def _check_options(temperature, top_k, top_p) -> None:
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real):
        raise TypeError(f"temperature must be a float > 0, got {temperature!r}")
    if not temperature > 0:
        raise ValueError(f"temperature must be a float > 0, got {temperature!r}")
    if top_k is not None:
        check_int("top_k", top_k, minimum=1)
    if top_p is not None:
        if isinstance(top_p, bool) or not isinstance(top_p, numbers.Real):
            raise TypeError(f"top_p must be a float in (0, 1], got {top_p!r}")
        if not 0 < top_p <= 1:
            raise ValueError(f"top_p must be a float in (0, 1], got {top_p!r}")


def _check_prompt(input_ids: object, attention_mask: object) -> torch.Tensor | None:
    if not isinstance(input_ids, torch.Tensor) or input_ids.dtype != torch.long:
        raise TypeError("input_ids must be a long tensor of shape (b, n)")
    if input_ids.dim() != 2 or input_ids.shape[1] < 1:
        raise ValueError(
            "input_ids must have shape (b, n) with n >= 1, got "
            f"{tuple(input_ids.shape)}"
        )
    if attention_mask is None:
        return None
    if not isinstance(attention_mask, torch.Tensor) or attention_mask.shape != (
        input_ids.shape
    ):
        raise ValueError(
            f"attention_mask must be a (b, n) = {tuple(input_ids.shape)} tensor, 1 "
            "or True for a token, 0 or False for padding"
        )
    keep = attention_mask != 0  # (b, n)
    if not bool(keep[:, -1].all()):
        raise ValueError(
            "attention_mask must pad on the left: the prompt's last column must be "
            "a token in every sequence"
        )
    return keep


@torch.no_grad()
def generate(
    model: nn.Module,
    input_ids: torch.Tensor,
    max_new_tokens: int,
    *,
    attention_mask: torch.Tensor | None = None,
    do_sample: bool = False,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    eos_token_id: int | None = None,
    pad_token_id: int | None = None,
    generator: torch.Generator | None = None,
    use_cache: bool = True,
) -> torch.Tensor:
    """The prompt followed by up to ``max_new_tokens`` decoded tokens.

    Shapes:
        input_ids, attention_mask: ``(b, n)``; output: ``(b, n + m)`` long
    """
    if not isinstance(model, nn.Module):
        raise TypeError(
            "model must be an nn.Module called as model(input_ids, attention_mask, "
            f"positions=..., cache=...) (relpos.TransformerLM), got "
            f"{type(model).__name__}"
        )
    check_int("max_new_tokens", max_new_tokens, minimum=0)
    check_bool("do_sample", do_sample)
    check_bool("use_cache", use_cache)
    _check_options(temperature, top_k, top_p)
    keep = _check_prompt(input_ids, attention_mask)
    if eos_token_id is not None:
        check_int("eos_token_id", eos_token_id, minimum=0)
    pad = eos_token_id if pad_token_id is None else pad_token_id
    b, n = input_ids.shape
    device = input_ids.device
    if keep is None:
        keep = torch.ones(b, n, dtype=torch.bool, device=device)
    positions = (keep.cumsum(-1) - 1).clamp(min=0)  # (b, n): counted from a token
    cache = KVCache() if use_cache else None
    tokens = input_ids
    finished = torch.zeros(b, dtype=torch.bool, device=device)
    feed, feed_positions, feed_mask = input_ids, positions, keep
    for _ in range(max_new_tokens):
        if use_cache:
            logits = model(feed, feed_mask, positions=feed_positions, cache=cache)
        else:
            logits = model(tokens, keep, positions=positions)
        logits = logits[:, -1]  # (b, v)
        if do_sample:
            scores = next_token_scores(
                logits, temperature=temperature, top_k=top_k, top_p=top_p
            )
            chosen = torch.multinomial(scores.softmax(-1), 1, generator=generator)
        else:
            chosen = logits.argmax(-1, keepdim=True)  # (b, 1)
        if eos_token_id is not None:
            chosen = chosen.masked_fill(finished[:, None], pad)
            finished = finished | (chosen[:, 0] == eos_token_id)
        tokens = torch.cat([tokens, chosen], dim=1)  # (b, n + step)
        new_position = positions[:, -1:] + 1  # (b, 1)
        positions = torch.cat([positions, new_position], dim=1)
        keep = torch.cat([keep, keep.new_ones(b, 1)], dim=1)
        feed, feed_positions, feed_mask = chosen, new_position, None
        if eos_token_id is not None and bool(finished.all()):
            break
    return tokens


__all__ = ["generate", "next_token_scores"]
