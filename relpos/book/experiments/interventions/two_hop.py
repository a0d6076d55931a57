"""The two-layer window's two-hop path on ``far``: measured, then cut.

The claim (chapter 10, "Two layers"): with two layers T5 goes from 32% to 91%
on ``far`` at ``L`` (the token 12 back), and ``deberta`` reaches 99% in one
seed of five, because a second layer composes two hops inside the window: a
key 7 back whose first-layer output holds the token 5 further back carries
distance 12 in two steps. The chapter does not measure the path.

Measured, on the test sequences of the training length, from each layer's
attention probabilities ``A1`` and ``A2``:

- the *two-hop weight* of each pair of heads ``(h2, h1)``: the weight query
  ``i`` gets from key ``i - 12`` through an intermediate position ``m``,
  ``sum_m A2[h2, i, m] A1[h1, m, i - 12]`` over ``m`` other than ``i`` and
  ``i - 12`` (those two are one-hop paths), averaged over the queries;
- the *direct weight*: each layer's attention on the key 12 back, per head;
- each head's most attended distance, per layer, and for the strongest pair of
  heads the intermediate offsets ``i - m`` that carry most of its path.

Cut, on the same trained weights (the arms). With two layers, the token
``x[i - 12]`` reaches query ``i`` by three kinds of route only: the first
layer's pair ``(i, i - 12)``, the second layer's pair ``(i, i - 12)`` (one hop
each), or the first layer's pair ``(m, i - 12)`` then the second layer's
``(i, m)`` for another position ``m`` (two hops). Each cut removes one kind for
query ``i`` alone and keeps every other pair of the model, so each query is
run with its own masks (:func:`path_cut_accuracy`):

- ``no_two_hop``: in the first layer no position other than ``i`` and
  ``i - 12`` reads key ``i - 12``;
- ``no_one_hop``: query ``i`` reads key ``i - 12`` in neither layer;
- ``no_first_hop``: query ``i`` does not read key ``i - 12`` in the first
  layer (the second layer's one hop and every two-hop path stay);
- ``intact``: the model as trained.

The cuts are measured at the training length, where the claim's accuracies
are (``CUT_LENGTHS``: one run per query position makes them costly at ``8L``);
``intact`` at every test length.

Shapes:
    probabilities: ``(b, h, n, n)``; two-hop weights: ``(h2, h1)``
"""

from __future__ import annotations

from typing import Any

import torch

from ..config import Config, model_seed
from ..measure import by_distance, evaluation_set
from ..tasks import get_task
from ..train import train
from .common import arm, arm_accuracies, paired, run_record
from .surgery import forward_layers

CLAIM = (
    "a second layer solves far (the token 12 back) by composing two hops inside "
    "the window"
)
CHANGE = (
    "on the same trained weights, for each scored query alone: every two-hop path "
    "from the key 12 back cut (no_two_hop), both one-hop reads of it cut "
    "(no_one_hop), or the first layer's (no_first_hop)"
)
#: Intermediate offsets reported for the strongest pair of heads.
TOP_OFFSETS = 3
#: The cuts are measured at the test lengths up to this multiple of ``L``.
CUT_LENGTHS = 1
#: Sequences times pairs (``b * n * n``) per batch of :func:`path_cut_accuracy`.
CUT_BATCH = 1 << 22
#: The arms that cut a kind of route.
CUTS = ("no_two_hop", "no_one_hop", "no_first_hop")


def two_hop_weights(
    first: torch.Tensor, second: torch.Tensor, distance: int
) -> torch.Tensor:
    """Weight from key ``i - distance`` to query ``i`` through another position.

    ``sum_m second[h2, i, m] first[h1, m, i - distance]`` over ``m`` not ``i``
    nor ``i - distance``, averaged over the batch and the queries ``i >=
    distance``, for every pair of heads.

    Shapes:
        first, second: ``(b, h, n, n)``, layer 1's and layer 2's probabilities
        output: ``(h2, h1)``
    """
    n = first.shape[-1]
    if not isinstance(distance, int) or not 0 < distance < n:
        raise ValueError(f"distance must be an int in 1 .. {n - 1}, got {distance!r}")
    paths = torch.einsum("bxim,bymj->bxyij", second, first)  # (b, h2, h1, n, n)
    total = paths.diagonal(-distance, dim1=-2, dim2=-1)  # (b, h2, h1, n - d)
    i = torch.arange(distance, n)
    j = i - distance
    via_query = second[:, :, i, i][:, :, None] * first[:, :, i, j][:, None]  # m = i
    via_key = second[:, :, i, j][:, :, None] * first[:, :, j, j][:, None]  # m = j
    return (total - via_query - via_key).mean((0, -1))  # (h2, h1)


