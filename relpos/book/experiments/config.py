"""The one configuration object of an experiment run, and the seeds derived from it.

A :class:`Config` holds everything a run depends on: the task, the position
scheme, the data, the model's sizes and the optimiser. A sweep varies
``task``, ``scheme``, ``train_size`` and ``seed``; the seeds of a run are
derived from exactly those four (:func:`derive_seed`), so adding a scheme to a
sweep never changes the numbers of the others, and all schemes of one
``(seed, task, train_size)`` see the same training and test data.

Shapes:
    (no tensors)
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass

from relpos._checks import check_int


@dataclass(frozen=True)
class Config:
    """One training run: task, scheme, data, model and optimiser settings.

    Attributes:
        task: a name in ``TASKS``.
        scheme: a name in ``SCHEMES``.
        seed: the sweep seed (a run's own seeds are derived from it).
        train_length: the length ``L`` of every training sequence.
        train_size: number of distinct training sequences (drawn once, then
            sampled with replacement for ``steps`` batches).
        test_lengths: lengths at which accuracy is measured.
        test_size: test sequences per length.
        steps: optimiser steps.
        batch_size: sequences per step.
        learning_rate: AdamW's peak rate (linear warm-up over the first tenth of
            the steps, then linear decay to zero).
        weight_decay: AdamW's decoupled weight decay.
        hidden_size, num_heads, num_layers, intermediate_size: the encoder.
        max_relative_positions: the clipping span ``k`` of ``deberta`` (and of
            any other clipped scheme registered).
        position_buckets: log buckets per side of ``deberta-buckets``.
        bucket_max_position: the distance of the last log bucket of
            ``deberta-buckets`` (its ``max_relative_positions``).

    Shapes:
        (no tensors)
    """

    task: str = "relative"
    scheme: str = "deberta"
    seed: int = 0
    train_length: int = 32
    train_size: int = 1024
    test_lengths: tuple[int, ...] = (32, 64, 128, 256)
    test_size: int = 64
    steps: int = 500
    batch_size: int = 32
    learning_rate: float = 3e-3
    weight_decay: float = 0.01
    hidden_size: int = 32
    num_heads: int = 4
    num_layers: int = 1
    intermediate_size: int = 64
    max_relative_positions: int = 8
    position_buckets: int = 8
    bucket_max_position: int = 64

    def __post_init__(self) -> None:
        for name in ("seed",):
            check_int(name, getattr(self, name), minimum=0)
        for name in (
            "train_length",
            "train_size",
            "test_size",
            "steps",
            "batch_size",
            "hidden_size",
            "num_heads",
            "num_layers",
            "intermediate_size",
        ):
            check_int(name, getattr(self, name), minimum=1)
        for name in (
            "max_relative_positions",
            "position_buckets",
            "bucket_max_position",
        ):
            check_int(name, getattr(self, name), minimum=2)
        lengths = self.test_lengths
        if not isinstance(lengths, tuple) or not lengths:
            raise TypeError(
                f"test_lengths must be a non-empty tuple of ints, got {lengths!r}"
            )
        for length in lengths:
            check_int("test_lengths entries", length, minimum=1)
        for name in ("learning_rate", "weight_decay"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or value < 0
            ):
                raise ValueError(f"{name} must be a float >= 0, got {value!r}")
        if self.hidden_size % self.num_heads:
            raise ValueError(
                f"hidden_size must be divisible by num_heads, got hidden_size="
                f"{self.hidden_size} and num_heads={self.num_heads}"
            )

    @property
    def max_length(self) -> int:
        """The longest sequence the model will see: sizes absolute position tables."""
        return max(self.train_length, *self.test_lengths)

    def replace(self, **changes: object) -> "Config":
        """A copy with some fields changed (checked again).

        Shapes:
            (no tensors)
        """
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, object]:
        """The settings as a JSON-ready dict (tuples become lists).

        Shapes:
            (no tensors)
        """
        return {
            k: list(v) if isinstance(v, tuple) else v
            for k, v in dataclasses.asdict(self).items()
        }


def derive_seed(*parts: object) -> int:
    """A seed in ``[0, 2**63)`` from the text of ``parts`` (SHA-256, not ``hash``).

    Python's ``hash`` of a string changes from one process to the next; this
    does not, so a run's seed is the same on every machine and every call.

    Shapes:
        (no tensors)
    """
    text = "|".join(str(part) for part in parts)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1


def data_seed(config: Config, length: int, split: str) -> int:
    """The seed of a data set: ``(seed, task, train_size, length, split)``, no scheme.

    Every scheme of one sweep cell trains and is tested on the same sequences.
    The test sets do not depend on ``train_size`` either.

    Shapes:
        (no tensors)
    """
    size = config.train_size if split == "train" else "-"
    return derive_seed("data", config.seed, config.task, size, length, split)


def model_seed(config: Config) -> int:
    """The seed of a model's initial weights and batch order.

    Derived from ``(seed, task, scheme, train_size)`` and nothing else.

    Shapes:
        (no tensors)
    """
    return derive_seed(
        "model", config.seed, config.task, config.scheme, config.train_size
    )


__all__ = ["Config", "data_seed", "derive_seed", "model_seed"]
