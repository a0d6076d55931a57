"""The trained verdicts of chapter 10, one rule each.

The sweeps: ``sweep.json`` (the encoders of chapter 9), ``sweep_ablation.json``
(parts of DeBERTa removed in turn), ``sweep_band.json`` (the table's start),
``sweep_layers.json`` (two layers on ``far``) and ``sweep_causal.json`` (causal
decoders). Bounds are the proved ones of ``equivariance`` and
``shared_entries``; the two claims of chapter 1 judged here as one thing for
relative positions use ``ledger.relative_verdict``.
"""

from __future__ import annotations

import statistics
from typing import Any

import torch

from relpos import schemes

from ...results.ledger import RELATIVE_SCHEMES, relative_verdict
from ..equivariance import permutation_bound, reversal_bound
from ..shared_entries import entry_functions, shared_distances, shared_entry_bound
from .chapter9 import entry_bound, length_of
from .rules import (
    ABOVE_CHANCE,
    FIT,
    FLAT,
    SOLVED,
    Sweeps,
    combine,
    every,
    make_record,
    percent,
    rule,
    separation,
    under_bound,
)

SWEEP = "sweep.json"
ABLATION = "sweep_ablation.json"
BAND = "sweep_band.json"
LAYERS = "sweep_layers.json"
CAUSAL = "sweep_causal.json"
CHAPTER = 10
#: The DeBERTa schemes of the encoder sweep.
DEBERTA = ("deberta", "deberta-buckets", "deberta-emd")
#: The schemes of the published causal studies (Kazemnejad et al. 2023).
PUBLISHED = ("none", "absolute", "t5", "alibi", "rotary")
#: Two band profiles this close at offset 1 are the same band.
BAND_SAME = 0.05
#: The samples of the Monte Carlo bound of a model with no positions.
BOUND_SAMPLES = 20_000


def _relative_schemes(s: Sweeps, name: str) -> list[str]:
    return [x for x in RELATIVE_SCHEMES if x in s(name)["grid"]["scheme"]]


def _fewest(s: Sweeps, scheme: str) -> float:
    """The fewest sequences reaching FIT on `relative` (infinity: never)."""
    found = s.fewest(SWEEP, "relative", scheme)
    return float("inf") if found is None else found


@rule
def encoder_bounds(s: Sweeps) -> dict[str, Any]:
    """``encoder-bounds``: the permutation and reversal bounds at L."""
    short = s.train_length(SWEEP)
    kept, parts = True, []
    for task in s(SWEEP)["grid"]["task"]:
        bounds = {
            "none": float(permutation_bound(task, short, samples=BOUND_SAMPLES,
                                            seed=0)),
            "alibi": reversal_bound(task, short),
        }
        for scheme, bound in bounds.items():
            values = s.values(SWEEP, task, scheme, short)
            kept &= under_bound(values, bound, s.labels(SWEEP, task, short))
            parts.append(f"{task} {scheme} best seed {percent(max(values))} "
                         f"(bound {percent(bound)})")
    return make_record(
        "encoder-bounds", CHAPTER,
        "In an encoder, no positions (permutation equivariance) and bidirectional "
        "ALiBi (reversal equivariance) keep every seed under their proved bounds "
        "on every task at L.",
        "holds" if kept else "fails",
        "; ".join(parts) + ". Neither scheme can represent these tasks; what they "
        "score keeps to what the symmetry allows (a seed may pass a bound by the "
        "test set's noise, three binomial standard errors).",
        (SWEEP, ["summary"]),
        s.values(SWEEP, "relative", "alibi", short),
    )


@rule
def emd_absolute(s: Sweeps) -> dict[str, Any]:
    """``emd-absolute``: the decoder on ``absolute`` at L and on ``relative``."""
    sizes = sorted(s(SWEEP)["grid"]["train_size"])
    at = {z: s.mean(SWEEP, "absolute", "deberta-emd", size=z) for z in sizes}
    solves = at[max(sizes)] >= SOLVED and s.mean(SWEEP, "absolute", "deberta") < FIT
    keeps = length_of(s, "deberta-emd") == "holds"
    return make_record(
        "emd-absolute", CHAPTER,
        "DeBERTa's enhanced mask decoder (`deberta-emd`) solves `absolute` at L, "
        "which `deberta` cannot, and keeps `deberta`'s accuracy on `relative` at "
        "every length.",
        "holds" if solves and keeps else ("qualified" if solves or keeps else "fails"),
        "On `absolute` at L by training sequences: "
        + ", ".join(f"{z}: {percent(v)}" for z, v in at.items())
        + f"; deberta {percent(s.mean(SWEEP, 'absolute', 'deberta'))}. Absolute "
        "positions enter only the last layer's queries.",
        (SWEEP, ["summary"]),
        s.values(SWEEP, "absolute", "deberta-emd"),
    )


