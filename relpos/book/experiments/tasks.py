"""Synthetic tasks: random token sequences and one label per position.

Every task draws tokens uniformly from ``0 .. vocab_size - 1`` with a seeded
``torch.Generator`` and labels every position; a task is a pure function of
the tokens, so the same seed always gives the same data.

- ``relative``: output the token ``shift`` positions back, ``x[i - shift]``.
  Where ``i - shift < 0`` there is none, and the label is the extra class
  ``NO_TOKEN = vocab_size``. The answer depends only on the distance
  ``i - j = shift``: a relative scheme can say it directly.
- ``absolute``: output ``i mod modulus``, whatever the tokens. This needs the
  absolute position. A relative scheme sees only distances, so it can place a
  query only near the ends of the sequence (where keys are missing at some
  distances); this is why DeBERTa adds absolute positions back at the very end,
  in its enhanced mask decoder.
- ``far``: ``relative`` with a shift beyond the clipping window of the
  ``deberta`` scheme (``shift = 12``). Clipping at ``k = 8`` maps ``i - j`` to
  ``[-8, 7]``: the distances ``-7 .. 6`` have rows of their own, while ``7`` shares
  its row with every distance beyond it (and ``-8`` with every key further
  ahead). Clipping cannot see 12 back, and log buckets see it only coarsely
  (several distances share a bucket there).
- ``window``: the largest of the ``width = 6`` tokens before ``i``,
  ``max(x[i - 6 .. i - 1])``; positions ``i < 6`` have no full window, get
  ``NO_TOKEN`` and are not scored. The six neighbouring distances ``1 .. 6``
  matter alike, so a table whose neighbouring rows are similar (a band) would
  help here if anywhere.

Tasks whose needed distance grows with the length (``copy``, ``reverse``,
``mqar``, ``addition``; layouts, distances and chance levels in
``relpos.book.experiments.layouts``) lay out a problem in each sequence and
score only its answer slots; every other position is labelled ``IGNORE`` and
skipped by the loss.

``Task.chance`` is the accuracy of a uniform guess over the tokens (or the
residues): ``1 / vocab_size`` or ``1 / modulus``; ``Task.exact_chance(n)`` the
chance that such guesses get every scored position of a sequence right. On
``window`` the answer is a maximum of six tokens and leans to the large ones:
always guessing the largest token is right with probability ``1 - (15/16)^6``,
about 0.32, well above ``chance``, which stays the uniform guess.

Shape legend:
    tokens, labels: ``(b, n)``, ``torch.long``; b sequences of length n
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from relpos.checks import check_choice, check_int

from .layouts import IGNORE, LAYOUTS, layout_labels, sample_tokens

VOCAB_SIZE = 16
NO_TOKEN = VOCAB_SIZE  # the class of "no token that far back"

#: The label rules a ``Task`` can have: three of a fixed offset or position, and
#: the layouts of ``layouts`` (a distance that grows with the length).
KINDS = ("shift", "window", "position", *LAYOUTS)
#: The kinds without a parameter (their ``param`` is 0).
NO_PARAM = ("copy", "reverse", "addition")


def shifted_labels(
    tokens: torch.Tensor, shift: int, no_token: int = NO_TOKEN
) -> torch.Tensor:
    """The token ``shift`` positions back: ``labels[:, i] = tokens[:, i - shift]``.

    Positions ``i < shift`` have no such token and get ``no_token``.

    Shapes:
        tokens: ``(b, n)``
        output: ``(b, n)``
    """
    shift = check_int("shift", shift, minimum=1)
    labels = torch.full_like(tokens, no_token)  # (b, n)
    labels[:, shift:] = tokens[:, : max(tokens.shape[1] - shift, 0)]
    return labels


def window_labels(
    tokens: torch.Tensor, width: int, no_token: int = NO_TOKEN
) -> torch.Tensor:
    """The largest of the ``width`` tokens before each position.

    ``labels[:, i] = max(tokens[:, i - width .. i - 1])``; positions ``i < width``
    have no full window and get ``no_token``.

    Shapes:
        tokens: ``(b, n)``
        output: ``(b, n)``
    """
    width = check_int("width", width, minimum=1)
    b, n = tokens.shape
    labels = torch.full_like(tokens, no_token)  # (b, n)
    if n > width:
        windows = tokens[:, :-1].unfold(1, width, 1)  # (b, n - width, width)
        labels[:, width:] = windows.max(-1).values  # window i - width .. i - 1
    return labels


def position_labels(tokens: torch.Tensor, modulus: int) -> torch.Tensor:
    """The position index modulo ``modulus``: ``labels[:, i] = i % modulus``.

    Shapes:
        tokens: ``(b, n)``, read only for its shape
        output: ``(b, n)``
    """
    modulus = check_int("modulus", modulus, minimum=2)
    b, n = tokens.shape
    return (torch.arange(n) % modulus).expand(b, n).clone()  # (b, n)


@dataclass(frozen=True)
class Task:
    """A synthetic task: its name, its label rule and its sizes.

    Attributes:
        name: the registry name.
        kind: ``"shift"`` (output the token ``param`` back), ``"window"`` (the
            largest of the ``param`` tokens before), ``"position"`` (output
            ``i mod param``), or a layout of ``layouts``: ``"copy"``,
            ``"reverse"``, ``"mqar"``, ``"addition"``.
        param: the shift, the window width, the modulus, the number of keys
            (``mqar``), or 0 (``copy``, ``reverse``, ``addition``).
        vocab_size: the symbols a label names (and, for the first three kinds,
            every input token): ``0 .. vocab_size - 1``; the base of ``addition``.
        description: one line for tables and figures.

    Shapes:
        labels(tokens): ``(b, n)`` -> ``(b, n)``
        sample(...): two ``(num_sequences, length)`` tensors
    """

    name: str
    kind: str
    param: int
    vocab_size: int = VOCAB_SIZE
    description: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        check_choice("kind", self.kind, KINDS)
        if self.kind in NO_PARAM:
            if self.param != 0:
                raise ValueError(
                    f"param must be 0 for a {self.kind} task, got {self.param!r}"
                )
        else:
            check_int("param", self.param, minimum=2 if self.kind == "position" else 1)
        check_int("vocab_size", self.vocab_size, minimum=2)

    @property
    def num_classes(self) -> int:
        """Output classes: tokens + ``NO_TOKEN`` (shift, window), ``param``
        (position), or the ``vocab_size`` symbols (the layouts)."""
        if self.kind in LAYOUTS:
            return self.vocab_size
        return self.param if self.kind == "position" else self.vocab_size + 1

    @property
    def input_size(self) -> int:
        """Input token ids: ``vocab_size``, plus a layout's keys and own tokens."""
        if self.kind in LAYOUTS:
            return LAYOUTS[self.kind].input_size(self.vocab_size, self.param)
        return self.vocab_size

    @property
    def chance(self) -> float:
        """Accuracy of a uniform guess: ``1 / vocab_size`` or ``1 / modulus``."""
        return 1.0 / (self.param if self.kind == "position" else self.vocab_size)

    def exact_chance(self, n: int) -> float:
        """The chance that uniform guesses get all scored positions of a sequence.

        ``chance ** s`` with ``s`` the scored positions of a length-``n`` sequence
        (the same for every sequence of that length).
        """
        return self.chance ** int(self.scored_at(n).sum())

    def check_length(self, n: int) -> int:
        """``n`` if this task has sequences of that length (``ValueError`` if not).

        Every length works for the first three kinds; a layout needs room for a
        problem of size 1 (and ``mqar`` one key per pair).
        """
        if self.kind in LAYOUTS:
            return LAYOUTS[self.kind].check_length(n, self.param)
        return check_int("length", n, minimum=1)

    def scored_at(self, n: int) -> torch.Tensor:
        """Which positions of a length-``n`` sequence are scored (any sequence).

        Shapes:
            output: ``(n,)`` bool
        """
        _, labels = self.sample(1, n, seed=0)  # (1, n)
        return self.scored(labels)[0]

    def labels(self, tokens: torch.Tensor) -> torch.Tensor:
        """The label of every position of ``tokens``.

        Shapes:
            tokens: ``(b, n)``
            output: ``(b, n)``
        """
        if self.kind in LAYOUTS:
            return layout_labels(self.kind, tokens, self.vocab_size, self.param)
        if self.kind == "shift":
            return shifted_labels(tokens, self.param, no_token=self.vocab_size)
        if self.kind == "window":
            return window_labels(tokens, self.param, no_token=self.vocab_size)
        return position_labels(tokens, self.param)

    def scored(self, labels: torch.Tensor) -> torch.Tensor:
        """Which positions count towards accuracy: all but the ``NO_TOKEN`` ones.

        The model is trained on every label, ``NO_TOKEN`` included, but a model
        that only learnt "no token" would otherwise score ``shift / n`` (or
        ``width / n``) for free. A layout scores its answer slots: every label
        but ``IGNORE`` (which the loss skips). A label set to ``IGNORE``
        (``Config.supervised_positions``) is never scored, whatever the kind.

        Shapes:
            labels: ``(b, n)``
            output: ``(b, n)`` bool
        """
        if self.kind in LAYOUTS:
            return labels != IGNORE
        if self.kind != "position":
            return (labels != self.vocab_size) & (labels != IGNORE)
        return labels != IGNORE

    def sample(
        self, num_sequences: int, length: int, *, seed: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``num_sequences`` random sequences of ``length`` tokens and their labels.

        The tokens come from a ``torch.Generator`` seeded with ``seed`` alone.

        Shapes:
            output: tokens and labels, each ``(num_sequences, length)``
        """
        num_sequences = check_int("num_sequences", num_sequences, minimum=1)
        length = self.check_length(length)
        generator = torch.Generator().manual_seed(check_int("seed", seed, minimum=0))
        if self.kind in LAYOUTS:
            tokens = sample_tokens(
                self.kind, num_sequences, length, self.vocab_size, self.param,
                generator,
            )  # (b, n)
        else:
            tokens = torch.randint(
                self.vocab_size, (num_sequences, length), generator=generator
            )  # (b, n)
        return tokens, self.labels(tokens)


TASKS: dict[str, Task] = {
    "relative": Task(
        "relative", "shift", 3, description="output the token 3 positions back"
    ),
    "absolute": Task(
        "absolute", "position", 4, description="output the position index mod 4"
    ),
    "far": Task("far", "shift", 12, description="output the token 12 positions back"),
    "window": Task(
        "window",
        "window",
        6,
        description="output the max of the 6 prior tokens",
    ),
    "copy": Task(
        "copy", "copy", 0, description="copy the tokens before SEP after it"
    ),
    "reverse": Task(
        "reverse", "reverse", 0, description="write the tokens before SEP reversed"
    ),
    "mqar": Task(
        "mqar", "mqar", 96, description="recall the value paired with each query key"
    ),
    "addition": Task(
        "addition",
        "addition",
        0,
        vocab_size=10,
        description="add two interleaved decimal numbers, least significant first",
    ),
}


def get_task(name: str) -> Task:
    """The registered task called ``name``; a ``ValueError`` lists the others."""
    return TASKS[check_choice("task", name, tuple(TASKS))]


__all__ = [
    "IGNORE",
    "KINDS",
    "NO_PARAM",
    "NO_TOKEN",
    "TASKS",
    "Task",
    "VOCAB_SIZE",
    "get_task",
    "position_labels",
    "shifted_labels",
    "window_labels",
]
