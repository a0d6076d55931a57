"""The one configuration object of an experiment run, and the seeds derived from it.

A :class:`Config` holds everything a run depends on: the task, the position
scheme, the data, the model's sizes and the optimiser. A sweep varies
``task``, ``scheme``, ``train_size`` and ``seed``; the seeds of a run are
derived from exactly those four (:func:`derive_seed`), so adding a scheme to a
sweep never changes the numbers of the others, and all schemes of one
``(seed, task, train_size)`` see the same training and test data.

Three fields are off (``None``) unless set, and a config leaves them out of
:meth:`Config.to_dict` while they are off, so the record key of every run
that does not use them is the one it had before they existed:

- ``min_train_length``: training sequences of every length from it to
  ``train_length`` (one length per step), not of ``train_length`` alone.
- ``random_positions``: randomised positions (Ruoss et al. 2023): each
  sequence, in training and in evaluation, gets an ordered random subset of
  ``0 .. P - 1`` as its positions instead of ``0 .. n - 1``. A scheme named
  ``<name>-randomised`` (``RANDOMISED``) is ``<name>`` with this on at
  ``P = DEFAULT_POSITION_RANGE`` unless the field says otherwise
  (:attr:`Config.position_range`).
- ``supervised_positions``: the training loss reads the labels of the first
  ``N`` positions of each sequence only (the others are ``IGNORE``), and the
  learning rate is tuned on those positions only; evaluation scores every
  position. The positions probe (``probes.positions``) trains a rule in the
  first half of each window and scores it in the second.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import numbers
from dataclasses import dataclass, field
from typing import Any, TypeVar

from relpos.checks import check_choice, check_int
from relpos.config import AttentionConfig

from .tasks import TASKS


#: The two settings a run trains in: an encoder, or a causal decoder.
SETTINGS = ("encoder", "causal")
#: The suffix of a scheme trained and evaluated with randomised positions.
RANDOMISED = "-randomised"
#: ``P`` of a ``-randomised`` scheme whose config sets no ``random_positions``.
DEFAULT_POSITION_RANGE = 256
#: The fields that ``to_dict`` leaves out while they are ``None`` (off).
OPTIONAL_FIELDS = ("min_train_length", "random_positions", "supervised_positions")


def _about(
    help: str,
    *,
    flags: tuple[str, ...] = (),
    metavar: str | None = None,
    sweep: bool = False,
) -> dict[str, object]:
    """A field's entry for the command line (``Config``'s fields are its flags).

    ``help`` is the flag's help; ``flags`` its names when they are not the
    field's own (``--train-length`` for ``train_length``); ``sweep`` marks the
    four fields a sweep varies, whose flags take comma-separated lists.
    """
    return {"help": help, "flags": flags, "metavar": metavar, "sweep": sweep}


S = TypeVar("S", bound="Settings")


def check_lengths(name: str, lengths: object, *, minimum: int) -> tuple[int, ...]:
    """A non-empty tuple of ints ``>= minimum`` (TypeError/ValueError naming it)."""
    if not isinstance(lengths, tuple) or not lengths:
        raise TypeError(f"{name} must be a non-empty tuple of ints, got {lengths!r}")
    for length in lengths:
        check_int(f"{name} entries", length, minimum=minimum)
    return lengths


def check_nonnegative(name: str, value: object) -> float:
    """A finite real ``>= 0`` (a rate, a decay), as a float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a float >= 0, got {value!r}")
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be a finite float >= 0, got {value!r}")
    return float(value)