@rule
def emd_absolute_beyond_l(s: Sweeps) -> dict[str, Any]:
    """``emd-absolute-beyond-l``: the length rule on ``absolute``."""
    short, long = s.train_length(SWEEP), s.longest(SWEEP)
    lengths = [n for n in s(SWEEP)["config"]["test_lengths"] if n > short]
    rows = {x: ", ".join(percent(s.mean(SWEEP, "absolute", x, n)) for n in lengths)
            for x in ("deberta-emd", "absolute")}
    return make_record(
        "emd-absolute-beyond-l", CHAPTER,
        "Beyond L, `deberta-emd` keeps the `absolute` task.",
        length_of(s, "deberta-emd", "absolute"),
        f"Beyond L: deberta-emd {rows['deberta-emd']}; the learned absolute table "
        f"{rows['absolute']}. Its absolute rows past L never trained, as the "
        "absolute table's did not.",
        (SWEEP, ["summary", "coverage"]),
        s.values(SWEEP, "absolute", "deberta-emd", long),
    )


@rule
def encoder_data_deberta(s: Sweeps) -> dict[str, Any]:
    """``encoder-data-deberta``: the DeBERTa schemes' fewest sequences."""
    fewest = {x: _fewest(s, x) for x in s(SWEEP)["grid"]["scheme"]}
    others = [v for x, v in fewest.items() if x not in DEBERTA]
    fewer = max(fewest[x] for x in DEBERTA) < min(others)
    named = ", ".join(f"{x} {v:g}" for x, v in fewest.items())
    least = min(s(SWEEP)["grid"]["train_size"])
    return make_record(
        "encoder-data-deberta", CHAPTER,
        "The DeBERTa schemes learn `relative` at L from fewer training sequences "
        "than every other scheme.",
        "holds" if fewer else "fails",
        f"Fewest sequences reaching a mean of {percent(FIT)} at L: {named} (inf: "
        "none of the sizes).",
        (SWEEP, ["summary"]),
        s.values(SWEEP, "relative", "deberta", size=least),
    )


@rule
def generalisation_data(s: Sweeps) -> dict[str, Any]:
    """``generalisation-data``: chapter 1's first claim, relative schemes as one."""
    relative = _relative_schemes(s, SWEEP)
    baseline = _fewest(s, "absolute")
    passed = {x: _fewest(s, x) < baseline for x in relative}
    least = min(s(SWEEP)["grid"]["train_size"])
    return make_record(
        "generalisation-data", CHAPTER,
        "Relative positions save data: every relative scheme learns `relative` at L "
        "from fewer training sequences than the learned absolute table.",
        relative_verdict(passed),
        f"Fewer than absolute ({baseline:g}): "
        f"{', '.join(x for x in relative if passed[x]) or 'none'}; not: "
        f"{', '.join(x for x in relative if not passed[x]) or 'none'}.",
        (SWEEP, ["summary"]),
        s.values(SWEEP, "relative", "deberta", size=least),
    )


