"""The configuration of one language-model run on the corpus, and its seeds.

A :class:`TextConfig` holds everything a run's numbers depend on: the corpus
(its kind and its SHA-256), the setting, the scheme, the seed, the lengths, the
model's sizes and the optimiser. :meth:`TextConfig.scheme_config` turns it into
the experiments' ``Config``, the one object ``build_scheme`` reads, so every
scheme of ``relpos.book.experiments.schemes.SCHEMES`` builds here unchanged.

The seeds (:func:`model_seed`, :func:`data_seed`) come from the text of a few
fields (``derive_seed``, SHA-256): every scheme of one (corpus, setting, seed)
sees the same training batches and the same masks, and adding a scheme to a
sweep changes no other number.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

from relpos.checks import check_choice, check_int

from ..experiments.config import (
    Config,
    Settings,
    check_lengths,
    check_nonnegative,
    derive_seed,
)
from .corpus import KINDS

#: The two settings: a causal LM (next byte) or a masked LM (DeBERTa's objective).
SETTINGS = ("causal", "masked")


@dataclass(frozen=True)
class TextConfig(Settings):
    """One language-model run: corpus, setting, scheme, lengths, model, optimiser.

    Attributes:
        corpus: a kind of ``corpus.KINDS`` (``"docstrings"`` or ``"source"``).
        corpus_sha256: the SHA-256 the corpus must have (``""``: not checked);
            a sweep fills it in, so a run's record names its corpus and a
            worker on another interpreter refuses to train.
        setting: ``"causal"`` or ``"masked"``.
        scheme: a name of the experiments' ``SCHEMES``.
        seed: the run's seed (its data and model seeds derive from it).
        train_length: the context ``L`` of every training window.
        eval_lengths: the evaluation window lengths (``L``, ``2L``, ...).
        eval_bytes: bytes of the test (or validation) stream read at every
            length: ``eval_bytes // n`` non-overlapping windows of length ``n``.
        steps, batch_size, learning_rate, weight_decay: AdamW, warm-up over the
            first tenth of the steps, then linear decay to zero.
        mask_rate: the share of positions a masked LM predicts (BERT: 0.15).
        hidden_size, num_heads, num_layers, intermediate_size: the encoder
            (``intermediate_size=0``: twice ``hidden_size``).
        max_relative_positions, position_buckets, bucket_max_position,
        t5_max_distance: the schemes' spans, as in the experiments' ``Config``.
    """

    corpus: str = "docstrings"
    corpus_sha256: str = ""
    setting: str = "causal"
    scheme: str = "deberta"
    seed: int = 0
    train_length: int = 64
    eval_lengths: tuple[int, ...] = (64, 128, 256, 512, 1024)
    eval_bytes: int = 65536
    steps: int = 1000
    batch_size: int = 32
    learning_rate: float = 1e-3
    weight_decay: float = 0.01
    mask_rate: float = 0.15
    hidden_size: int = 64
    num_heads: int = 4
    num_layers: int = 2
    intermediate_size: int = 0
    max_relative_positions: int = 32
    position_buckets: int = 16
    bucket_max_position: int = 64
    t5_max_distance: int = 64

    def __post_init__(self) -> None:
        check_choice("corpus", self.corpus, KINDS)
        if not isinstance(self.corpus_sha256, str):
            raise TypeError(
                f"corpus_sha256 must be a str, got {type(self.corpus_sha256).__name__}"
            )
        check_choice("setting", self.setting, SETTINGS)
        if not isinstance(self.scheme, str) or not self.scheme:
            raise TypeError(f"scheme must be a non-empty str, got {self.scheme!r}")
        check_int("seed", self.seed, minimum=0)
        for name in ("train_length", "steps", "batch_size", "eval_bytes"):
            check_int(name, getattr(self, name), minimum=1)
        check_int("intermediate_size", self.intermediate_size, minimum=0)
        lengths = check_lengths("eval_lengths", self.eval_lengths, minimum=2)
        if self.eval_bytes < max(lengths) + 1:
            raise ValueError(
                f"eval_bytes must hold one window of the longest of eval_lengths "
                f"({max(lengths)}) plus one byte (>= {max(lengths) + 1}), got "
                f"{self.eval_bytes}"
            )
        for name in ("learning_rate", "weight_decay"):
            check_nonnegative(name, getattr(self, name))
        rate = self.mask_rate
        if isinstance(rate, bool) or not isinstance(rate, numbers.Real):
            raise TypeError(f"mask_rate must be a float in (0, 1), got {rate!r}")
        if not 0 < rate < 1:
            raise ValueError(f"mask_rate must be a float in (0, 1), got {rate!r}")
        self.scheme_config()  # the sizes and spans pass the experiments' checks

    @property
    def causal(self) -> bool:
        """Whether the model is a causal decoder (``setting == "causal"``)."""
        return self.setting == "causal"

    def scheme_config(self) -> Config:
        """The experiments' ``Config`` that ``build_scheme`` reads for this run.

        Its setting is ``"causal"`` or ``"encoder"`` (the masked LM), its test
        lengths the evaluation lengths (so a learned absolute table has a row
        for every position evaluated), its task a placeholder name never read.
        """
        return Config(
            task="text",
            scheme=self.scheme,
            setting="causal" if self.causal else "encoder",
            seed=self.seed,
            train_length=self.train_length,
            test_lengths=self.eval_lengths,
            steps=self.steps,
            batch_size=self.batch_size,
            learning_rate=self.learning_rate,
            weight_decay=self.weight_decay,
            hidden_size=self.hidden_size,
            num_heads=self.num_heads,
            num_layers=self.num_layers,
            intermediate_size=self.intermediate_size or 2 * self.hidden_size,
            max_relative_positions=self.max_relative_positions,
            position_buckets=self.position_buckets,
            bucket_max_position=self.bucket_max_position,
            t5_max_distance=self.t5_max_distance,
        )


def model_seed(config: TextConfig) -> int:
    """The seed of a run's initial weights: (corpus, setting, scheme, seed)."""
    parts = ("text-model", config.corpus, config.setting, config.scheme, config.seed)
    return derive_seed(*parts)


def data_seed(config: TextConfig) -> int:
    """The seed of a run's batches and masks: (corpus, setting, seed), no scheme."""
    return derive_seed("text-data", config.corpus, config.setting, config.seed)


__all__ = ["SETTINGS", "TextConfig", "data_seed", "model_seed"]
