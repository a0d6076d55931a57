"""The tiny model: token embedding -> position scheme -> encoder -> token classifier.

The whole model is this file. The position scheme is one name in the config;
:func:`relpos.book.experiments.schemes.build_scheme` turns it into an optional
module of absolute positions (added to the tokens) and the encoder (which may
use relative positions inside attention). Everything else is shared by every
scheme: same embedding, same blocks, same classifier, same initialisation.
In the causal setting (``config.causal``) the scheme builds its attention
causal, so each position reads only itself and the positions before it;
nothing else in the model changes.

Randomised positions (``config.position_range``) reach the scheme as
``positions=(b, n)``; the model itself draws none (training and measurement
do, seeded).

Shapes:
    tokens: ``(b, n)`` int; attention_mask: ``(b, n)``, 1 = token
    positions: ``(b, n)`` int or None
    logits: ``(b, n, classes)``
"""

from __future__ import annotations

import torch
from torch import nn

from relpos.checks import check_int

from .config import Config
from .schemes import EMBEDDING_STD, build_scheme
from .tasks import get_task


class TinyModel(nn.Module):
    """A per-token classifier whose only position information comes from its scheme.

    Args:
        config: the run's settings; ``config.scheme`` picks the position scheme,
            ``config.task`` the vocabulary (``Task.input_size`` token ids) and
            the number of classes.
        vocab_size, num_classes: given both, they replace the task's (the
            language models of ``relpos.book.text``, whose task is the corpus).

    Attributes:
        token_embedding: ``nn.Embedding(vocab_size, hidden)``.
        input_positions: the scheme's absolute positions, or ``None``.
        embedding_norm: LayerNorm after the sum (as BERT and DeBERTa).
        encoder: the scheme's encoder.
        classifier: ``nn.Linear(hidden, num_classes)``.

    Shapes:
        forward: tokens ``(b, n)``, attention_mask ``(b, n)`` or None,
            positions ``(b, n)`` or None -> logits ``(b, n, classes)``
    """

    def __init__(
        self,
        config: Config,
        *,
        vocab_size: int | None = None,
        num_classes: int | None = None,
    ) -> None:
        super().__init__()
        if (vocab_size is None) != (num_classes is None):
            raise ValueError(
                "vocab_size and num_classes must be given together or not at all, "
                f"got vocab_size={vocab_size!r} and num_classes={num_classes!r}"
            )
        if vocab_size is None:
            task = get_task(config.task)
            vocab_size, num_classes = task.input_size, task.num_classes
        vocab_size = check_int("vocab_size", vocab_size, minimum=1)
        num_classes = check_int("num_classes", num_classes, minimum=1)
        self.config = config
        self.token_embedding = nn.Embedding(vocab_size, config.hidden_size)
        nn.init.normal_(self.token_embedding.weight, std=EMBEDDING_STD)
        self.input_positions, self.encoder = build_scheme(config.scheme, config)
        self.embedding_norm = nn.LayerNorm(config.hidden_size, eps=1e-7)
        self.classifier = nn.Linear(config.hidden_size, num_classes)

    def forward(
        self,
        tokens: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        positions: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Logits of every class at every position.

        ``positions`` (randomised positions): each sequence's positions instead
        of ``0 .. n - 1``, for a scheme that takes them.

        Shapes:
            tokens: ``(b, n)``; attention_mask: ``(b, n)`` or None
            positions: ``(b, n)`` or None
            output: ``(b, n, classes)``
        """
        hidden = self.embed(tokens, positions)  # (b, n, hidden)
        if positions is None:
            hidden = self.encoder(hidden, attention_mask)  # (b, n, hidden)
        else:
            hidden = self.encoder(hidden, attention_mask, positions=positions)
        return self.classifier(hidden)  # (b, n, classes)

    def embed(
        self, tokens: torch.Tensor, positions: torch.Tensor | None = None
    ) -> torch.Tensor:
        """What the encoder receives: ``LayerNorm(token embedding + input positions)``.

        Shapes:
            tokens: ``(b, n)``; positions: ``(b, n)`` or None
            output: ``(b, n, hidden)``
        """
        if (
            not isinstance(tokens, torch.Tensor)
            or tokens.dim() != 2
            or tokens.is_floating_point()
        ):
            got = (
                tuple(tokens.shape)
                if isinstance(tokens, torch.Tensor)
                else type(tokens).__name__
            )
            raise ValueError(
                f"tokens must be an integer tensor of shape (b, n), got {got}"
            )
        hidden = self.token_embedding(tokens)  # (b, n, hidden)
        if self.input_positions is not None:
            n = tokens.shape[1]
            table = (
                self.input_positions(n)
                if positions is None
                else self.input_positions(n, positions)
            )  # (n, hidden) or (b, n, hidden)
            hidden = hidden + table  # (b, n, hidden)
        return self.embedding_norm(hidden)


def count_parameters(model: nn.Module) -> int:
    """Number of trainable numbers in ``model``.

    Shapes:
        (no tensors)
    """
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


__all__ = ["TinyModel", "count_parameters"]
