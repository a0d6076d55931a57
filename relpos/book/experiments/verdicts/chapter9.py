"""The trained verdicts of chapter 9 (the encoder sweep, ``sweep.json``), one rule each.

Every rule reads the sweep through :class:`~.rules.Sweeps` and returns one
record; the subjects (which schemes a claim is about) are the chapter's, the
verdicts and numbers the sweep's. Length claims use
:func:`~.rules.length_verdict` on ``relative`` with the largest training set,
from ``L`` to the longest test length; data claims the fewest sequences that
reach :data:`~.rules.FIT` at ``L``; bounds :func:`~.rules.under_bound`.
Mechanisms that were only ever correlated with a verdict have records of their
own with the verdict ``untested`` and the reason.
"""

from __future__ import annotations

import statistics
from typing import Any

from ..schemes import SinusoidalPositions
from ..shared_entries import entry_functions, shared_distances, shared_entry_bound
from .rules import (
    ABOVE_CHANCE,
    FALL,
    FIT,
    FLAT,
    SOLVED,
    Sweeps,
    combine,
    length_verdict,
    make_record,
    percent,
    rule,
    separation,
    under_bound,
)

SWEEP = "sweep.json"
VALUES = "sweep_values.json"
CHAPTER = 9
#: The tables clipped at ``k`` (and DeBERTa with its decoder), read against content.
CLIPPED = ("deberta", "shaw", "deberta-emd")
#: The relative schemes whose entries all train and which still fall.
ALL_TRAINED = ("t5", "rotary", "transformer_xl")
#: The schemes that read absolute positions.
ABSOLUTE_READERS = ("absolute", "sinusoidal", "deberta-emd")
#: The schemes that read distance 12 through an entry shared with other distances.
WINDOWED = ("deberta", "shaw", "deberta-buckets", "t5")
#: The schemes that clip nothing.
UNCLIPPED = ("absolute", "sinusoidal", "rotary", "transformer_xl")


def _span(s: Sweeps, name: str = SWEEP) -> tuple[int, int, str]:
    """``L``, the longest length and its name (``"8L"``)."""
    short, long = s.train_length(name), s.longest(name)
    return short, long, f"{long // short}L"


def first_untrained(s: Sweeps, name: str, task: str, scheme: str) -> int | None:
    """The first test length at which the scheme reads an untrained entry."""
    lengths = s(name)["config"]["test_lengths"]
    return next((n for n in lengths if s.untrained(name, task, scheme, n) > 0), None)


def length_of(s: Sweeps, scheme: str, task: str = "relative",
              name: str = SWEEP) -> str:
    """:func:`length_verdict` of one scheme from ``L`` to the longest length."""
    short, long, _ = _span(s, name)
    return length_verdict(s.values(name, task, scheme, short),
                          s.values(name, task, scheme, long))


def weakest(s: Sweeps, name: str, task: str, group: tuple[str, ...],
            n: int) -> list[float]:
    """The per-seed values of the scheme of ``group`` with the lowest mean at ``n``.

    Shapes:
        output: ``(seeds,)``
    """
    scheme = min(group, key=lambda x: s.mean(name, task, x, n))
    return s.values(name, task, scheme, n)


def entry_bound(s: Sweeps, name: str, scheme: str, task: str, n: int) -> float:
    """The shared-entry bound of a one-layer windowed scheme of sweep ``name``."""
    result = s(name)
    if result["config"]["num_layers"] != 1:
        raise ValueError(f"{name}: the shared-entry bound holds for one layer, the "
                         f"sweep has {result['config']['num_layers']}")
    causal = result["grid"]["setting"][0] == "causal"
    entry_of = entry_functions(result["config"], causal)[scheme]
    target = result["tasks"][task]["param"]
    return shared_entry_bound(task, n, shared_distances(entry_of, target, n,
                                                        causal=causal))


