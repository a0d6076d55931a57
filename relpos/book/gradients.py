"""Which tensors each score term sends gradient to: chapter 4's probe of the claim
that separate position terms keep position learning apart from content learning."""

from __future__ import annotations

import torch

from relpos import DisentangledSelfAttention

TERMS = ("c2c", "c2p", "p2c")


def gradient_map(
    module: DisentangledSelfAttention, table: torch.Tensor, states: torch.Tensor
) -> dict[str, dict[str, bool]]:
    """For each score term, whether it sends a nonzero gradient to each tensor.

    The tensors are the module's query and key projection weights (every
    ``*proj.weight`` but the value's, named without ``.weight``), the table and
    the hidden states. ``table`` and ``states`` must require gradient.

    Shapes:
        table: (2k, hidden), the relative-position table.
        states: (b, n, hidden), the hidden states.

    Returns:
        ``{term: {tensor name: bool}}`` for the terms ``c2c``, ``c2p`` and ``p2c``
        (a term the module does not compute is left out).

    Raises:
        ValueError: ``table`` or ``states`` does not require gradient.
    """
    for name, tensor in (("table", table), ("states", states)):
        if not tensor.requires_grad:
            raise ValueError(f"{name} must require gradient (requires_grad=True)")
    _, scores = module(states, rel_embeddings=table, return_scores=True)
    targets = {
        name.removesuffix(".weight"): weight
        for name, weight in module.named_parameters()
        if name.endswith("proj.weight") and not name.startswith("value")
    }
    targets["table"] = table
    targets["states"] = states
    result = {}
    for term in TERMS:
        score = getattr(scores, term)
        if score is None:
            continue
        grads = torch.autograd.grad(
            score.sum(), list(targets.values()), retain_graph=True, allow_unused=True
        )
        result[term] = {
            name: g is not None and bool(g.abs().sum() > 0)
            for name, g in zip(targets, grads)
        }
    return result
