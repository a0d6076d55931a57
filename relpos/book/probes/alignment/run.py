"""One run of the alignment probe: train a byte LM on the grammar, score the items.

No new model or loop: a run is the text chapter's causal language model
(``text.train.train_text``: ``TinyModel`` with the arm's scheme, AdamW, the
experiments' schedule) trained on a grammar stream (``grammar.grammar_stream``,
seeded per run seed, so the seeds vary the data as well as the weights) at
``L = train_length``, measured in bits per byte on a validation stream at ``L``
(``text.train.evaluate_length``; the tuning score) and on the test items.

Scoring (:func:`item_margins`; kept in the record as one line of text,
:func:`encode_margins`): the margin of an item is
``log p(good) - log p(wrong)`` at its decided byte, given the same prefix, in
nats; the model knows the relation there when the margin is positive. Only the
byte that differs is scored: the two texts share every byte before it, so the
rest of a causal model's log-likelihood cancels exactly, and the bytes after it
would score the model's reaction to an error (and their number would depend
on the offset), not whether it found the related place.

Shapes:
    stream: ``(bytes,)`` uint8; margins: ``(items,)`` float
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Sequence

import torch

from relpos.checks import check_choice, check_int

from ...experiments.config import Settings
from ...experiments.model import count_parameters
from ...experiments.tuning import mean_final_loss
from ...text.config import TextConfig
from ...text.train import evaluate_length, train_text
from .design import ARM_CONFIGS, VERDICT_STEPS
from .grammar import GRAMMAR_VERSION, grammar_stream

#: Decimals of a margin kept in a record (nats).
MARGIN_DECIMALS = 3
#: Items per forward pass.
ITEM_BATCH = 128


@dataclass(frozen=True)
class ProbeRun(Settings):
    """One run of the probe: an arm, a seed, a rate, and the shared settings.

    Attributes:
        arm: a name of ``design.ARM_CONFIGS`` (a scheme and its changes).
        seed: the run's seed (its stream, batches and weights derive from it).
        learning_rate: AdamW's peak rate.
        train_length: ``L``, the length of every training window.
        steps, batch_size, hidden_size, num_heads, num_layers: as ``TextConfig``.
        stream_bytes: bytes of the run's training stream.
        valid_bytes: bytes of the validation stream (the tuning score).
        grammar: the grammar's version (``grammar.GRAMMAR_VERSION``).
    """

    arm: str = "deberta-unclipped"
    seed: int = 0
    learning_rate: float = 3.16e-3
    train_length: int = 64
    steps: int = VERDICT_STEPS
    batch_size: int = 32
    hidden_size: int = 64
    num_heads: int = 4
    num_layers: int = 2
    stream_bytes: int = 2**21
    valid_bytes: int = 2**16
    grammar: str = GRAMMAR_VERSION

    def __post_init__(self) -> None:
        check_choice("arm", self.arm, tuple(ARM_CONFIGS))
        if self.grammar != GRAMMAR_VERSION:
            raise ValueError(
                f"grammar must be this code's version {GRAMMAR_VERSION!r}, "
                f"got {self.grammar!r}"
            )
        check_int("stream_bytes", self.stream_bytes, minimum=self.train_length + 2)
        self.text_config()  # every other field passes the text config's checks

    @property
    def scheme(self) -> str:
        return ARM_CONFIGS[self.arm][0]

    def text_config(self) -> TextConfig:
        """The text chapter's config of this run (its corpus fields are unused:
        the stream is the grammar's, passed in)."""
        changes = {
            name: self.train_length if value is None else value
            for name, value in ARM_CONFIGS[self.arm][1].items()
        }
        return TextConfig(
            scheme=self.scheme,
            seed=self.seed,
            train_length=self.train_length,
            eval_lengths=(self.train_length,),
            eval_bytes=self.valid_bytes,
            steps=self.steps,
            batch_size=self.batch_size,
            learning_rate=self.learning_rate,
            hidden_size=self.hidden_size,
            num_heads=self.num_heads,
            num_layers=self.num_layers,
            **changes,
        )


