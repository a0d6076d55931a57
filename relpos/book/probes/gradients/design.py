"""What the gradient probe predicts and what would falsify it, written before any run.

The claim (chapter 1, claim 4, "cleaner gradient flow"): since position and
content never add up to one vector, position gradients cannot interfere with
content learning. The probe is an intervention: one causal byte model
(width 64, two layers, trained on the docstrings corpus at ``L = 64``) in which
positions enter in one of three ways (:data:`ARMS`), trained on the content
objective alone and on the content objective plus a position objective
(:data:`MIXES`), ten seeds per cell, each cell's learning rate tuned on two
tuning seeds (chapter 12's rule). Runs of one seed share their initial
weights and their batches within an arm, so the cost below is paired by seed.

- content objective: the next byte (the language model's loss, nats per byte);
- position objective: recall the byte :data:`OFFSET` back (``x[t - 3]`` at every
  position ``t >= 3``), by a second linear head on the last hidden state: a
  rule of positions alone, the one chapter 11's first measurement used;
- content cost of an arm: the content loss on the test split trained with the
  position objective minus trained without it, per seed (nats per byte).

Nothing here depends on a result: these sentences are committed before the
runner that produces one.
"""

from __future__ import annotations

#: The version of the probe's numbers: part of every run's key in the runs
#: folder (not relpos's version). Raise it only when a run's numbers change.
SCHEMA = 1

#: The byte the position objective recalls: ``x[t - OFFSET]`` at position ``t``.
OFFSET = 3

#: The objectives of each cell: the content objective alone, and with the
#: position objective added (the two losses summed, weight 1 each).
MIXES = (("content",), ("content", "position"))

#: The matched level: the position objective counts as learned in an arm when
#: its mean test loss over the seeds is at most this (nats; a uniform guess
#: over 256 bytes is 5.55). An arm above it has not learned the position
#: objective, its levels are not matched, and the verdict is "untested".
AUX_TARGET = 0.1

#: The three ways positions enter the same model (scheme names of
#: ``relpos.book.experiments.SCHEMES``), and what each means for the claim.
ARMS = {
    "absolute": (
        "BERT: a learned table of absolute positions added to the token "
        "embeddings before the first layer; position and content are one "
        "vector, read by the same query and key projections."
    ),
    "tupe": (
        "TUPE (Ke et al. 2021): nothing added to the input; each layer's "
        "logits are the content term q.k / sqrt(2d) plus a separate position "
        "term (p_i U_q).(p_j U_k) / sqrt(2d) with its own absolute table p and "
        "its own projections U_q, U_k, untied from the content projections."
    ),
    "deberta": (
        "DeBERTa: nothing added to the input; the relative table enters as "
        "c2p and p2c, projected by the content query and key projections "
        "(share_att_key, as DeBERTa-v3)."
    ),
}

PREDICTION = (
    "With the position objective learned to the same level in every arm, "
    "training it beside the next-byte objective costs the BERT arm (absolute) "
    "content loss that the TUPE and DeBERTa arms do not pay: the content cost "
    "of absolute is above zero, and above the content cost of tupe and of "
    "deberta, each difference paired by seed over ten seeds with its 95% "
    "bootstrap interval above zero."
)

FALSIFIER = (
    "The claim fails when neither untied arm pays less: the 95% interval of "
    "cost(absolute) - cost(tupe) and that of cost(absolute) - cost(deberta) "
    "both reach zero or below. It is qualified when only one of them lies "
    "above zero, or when both do but the absolute arm's own cost has an "
    "interval reaching zero. It is untested when the position objective's "
    "mean test loss is above AUX_TARGET in any arm (the levels are not "
    "matched) or a cell's learning rate is not inside its grid."
)

MECHANISM = (
    "The cosine between the two objectives' gradients on the parameters both "
    "reach, measured every 25 steps of the runs that train both and averaged "
    "over training: the token embedding, and the content query and key "
    "projections of every layer. Zero is no interference, below zero "
    "conflict, above zero help. The claim's first half predicts a cosine "
    "away from zero in the BERT arm (position and content share the "
    "embedding's sum and the projections) and near zero in the untied arms; "
    "DeBERTa's c2p and p2c reuse the content projections, so there position "
    "gradients reach them by construction. Position gradients interfere in "
    "an arm where the 95% interval of the mean cosine excludes zero."
)

__all__ = [
    "ARMS",
    "AUX_TARGET",
    "FALSIFIER",
    "MECHANISM",
    "MIXES",
    "OFFSET",
    "PREDICTION",
    "SCHEMA",
]