@rule
def ablation_c2p(s: Sweeps) -> dict[str, Any]:
    """``ablation-c2p``: c2p alone and p2c alone, seed by seed, with 8 sequences."""
    size = min(s(ABLATION)["grid"]["train_size"])
    c2p = s.values(ABLATION, "relative", "deberta-c2p", size=size)
    p2c = s.values(ABLATION, "relative", "deberta-p2c", size=size)
    fits = sum(v >= FIT for v in p2c)
    if min(c2p) < FIT or fits == len(p2c):
        verdict = "fails"
    else:
        verdict = "holds" if fits == 0 else "qualified"
    keys = s.values(ABLATION, "relative", "shaw-keys", size=size)
    return make_record(
        "ablation-c2p", CHAPTER,
        f"c2p is what saves the data: with {size} training sequences `deberta` learns "
        "`relative` because of its c2p term.",
        verdict,
        f"With {size} sequences, seed by seed: c2p alone {percent(c2p)}; p2c alone "
        f"{percent(p2c)} ({fits} of {len(p2c)} seeds reach {percent(FIT)}). The "
        "ablation shows what the advantage does not need, not what causes it. "
        f"Shaw's keys ({percent(keys)}) stay below: "
        f"{separation(c2p, keys)} for c2p against them. What separates the two (a "
        "model-wide table through the key projection, against a head-wide vector "
        "added to each key) was not isolated.",
        (ABLATION, ["summary"]),
        p2c,
        intervention="Each part of deberta removed in turn: deberta-c2p, deberta-p2c, "
        "deberta-no-norm, deberta-separate-keys; Shaw with and without its values.",
    )


@rule
def ablation_shaw_values(s: Sweeps) -> dict[str, Any]:
    """``ablation-shaw-values``: Shaw without its values against Shaw."""
    size = min(s(ABLATION)["grid"]["train_size"])
    keys = s.values(ABLATION, "relative", "shaw-keys", size=size)
    shaw = s.values(ABLATION, "relative", "shaw", size=size)
    return make_record(
        "ablation-shaw-values", CHAPTER,
        f"Shaw's relative values hurt with {size} training sequences: `shaw-keys`, "
        "without them, learns `relative` better than `shaw` in every seed.",
        separation(keys, shaw),
        f"With {size} sequences: shaw-keys {percent(keys)}, shaw {percent(shaw)} "
        "(means " + f"{percent(statistics.fmean(keys))} and "
        f"{percent(statistics.fmean(shaw))}).",
        (ABLATION, ["summary"]),
        keys,
        intervention="shaw-keys: Shaw's scheme with its relative values removed.",
    )


def _band(s: Sweeps, task: str, scheme: str, size: int) -> dict[str, list[float]]:
    runs = [r for r in s(BAND)["runs"]
            if (r["task"], r["scheme"], r["train_size"]) == (task, scheme, size)]
    return {
        "initial": [r["band"]["initial"][1] for r in runs],
        "trained": [r["band"]["trained"][1] for r in runs],
    }


@rule
def band_sinusoidal_start(s: Sweeps) -> dict[str, Any]:
    """``band-sinusoidal-start``: the trained band from both starts."""
    sizes = sorted(s(BAND)["grid"]["train_size"])
    same, no_help, parts = True, True, []
    for task in s(BAND)["grid"]["task"]:
        random_ = _band(s, task, "deberta", max(sizes))
        sines = _band(s, task, "deberta-sinusoidal", max(sizes))
        after = (
            statistics.fmean(random_["trained"]), statistics.fmean(sines["trained"])
        )
        same &= abs(after[0] - after[1]) < BAND_SAME
        gain = (s.mean(BAND, task, "deberta-sinusoidal", size=min(sizes))
                - s.mean(BAND, task, "deberta", size=min(sizes)))
        no_help &= gain <= FLAT
        parts.append(
            f"{task}: rows 1 apart {statistics.fmean(random_['initial']):.2f} -> "
            f"{after[0]:.2f} from a random start, "
            f"{statistics.fmean(sines['initial']):.2f} -> {after[1]:.2f} from "
            f"sinusoids; accuracy gain of the sinusoidal start with {min(sizes)} "
            f"sequences {round(100 * gain, 1) + 0.0:+.1f} points"
        )
    verdict = "fails" if same and no_help else ("holds" if not same else "qualified")
    return make_record(
        "band-sinusoidal-start", CHAPTER,
        "A band of similar rows in DeBERTa's table emerges from a sinusoidal "
        "initialisation and persists through training.",
        verdict,
        "; ".join(parts) + ". Training makes the band, from either start.",
        (BAND, ["runs", "summary"]),
        _band(s, "window", "deberta", max(sizes))["trained"],
        intervention="deberta-sinusoidal: the table starts as the sinusoids of its "
        "distances, scaled to the random table's size; nothing else changes.",
    )


