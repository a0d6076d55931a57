"""A trained model run with one thing changed: per-layer pair masks, a redirected row.

An intervention on a trained model changes one suspected cause and keeps every
weight. Two kinds of change cover the book's claims:

- *pair masks*, one per layer: which keys each query may read in that layer
  (:func:`forward_layers`, :func:`accuracy_with`; :func:`distance_mask` builds
  one from the distances ``i - j``). Cutting a path is masking the pairs it
  runs through; the other pairs keep their weights, renormalised.
- *a redirected table row* (:func:`redirect_row`): every pair of a DeBERTa
  attention that reads row ``source`` of the relative table reads row ``target``
  instead; the table, the projections and every other pair are unchanged.

Shapes:
    tokens, labels: ``(b, n)``; a pair mask: ``(n, n)`` or ``(b, n, n)`` bool, True:
    may attend
    logits: ``(b, n, classes)``; probabilities: ``(b, h, n, n)`` per layer
"""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator, Optional, Sequence, Union

import torch

from relpos.attention import DisentangledSelfAttention
from relpos.checks import check_int
from relpos.transformer import DisentangledEncoder
from relpos.positions import relative_positions

from ..emd import EnhancedMaskDecoder
from ..model import TinyModel
from ..schemes import AttentionEncoder
from ..tasks import Task

#: A pair mask of one layer: ``(n, n)`` or ``(b, n, n)`` bool (True: may attend), or
#: None (every pair).
PairMask = Optional[torch.Tensor]


def _layers(model: TinyModel) -> list[tuple[torch.nn.Module, dict]]:
    """Each encoder layer with the keywords it needs (DeBERTa's shared table)."""
    encoder = model.encoder
    if isinstance(encoder, EnhancedMaskDecoder):
        raise ValueError(
            "model must not use deberta-emd: its decoder reruns the last layer, "
            "which forward_layers does not split"
        )
    if isinstance(encoder, DisentangledEncoder):
        table = encoder.rel_embeddings()  # (2 * span, hidden)
        return [(layer, {"rel_embeddings": table}) for layer in encoder.layers]
    if isinstance(encoder, AttentionEncoder):
        return [(layer, {}) for layer in encoder.layers]
    raise ValueError(
        "model must have an AttentionEncoder or a DisentangledEncoder, got "
        f"{type(encoder).__name__}"
    )


def _masks(masks: object, count: int, b: int, n: int) -> list[torch.Tensor | None]:
    """One pair mask (or None) per layer, each checked and made ``(b, n, n)`` bool."""
    if masks is None or isinstance(masks, torch.Tensor):
        masks = [masks] * count
    if not isinstance(masks, (list, tuple)) or len(masks) != count:
        raise ValueError(
            f"masks must be None, one (n, n) or (b, n, n) bool mask, or a list of "
            f"{count} (one per layer), got {masks!r}"
        )
    found = []
    for mask in masks:
        if mask is None:
            found.append(None)
            continue
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
            raise TypeError(f"masks must hold bool tensors or None, got {mask!r}")
        if tuple(mask.shape) not in ((n, n), (b, n, n)):
            raise ValueError(
                f"masks must be of shape (n, n) = {(n, n)} or (b, n, n) = "
                f"{(b, n, n)}, got {tuple(mask.shape)}"
            )
        found.append(mask.expand(b, n, n))  # (b, i, j)
    return found


