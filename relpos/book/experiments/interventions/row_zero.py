"""deberta-buckets' untrained row 0: redirect its reads, or mask them, and measure.

The claim (chapter 9, and chapter 10's exercise 10.1): ``deberta-buckets``
loses accuracy beyond ``4L`` on ``relative`` because its row 0, which holds
every key 64 or more positions *ahead* (``i - j <= -64``), is read at test and
never in training (a 32-token sequence has no such pair), so it keeps its
random initial value. Chapter 9 reports 95% at ``8L`` with 512 training
sequences (one seed of five at 79%); with 32 sequences the sweep has 84% (one
seed at 38%).

The intervention changes the row those pairs read and nothing else, on the
same trained weights (training never reads row 0, so a variant trained with
the change would be the same model, bit for bit; a test checks it):

- ``redirected``: the pairs that read row 0 read row ``target`` instead, the
  nearest row that training reads (row 1: keys 26 to 63 ahead);
- ``masked``: those pairs are removed from attention (the other keys share
  the weight);
- ``intact``: the model as trained.

Each run also records how many scored queries read row 0 and how much
attention the trained model gives those keys, and whether row 0 moved in
training (its cosine with its initial value).

Shapes:
    rows read: ``(n, n)``; probabilities: ``(b, h, n, n)``
"""

from __future__ import annotations

from typing import Any

import torch

from ..config import Config, model_seed
from ..coverage import scored_positions
from ..measure import evaluation_set
from ..train import initial_model, train
from .common import arm, arm_accuracies, paired, run_record
from .surgery import forward_layers, redirect_row, rows_read

#: The row the claim blames: keys 64 or more ahead.
SOURCE = 0
CLAIM = (
    "deberta-buckets loses accuracy beyond 4L on relative because its row 0 "
    "(keys 64 or more ahead) is read at test and never trained"
)
CHANGE = (
    "on the same trained weights, the pairs that read row 0 read the nearest "
    "trained row instead (redirected), or get no attention (masked)"
)


def row_zero_reads(model: torch.nn.Module, config: Config, n: int) -> dict[str, float]:
    """How much the model leans on row 0 at length ``n``, on the test sequences.

    ``queries``: the share of scored queries with a key that reads row 0;
    ``attention``: the mean weight those queries give such keys (over heads and
    layers).

    Shapes:
        output: two floats
    """
    reads = rows_read(model, n) == SOURCE  # (i, j)
    scored = scored_positions(config, n)  # (i,)
    touched = scored & reads.any(-1)  # (i,)
    weight = 0.0
    if touched.any():
        tokens, _ = evaluation_set(config, n)  # (b, n)
        _, probs = forward_layers(model, tokens, probs=True)
        on_row = [(p * reads).sum(-1)[..., touched].mean().item() for p in probs]
        weight = sum(on_row) / len(on_row)
    return {
        "queries": touched.sum().item() / max(1, int(scored.sum())),
        "attention": weight,
    }


def measure(config: Config) -> dict[str, Any]:
    """Train ``deberta-buckets`` once; every arm's accuracy, and row 0's use.

    The record: :func:`.common.run_record`'s fields, ``arms`` (``intact``,
    ``redirected``, ``masked``: accuracy per test length), ``target`` (the row
    redirected to), ``source_trained`` (whether training reads row 0),
    ``row_cosine`` (row 0 trained against initial) and ``reads`` per length.

    Shapes:
        record: JSON-ready; ``arms``: ``{arm: {"<length>": float}}``
    """
    if config.scheme != "deberta-buckets":
        raise ValueError(
            f"config.scheme must be 'deberta-buckets' (whose row 0 training never "
            f"reads), got {config.scheme!r}"
        )
    seed = model_seed(config)
    trained = train(config, seed=seed)
    model = trained.model
    at_train = rows_read(model, config.train_length)  # (L, L)
    target = int(at_train.min())
    before = initial_model(config, seed=seed).encoder.table.weight[SOURCE]
    after = model.encoder.table.weight[SOURCE].detach()
    arms = arm_accuracies(
        model,
        config,
        {
            "intact": lambda n: None,
            "masked": lambda n: rows_read(model, n) != SOURCE,
        },
    )
    with redirect_row(model, SOURCE, target):
        arms.update(arm_accuracies(model, config, {"redirected": lambda n: None}))
    return {
        **run_record(config, trained, seed),
        "arms": arms,
        "target": target,
        "source_trained": bool((at_train == SOURCE).any()),
        "row_cosine": torch.cosine_similarity(before, after, dim=0).item(),
        "reads": {
            str(n): row_zero_reads(model, config, n) for n in config.test_lengths
        },
    }


def comparisons(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Redirected and masked against intact, per training size and test length.

    Shapes:
        records: one per cell and seed; output: one dict per comparison
    """
    found = []
    sizes = sorted({r["train_size"] for r in records})
    lengths = sorted({int(n) for r in records for n in r["arms"]["intact"]})
    for size in sizes:
        where = {"train_size": size}
        for n in lengths:
            intact = arm(f"intact, {size} sequences, n = {n}", where, "intact", n)
            for name in ("redirected", "masked"):
                found.append(
                    paired(
                        records,
                        f"{name} - intact, {size} sequences, n = {n}",
                        arm(f"{name}, {size} sequences, n = {n}", where, name, n),
                        intact,
                    )
                )
    return found


__all__ = ["CHANGE", "CLAIM", "SOURCE", "comparisons", "measure", "row_zero_reads"]