@rule
def encoder_relative_clipped(s: Sweeps) -> dict[str, Any]:
    """``encoder-relative-clipped``: the length rule on each clipped table."""
    short, long, name = _span(s)
    lows = ", ".join(f"{x} {percent(min(s.values(SWEEP, 'relative', x, long)))}"
                     for x in CLIPPED)
    emd = first_untrained(s, SWEEP, "relative", "deberta-emd")
    clean = [x for x in CLIPPED if first_untrained(s, SWEEP, "relative", x) is None]
    return make_record(
        "encoder-relative-clipped", CHAPTER,
        f"In an encoder, the clipped tables `deberta` and `shaw`, and `deberta-emd`, "
        f"hold `relative` from L to {name} in every seed.",
        combine([length_of(s, x) for x in CLIPPED]),
        f"Worst seed at {name}: {lows}. {', '.join(clean)} read no untrained entry "
        f"at any length (coverage); deberta-emd reads untrained absolute rows from "
        f"n = {emd} and holds all the same. Their position logit is a vector read "
        "against the query's content.",
        (SWEEP, ["summary", "coverage"]),
        weakest(s, SWEEP, "relative", CLIPPED, long),
    )


@rule
def encoder_relative_buckets(s: Sweeps) -> dict[str, Any]:
    """``encoder-relative-buckets``: the length rule on the log buckets."""
    short, long, name = _span(s)
    at_l = s.values(SWEEP, "relative", "deberta-buckets", short)
    at_long = s.values(SWEEP, "relative", "deberta-buckets", long)
    drops = [a - b for a, b in zip(at_l, at_long)]
    first = first_untrained(s, SWEEP, "relative", "deberta-buckets")
    share = s.untrained(SWEEP, "relative", "deberta-buckets", long)
    return make_record(
        "encoder-relative-buckets", CHAPTER,
        f"In an encoder, `deberta-buckets` holds `relative` from L to {name}.",
        length_of(s, "deberta-buckets"),
        f"Loss at {name}: {100 * sum(drops) / len(drops):.0f} points in the mean, "
        f"{100 * max(drops):.0f} in the worst seed (a fall is more than "
        f"{100 * FALL:.0f}). It reads its untrained row 0 (keys far ahead) from "
        f"n = {first}, in {percent(share)} of the queries at {name}. That row 0 "
        "causes the loss is tested in chapter 12, row 0's reads redirected and "
        "masked on the trained weights (record intervention-row-0).",
        (SWEEP, ["summary", "coverage"]),
        at_long,
    )


@rule
def buckets_row_0(s: Sweeps) -> dict[str, Any]:
    """``buckets-row-0``: row 0 as the cause, a correlation until an intervention."""
    short, long, name = _span(s)
    first = first_untrained(s, SWEEP, "relative", "deberta-buckets")
    means = ", ".join(
        percent(s.mean(SWEEP, "relative", "deberta-buckets", n))
        for n in s(SWEEP)["config"]["test_lengths"]
    )
    return make_record(
        "buckets-row-0", CHAPTER,
        "`deberta-buckets` loses accuracy on `relative` beyond L because it reads its "
        "untrained row 0.",
        "untested",
        f"A correlation only: the mean ({means} from L to {name}) dips from n = "
        f"{first}, where coverage first finds row 0 read. The sweep neither trains "
        "row 0 nor masks its reads; chapter 12 redirects and masks them on the "
        "trained weights, the cause changed alone (record intervention-row-0).",
        (SWEEP, ["summary", "coverage"]),
        s.values(SWEEP, "relative", "deberta-buckets", long),
    )


@rule
def encoder_relative_absolute(s: Sweeps) -> dict[str, Any]:
    """``encoder-relative-absolute``: the length rule on the learned table."""
    short, long, name = _span(s)
    lengths = [n for n in s(SWEEP)["config"]["test_lengths"] if n > short]
    first = first_untrained(s, SWEEP, "relative", "absolute")
    share = s.untrained(SWEEP, "relative", "absolute", first)
    means = ", ".join(f"{percent(s.mean(SWEEP, 'relative', 'absolute', n))} "
                      f"(L/n {percent(short / n)})" for n in lengths)
    return make_record(
        "encoder-relative-absolute", CHAPTER,
        f"In an encoder, the learned absolute table holds `relative` from L to {name}.",
        length_of(s, "absolute"),
        f"Mean beyond L: {means}. From n = {first} it reads rows no training "
        f"sequence reached ({percent(share)} "
        "of the queries there), rows that never received a gradient; it is right "
        "on the first L positions only.",
        (SWEEP, ["summary", "coverage"]),
        s.values(SWEEP, "relative", "absolute", long),
    )