class Settings:
    """What a run's frozen settings dataclass does: copy with changes, become JSON.

    The base of ``Config`` and of ``relpos.book.text``'s ``TextConfig``.
    """

    def replace(self: S, **changes: object) -> S:
        """A copy with some fields changed (checked again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, object]:
        """The settings as a JSON-ready dict (tuples become lists)."""
        return {
            k: list(v) if isinstance(v, tuple) else v
            for k, v in dataclasses.asdict(self).items()
        }


@dataclass(frozen=True)
class Config(Settings):
    """One training run: task, scheme, data, model and optimiser settings.

    Attributes:
        task: a name in ``TASKS``.
        scheme: a name in ``SCHEMES``.
        seed: the sweep seed (a run's own seeds are derived from it).
        train_length: the length ``L`` of every training sequence, or the
            longest one with ``min_train_length``.
        min_train_length: ``None`` (every training sequence has ``L`` tokens),
            or the shortest training length: the training set then holds
            sequences of every length from it to ``L``.
        train_size: number of distinct training sequences (drawn once, then
            sampled with replacement for ``steps`` batches).
        test_lengths: lengths at which accuracy is measured.
        test_size: test sequences per length.
        steps: optimiser steps.
        batch_size: sequences per step.
        learning_rate: AdamW's peak rate (linear warm-up over the first tenth of
            the steps, then linear decay to zero). A sweep chooses it per
            (setting, task, scheme) from a grid (``tuning``).
        weight_decay: AdamW's decoupled weight decay.
        hidden_size: the encoder's width.
        num_heads: its attention heads.
        num_layers: its layers.
        intermediate_size: its feed-forward width.
        max_relative_positions: the clipping span ``k`` of ``deberta`` (and of
            any other clipped scheme registered).
        position_buckets: log buckets per side of ``deberta-buckets``.
        bucket_max_position: the distance of the last log bucket of
            ``deberta-buckets`` (its ``max_relative_positions``).
        random_positions: ``None``, or ``P``: every sequence's positions are an
            ordered random subset of ``0 .. P - 1`` (``P >= max_length``).
        supervised_positions: ``None`` (the loss reads every label), or ``N``:
            the loss (and the tuning's validation) reads the labels of
            positions ``0 .. N - 1`` only (``N <= train_length``).

    Every field is a flag of ``python -m relpos.book.experiments`` (its
    ``metadata`` holds the flag's help), and the checks here are the command
    line's: a value they reject is a one-line error naming the flag.
    """

    task: str = field(
        default="relative",
        metadata=_about(
            "comma-separated tasks, or 'all'",
            flags=("--task", "--tasks"),
            metavar="NAMES",
            sweep=True,
        ),
    )
    scheme: str = field(
        default="deberta",
        metadata=_about(
            "comma-separated position schemes, or 'all' registered",
            flags=("--schemes",),
            metavar="NAMES",
            sweep=True,
        ),
    )
    setting: str = field(
        default="encoder",
        metadata=_about(
            "comma-separated settings: 'encoder' (every token attends to every "
            "other) or 'causal' (a decoder: each token attends to itself and the "
            "tokens before it)",
            flags=("--setting", "--settings"),
            metavar="NAMES",
            sweep=True,
        ),
    )
    seed: int = field(
        default=0,
        metadata=_about(
            "comma-separated seeds", flags=("--seeds",), metavar="S,S,...", sweep=True
        ),
    )
    train_length: int = field(
        default=32,
        metadata=_about(
            "length of every training sequence (the longest, with "
            "--min-train-length)",
            metavar="L",
        ),
    )
    min_train_length: int | None = field(
        default=None,
        metadata=_about(
            "shortest training length: training sequences of every length from "
            "it to --train-length, one length per step (default: all of "
            "--train-length)",
            metavar="N",
        ),
    )
    train_size: int = field(
        default=1024,
        metadata=_about(
            "comma-separated numbers of distinct training sequences",
            flags=("--train-sizes",),
            metavar="N,N,...",
            sweep=True,
        ),
    )
    test_lengths: tuple[int, ...] = field(
        default=(32, 64, 128, 256),
        metadata=_about(
            "comma-separated lengths at which accuracy is measured", metavar="N,N,..."
        ),
    )
    test_size: int = field(default=64, metadata=_about("test sequences per length"))
    steps: int = field(default=500, metadata=_about("optimiser steps per run"))
    batch_size: int = field(default=32, metadata=_about("sequences per step"))
    learning_rate: float = field(
        default=3e-3,
        metadata=_about(
            "comma-separated AdamW peak learning rates; with two or more, each "
            "(setting, task, scheme) trains at the one of highest accuracy on "
            "validation sequences of the training length (see --tune-seeds)",
            flags=("--learning-rates", "--learning-rate"),
            metavar="LR,LR,...",
        ),
    )
    weight_decay: float = field(
        default=0.01, metadata=_about("AdamW decoupled weight decay", metavar="WD")
    )
    hidden_size: int = field(default=32, metadata=_about("model width"))
    num_heads: int = field(
        default=4, metadata=_about("attention heads; must divide --hidden-size")
    )
    num_layers: int = field(
        default=1, metadata=_about("encoder layers", flags=("--layers", "--num-layers"))
    )
    intermediate_size: int = field(
        default=64, metadata=_about("feed-forward width (default: twice --hidden-size)")
    )
    max_relative_positions: int = field(
        default=8, metadata=_about("clipping span k of 'deberta'", metavar="K")
    )
    position_buckets: int = field(
        default=8,
        metadata=_about("log buckets per side of 'deberta-buckets'", metavar="B"),
    )
    bucket_max_position: int = field(
        default=64,
        metadata=_about(
            "distance of the last log bucket of 'deberta-buckets'", metavar="M"
        ),
    )
    t5_max_distance: int = field(
        default=32,
        metadata=_about(
            "distance from which 't5' puts every pair in its last bucket; at the "
            "training length or below, every bucket is read in training",
            metavar="M",
        ),
    )
    random_positions: int | None = field(
        default=None,
        metadata=_about(
            "randomised positions (Ruoss et al. 2023): each sequence's positions "
            "are an ordered random subset of 0 .. P - 1, in training and in "
            "evaluation (default: off; the '-randomised' schemes use "
            f"{DEFAULT_POSITION_RANGE})",
            metavar="P",
        ),
    )

    supervised_positions: int | None = field(
        default=None,
        metadata=_about(
            "train (and tune) on the labels of the first N positions of each "
            "sequence only; every position is still scored (default: every label)",
            metavar="N",
        ),
    )

    def __post_init__(self) -> None:
        for name in ("task", "scheme"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise TypeError(f"{name} must be a non-empty str, got {value!r}")
        check_choice("setting", self.setting, SETTINGS)
        check_int("seed", self.seed, minimum=0)
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
            "t5_max_distance",
        ):
            check_int(name, getattr(self, name), minimum=2)
        check_lengths("test_lengths", self.test_lengths, minimum=1)
        if self.min_train_length is not None:
            check_int("min_train_length", self.min_train_length, minimum=1)
            if self.min_train_length > self.train_length:
                raise ValueError(
                    "min_train_length must be <= train_length="
                    f"{self.train_length}, got {self.min_train_length}"
                )
        if self.random_positions is not None:
            check_int("random_positions", self.random_positions, minimum=1)
        if self.supervised_positions is not None:
            check_int("supervised_positions", self.supervised_positions, minimum=1)
            if self.supervised_positions > self.train_length:
                raise ValueError(
                    "supervised_positions must be <= train_length="
                    f"{self.train_length}, got {self.supervised_positions}"
                )
        self._check_task_lengths()
        if self.position_range is not None and self.position_range < self.max_length:
            raise ValueError(
                f"random_positions must be >= the longest sequence, {self.max_length} "
                f"(train_length and test_lengths), got P={self.position_range}"
            )
        for name in ("learning_rate", "weight_decay"):
            check_nonnegative(name, getattr(self, name))
        # The attention's own checks (hidden_size divisible by num_heads, the
        # clipping span), for the attentions of deberta and deberta-buckets.
        self.attention(max_relative_positions=self.max_relative_positions)
        try:  # the core's rule for the log buckets of deberta-buckets
            self.attention(
                max_relative_positions=self.bucket_max_position,
                position_buckets=self.position_buckets,
            )
        except ValueError:
            raise ValueError(
                "position_buckets must be <= bucket_max_position and leave "
                "bucket_max_position > position_buckets // 2 + 1, got position_buckets="
                f"{self.position_buckets} and "
                f"bucket_max_position={self.bucket_max_position}"
            ) from None

    def _check_task_lengths(self) -> None:
        """Every length of the run holds the task's problem (a registered task)."""
        task = TASKS.get(self.task)
        if task is None:
            return  # checked by name where the run starts (get_task)
        lengths = {
            "train_length": (self.train_length,),
            "test_lengths": self.test_lengths,
        }
        if self.min_train_length is not None:  # else the shortest is train_length
            lengths = {"min_train_length": (self.min_train_length,), **lengths}
        for name, values in lengths.items():
            for n in values:
                try:
                    task.check_length(n)
                except ValueError as error:
                    raise ValueError(
                        f"{name} must suit task {self.task!r}: {error}"
                    ) from None

    def attention(self, **settings: Any) -> AttentionConfig:
        """The attention settings of a run's model: its sizes plus ``settings``.

        ``settings`` are fields of ``relpos.AttentionConfig`` (the span, the
        buckets, the position terms, ...); the same dataclass configures the
        attention, the encoder and the benchmark.
        """
        return AttentionConfig(self.hidden_size, self.num_heads, **settings)

    @property
    def causal(self) -> bool:
        """Whether the model is a causal decoder (``setting == "causal"``)."""
        return self.setting == "causal"

    @property
    def max_length(self) -> int:
        """The longest sequence the model will see."""
        return max(self.train_length, *self.test_lengths)

    @property
    def position_range(self) -> int | None:
        """``P`` of randomised positions, or ``None`` (positions ``0 .. n - 1``).

        ``random_positions`` when set; else ``DEFAULT_POSITION_RANGE`` for a
        scheme whose name ends in ``RANDOMISED``; else ``None``.
        """
        if self.random_positions is not None:
            return self.random_positions
        if self.scheme.endswith(RANDOMISED):
            return DEFAULT_POSITION_RANGE
        return None

    @property
    def table_length(self) -> int:
        """Rows of an absolute position table: ``position_range`` or ``max_length``."""
        found = self.position_range
        return self.max_length if found is None else found

    @property
    def train_lengths(self) -> tuple[int, ...]:
        """The lengths of the training sequences: ``min_train_length .. L`` or ``(L,)``.
        """
        low = self.train_length if self.min_train_length is None else (
            self.min_train_length
        )
        return tuple(range(low, self.train_length + 1))

    def to_dict(self) -> dict[str, object]:
        """The settings as a JSON-ready dict, without the ``OPTIONAL_FIELDS`` that
        are off: a run that does not use them keeps the key it had without them.
        """
        return {
            k: v
            for k, v in super().to_dict().items()
            if not (k in OPTIONAL_FIELDS and v is None)
        }



def derive_seed(*parts: object) -> int:
    """A seed in ``[0, 2**63)`` from the text of ``parts`` (SHA-256, not ``hash``).

    Python's ``hash`` of a string changes from one process to the next; this
    does not, so a run's seed is the same on every machine and every call.
    """
    text = "|".join(str(part) for part in parts)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1


def data_seed(config: Config, length: int, split: str) -> int:
    """The seed of a data set: ``(seed, task, train_size, length, split)``, no scheme.

    Every scheme of one sweep cell trains and is tested on the same sequences.
    The test sets do not depend on ``train_size`` either.
    """
    size = config.train_size if split == "train" else "-"
    return derive_seed("data", config.seed, config.task, size, length, split)


def model_seed(config: Config) -> int:
    """The seed of a model's initial weights and batch order.

    Derived from ``(seed, task, scheme, train_size)`` and, for a causal run, the
    setting; nothing else.
    """
    parts = ["model", config.seed, config.task, config.scheme, config.train_size]
    if config.causal:
        parts.append("causal")
    return derive_seed(*parts)


__all__ = [
    "DEFAULT_POSITION_RANGE",
    "OPTIONAL_FIELDS",
    "RANDOMISED",
    "SETTINGS",
    "Config",
    "Settings",
    "check_lengths",
    "check_nonnegative",
    "data_seed",
    "derive_seed",
    "model_seed",
]