@torch.no_grad()
def forward_layers(
    model: TinyModel,
    tokens: torch.Tensor,
    masks: Union[PairMask, Sequence[PairMask]] = None,
    *,
    probs: bool = False,
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """The model's logits with layer ``l`` reading only the pairs of ``masks[l]``.

    ``masks``: ``None`` (every pair, the model itself), one mask for every
    layer, or a list of one per layer (``None`` in it: that layer unmasked);
    a mask is shared by the batch, ``(n, n)``, or one per sequence,
    ``(b, n, n)``. With ``probs``, also each layer's attention probabilities
    under its mask.

    Shapes:
        tokens: ``(b, n)``; each mask: ``(n, n)`` or ``(b, n, n)`` bool
        output: logits ``(b, n, classes)``, probabilities ``[(b, h, n, n)]``
    """
    layers = _layers(model)
    b, n = tokens.shape
    hidden = model.embed(tokens)  # (b, n, hidden)
    found = []
    for (layer, extra), pairs in zip(layers, _masks(masks, len(layers), b, n)):
        if probs:
            _, scores = layer.attention(
                hidden, attention_mask=pairs, return_scores=True, **extra
            )
            found.append(scores.probs)  # (b, h, n, n)
        hidden = layer(hidden, attention_mask=pairs, **extra)  # (b, n, hidden)
    return model.classifier(hidden), found


def accuracy_with(
    model: TinyModel,
    task: Task,
    tokens: torch.Tensor,
    labels: torch.Tensor,
    masks: Union[PairMask, Sequence[PairMask]] = None,
) -> float:
    """Share of the scored positions right when the layers read only ``masks``' pairs.

    With ``masks=None`` this is ``measure.accuracy``.

    Shapes:
        tokens, labels: ``(b, n)``
        output: a float in ``[0, 1]``
    """
    logits, _ = forward_layers(model, tokens, masks)
    scored = task.scored(labels)  # (b, n)
    right = (logits.argmax(-1) == labels) & scored
    return right.sum().item() / max(1, int(scored.sum()))


def distance_mask(
    n: int, allowed: Callable[[torch.Tensor], torch.Tensor]
) -> torch.Tensor:
    """The pairs whose distance ``i - j`` passes ``allowed`` (and each query's own).

    ``allowed(rel)`` maps the ``(n, n)`` distances to a bool tensor. A query
    keeps its own key whatever ``allowed`` says, so none is left with nothing.

    Shapes:
        output: ``(n, n)`` bool
    """
    n = check_int("n", n, minimum=1)
    rel = relative_positions(n)  # (i, j): i - j
    keep = allowed(rel)
    if not isinstance(keep, torch.Tensor) or keep.shape != rel.shape:
        raise ValueError("allowed must map the (n, n) distances to an (n, n) tensor")
    return keep.bool() | (rel == 0)


def _disentangled(model: torch.nn.Module) -> list[DisentangledSelfAttention]:
    found = [m for m in model.modules() if isinstance(m, DisentangledSelfAttention)]
    if not found:
        raise ValueError("model must have a DeBERTa attention (a relative table)")
    return found


@contextlib.contextmanager
def redirect_row(model: TinyModel, source: int, target: int) -> Iterator[TinyModel]:
    """Within the block, every pair that reads table row ``source`` reads ``target``.

    Changes each DeBERTa attention's distance lookup (its ``lookup`` buffer,
    which every kernel reads) and restores it on exit; no weight changes, and a
    pair that never read ``source`` reads what it read before.

    Shapes:
        (no tensors)
    """
    attentions = _disentangled(model)
    rows = 2 * attentions[0].span
    source = check_int("source", source, minimum=0)
    target = check_int("target", target, minimum=0)
    if source >= rows or target >= rows:
        raise ValueError(
            f"source and target must be rows 0 .. {rows - 1} of the table, got "
            f"source={source} and target={target}"
        )
    saved = [attention.lookup.clone() for attention in attentions]
    try:
        for attention in attentions:
            attention.lookup[attention.lookup == source] = target
        yield model
    finally:
        for attention, lookup in zip(attentions, saved):
            attention.lookup.copy_(lookup)


def rows_read(model: TinyModel, n: int) -> torch.Tensor:
    """The table row each pair of a length-``n`` sequence reads, as its scheme says.

    The first layer's ``position_index`` (computed afresh, so not changed by
    :func:`redirect_row`).

    Shapes:
        output: ``(n, n)`` long
    """
    return _disentangled(model)[0].position_index(check_int("n", n, minimum=1))


__all__ = [
    "accuracy_with",
    "distance_mask",
    "forward_layers",
    "redirect_row",
    "rows_read",
]
