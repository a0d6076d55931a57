"""One run of the gradient probe: an arm, its objectives, a seed, a learning rate.

A run is chapter 11's two-objective training (``relpos.book.text.gradients``:
the byte model with a second head that recalls the byte ``OFFSET`` back, the
gradient cosines on the shared parameters every ``MEASURE_EVERY`` steps) at
the probe's sizes (:data:`STUDY`). :class:`ProbeRun` is what the runs folder
keys a record on (``to_dict``: the text config, the objectives, the offset and
the evaluation); :func:`probe_job` is what an executor calls: a tuning run is
measured on the validation split, a measured run on the test split.

Shapes:
    (no tensors: records are JSON-ready dicts)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ...text.config import TextConfig
from ...text.gradients import OBJECTIVES, train_objectives
from .design import MIXES, OFFSET

#: The probe's model and training: width 64, two layers, ``L = 64``.
STUDY = dict(
    setting="causal",
    train_length=64,
    eval_lengths=(64,),
    hidden_size=64,
    num_heads=4,
    num_layers=2,
    batch_size=32,
    steps=800,
)
#: Steps between two measurements of the gradient cosines.
MEASURE_EVERY = 25
#: Windows of ``L`` each objective's final loss is measured on (a split's).
EVAL_WINDOWS = 512
#: The split each kind of run is measured on.
SPLITS = {"tuning": "valid", "measured": "test"}


@dataclass(frozen=True)
class ProbeRun:
    """One run: the text config (scheme = the arm, seed, rate) and its objectives.

    Shapes:
        (no tensors)
    """

    config: TextConfig
    objectives: tuple[str, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.config, TextConfig):
            raise TypeError(
                f"config must be a TextConfig, got {type(self.config).__name__}"
            )
        if tuple(self.objectives) not in MIXES:
            raise ValueError(
                f"objectives must be one of {MIXES}, got {self.objectives!r}"
            )
        if not self.config.causal:
            raise ValueError(
                f"config.setting must be 'causal', got {self.config.setting!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        """What the run's numbers depend on (the runs folder's key)."""
        return {
            **self.config.to_dict(),
            "objectives": list(self.objectives),
            "offset": OFFSET,
            "measure_every": MEASURE_EVERY,
            "eval_windows": EVAL_WINDOWS,
        }


def train_run(run: ProbeRun, split: str) -> dict[str, Any]:
    """Train ``run`` and measure both objectives on ``split``: one record.

    The record: ``arm``, ``seed``, ``learning_rate``, ``objectives``, ``split``,
    ``loss`` (``{objective: nats on EVAL_WINDOWS windows of split}``),
    ``steps`` and ``cosines`` (``{group: [cosine per measured step]}``), and
    ``seconds``.
    """
    found = train_objectives(
        run.config,
        tuple(run.objectives),
        offset=OFFSET,
        measure_every=MEASURE_EVERY,
        valid_windows=EVAL_WINDOWS,
        split=split,
    )
    return {
        "arm": run.config.scheme,
        "seed": run.config.seed,
        "learning_rate": run.config.learning_rate,
        "objectives": list(run.objectives),
        "split": split,
        "loss": {name: found[split][name] for name in OBJECTIVES},
        "steps": found["steps"],
        "cosines": found["cosines"],
        "seconds": found["seconds"],
    }


def probe_job(kind: str, run: ProbeRun, threads: int = 1) -> dict[str, Any]:
    """One job of an executor (``experiments.engine``): train and measure ``run``.

    Sets the torch threads first, so a run's numbers do not depend on what runs
    beside it.
    """
    if kind not in SPLITS:
        raise ValueError(f"kind must be one of {tuple(SPLITS)}, got {kind!r}")
    torch.set_num_threads(threads)
    return train_run(run, SPLITS[kind])


def score(record: dict[str, Any]) -> float:
    """A tuning run's score: the summed loss of the objectives it trained on."""
    return sum(record["loss"][name] for name in record["objectives"])


def label(kind: str, run: ProbeRun) -> str:
    """How the progress bar names a finished run."""
    mix = "+".join(run.objectives)
    text = f"{run.config.scheme}/{mix} seed={run.config.seed}"
    if kind == "tuning":
        return f"tuning {text} lr={run.config.learning_rate:g}"
    return text


__all__ = [
    "EVAL_WINDOWS",
    "MEASURE_EVERY",
    "ProbeRun",
    "SPLITS",
    "STUDY",
    "label",
    "probe_job",
    "score",
    "train_run",
]
