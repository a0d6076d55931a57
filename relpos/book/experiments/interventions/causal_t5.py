"""Why causal T5 holds ``relative`` far past ``L``: bias gap, or competing keys?

The claim (chapter 10, "In a causal decoder"): T5 holds most of ``relative``
to ``8L`` as a causal decoder (99%, 91%, 74% at ``2L``, ``4L``, ``8L``, against
0 in the encoder) because "a causal query competes only with the keys behind
it, and all 16 buckets lie behind, twice the two-sided resolution". Two
explanations are mixed there: fewer competing keys, and a finer resolution
(which would show as a larger bias gap for the key 3 back).

Measured per run, at every test length, from the trained bias table alone
(T5's bias is one number per bucket and head, whatever the content):

- ``gap``: the bias of the target bucket (distance 3) minus the largest bias
  of any other bucket the scored query can see, averaged over scored queries;
- ``share``: the weight of the key 3 back if the attention were the bias
  alone (the softmax over the visible keys);
- ``competitors``: the visible keys other than the key 3 back, per query;
- ``effective_gap``: the ``g`` with ``share = 1 / (1 + competitors e^-g)``, so
  that the bias-only share splits exactly into a gap and a count;
- for the encoder also the same over the keys behind the query only
  (``bias_behind``): its own biases, the causal query's competitors.

Also measured in every arm (:func:`readout`): each head's real attention on
the key 3 back (content included), the share of scored positions answered "no
token" and the accuracy if that answer were barred; the *reading head* is the
head with the most attention at ``L``; and the distances that share the
target's bucket (its resolution).

Cut, on the same trained weights (the arms): ``keys_behind`` (every query
reads only the keys at or behind it: the encoder with the causal query's
competitors, its biases and buckets unchanged) and ``keys_within`` (only the
keys less than ``L`` away: as many competitors as in training), against
``intact``.

Shapes:
    bias rows: ``(h, buckets)``; buckets, visible: ``(n, n)``
"""

from __future__ import annotations

import math
from typing import Any

import torch

from relpos.positions import relative_positions
from relpos.schemes.t5 import T5Bias, t5_bucket

from ..config import Config, model_seed
from ..coverage import read_pairs, scored_positions
from ..measure import by_distance, evaluation_set
from ..tasks import get_task
from ..train import train
from .common import Side, arm, paired, run_record
from .surgery import distance_mask, forward_layers

CLAIM = (
    "causal T5 holds relative far past L because its buckets give twice the "
    "two-sided resolution"
)
CHANGE = (
    "on the same trained encoder weights, each query reads only the keys at or "
    "behind it (the causal query's competitors, the encoder's biases)"
)


def _bias(model: torch.nn.Module) -> T5Bias:
    layers = getattr(model.encoder, "layers", [])
    bias = getattr(layers[0].attention, "position_bias", None) if layers else None
    if len(layers) != 1 or not isinstance(bias, T5Bias):
        raise ValueError("model must be a one-layer t5 model")
    return bias


def _buckets(bias: T5Bias, rel: torch.Tensor) -> torch.Tensor:
    """The bucket of each distance in ``rel``, with ``bias``'s settings."""
    return t5_bucket(
        rel,
        num_buckets=bias.num_buckets,
        max_distance=bias.max_distance,
        bidirectional=bias.bidirectional,
    )