def hop_offsets(
    first: torch.Tensor, second: torch.Tensor, distance: int, pair: tuple[int, int]
) -> list[list[float]]:
    """The intermediate offsets ``i - m`` of one head pair's path, strongest first.

    ``[[offset, weight], ...]`` for the ``TOP_OFFSETS`` offsets (other than 0
    and ``distance``) that carry most of ``sum_m second[h2, i, m] first[h1, m,
    i - distance]``, each weight averaged over the batch and the queries.

    Shapes:
        first, second: ``(b, h, n, n)``; output: ``TOP_OFFSETS`` pairs
    """
    h2, h1 = pair
    n = first.shape[-1]
    steps = second[:, h2, distance:, :]  # (b, n - d, n): [i - d, m]
    hops = first[:, h1, :, : n - distance].transpose(1, 2)  # (b, n - d, n): [i - d, m]
    path = (steps * hops).mean(0)  # (n - d, n): query i = row + d, intermediate m
    weights = {
        a: path.diagonal(distance - a).sum().item() / (n - distance)
        for a in range(distance - n + 1, n)
        if a not in (0, distance)
    }  # offset a = i - m: the column m = row + d - a
    strongest = sorted(weights, key=weights.get, reverse=True)[:TOP_OFFSETS]
    return [[a, weights[a]] for a in strongest]


def cut_masks(
    n: int, queries: list[int], distance: int, cut: str
) -> list[torch.Tensor]:
    """Both layers' masks of one run per query: that query's routes of ``cut`` removed.

    ``cut`` is ``"no_two_hop"`` (layer 1: rows other than ``i`` and ``i - d``
    lose key ``i - d``), ``"no_one_hop"`` (both layers: row ``i`` loses key
    ``i - d``) or ``"no_first_hop"`` (layer 1: row ``i`` loses key ``i - d``).

    Shapes:
        output: two ``(len(queries), n, n)`` bool masks, layer 1 then layer 2
    """
    if cut not in CUTS:
        raise ValueError(f"cut must be one of {CUTS}, got {cut!r}")
    first = torch.ones(len(queries), n, n, dtype=torch.bool)  # (q, i, j)
    second = first.clone()
    for k, i in enumerate(queries):
        j = i - distance
        if cut == "no_one_hop":
            first[k, i, j] = second[k, i, j] = False
        elif cut == "no_first_hop":
            first[k, i, j] = False
        else:
            others = [m for m in range(n) if m not in (i, j)]
            first[k, others, j] = False
    return [first, second]


