"""The modules and inputs every backend runs: the same seeded weights and tensors.

:func:`random_weights` draws the query/key/value projections once;
:func:`build_module` turns them into transformers' reference or a relpos copy of
it; :func:`make_inputs` draws the hidden states, table, masks and output
gradient of one length. :func:`forward_fn` wraps one forward pass of any
backend in a closure (transformers takes the pairwise mask, relpos the padding
mask), :func:`run_pass` runs it with or without a backward pass and
:func:`clear_grads` drops what the backward left.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import nn

from relpos.attention import DisentangledSelfAttention
from .config import BenchConfig, check_backends

# -- building the modules and inputs ---------------------------------------------------


def random_weights(config: BenchConfig) -> dict[str, torch.Tensor]:
    """Seeded random query/key/value projections shared by every backend.

    Weights are drawn like DeBERTa's initialiser (normal, std 0.02); the biases
    are drawn too, so that no term is trivially zero.

    Shapes:
        ``*_proj.weight``: ``(hidden, hidden)``; ``*_proj.bias``: ``(hidden,)``
    """
    generator = torch.Generator().manual_seed(config.seed)
    weights = {}
    for name in ("query_proj", "key_proj", "value_proj"):
        weights[f"{name}.weight"] = 0.02 * torch.randn(
            config.hidden, config.hidden, generator=generator
        )
        weights[f"{name}.bias"] = 0.02 * torch.randn(config.hidden, generator=generator)
    return {name: w.to(config.torch_dtype) for name, w in weights.items()}


def transformers_module(
    config: BenchConfig, weights: dict[str, torch.Tensor]
) -> nn.Module:
    """transformers' DeBERTa-v2 attention with ``weights``, in eval mode on the device.
    """
    from transformers import DebertaV2Config
    from transformers.models.deberta_v2.modeling_deberta_v2 import (
        DisentangledSelfAttention as Reference,
    )

    hf_config = DebertaV2Config(
        hidden_size=config.hidden,
        num_attention_heads=config.heads,
        relative_attention=True,
        max_relative_positions=config.max_relative_positions,
        position_buckets=config.position_buckets,
        pos_att_type=["c2p", "p2c"],
        share_att_key=True,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    module = Reference(hf_config).to(dtype=config.torch_dtype)
    module.load_state_dict(weights)
    return module.to(config.device).eval()


def build_module(
    backend: str,
    config: BenchConfig,
    weights: dict[str, torch.Tensor],
    reference: nn.Module | None = None,
) -> nn.Module:
    """The module of one backend, on ``config.device``, in eval mode.

    ``"transformers"`` is the reference itself (built here when ``reference`` is
    None). The relpos backends are ``from_transformers`` copies of ``reference``
    when it is given, else built directly with ``weights`` (the same numbers,
    without importing ``transformers``: used by the memory subprocess).
    """
    check_backends([backend])
    if backend == "transformers":
        return (
            reference if reference is not None else transformers_module(config, weights)
        )
    if reference is not None:
        return DisentangledSelfAttention.from_transformers(
            reference, backend=backend
        ).eval()
    attention = DisentangledSelfAttention(
        config=config.attention(backend), own_table=False
    )
    module = attention.to(dtype=config.torch_dtype)
    module.load_state_dict(weights)
    return module.to(config.device).eval()


def make_inputs(config: BenchConfig, n: int) -> dict[str, torch.Tensor]:
    """Seeded hidden states, table, masks and output gradient for length ``n``.

    ``mask`` is the ``(b, n)`` padding mask relpos takes, ``pair_mask`` the
    pairwise form transformers takes; both are all ones.

    Shapes:
        hidden_states: ``(b, n, hidden)``; table: ``(2 * span, hidden)``
        mask: ``(b, n)``; pair_mask: ``(b, 1, n, n)`` bool; grad: ``(b, n, hidden)``
    """
    generator = torch.Generator().manual_seed(config.seed + 1)
    b, hidden = config.batch, config.hidden
    inputs = {
        "hidden_states": torch.randn(b, n, hidden, generator=generator),
        "table": torch.randn(2 * config.span, hidden, generator=generator),
        "grad": torch.randn(b, n, hidden, generator=generator),
    }
    inputs = {
        k: v.to(device=config.device, dtype=config.torch_dtype)
        for k, v in inputs.items()
    }
    mask = torch.ones(b, n, dtype=torch.long, device=config.device)
    inputs["mask"] = mask
    inputs["pair_mask"] = (
        mask[:, None, None, :] * mask[:, None, :, None]
    ).bool()  # (b, 1, i, j)
    return inputs


def forward_fn(
    backend: str, module: nn.Module, inputs: dict[str, torch.Tensor]
) -> Callable[[], torch.Tensor]:
    """A closure running one forward pass of ``module`` on ``inputs``.

    transformers' module takes the pairwise mask, relpos' the padding mask.

    Shapes:
        inputs: as made by :func:`make_inputs`; the closure's output: ``(b, n, hidden)``
    """
    x, table = inputs["hidden_states"], inputs["table"]
    if backend == "transformers":
        pair_mask = inputs["pair_mask"]
        return lambda: module(x, pair_mask, relative_pos=None, rel_embeddings=table)[0]
    mask = inputs["mask"]
    return lambda: module(x, mask, rel_embeddings=table)


def run_pass(
    forward: Callable[[], torch.Tensor], backward: bool, inputs: dict[str, torch.Tensor]
) -> torch.Tensor:
    """One forward pass (under no_grad), or one forward plus backward pass.

    Shapes:
        output: ``(b, n, hidden)``; ``inputs["grad"]``, its gradient: ``(b, n, hidden)``
    """
    if not backward:
        with torch.no_grad():
            return forward()
    out = forward()
    out.backward(inputs["grad"])
    return out


def clear_grads(module: nn.Module, inputs: dict[str, torch.Tensor]) -> None:
    """Drop the gradients a backward pass left on ``module`` and the hidden states."""
    module.zero_grad(set_to_none=True)
    inputs["hidden_states"].grad = None


__all__ = [
    "build_module",
    "clear_grads",
    "forward_fn",
    "make_inputs",
    "random_weights",
    "run_pass",
    "transformers_module",
]