def bias_profile(
    rows: torch.Tensor,
    buckets: torch.Tensor,
    visible: torch.Tensor,
    scored: torch.Tensor,
    shift: int,
) -> dict[str, Any]:
    """Gap, bias-only share, competitors and effective gap of the key ``shift`` back.

    Per head, averaged over the scored queries that have that key.

    Shapes:
        rows: ``(h, buckets)``; buckets, visible: ``(n, n)``; scored: ``(n,)``
        output: ``gap``, ``share``, ``effective_gap``: ``h`` floats each;
        ``competitors``: a float
    """
    n = buckets.shape[-1]
    rel = relative_positions(n)  # (i, j)
    target_key = rel == shift  # (i, j)
    queries = scored & (visible & target_key).any(-1)  # (i,)
    if not queries.any():
        raise ValueError(f"no scored query sees the key {shift} back at n = {n}")
    target = int(buckets[target_key][0])
    logits = rows[:, buckets]  # (h, i, j)
    others = visible & (buckets != target)  # (i, j)
    best_other = logits.masked_fill(~others, -math.inf).amax(-1)  # (h, i)
    gap = rows[:, target, None] - best_other  # (h, i)
    probs = logits.masked_fill(~visible, -math.inf).softmax(-1)  # (h, i, j)
    share = (probs * target_key).sum(-1)  # (h, i)
    competitors = (visible & ~target_key).sum(-1).float()  # (i,)
    odds = (1 / share.clamp(max=1 - 1e-7) - 1).clamp(min=1e-30)  # (h, i)
    effective = competitors.log() - odds.log()  # (h, i)
    return {
        "gap": gap[:, queries].mean(-1).tolist(),
        "share": share[:, queries].mean(-1).tolist(),
        "effective_gap": effective[:, queries].mean(-1).tolist(),
        "competitors": competitors[queries].mean().item(),
    }


def bias_record(model: torch.nn.Module, config: Config, n: int) -> dict[str, Any]:
    """:func:`bias_profile` of the model's bias at length ``n`` (and keys behind).

    Shapes:
        output: ``{"all": profile}``, plus ``"behind"`` for an encoder
    """
    bias = _bias(model)
    shift = get_task(config.task).param
    rel = relative_positions(n)  # (i, j)
    buckets = _buckets(bias, rel)  # (i, j)
    rows = bias.row_bias().detach()  # (h, buckets)
    visible, scored = read_pairs(config, n), scored_positions(config, n)
    found = {"all": bias_profile(rows, buckets, visible, scored, shift)}
    if not config.causal:
        behind = visible & (rel >= 0)  # (i, j): the causal query's keys
        found["behind"] = bias_profile(rows, buckets, behind, scored, shift)
    return found


def readout(
    model: torch.nn.Module, config: Config, n: int, mask: torch.Tensor | None = None
) -> dict[str, Any]:
    """What the model reads and answers at length ``n`` when it reads only ``mask``.

    On the test sequences, over the scored positions: ``accuracy``;
    ``attention``, each head's mean weight on the key ``shift`` back;
    ``no_token``, the share answered "no token"; ``tokens_only``, the accuracy
    if "no token" could not be answered (the best of the token classes).

    Shapes:
        mask: ``(n, n)`` bool or None; output: floats, ``attention`` ``h`` of them
    """
    task = get_task(config.task)
    tokens, labels = evaluation_set(config, n)  # (b, n) each
    logits, (probs,) = forward_layers(model, tokens, mask, probs=True)
    scored = task.scored(labels)  # (b, n)
    count = max(1, int(scored.sum()))
    predicted = logits.argmax(-1)  # (b, n)
    tokens_only = logits[..., : task.vocab_size].argmax(-1)  # (b, n)
    distances, means = by_distance(probs.mean(0))  # (h, 2n - 1)
    return {
        "accuracy": ((predicted == labels) & scored).sum().item() / count,
        "attention": means[:, distances.index(task.param)].tolist(),
        "no_token": ((predicted == task.vocab_size) & scored).sum().item() / count,
        "tokens_only": ((tokens_only == labels) & scored).sum().item() / count,
    }