@rule
def length_flexibility(s: Sweeps) -> dict[str, Any]:
    """``length-flexibility``: chapter 1's length claim, relative schemes as one."""
    long = s.longest(SWEEP)
    relative = _relative_schemes(s, SWEEP)
    verdicts = {x: length_of(s, x) for x in relative}
    passed = {x: v != "fails" for x, v in verdicts.items()}
    return make_record(
        "length-flexibility", CHAPTER,
        "A relative scheme trained at L keeps its accuracy on `relative` to "
        f"{long // s.train_length(SWEEP)}L (encoder).",
        relative_verdict(passed),
        "Per scheme: " + ", ".join(f"{x} {v}" for x, v in verdicts.items())
        + ". The mechanisms: records encoder-relative-*.",
        (SWEEP, ["summary"]),
        s.values(SWEEP, "relative", "deberta", long),
    )


@rule
def layers_t5(s: Sweeps) -> dict[str, Any]:
    """``layers-t5``: T5 on ``far`` with two layers against one."""
    short = s.train_length(LAYERS)
    two = s.values(LAYERS, "far", "t5", short)
    one = s.values(SWEEP, "far", "t5", short)
    verdict = separation(two, one) if statistics.fmean(two) >= FIT else "fails"
    return make_record(
        "layers-t5", CHAPTER,
        "With a second layer, T5 learns `far` at L (one layer cannot).",
        verdict,
        f"At L: two layers {percent(two)}, one layer {percent(one)}; two layers at "
        f"{s.longest(LAYERS) // short}L: "
        f"{percent(s.mean(LAYERS, 'far', 't5', s.longest(LAYERS)))}. How (record "
        "two-hop-path) is not measured.",
        (LAYERS, ["summary"]),
        two,
    )


@rule
def layers_deberta(s: Sweeps) -> dict[str, Any]:
    """``layers-deberta``: the seeds of two-layer ``deberta`` that learn ``far``."""
    short = s.train_length(LAYERS)
    two = s.values(LAYERS, "far", "deberta", short)
    fits = sum(v >= FIT for v in two)
    verdict = every([v >= FIT for v in two])
    return make_record(
        "layers-deberta", CHAPTER,
        "With a second layer, `deberta` learns `far` at L.",
        verdict,
        f"Two layers at L: {percent(two)} ({fits} of {len(two)} seeds reach "
        f"{percent(FIT)}); at 2L: "
        f"{percent(s.mean(LAYERS, 'far', 'deberta', 2 * short))}.",
        (LAYERS, ["summary"]),
        two,
    )


@rule
def two_hop_path(s: Sweeps) -> dict[str, Any]:
    """``two-hop-path``: the composition, inferred and never measured."""
    short = s.train_length(LAYERS)
    return make_record(
        "two-hop-path", CHAPTER,
        "A second layer reaches distance 12 through a window by two hops (a key 7 "
        "back whose first-layer output holds the token 5 further back).",
        "untested",
        "Inferred from accuracy alone (T5 "
        f"{percent(s.mean(LAYERS, 'far', 't5', short))} at L with two layers): the "
        "sweep never measures the attention path through the two layers; chapter 12 "
        "measures it and cuts it on the trained weights (record "
        "intervention-two-hop).",
        (LAYERS, ["summary"]),
        s.values(LAYERS, "far", "t5", short),
    )


@rule
def layers_rotary(s: Sweeps) -> dict[str, Any]:
    """``layers-rotary``: rotary at 2L with two layers against one."""
    at = 2 * s.train_length(LAYERS)
    one = s.values(SWEEP, "far", "rotary", at)
    two = s.values(LAYERS, "far", "rotary", at)
    return make_record(
        "layers-rotary", CHAPTER,
        "With two layers rotary embeddings keep less of `far` at 2L than with one.",
        separation(one, two),
        f"At 2L: one layer {percent(one)}, two layers {percent(two)}.",
        (LAYERS, ["summary"]),
        two,
    )