@lru_cache(maxsize=4)
def _stream(name: str, seed: int, size: int) -> torch.Tensor:
    return grammar_stream(name, seed, size)


def check_items(items: Sequence[dict[str, Any]], length: int) -> None:
    """ValueError unless every item is a pair that fits a window of ``length``."""
    for item in items:
        text, target = item.get("text"), item.get("target")
        if (
            not isinstance(text, str)
            or not isinstance(target, int)
            or len(text) != target + 1
            or target < 1
            or len(text) > length
            or not isinstance(item.get("wrong"), str)
            or len(item["wrong"]) != 1
            or item["wrong"] == text[-1]
        ):
            raise ValueError(
                "items must each end at their target byte, fit in "
                f"{length} bytes and name one other byte, got {item!r}"
            )


@torch.no_grad()
def item_margins(model: torch.nn.Module, items: Sequence[dict[str, Any]],
                 length: int) -> list[float]:
    """``log p(good) - log p(wrong)`` at each item's decided byte, in nats.

    The texts are right-padded to the longest (a causal model's logits at a
    position do not read later bytes).

    Shapes:
        output: ``(items,)`` floats
    """
    check_items(items, length)
    model.eval()
    margins: list[float] = []
    for first in range(0, len(items), ITEM_BATCH):
        chunk = items[first : first + ITEM_BATCH]
        width = max(len(item["text"]) for item in chunk)
        tokens = torch.zeros(len(chunk), width, dtype=torch.long)  # (b, n)
        for row, item in enumerate(chunk):
            tokens[row, : len(item["text"])] = torch.tensor(
                list(item["text"].encode("ascii"))
            )
        targets = torch.tensor([item["target"] for item in chunk])  # (b,)
        good = tokens[torch.arange(len(chunk)), targets]  # (b,)
        wrong = torch.tensor([ord(item["wrong"]) for item in chunk])  # (b,)
        logits = model(tokens[:, :-1] if width > 1 else tokens)  # (b, n - 1, 256)
        rows = logits[torch.arange(len(chunk)), targets - 1].log_softmax(-1)  # (b, 256)
        index = torch.arange(len(chunk))
        margins += (rows[index, good] - rows[index, wrong]).tolist()
    return margins


def encode_margins(margins: Sequence[float]) -> str:
    """Margins as one line of text, :data:`MARGIN_DECIMALS` decimals each (``nan``
    where not finite): a run's record stays a few KB, committed."""
    return " ".join(
        f"{m:.{MARGIN_DECIMALS}f}" if math.isfinite(m) else "nan" for m in margins
    )


def decode_margins(text: str) -> list[float | None]:
    """The margins of :func:`encode_margins` (``None`` where not finite)."""
    values = [float(part) for part in text.split()]
    return [v if math.isfinite(v) else None for v in values]


def probe_run(run: ProbeRun, items: Sequence[dict[str, Any]] | None) -> dict[str, Any]:
    """Train ``run`` and measure it: a tuning record (``items=None``: validation
    bits per byte only) or a measured one (with every item's margin)."""
    config = run.text_config()
    trained = train_text(config, _stream("train", run.seed, run.stream_bytes))
    start = time.perf_counter()
    valid = evaluate_length(
        trained.model, config, _stream("valid", 0, run.valid_bytes), run.train_length
    )
    record: dict[str, Any] = {
        "arm": run.arm,
        "scheme": run.scheme,
        "seed": run.seed,
        "learning_rate": run.learning_rate,
        "parameters": count_parameters(trained.model),
        "final_loss": mean_final_loss(trained.losses, config.steps),
        "valid_bpb": valid["bpb"] if math.isfinite(valid["bpb"]) else None,
        "train_seconds": trained.seconds,
    }
    if items is not None:
        margins = item_margins(trained.model, items, run.train_length)
        record["margins"] = encode_margins(margins)
    record["eval_seconds"] = time.perf_counter() - start
    return record


__all__ = [
    "ITEM_BATCH",
    "MARGIN_DECIMALS",
    "ProbeRun",
    "check_items",
    "decode_margins",
    "encode_margins",
    "item_margins",
    "probe_run",
]
