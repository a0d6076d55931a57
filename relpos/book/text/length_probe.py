"""The probe of chapter 1's length claim: does a model use the longer context?

Chapter 1 says that "relative models handle sequences longer than those seen
in training". Chapter 11 found that some schemes do not break beyond the
training length ``L``: their bits per byte stay flat on non-overlapping windows
up to ``16 L``. Flat is surviving; it is not using. A model that reads 512 bytes
but draws on the last 64 only is flat too. This probe asks the stronger question
of each causal byte-level language model trained at ``L``: at a window ``W > L``,
is its loss below that of the same model whose attention is cut to the last
``L`` keys of every query?

The prediction, the falsifier, the arms and the mechanism measured are stated
below, before any run.
"""

from __future__ import annotations

#: The claim under test, in chapter 1's words.
SEED_CLAIM = "length"
CLAIM = "Relative models handle sequences longer than those seen in training."

#: What the claim predicts, written before the runs.
PREDICTION = (
    "A relative model trained at L uses the longer context it is given: evaluated "
    "on sliding windows of W = 2L, 4L and 8L bytes, its loss per byte is below the "
    "loss of the same model, on the same windows and the same scored bytes, with "
    "its attention cut to the last L keys of every query. The difference (cut minus "
    "full, in nats per byte) is above zero, with a 95% bootstrap interval over the "
    "test split's modules and the seeds that excludes zero, at every W > L."
)

#: What result would falsify the prediction, written before the runs.
FALSIFIER = (
    "For DeBERTa (or another relative scheme), the full and the cut losses at "
    "W > L are equal within the interval (the interval of cut minus full holds "
    "zero): the model only survives the longer window, reading no more than it "
    "read in training. A cut loss below the full one (an interval below zero) "
    "falsifies it too: the extra keys hurt."
)

#: The arms of the probe: the schemes and the three evaluations of each model.
ARMS = (
    "Nine causal byte-level language models of the text sweep (width 64, two "
    "layers, trained at L = 64 on the standard library's docstrings), one per "
    "position scheme: none, absolute, rotary, T5, ALiBi, KERPLE, FIRE, DeBERTa "
    "with its clipped table and DeBERTa with log buckets; the learning rate tuned "
    "per scheme on two tuning seeds, then ten seeds. Each trained model is read "
    "three ways at W = L, 2L, 4L and 8L on the whole test split: non-overlapping "
    "windows (chapter 11's evaluation); sliding windows of W with stride W / 2, "
    "scoring only the last W / 2 bytes of each, so every scored byte has at least "
    "W / 2 bytes of context (the first window scores all its bytes); and the same "
    "sliding windows with every query of every layer cut to its last L keys (a "
    "causal band mask). At W = L the cut changes nothing."
)

#: The mechanism measured beside the verdict.
MECHANISM = (
    "A model can use context beyond L only if its attention puts weight on keys "
    "at distances of L or more. For every query at position L or later in a window "
    "of W, the share of its attention on keys L or more back is measured, per "
    "layer, averaged over heads, queries and windows: the attention mass beyond L. "
    "A scheme whose distance term grows without bound (ALiBi's linear penalty, "
    "KERPLE's log kernel) is expected to leave almost none there; a clipped or "
    "bucketed table (DeBERTa) scores every far key alike, so what reaches them is "
    "content alone. Note that the cut is per layer: with two layers a byte can "
    "still hear from up to 2 (L - 1) bytes back through an intermediate one, so "
    "the cut removes direct reads of far keys, not every path to them."
)

__all__ = ["ARMS", "CLAIM", "FALSIFIER", "MECHANISM", "PREDICTION", "SEED_CLAIM"]