@rule
def causal_t5_relative(s: Sweeps) -> dict[str, Any]:
    """``causal-t5-relative``: causal T5's seeds against the encoder's."""
    long = s.longest(CAUSAL)
    causal = s.values(CAUSAL, "relative", "t5", long)
    encoder = s.values(SWEEP, "relative", "t5", long)
    lengths = s(CAUSAL)["config"]["test_lengths"]
    return make_record(
        "causal-t5-relative", CHAPTER,
        "A causal mask lets T5 keep `relative` beyond L: at "
        f"{long // s.train_length(CAUSAL)}L every causal seed beats every encoder "
        "seed.",
        separation(causal, encoder),
        "Causal mean from L: "
        + ", ".join(percent(s.mean(CAUSAL, "relative", "t5", n)) for n in lengths)
        + f"; encoder at the longest: {percent(encoder)}. Why is not isolated "
        "(record causal-t5-why).",
        (CAUSAL, ["summary"]),
        causal,
    )


@rule
def causal_t5_why(s: Sweeps) -> dict[str, Any]:
    """``causal-t5-why``: the two candidate causes, neither isolated."""
    config = s(CAUSAL)["config"]
    buckets = 2 * config["position_buckets"]
    behind = torch.arange(0, config["train_length"])  # (L,)
    causal = entry_functions(config, causal=True)["t5"](behind)  # (L,)
    encoder = entry_functions(config)["t5"](behind)  # (L,)
    return make_record(
        "causal-t5-why", CHAPTER,
        "Causal T5 holds `relative` because all its buckets lie behind the query, "
        "twice the resolution of the two-sided buckets.",
        "untested",
        f"Behind the query the causal model has {causal.unique().numel()} of its "
        f"{buckets} buckets, the encoder {encoder.unique().numel()}; but a causal "
        "query also competes with the keys behind it only, about half as many. "
        "The sweep measures neither the causal bias gap nor the number of competing "
        "keys; chapter 12 measures both and cuts the encoder's keys to the causal "
        "query's (record intervention-causal-t5).",
        (CAUSAL, ["summary", "config"]),
        s.values(CAUSAL, "relative", "t5", s.longest(CAUSAL)),
    )


@rule
def causal_rotary_far(s: Sweeps) -> dict[str, Any]:
    """``causal-rotary-far``: causal rotary's seeds against the encoder's."""
    long = s.longest(CAUSAL)
    causal = s.values(CAUSAL, "far", "rotary", long)
    encoder = s.values(SWEEP, "far", "rotary", long)
    return make_record(
        "causal-rotary-far", CHAPTER,
        "A causal mask lets rotary embeddings keep more of `far` beyond L: at "
        f"{long // s.train_length(CAUSAL)}L every causal seed beats every encoder "
        "seed.",
        separation(causal, encoder),
        f"At the longest length: causal {percent(causal)}, encoder {percent(encoder)}.",
        (CAUSAL, ["summary"]),
        causal,
    )


@rule
def causal_rotary_absolute(s: Sweeps) -> dict[str, Any]:
    """``causal-rotary-absolute``: the length rule on both, causal."""
    short, long = s.train_length(CAUSAL), s.longest(CAUSAL)
    lengths = s(CAUSAL)["config"]["test_lengths"]
    group = ("rotary", "absolute")
    rows = "; ".join(
        f"{x} " + ", ".join(percent(s.mean(CAUSAL, "relative", x, n)) for n in lengths)
        for x in group
    )
    return make_record(
        "causal-rotary-absolute", CHAPTER,
        "In a causal decoder, rotary embeddings and the learned absolute table hold "
        f"`relative` from L to {long // short}L.",
        combine([length_of(s, x, name=CAUSAL) for x in group]),
        f"Mean from L: {rows}.",
        (CAUSAL, ["summary"]),
        s.values(CAUSAL, "relative", "rotary", long),
    )


@rule
def causal_none_counts(s: Sweeps) -> dict[str, Any]:
    """``causal-none-counts``: ``none`` on ``absolute`` at L and at the end."""
    short, long = s.train_length(CAUSAL), s.longest(CAUSAL)
    chance = s(CAUSAL)["tasks"]["absolute"]["chance"]
    at_l = s.values(CAUSAL, "absolute", "none", short)
    at_long = s.mean(CAUSAL, "absolute", "none", long)
    counts = min(at_l) > chance + ABOVE_CHANCE and at_long <= chance + FLAT
    return make_record(
        "causal-none-counts", CHAPTER,
        "A causal decoder without positions learns `absolute` near the start of a "
        "sequence only: above chance at L, at chance by the longest length.",
        "holds" if counts else "fails",
        f"At L: {percent(at_l)}; at {long // short}L: {percent(at_long)} (chance "
        f"{percent(chance)}). Under uniform attention the spread of the average of "
        "i + 1 keys falls like 1 / (i + 1): a position signal, sharp only near the "
        "start.",
        (CAUSAL, ["summary"]),
        at_l,
    )


