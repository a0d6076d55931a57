"""The design of the positions probe, written before any of its runs.

Claim 1 of chapter 1: *what is learned about a distance at one place applies
everywhere*. The probe trains the ``relative`` task (output the token 3
positions back) in the encoder setting on windows of ``L = 32`` tokens, with
the loss reading the labels of the first half only (positions ``0 .. 15``),
and scores every position inside ``L``: the first half (the control) and the
second half (the transfer). Every token and every position of the window is an
input in training; only which positions are supervised differs. The *transfer
gap* of a run is its first-half accuracy minus its second-half accuracy.

Part two is the data-efficiency curve of the same task with every position
supervised, at 8, 16, 32 and 128 training sequences, for every scheme of the
main sweep (the cells the protocol's main sweep dropped).

Nothing here is a result: these constants are the prediction the results are
held to (``relpos.book.experiments.verdicts.positions``).
"""

from __future__ import annotations

#: The version of the probe's numbers: the runs folder is keyed on it (not on
#: ``relpos.__version__``). Raise it only when a change moves the probe's numbers.
SCHEMA = 1
#: The probe's name: its runs folder and result file.
NAME = "positions"

#: The training length ``L`` and the positions whose labels the loss reads.
TRAIN_LENGTH = 32
SUPERVISED = TRAIN_LENGTH // 2
#: Training sequences of the transfer part: the main sweep's largest cell, so
#: that data is not what limits the first half.
TRANSFER_SIZE = 512
#: Test sequences at ``L`` per run (each position is scored on every one).
TEST_SIZE = 256
#: The clipping span of DeBERTa's table (and Shaw's) in the transfer part:
#: ``k >= L``, so that no distance inside the window clips.
SPAN = TRAIN_LENGTH
#: Training sequences of the data-efficiency part.
DATA_SIZES = (8, 16, 32, 128)

#: The protocol (chapter 12's rule).
SEEDS = tuple(range(10))
TUNE_SEEDS = (100, 101)
LEARNING_RATES = (1e-3, 3.16e-3, 1e-2)
MAX_RATES = 6

#: How many points a gap may differ from zero and still count as transfer.
MARGIN = 0.05
#: The smallest absolute-table gap the prediction expects (in accuracy).
ABSOLUTE_GAP = 0.25

#: The arms of the transfer part: each scheme, and what it stands for here.
ARMS: dict[str, str] = {
    "none": "no positions at all: the floor, near chance in both halves",
    "absolute": "a learned table, one row per position (BERT): the absolute arm",
    "sinusoidal": "fixed sinusoids added to the tokens: absolute, but a shift of "
    "the position is a rotation of its features",
    "shaw": "Shaw's clipped table of distances in the keys and values (k = L)",
    "transformer_xl": "Transformer-XL's sinusoids of the distance with learned "
    "biases",
    "t5": "T5's learned bias per log bucket of the distance",
    "alibi": "ALiBi's fixed linear penalty on the distance",
    "rotary": "rotary: queries and keys turned by their position, so their "
    "product depends on the distance",
    "deberta": "DeBERTa's table of distances with c2p and p2c, k = L so no "
    "distance in the window clips",
    "deberta-buckets": "DeBERTa's table over log buckets of the distance",
    "fire": "FIRE's learned function of the distance divided by the query's "
    "position (not relative in the strict sense)",
    "kerple": "KERPLE's learned logarithmic kernel of the distance",
}
#: The two supervisions of the transfer part: the probe and its ceiling.
SUPERVISIONS: dict[str, int | None] = {"first": SUPERVISED, "all": None}
#: The schemes of the data-efficiency part: the main sweep's.
DATA_SCHEMES = (
    "none", "absolute", "sinusoidal", "shaw", "transformer_xl", "t5", "alibi",
    "rotary", "deberta", "deberta-buckets", "deberta-emd",
)

PREDICTION = (
    "Trained to output the token 3 back only at the first 16 positions of "
    "32-token windows, a relative scheme that learns the rule there (a mean of "
    "at least 90% in the first half) scores as well in the second half: its "
    "transfer gap (first-half minus second-half accuracy) has a 95% interval "
    "over ten seeds that lies within 5 points of zero. The learned absolute "
    "table does not transfer: its gap is at least 25 points, and larger than "
    "each relative scheme's, seed by seed, with the paired interval excluding 0. "
    "With every position supervised, a relative scheme that learns the rule at "
    "128 sequences scores higher than the absolute table at 8 and at 16 "
    "sequences, the paired interval excluding 0."
)

FALSIFIER = (
    "The claim fails if DeBERTa (k = L, nothing clipped) learns the first half "
    "but its gap's interval lies wholly above 5 points, or its gap is not "
    "smaller than the absolute table's (the paired interval includes 0), or if "
    "it is not above the absolute table at 8 or at 16 sequences (the paired "
    "interval includes 0 or lies below it). Every other relative scheme passes "
    "or fails the same tests alone; one that fails makes the verdict qualified. "
    "A scheme that does not learn the first half (a mean below 90%) cannot "
    "transfer what it did not learn: it is untested, not failed."
)

MECHANISM = (
    "A relative score depends on i - j alone: a query at position 20 reading "
    "the key 3 back uses the same parameters (a table row, a bucket, a rotation "
    "angle) as a query at position 5 reading its key 3 back, so what the loss "
    "taught at one serves at the other. A learned absolute table has one row "
    "per position: the loss trains the first half's rows as queries, while the "
    "second half's rows receive gradient only as keys that the first half "
    "learns to pass over, so nothing teaches them to find the token 3 back. "
    "Tested by intervention on the trained absolute (and sinusoidal) models: "
    "at test time the rows are rolled by L/2, so the trained rows 0..15 sit "
    "under positions 16..31; if the skill lives in the rows, it moves to the "
    "second half and leaves the first. The distance of each row from its "
    "initial value shows which rows training moved. One caveat is part of the "
    "design: keys more than L/2 back (i - j >= 16) are read by second-half "
    "queries only, so a table with a row per distance (k = L) meets rows there "
    "that the supervised loss never moved."
)

__all__ = [
    "ABSOLUTE_GAP",
    "ARMS",
    "DATA_SCHEMES",
    "DATA_SIZES",
    "FALSIFIER",
    "LEARNING_RATES",
    "MARGIN",
    "MAX_RATES",
    "MECHANISM",
    "NAME",
    "PREDICTION",
    "SCHEMA",
    "SEEDS",
    "SPAN",
    "SUPERVISED",
    "SUPERVISIONS",
    "TEST_SIZE",
    "TRAIN_LENGTH",
    "TRANSFER_SIZE",
    "TUNE_SEEDS",
]