def path_cut_accuracy(
    model: torch.nn.Module,
    config: Config,
    tokens: torch.Tensor,
    labels: torch.Tensor,
    cut: str,
) -> float:
    """Accuracy at the scored queries when each query's routes of ``cut`` are cut.

    Query ``i`` is run with :func:`cut_masks` for ``i`` alone and scored at
    ``i`` only; queries go in batches of ``CUT_BATCH`` pairs.

    Shapes:
        tokens, labels: ``(b, n)``; output: a float in ``[0, 1]``
    """
    task = get_task(config.task)
    distance = task.param
    b, n = tokens.shape
    scored = task.scored(labels)  # (b, n)
    queries = [i for i in range(distance, n) if scored[:, i].any()]
    per_batch = max(1, CUT_BATCH // (b * n * n))
    right = 0
    for start in range(0, len(queries), per_batch):
        chunk = queries[start : start + per_batch]
        masks = [
            m.repeat_interleave(b, dim=0)  # (q * b, n, n): query k's mask, b times
            for m in cut_masks(n, chunk, distance, cut)
        ]
        logits, _ = forward_layers(model, tokens.repeat(len(chunk), 1), masks)
        predicted = logits.argmax(-1).view(len(chunk), b, n)  # (q, b, n)
        for k, i in enumerate(chunk):
            right += ((predicted[k, :, i] == labels[:, i]) & scored[:, i]).sum().item()
    return right / max(1, int(scored.sum()))


def path_record(model: torch.nn.Module, config: Config) -> dict[str, Any]:
    """Two-hop and direct weights at the task's shift, on the test sequences at L.

    Shapes:
        output: ``two_hop`` ``(h2, h1)`` as lists, ``direct`` ``(layers, h)``,
        ``peaks`` ``(layers, h)``
    """
    shift = get_task(config.task).param
    tokens, _ = evaluation_set(config, config.train_length)  # (b, L)
    _, (first, second) = forward_layers(model, tokens, probs=True)
    weights = two_hop_weights(first, second, shift)  # (h2, h1)
    best = divmod(int(weights.argmax()), weights.shape[1])
    direct, peaks = [], []
    for probs in (first, second):
        distances, means = by_distance(probs.mean(0))  # (h, 2n - 1)
        direct.append(means[:, distances.index(shift)].tolist())
        peaks.append([distances[int(k)] for k in means.argmax(-1)])
    return {
        "two_hop": weights.tolist(),
        "two_hop_best": weights.max().item(),
        "best_pair": list(best),
        "offsets": hop_offsets(first, second, shift, best),
        "direct": direct,
        "direct_best": max(max(row) for row in direct),
        "peaks": peaks,
    }


def measure(config: Config) -> dict[str, Any]:
    """Train a two-layer model on a shift task; its paths and every arm's accuracy.

    The record: :func:`.common.run_record`'s fields, ``arms`` (``intact``
    at every test length, the ``CUTS`` up to ``CUT_LENGTHS * L``: accuracy per
    length) and ``paths`` (:func:`path_record`).

    Shapes:
        record: JSON-ready; ``paths`` as :func:`path_record`'s
    """
    task = get_task(config.task)
    if config.num_layers != 2 or task.kind != "shift" or config.scheme == "deberta-emd":
        raise ValueError(
            "config must have num_layers=2, a shift task (far) and a scheme other "
            f"than deberta-emd, got num_layers={config.num_layers}, task="
            f"{config.task!r} and scheme={config.scheme!r}"
        )
    seed = model_seed(config)
    trained = train(config, seed=seed)
    model = trained.model
    arms = arm_accuracies(model, config, {"intact": lambda n: None})
    for cut in CUTS:
        arms[cut] = {}
        for n in config.test_lengths:
            if n <= CUT_LENGTHS * config.train_length:
                tokens, labels = evaluation_set(config, n)  # (b, n) each
                found = path_cut_accuracy(model, config, tokens, labels, cut)
                arms[cut][str(n)] = found
    return {
        **run_record(config, trained, seed),
        "arms": arms,
        "paths": path_record(model, config),
    }


def comparisons(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each cut against ``intact``, per scheme and test length.

    Shapes:
        records: one per cell and seed; output: one dict per comparison
    """
    found = []
    schemes = list(dict.fromkeys(r["scheme"] for r in records))
    lengths = sorted({int(n) for r in records for n in r["arms"][CUTS[0]]})
    for scheme in schemes:
        where = {"scheme": scheme}
        for n in lengths:
            intact = arm(f"{scheme} intact, n = {n}", where, "intact", n)
            for cut in CUTS:
                found.append(
                    paired(
                        records,
                        f"{scheme}: {cut} - intact, n = {n}",
                        arm(f"{scheme} {cut}, n = {n}", where, cut, n),
                        intact,
                    )
                )
    return found


__all__ = [
    "CHANGE",
    "CLAIM",
    "CUTS",
    "comparisons",
    "cut_masks",
    "path_cut_accuracy",
    "hop_offsets",
    "measure",
    "path_record",
    "two_hop_weights",
]