@rule
def causal_none_bound(s: Sweeps) -> dict[str, Any]:
    """``causal-none-bound``: the causal bag bound at every length."""
    if s(CAUSAL)["config"]["num_layers"] != 1:
        raise ValueError(f"{CAUSAL}: the causal bag bound holds for one layer")
    lengths = s(CAUSAL)["config"]["test_lengths"]
    target = s(CAUSAL)["tasks"]["relative"]["param"]
    kept, parts = True, []
    for n in lengths:
        bag = shared_distances(torch.zeros_like, target, n, causal=True)
        bound = shared_entry_bound("relative", n, bag)
        values = s.values(CAUSAL, "relative", "none", n)
        kept &= under_bound(values, bound, s.labels(CAUSAL, "relative", n))
        parts.append(f"n = {n}: {100 * statistics.fmean(values):.1f}% "
                     f"(bound {100 * bound:.1f}%)")
    return make_record(
        "causal-none-bound", CHAPTER,
        "A one-layer causal decoder without positions stays under its proved bound "
        "on `relative` at every length, in every seed.",
        "holds" if kept else "fails",
        "; ".join(parts) + ". Query i sees its token and the bag of the i tokens "
        "before it, one of which is the answer; it can do no better than name the "
        "commonest (shared_entry_bound with every earlier key sharing one entry).",
        (CAUSAL, ["summary", "config"]),
        s.values(CAUSAL, "relative", "none", max(lengths)),
    )


@rule
def causal_alibi_flat(s: Sweeps) -> dict[str, Any]:
    """``causal-alibi-flat``: ALiBi's curve on ``relative``, and its slopes."""
    config = s(CAUSAL)["config"]
    lengths = config["test_lengths"]
    means = [s.mean(CAUSAL, "relative", "alibi", n) for n in lengths]
    flat = max(abs(m - means[0]) for m in means) <= FLAT and means[0] < FIT
    slopes = schemes.alibi_slopes(config["num_heads"], dtype=torch.float64)
    written = ", ".join(f"1/{round(1 / float(m))}" for m in slopes)
    return make_record(
        "causal-alibi-flat", CHAPTER,
        f"One-layer causal ALiBi, with its {config['num_heads']} fixed slopes, keeps "
        "its accuracy on `relative` at every length but does not learn the rule.",
        "holds" if flat else "fails",
        f"Mean from L: {', '.join(percent(m) for m in means)}; slopes {written}. "
        "Among keys of equal content the nearest wins. Whether steeper slopes, or a "
        "second layer, learn the rule was not tested, so the result says nothing "
        "about ALiBi beyond this setting.",
        (CAUSAL, ["summary", "config"]),
        s.values(CAUSAL, "relative", "alibi", max(lengths)),
    )


@rule
def causal_clipped(s: Sweeps) -> dict[str, Any]:
    """``causal-clipped``: the length rule and the shared-entry bound, causal."""
    lengths = s(CAUSAL)["config"]["test_lengths"]
    group = ("deberta", "shaw")
    relative = combine([length_of(s, x, name=CAUSAL) for x in group])
    blind = all(
        under_bound(s.values(CAUSAL, "far", x, n), entry_bound(s, CAUSAL, x, "far", n),
                    s.labels(CAUSAL, "far", n))
        for x in group for n in lengths
    )
    return make_record(
        "causal-clipped", CHAPTER,
        "In a causal decoder the clipped tables hold `relative` at every length and "
        "stay under the shared-entry bound on `far`.",
        relative if blind else "fails",
        "Worst seed on relative at the longest length: "
        + ", ".join(f"{x} {percent(min(s.values(CAUSAL, 'relative', x, max(lengths))))}"
                    for x in group)
        + "; on far at L: "
        + ", ".join(f"{x} {percent(s.mean(CAUSAL, 'far', x))} (bound "
                    f"{percent(entry_bound(s, CAUSAL, x, 'far', lengths[0]))})"
                    for x in group) + ".",
        (CAUSAL, ["summary", "config"]),
        s.values(CAUSAL, "relative", "deberta", max(lengths)),
    )