@rule
def encoder_relative_all_trained(s: Sweeps) -> dict[str, Any]:
    """``encoder-relative-all-trained``: the length rule on T5, rotary, XL."""
    short, long, name = _span(s)
    untrained = [x for x in ALL_TRAINED
                 if first_untrained(s, SWEEP, "relative", x) is not None]
    means = ", ".join(f"{x} {percent(s.mean(SWEEP, 'relative', x, long))}"
                      for x in ALL_TRAINED)
    return make_record(
        "encoder-relative-all-trained", CHAPTER,
        f"In an encoder, T5, rotary embeddings and Transformer-XL, whose every "
        f"learned entry is trained, hold `relative` from L to {name}.",
        combine([length_of(s, x) for x in ALL_TRAINED]),
        f"Mean at {name}: {means}. Untrained entries read: "
        f"{', '.join(untrained) or 'none'}. In chapter 9's live models (one seed "
        "each) their attention on the key 3 back thins as the keys multiply, and "
        "T5's one scalar per bucket predicts its share, e^g / (e^g + n - 1): a "
        "measured correlate, not an intervention.",
        (SWEEP, ["summary", "coverage"]),
        weakest(s, SWEEP, "relative", ALL_TRAINED, long),
    )


@rule
def coverage_rule(s: Sweeps) -> dict[str, Any]:
    """``coverage-rule``: coverage's prediction against each scheme's fall."""
    short, long, name = _span(s)
    learned = [x for x in s(SWEEP)["grid"]["scheme"]
               if s.mean(SWEEP, "relative", x) >= FIT]
    right, wrong = [], []
    for scheme in learned:
        predicts_fall = first_untrained(s, SWEEP, "relative", scheme) is not None
        falls = length_of(s, scheme) == "fails"
        (right if predicts_fall == falls else wrong).append(scheme)
    verdict = "holds" if not wrong else ("fails" if not right else "qualified")
    return make_record(
        "coverage-rule", CHAPTER,
        "A scheme keeps its accuracy at longer lengths when every learned entry it "
        "reads at test was trained (coverage), and loses it when not.",
        verdict,
        f"On `relative` ({len(learned)} schemes that learn it at L), coverage is "
        f"right about {', '.join(right)} and wrong about {', '.join(wrong)}: some "
        "fall with every learned entry trained, some read an untrained entry and "
        "hold. A necessary check, not a sufficient one.",
        (SWEEP, ["summary", "coverage"]),
        s.values(SWEEP, "relative", "deberta", long),
    )


@rule
def encoder_data_sinusoidal(s: Sweeps) -> dict[str, Any]:
    """``encoder-data-sinusoidal``: fewest sequences, sinusoids against a table."""
    sizes = s(SWEEP)["grid"]["train_size"]
    fewest = {x: s.fewest(SWEEP, "relative", x) for x in ("absolute", "sinusoidal")}
    at_absolute = fewest["absolute"] or max(sizes)
    more = (fewest["sinusoidal"] or float("inf")) > at_absolute
    return make_record(
        "encoder-data-sinusoidal", CHAPTER,
        "On `relative`, the sinusoidal features need more training sequences than "
        "the learned absolute table to reach a mean of 90% at L.",
        "holds" if more else "fails",
        f"Fewest sequences reaching {percent(FIT)}: absolute {fewest['absolute']}, "
        f"sinusoidal {fewest['sinusoidal']} ("
        f"{percent(s.mean(SWEEP, 'relative', 'sinusoidal', size=at_absolute))} "
        f"with {at_absolute}). Why is tested in chapter 12, the sinusoids given "
        "a learned scale and tuned (record intervention-sinusoid-tuned).",
        (SWEEP, ["summary"]),
        s.values(SWEEP, "relative", "sinusoidal", size=at_absolute),
    )


