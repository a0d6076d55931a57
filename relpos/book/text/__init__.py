"""Language models on a real corpus, trained at one context and read beyond it.

The corpus is the running interpreter's standard library (no download, nothing
committed; the PSF License Agreement covers its text): its docstrings, English
technical prose, or its source code (``corpus``). Every position scheme of
``relpos.book.experiments`` becomes a byte-level language model, causal (next
byte) or masked (DeBERTa's objective), with the experiments' ``TinyModel``
(``lm``); it trains at a context ``L`` and is evaluated at ``L``, ``2L``, ...
on non-overlapping windows of the test split, with bits per byte and the loss
at every position of the window (``train``). Each scheme's learning rate is
tuned on validation text at ``L`` over a grid extended until it brackets the
best rate (``experiments.rate_grid``); ``alignment`` reads the loss at closing brackets and
quotes by their opener's distance, inside and beyond ``L``; ``gradients``
measures where a positional and a content objective's gradients meet
(``python -m relpos.book.text.gradients``); ``verdicts`` turns the results into
the text records of ``results/claims.json``, the four seed claims' among them
(``python -m relpos.book.results`` writes the ledger); ``sweep`` runs every (setting, scheme, seed) through the
experiments' executors and runs folder, and ``cli`` is ``python -m
relpos.book.text``.

    from relpos.book.text import TextConfig, train_text, evaluate_text, stdlib_corpus
    config = TextConfig(scheme="alibi", steps=200, eval_lengths=(64, 256))
    corpus = stdlib_corpus(config.corpus)
    trained = train_text(config, corpus.stream("train"))
    evaluate_text(trained.model, config, corpus.stream("test"))["256"]["bpb"]

Shape legend:
    stream: ``(bytes,)`` uint8; inputs, targets: ``(b, n)``
"""

from .alignment import alignment_record, closer_losses, opener_distances
from .config import SETTINGS, TextConfig, data_seed, model_seed
from .corpus import (
    KINDS,
    SPLITS,
    Corpus,
    build_corpus,
    decode,
    encode,
    split_of,
    stdlib_corpus,
    stdlib_modules,
)
from .lm import MASK, language_model, mask_bytes, token_losses
from .sweep import merge_results, run_text_sweep, summarize_text
from .train import evaluate_length, evaluate_text, run_text, train_text, tune_text
from ..experiments.rate_grid import tune_rates

__all__ = [
    "KINDS",
    "MASK",
    "SETTINGS",
    "SPLITS",
    "Corpus",
    "TextConfig",
    "alignment_record",
    "closer_losses",
    "build_corpus",
    "data_seed",
    "decode",
    "encode",
    "evaluate_length",
    "evaluate_text",
    "language_model",
    "mask_bytes",
    "merge_results",
    "model_seed",
    "opener_distances",
    "run_text",
    "run_text_sweep",
    "split_of",
    "stdlib_corpus",
    "stdlib_modules",
    "summarize_text",
    "token_losses",
    "train_text",
    "tune_rates",
    "tune_text",
]
