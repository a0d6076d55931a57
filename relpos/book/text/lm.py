"""The language models: the experiments' ``TinyModel`` over bytes, in two settings.

No new transformer: :func:`language_model` is ``TinyModel`` (token embedding,
the scheme's positions, the scheme's encoder, a linear classifier) with the
byte vocabulary, built by ``build_scheme`` from :meth:`TextConfig.scheme_config`.
So every registered scheme is a language model, causal where the setting is.

- ``"causal"`` (next byte): the model reads a window ``x[0 .. n-1]`` with
  causal attention and predicts ``x[t + 1]`` at every position ``t``
  (:func:`causal_windows`); 256 input symbols, 256 classes.
- ``"masked"`` (DeBERTa's and BERT's objective): each position is chosen with
  probability ``mask_rate`` (0.15); a chosen byte is replaced by the symbol
  :data:`MASK` with probability 0.8, by a uniform random byte with 0.1 and
  kept with 0.1; the model, attending both ways, predicts the original byte
  at the chosen positions only (:func:`mask_bytes`). 257 input symbols (the
  bytes and ``MASK``), 256 classes.

:func:`token_losses` gives the cross-entropy (in nats) at every predicted
position, the quantity every curve of the chapter is made of.

Shapes:
    windows: ``(b, n)`` (causal: ``(b, n + 1)``) long
    inputs, targets: ``(b, n)`` long; targets ``IGNORE`` where nothing is predicted
    losses: ``(b, n)`` float, 0 where nothing is predicted
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from relpos.checks import check_int_tensor

from ..experiments.model import TinyModel
from .config import TextConfig
from .corpus import VOCAB_BYTES

#: The input symbol of a masked byte (the masked LM's 257th symbol).
MASK = VOCAB_BYTES
#: The target of a position nothing is predicted at (``cross_entropy``'s default).
IGNORE = -100
#: BERT's split of the chosen positions: replaced by MASK, by a random byte, kept.
MASK_SPLIT = (0.8, 0.1, 0.1)


def language_model(config: TextConfig) -> TinyModel:
    """The byte-level model of ``config``: ``TinyModel`` around its scheme.

    Build it under a seed (``train.initial_model``) for reproducible weights.

    Shapes:
        forward: inputs ``(b, n)`` -> logits ``(b, n, 256)``
    """
    vocab = VOCAB_BYTES if config.causal else VOCAB_BYTES + 1
    return TinyModel(config.scheme_config(), vocab_size=vocab, num_classes=VOCAB_BYTES)


def windows_at(stream: torch.Tensor, starts: torch.Tensor, width: int) -> torch.Tensor:
    """The windows ``stream[s : s + width]`` for every start ``s``, as long.

    Shapes:
        stream: ``(bytes,)``; starts: ``(b,)``
        output: ``(b, width)`` long
    """
    check_int_tensor("starts", starts)
    if starts.numel() and int(starts.max()) + width > stream.numel():
        raise ValueError(
            f"starts must leave {width} bytes in the stream of {stream.numel()}, "
            f"got a start at {int(starts.max())}"
        )
    offsets = starts[:, None] + torch.arange(width)  # (b, width)
    return stream[offsets].long()


def causal_windows(windows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and next-byte targets of windows of ``n + 1`` bytes.

    Shapes:
        windows: ``(b, n + 1)``
        output: inputs ``(b, n)``, targets ``(b, n)`` (target ``t`` is byte ``t + 1``)
    """
    return windows[:, :-1], windows[:, 1:]


def mask_bytes(
    windows: torch.Tensor, rate: float, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's corruption of ``windows``: inputs with masks, targets where chosen.

    Each position is chosen with probability ``rate``; a chosen byte becomes
    :data:`MASK` (80%), a random byte (10%) or stays (10%). Targets are the
    original bytes at the chosen positions and :data:`IGNORE` elsewhere. The
    draws come from ``generator`` alone.

    Shapes:
        windows: ``(b, n)``
        output: inputs ``(b, n)``, targets ``(b, n)``
    """
    chosen = torch.rand(windows.shape, generator=generator) < rate  # (b, n)
    how = torch.rand(windows.shape, generator=generator)  # (b, n)
    noise = torch.randint(VOCAB_BYTES, windows.shape, generator=generator)  # (b, n)
    to_mask = chosen & (how < MASK_SPLIT[0])
    to_noise = chosen & (how >= MASK_SPLIT[0]) & (how < sum(MASK_SPLIT[:2]))
    inputs = torch.where(to_mask, MASK, torch.where(to_noise, noise, windows))
    targets = torch.where(chosen, windows, IGNORE)
    return inputs, targets


def objective_batch(
    config: TextConfig,
    stream: torch.Tensor,
    starts: torch.Tensor,
    length: int,
    generator: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The inputs and targets of the windows of ``length`` at ``starts``.

    Causal: windows of ``length + 1`` bytes, next-byte targets; masked: windows
    of ``length`` bytes, corrupted by :func:`mask_bytes` with ``generator``.

    Shapes:
        stream: ``(bytes,)``; starts: ``(b,)``
        output: inputs ``(b, length)``, targets ``(b, length)``
    """
    if config.causal:
        return causal_windows(windows_at(stream, starts, length + 1))
    return mask_bytes(windows_at(stream, starts, length), config.mask_rate, generator)


def token_losses(
    model: TinyModel, inputs: torch.Tensor, targets: torch.Tensor
) -> torch.Tensor:
    """Cross-entropy in nats at every position; 0 where the target is ``IGNORE``.

    Shapes:
        inputs, targets: ``(b, n)``
        output: ``(b, n)``
    """
    logits = model(inputs)  # (b, n, 256)
    losses = F.cross_entropy(
        logits.flatten(0, 1), targets.flatten(), reduction="none"
    )  # (b * n,)
    return losses.view(targets.shape)  # (b, n)


__all__ = [
    "IGNORE",
    "MASK",
    "MASK_SPLIT",
    "causal_windows",
    "language_model",
    "mask_bytes",
    "objective_batch",
    "token_losses",
    "windows_at",
]