@rule
def sinusoid_scale(s: Sweeps) -> dict[str, Any]:
    """``sinusoid-scale``: similar rows as the cause, confounded with scale."""
    config = s(SWEEP)["config"]
    rows = SinusoidalPositions(config["hidden_size"])(config["train_length"])  # (L, h)
    unit = rows / rows.norm(dim=-1, keepdim=True)
    apart = float((unit[:-1] * unit[1:]).sum(-1).mean())
    rms = float(rows.pow(2).mean().sqrt())
    at = s.fewest(SWEEP, "relative", "absolute") or max(s(SWEEP)["grid"]["train_size"])
    return make_record(
        "sinusoid-scale", CHAPTER,
        "The sinusoidal features need more data for `relative` because neighbouring "
        "rows are nearly the same vector.",
        "untested",
        f"Neighbouring sinusoidal rows have a cosine of {apart:.2f}, while a learned "
        "table's rows start nearly orthogonal. But the sinusoids stay at a root "
        f"mean square of {rms:.3f}, a learned row's size at initialisation, while "
        "learned rows grow in training: scale is confounded with similarity. The "
        "sweep cannot separate them; chapter 12 gives the sinusoids a learned scale "
        "and nothing else (records intervention-sinusoid-scale and "
        "intervention-sinusoid-tuned).",
        (SWEEP, ["summary"]),
        s.values(SWEEP, "relative", "sinusoidal", size=at),
    )


@rule
def encoder_absolute_task(s: Sweeps) -> dict[str, Any]:
    """``encoder-absolute-task``: which schemes solve ``absolute``, and past L."""
    short, long, name = _span(s)
    solved = {x for x in s(SWEEP)["grid"]["scheme"]
              if s.mean(SWEEP, "absolute", x) >= SOLVED}
    kept = {x for x in solved if s.mean(SWEEP, "absolute", x, 2 * short) >= SOLVED}
    holds = solved == set(ABSOLUTE_READERS) and kept == {"sinusoidal"}
    best_relative = max(
        (x for x in s(SWEEP)["grid"]["scheme"] if x not in ABSOLUTE_READERS),
        key=lambda x: s.mean(SWEEP, "absolute", x),
    )
    return make_record(
        "encoder-absolute-task", CHAPTER,
        "On `absolute` (the position mod 4), only the schemes that read absolute "
        "positions solve the task at L, and beyond L only the sinusoids keep it, "
        "to 2L.",
        "holds" if holds else "fails",
        f"Solved at L: {', '.join(sorted(solved))}; kept at 2L: "
        f"{', '.join(sorted(kept)) or 'none'}. Best of the others at L: "
        f"{best_relative} {percent(s.mean(SWEEP, 'absolute', best_relative))}. "
        "A rule about where a token is cannot be stated in distances; the learned "
        "rows past L never trained.",
        (SWEEP, ["summary"]),
        s.values(SWEEP, "absolute", "sinusoidal", 2 * short),
    )


