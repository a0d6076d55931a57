"""The training loop: one function, one screen.

:func:`train` draws the training set (seeded by the data seed), builds the
model (seeded by the model seed), and runs ``config.steps`` AdamW steps on
random batches of the training set, with the learning rate warmed up linearly
over the first tenth of the steps and then decayed linearly to zero. Dropout is
off, so nothing random happens inside a step; with deterministic algorithms on,
the same config on the same machine gives the same weights, bit for bit.

With ``min_train_length`` the training set holds sequences of every length
from it to ``L`` (:func:`training_set`), and each step draws one length, then
its batch from the sequences of that length (as Delétang et al. 2023 and Ruoss
et al. 2023 sample a length per batch). With randomised positions
(``config.position_range``) every step draws each sequence's positions
(``randomised.draw_positions``) from a generator of its own, so the batches are
those of the same run without them. With ``supervised_positions`` the loss
reads the labels of the first ``N`` positions only (:func:`supervise`).

Shape legend:
    tokens, labels: ``(b, n)``; logits: ``(b, n, classes)``
"""

from __future__ import annotations

import contextlib
import random
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np
import torch
import torch.nn.functional as F

from .config import Config, data_seed, derive_seed, model_seed
from .model import TinyModel
from .layouts import IGNORE
from .randomised import draw_positions
from .tasks import get_task


@contextlib.contextmanager
def deterministic(seed: int) -> Iterator[None]:
    """Seed Python, NumPy and torch with ``seed`` and turn on deterministic algorithms.

    The previous deterministic-algorithms setting is restored on exit.
    """
    previous = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(previous)


@dataclass
class Trained:
    """A trained model with its config, its loss at every step and the training time.

    Shapes:
        losses: ``steps`` floats
    """

    model: TinyModel
    config: Config
    losses: list[float]
    seconds: float


def learning_rate_factor(step: int, steps: int) -> float:
    """Linear warm-up over the first tenth of ``steps``, then linear decay to zero."""
    warmup = max(1, steps // 10)
    if step < warmup:
        return (step + 1) / warmup
    return max(0.0, (steps - step) / max(1, steps - warmup))


def optimise(
    model: torch.nn.Module,
    config: Any,
    batch_loss: Callable[[int], torch.Tensor],
    *,
    on_step: Callable[[int, float], None] | None = None,
) -> list[float]:
    """``config.steps`` AdamW steps on ``batch_loss(step)``; the loss of every step.

    ``config`` gives ``steps``, ``learning_rate`` and ``weight_decay`` (an
    experiments ``Config`` or a text ``TextConfig``); the rate is warmed up and
    decayed by :func:`learning_rate_factor`. The model is in training mode
    during the steps; ``on_step(step, loss)`` is called after each.
    """
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay
    )
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: learning_rate_factor(step, config.steps)
    )
    losses = []
    model.train()
    for step in range(config.steps):
        loss = batch_loss(step)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        if on_step is not None:
            on_step(step, losses[-1])
    return losses


def supervise(labels: torch.Tensor, config: Config) -> torch.Tensor:
    """``labels`` with every position from ``config.supervised_positions`` on
    ``IGNORE`` (skipped by the loss); ``labels`` itself when the field is off.

    Shapes:
        labels: ``(b, n)``
        output: ``(b, n)``
    """
    if config.supervised_positions is None:
        return labels
    masked = labels.clone()  # (b, n)
    masked[:, config.supervised_positions :] = IGNORE
    return masked


def initial_model(config: Config, *, seed: int | None = None) -> TinyModel:
    """The model of ``config`` before training: built under its model seed.

    ``train`` starts from exactly these weights, so a trained model can be
    compared with its own initial state (for example its table's bands).
    ``seed`` replaces ``model_seed(config)`` (see :func:`train`).
    """
    with deterministic(model_seed(config) if seed is None else seed):
        return TinyModel(config)


def training_set(config: Config) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The training sequences, grouped by length: one ``(tokens, labels)`` per length.

    Without ``min_train_length``: ``train_size`` sequences of length ``L``,
    seeded by ``data_seed(config, L, "train")``. With it: the ``train_size``
    sequences are shared out over the lengths ``min_train_length .. L`` as
    evenly as can be (the shorter lengths get the one left over), each length
    seeded by its own ``data_seed``; a length with no share is left out.

    Shapes:
        output: per length ``n``, tokens and labels ``(count, n)`` each
    """
    task = get_task(config.task)
    lengths = config.train_lengths
    share, extra = divmod(config.train_size, len(lengths))
    found = []
    for index, n in enumerate(lengths):
        count = share + (1 if index < extra else 0)
        if count:
            found.append(task.sample(count, n, seed=data_seed(config, n, "train")))
    return found  # (count, n) each


def train(
    config: Config,
    *,
    on_step: Callable[[int, float], None] | None = None,
    seed: int | None = None,
) -> Trained:
    """Train a ``TinyModel`` on ``config.task`` with the scheme ``config.scheme``.

    ``on_step(step, loss)`` is called after every step (for a progress bar).
    ``seed`` (default ``model_seed(config)``) seeds the initial weights and the
    batch order: an intervention passes the seed of the scheme it changes, so
    that both arms start from the same weights and see the same batches.
    """
    groups = training_set(config)
    seed = model_seed(config) if seed is None else seed
    start = time.perf_counter()
    model = initial_model(config, seed=seed)
    order = torch.Generator().manual_seed(seed)
    places = torch.Generator().manual_seed(derive_seed("positions", seed))
    spread = config.position_range

    def batch_loss(step: int) -> torch.Tensor:
        group = 0
        if len(groups) > 1:
            group = int(torch.randint(len(groups), (1,), generator=order))
        tokens, labels = groups[group]  # (count, n) each
        rows = torch.randint(tokens.shape[0], (config.batch_size,), generator=order)
        positions = None
        if spread is not None:
            positions = draw_positions(
                config.batch_size, tokens.shape[1], spread, places
            )  # (b, n)
        logits = model(tokens[rows], positions=positions)  # (b, n, classes)
        targets = supervise(labels[rows], config)  # (b, n)
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())

    with deterministic(seed):
        losses = optimise(model, config, batch_loss, on_step=on_step)
    model.eval()
    return Trained(model, config, losses, time.perf_counter() - start)


__all__ = [
    "Trained",
    "deterministic",
    "initial_model",
    "learning_rate_factor",
    "optimise",
    "supervise",
    "train",
    "training_set",
]