def _best_published(s: Sweeps, task: str) -> str:
    long = s.longest(CAUSAL)
    return max(PUBLISHED, key=lambda x: s.mean(CAUSAL, task, x, long))


def _shift_tasks(s: Sweeps) -> list[str]:
    tasks = s(CAUSAL)["tasks"]
    return [t for t in s(CAUSAL)["grid"]["task"] if tasks[t]["kind"] == "shift"]


@rule
def causal_t5_best(s: Sweeps) -> dict[str, Any]:
    """``causal-t5-best``: the best published scheme at the end, per task."""
    long = s.longest(CAUSAL)
    best = {t: _best_published(s, t) for t in _shift_tasks(s)}
    verdict = every([x == "t5" for x in best.values()])
    return make_record(
        "causal-t5-best", CHAPTER,
        "Of the schemes of the published causal studies, T5 generalises best: the "
        f"highest mean at {long // s.train_length(CAUSAL)}L on every shift task.",
        verdict,
        "; ".join(f"{t}: t5 {percent(s.mean(CAUSAL, t, 't5', long))}"
                  + ("" if x == "t5" else
                     f", best {x} {percent(s.mean(CAUSAL, t, x, long))}")
                  for t, x in best.items()) + ".",
        (CAUSAL, ["summary"]),
        s.values(CAUSAL, "relative", "t5", long),
    )


@rule
def causal_t5_far_bound(s: Sweeps) -> dict[str, Any]:
    """``causal-t5-far-bound``: the bound of T5's causal bucket of 12."""
    lengths = s(CAUSAL)["config"]["test_lengths"]
    target = s(CAUSAL)["tasks"]["far"]["param"]
    entry_of = entry_functions(s(CAUSAL)["config"], causal=True)["t5"]
    shared = shared_distances(entry_of, target, lengths[0], causal=True)
    bounds = {n: entry_bound(s, CAUSAL, "t5", "far", n) for n in lengths}
    kept = all(under_bound(s.values(CAUSAL, "far", "t5", n), bounds[n],
                           s.labels(CAUSAL, "far", n)) for n in lengths)
    return make_record(
        "causal-t5-far-bound", CHAPTER,
        "One-layer causal T5 cannot single out distance 12 on `far`: it shares a "
        "bucket, and each seed stays under the bound that sets.",
        "holds" if kept else "fails",
        f"Distances in distance {target}'s causal bucket: {shared}; bound at L "
        f"{percent(bounds[lengths[0]])}, mean {percent(s.mean(CAUSAL, 'far', 't5'))}.",
        (CAUSAL, ["summary", "config"]),
        s.values(CAUSAL, "far", "t5"),
    )


@rule
def causal_none_best(s: Sweeps) -> dict[str, Any]:
    """``causal-none-best``: where ``none`` ranks among the published schemes."""
    long = s.longest(CAUSAL)
    config = s(CAUSAL)["config"]
    def rank(task: str) -> int:
        order = sorted(PUBLISHED, key=lambda x: -s.mean(CAUSAL, task, x, long))
        return 1 + order.index("none")

    ranks = {t: rank(t) for t in _shift_tasks(s)}
    verdict = every([r == 1 for r in ranks.values()])
    return make_record(
        "causal-none-best", CHAPTER,
        "A causal decoder without positions generalises best of the published "
        "schemes, as NoPE does in Kazemnejad et al. (2023).",
        verdict,
        "Rank of none at the longest length among "
        f"{len(PUBLISHED)}: " + ", ".join(f"{t} {r}" for t, r in ranks.items())
        + f". Here: {config['num_layers']} layer of width {config['hidden_size']}, "
        f"per-token accuracy to {long // config['train_length']}L; the paper: "
        "decoders of about 107M parameters, exact-match accuracy to about 2L, "
        "its absolute encoding sinusoidal.",
        (CAUSAL, ["summary", "config"]),
        s.values(CAUSAL, "relative", "none", long),
    )


__all__ = ["BAND_SAME", "BOUND_SAMPLES", "DEBERTA", "PUBLISHED"]