@rule
def shaw_values_position(s: Sweeps) -> dict[str, Any]:
    """``shaw-values-position``: Shaw with and without its values on ``absolute``."""
    short, long, name = _span(s, VALUES)
    chance = s(VALUES)["tasks"]["absolute"]["chance"]
    with_values = s.values(VALUES, "absolute", "shaw", short)
    without = s.values(VALUES, "absolute", "shaw-keys", short)
    at_long = s.mean(VALUES, "absolute", "shaw", long)
    signal = separation(with_values, without)
    gone = (
        min(with_values) > chance + ABOVE_CHANCE
        and abs(at_long - chance) <= FLAT
        and abs(statistics.fmean(without) - chance) <= ABOVE_CHANCE
    )
    return make_record(
        "shaw-values-position", CHAPTER,
        "Shaw's relative values give a position signal valid at one length: with "
        "them `shaw` scores above chance on `absolute` at L and at chance by the "
        "longest length; without them (`shaw-keys`) it is at chance.",
        signal if gone else "fails",
        f"At L: shaw {percent(with_values)}, shaw-keys {percent(without)} (chance "
        f"{percent(chance)}); shaw at {name}: {percent(at_long)}. The weight on the "
        "two edge rows' value vectors changes with the query's place in a sequence "
        "of known length.",
        (VALUES, ["summary"]),
        with_values,
        intervention="shaw-keys: the same scheme with its relative values removed.",
    )


@rule
def encoder_far_window(s: Sweeps) -> dict[str, Any]:
    """``encoder-far-window``: the shared-entry bound on ``far``, every length."""
    short, long, name = _span(s)
    lengths = s(SWEEP)["config"]["test_lengths"]
    kept, parts = True, []
    for scheme in WINDOWED:
        bounds = {n: entry_bound(s, SWEEP, scheme, "far", n) for n in lengths}
        kept &= all(under_bound(s.values(SWEEP, "far", scheme, n), bounds[n],
                                s.labels(SWEEP, "far", n)) for n in lengths)
        parts.append(f"{scheme} {percent(s.mean(SWEEP, 'far', scheme))} "
                     f"(bound {100 * bounds[short]:.1f}%)")
    solved = all(s.mean(SWEEP, "far", x) >= SOLVED for x in UNCLIPPED)
    config = s(SWEEP)["config"]
    return make_record(
        "encoder-far-window", CHAPTER,
        "No one-layer scheme that reads distance 12 through an entry it shares with "
        "other distances (a table clipped at k = "
        f"{config['max_relative_positions']}, log buckets, T5's buckets) learns "
        "`far`: each stays under the bound the shared entry sets, at every length; "
        "every scheme that clips nothing solves it at L.",
        "holds" if kept and solved else "fails",
        f"Mean at L: {'; '.join(parts)}. One layer cannot tell apart the tokens at "
        "distances that read one entry, so it can do no better than name the "
        "commonest of them (shared_entry_bound). Solved at L: "
        f"{', '.join(UNCLIPPED)}.",
        (SWEEP, ["summary", "config"]),
        weakest(s, SWEEP, "far", UNCLIPPED, short),
    )


@rule
def encoder_far_txl(s: Sweeps) -> dict[str, Any]:
    """``encoder-far-txl``: Transformer-XL's seeds against every other scheme's."""
    short, long, name = _span(s)
    order = sorted(s(SWEEP)["grid"]["scheme"],
                   key=lambda x: -s.mean(SWEEP, "far", x, long))
    best, others = order[0], order[1:]
    best_values = s.values(SWEEP, "far", best, long)
    rivals = [v for x in others for v in s.values(SWEEP, "far", x, long)]
    verdict = separation(best_values, rivals) if best == "transformer_xl" else "fails"
    return make_record(
        "encoder-far-txl", CHAPTER,
        f"On `far`, Transformer-XL generalises furthest: at {name} every seed of it "
        "beats every seed of every other scheme.",
        verdict,
        f"At {name}: {best} {percent(s.mean(SWEEP, 'far', best, long))} (seeds "
        f"{percent(min(best_values))} to {percent(max(best_values))}); next "
        f"{order[1]} {percent(s.mean(SWEEP, 'far', order[1], long))}. In chapter "
        "9's live models its logit at distance 12 stays several units above every "
        "unseen distance, and at distance 3 it does not: a correlate, measured on "
        "one seed.",
        (SWEEP, ["summary"]),
        best_values,
    )


__all__ = [
    "ABSOLUTE_READERS",
    "ALL_TRAINED",
    "CLIPPED",
    "UNCLIPPED",
    "WINDOWED",
    "entry_bound",
    "first_untrained",
    "length_of",
    "weakest",
]
