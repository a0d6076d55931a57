"""The probe in under a minute on one core, for the chapter: one seed, small models.

:func:`live_probe` trains the three arms at a small size (:data:`LIVE`: width
32, one layer, ``L = 32``, 150 steps, one seed, one untuned rate) on the
content objective alone and with the position objective, and returns each
arm's content cost, the position objective's loss trained and untrained, and
the mean gradient cosines. One seed and an untuned rate give no verdict: the
verdict is the sweep's (``make probe-gradients``).

:func:`term_reaches_content` is the fact the chapter's live cell asserts on
every run, exactly: whether an arm's position term sends gradient to the
content query and key projections. It does in the BERT arm (positions are
summed into what those projections read) and in DeBERTa's (c2p and p2c project
the table with them); it does not in TUPE's, whose term has its own table and
projections.

Shapes:
    (no tensors: dicts of floats)
"""

from __future__ import annotations

import statistics
from typing import Any

import torch

from relpos.schemes import TupeSelfAttention

from ...experiments.schemes import LearnedPositions
from ...gradients import gradient_map
from ...text.config import TextConfig
from ...text.gradients import train_objectives
from .design import ARMS, MIXES, OFFSET

#: The live cell's runs (seconds each on one core).
LIVE = dict(
    setting="causal",
    train_length=32,
    eval_lengths=(32,),
    hidden_size=32,
    num_heads=2,
    num_layers=1,
    batch_size=16,
    steps=150,
    learning_rate=3e-3,
)


def term_reaches_content(arm: str) -> bool:
    """Whether the position term of ``arm`` sends gradient to the content projections.

    Computed on one freshly built attention of the arm (width 16, two heads):
    the gradient of the position part alone with respect to the content query
    and key projections, nonzero or not.

    Shapes:
        (no tensors)
    """
    if arm not in ARMS:
        raise ValueError(f"arm must be one of {tuple(ARMS)}, got {arm!r}")
    torch.manual_seed(0)
    x = torch.randn(1, 5, 16)  # (b, n, hidden)
    if arm == "deberta":
        from relpos import DisentangledSelfAttention

        module = DisentangledSelfAttention(16, 2, max_relative_positions=4)
        table = torch.randn(8, 16, requires_grad=True)  # (2k, hidden)
        reached = gradient_map(module, table, x.requires_grad_())["c2p"]
        return reached["query_proj"] or reached["key_proj"]
    if arm == "tupe":
        module = TupeSelfAttention(16, 2, max_length=8)
        term = module.position_bias(torch.arange(5), torch.arange(5))  # (h, i, j)
    else:  # absolute: the table summed into the states the projections read
        from relpos.core import SelfAttention

        module = SelfAttention(16, 2)
        positions = LearnedPositions(8, 16)
        _, scores = module(x + positions(5), return_scores=True)
        term = scores.logits
    weights = [module.query_proj.weight, module.key_proj.weight]
    grads = torch.autograd.grad(term.square().sum(), weights, allow_unused=True)
    return any(g is not None and bool(g.abs().sum() > 0) for g in grads)


def live_probe(seed: int = 0, steps: int = LIVE["steps"]) -> dict[str, dict[str, Any]]:
    """Each arm trained with and without the position objective at :data:`LIVE`.

    Returns ``{arm: {"content_alone", "content_both", "cost", "aux",
    "aux_untrained", "cosine": {group: mean over training}}}`` (validation
    losses in nats).

    Shapes:
        (no tensors)
    """
    found = {}
    for arm in ARMS:
        config = TextConfig(**{**LIVE, "steps": steps}, scheme=arm, seed=seed)
        alone, both = (
            train_objectives(config, mix, offset=OFFSET, valid_windows=128)
            for mix in MIXES
        )
        found[arm] = {
            "content_alone": alone["valid"]["content"],
            "content_both": both["valid"]["content"],
            "cost": both["valid"]["content"] - alone["valid"]["content"],
            "aux": both["valid"]["position"],
            "aux_untrained": alone["valid"]["position"],
            "cosine": {g: statistics.fmean(v) for g, v in both["cosines"].items()},
        }
    return found


__all__ = ["LIVE", "live_probe", "term_reaches_content"]