def measure(config: Config) -> dict[str, Any]:
    """Train a one-layer ``t5`` model; its biases, attention and every arm's accuracy.

    The record: :func:`.common.run_record`'s fields, ``arms`` (``intact``,
    ``keys_behind``, ``keys_within``: accuracy per test length), ``readout``
    per arm and test length (:func:`readout`), ``bias`` per test length,
    ``reading_head`` (the head with the most attention on the key ``shift``
    back at ``L``, intact) and ``target_bucket`` (the bucket of the shift and
    the distances up to the longest test length that share it).

    Shapes:
        record: JSON-ready; ``bias`` lists ``h`` floats per length
    """
    task = get_task(config.task)
    if task.kind != "shift" or config.scheme != "t5" or config.num_layers != 1:
        raise ValueError(
            "config must be a one-layer 't5' model on a shift task, got scheme="
            f"{config.scheme!r}, num_layers={config.num_layers}, task={config.task!r}"
        )
    seed = model_seed(config)
    trained = train(config, seed=seed)
    model = trained.model
    bias = _bias(model)
    L, lengths = config.train_length, config.test_lengths
    arms = {
        "intact": lambda n: None,
        "keys_behind": lambda n: distance_mask(n, lambda rel: rel >= 0),
        "keys_within": lambda n: distance_mask(n, lambda rel: rel.abs() < L),
    }
    read = {
        name: {str(n): readout(model, config, n, masks(n)) for n in lengths}
        for name, masks in arms.items()
    }
    at_l = read["intact"][str(L)]["attention"]
    reach = torch.arange(-max(config.test_lengths), max(config.test_lengths))
    buckets = _buckets(bias, reach)  # (2 * longest,)
    target = int(buckets[reach == task.param][0])
    return {
        **run_record(config, trained, seed),
        "arms": {
            name: {n: found["accuracy"] for n, found in by_length.items()}
            for name, by_length in read.items()
        },
        "readout": read,
        "bias": {str(n): bias_record(model, config, n) for n in lengths},
        "reading_head": max(range(bias.num_heads), key=at_l.__getitem__),
        "target_bucket": {
            "bucket": target,
            "distances": reach[buckets == target].tolist(),
        },
    }


def _head(part: str, key: str, n: int):
    return lambda r: r["bias"][str(n)][part][key][r["reading_head"]]


def _read(name: str, key: str, n: int):
    """A number of ``readout``: the reading head's, for ``attention``."""

    def value(r: dict[str, Any]) -> float:
        found = r["readout"][name][str(n)][key]
        return found[r["reading_head"]] if key == "attention" else found

    return value


def comparisons(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The settings against each other, and the cuts against the intact encoder.

    Shapes:
        records: one per cell and seed; output: one dict per comparison
    """
    found = []
    lengths = sorted({int(n) for r in records for n in r["arms"]["intact"]})
    encoder, causal = {"setting": "encoder"}, {"setting": "causal"}
    for n in lengths:
        enc = arm(f"encoder intact, n = {n}", encoder, "intact", n)
        dec = arm(f"causal intact, n = {n}", causal, "intact", n)
        behind = arm(f"encoder keys_behind, n = {n}", encoder, "keys_behind", n)
        within = arm(f"causal keys_within, n = {n}", causal, "keys_within", n)
        for name, a, b in (
            (f"causal - encoder, n = {n}", dec, enc),
            (f"encoder keys_behind - encoder, n = {n}", behind, enc),
            (f"causal - encoder keys_behind, n = {n}", dec, behind),
            (f"causal keys_within - causal, n = {n}", within, dec),
        ):
            found.append(paired(records, name, a, b))
        for key in ("gap", "effective_gap", "share"):
            found.append(
                paired(
                    records,
                    f"{key} of the reading head: causal - encoder, n = {n}",
                    Side(f"causal {key}", causal, _head("all", key, n)),
                    Side(f"encoder {key}", encoder, _head("all", key, n)),
                )
            )
        found.append(
            paired(
                records,
                f"bias-only share: causal - encoder over keys behind, n = {n}",
                Side("causal share", causal, _head("all", "share", n)),
                Side(
                    "encoder share, keys behind", encoder, _head("behind", "share", n)
                ),
            )
        )
        found.append(
            paired(
                records,
                f"encoder: tokens_only - accuracy, n = {n}",
                Side("encoder tokens_only", encoder, _read("intact", "tokens_only", n)),
                Side("encoder accuracy", encoder, _read("intact", "accuracy", n)),
            )
        )
        for key in ("attention", "no_token", "tokens_only"):
            found.append(
                paired(
                    records,
                    f"{key}: causal - encoder keys_behind, n = {n}",
                    Side(f"causal {key}", causal, _read("intact", key, n)),
                    Side(f"encoder keys_behind {key}", encoder,
                         _read("keys_behind", key, n)),
                )
            )
    return found


__all__ = [
    "CHANGE",
    "CLAIM",
    "bias_profile",
    "bias_record",
    "comparisons",
    "measure",
    "readout",
]
