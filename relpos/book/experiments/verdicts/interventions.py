"""Chapter 12's verdicts on the four mechanisms, from the interventions' paired tests.

``protocol/interventions.json`` (``python -m relpos.book.experiments.interventions``)
trains each cell at ten seeds and compares an arm with one cause changed against
the model as trained, seed by seed (``comparisons``: mean difference, bootstrap
interval, exact sign-flip p-value). A difference is *shown* when its p-value is
below :data:`ALPHA` and its interval excludes zero. Each rule here reads those
comparisons and states the verdict on a mechanism chapters 9 and 10 read off a
correlation (the rules ``buckets-row-0``, ``sinusoid-scale``, ``two-hop-path``
and ``causal-t5-why``, ``untested`` by construction: the first pass's records
``first-pass-<id>``); a record's ``values`` are the per-seed
differences its verdict rests on, so its interval is theirs. Without the file
no record is written.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any, Callable

from ...stats import excludes, paired_test
from .protocol import CHAPTER, FOLDER
from .rules import FALL, FIT, make_record, percent

#: The interventions' file, in the protocol's folder.
FILE = "interventions.json"
#: The sweep of the scaled sinusoids, each tuned at its own rate.
SCALE = "sweep_scale.json"
EVIDENCE = (f"{FOLDER}/{FILE}", ["interventions"])
#: The p-value under which a paired difference counts as shown.
ALPHA = 0.05
#: The schemes of the two-hop intervention that read distance 12 through a window
#: (a table clipped at k, T5's buckets); the others are controls.
WINDOWED = ("deberta", "t5")
#: The growth of the position rows' size (trained over fixed) that counts as the
#: learned scale having moved.
GROWN = 1.5


def comparison(result: dict[str, Any], name: str, label: str) -> dict[str, Any]:
    """The comparison ``label`` of the intervention ``name``; ValueError if absent."""
    found = [c for c in result["interventions"][name]["comparisons"]
             if c["name"] == label]
    if len(found) != 1:
        raise ValueError(f"{FILE} must hold one comparison {label!r} of {name}, "
                         f"got {len(found)}")
    return found[0]


def shown(c: dict[str, Any]) -> int:
    """+1 or -1 when the comparison's difference is shown (its sign), else 0."""
    if c["p_value"] < ALPHA and excludes(c["interval"], 0.0):
        return 1 if c["mean"] > 0 else -1
    return 0


def differences(c: dict[str, Any]) -> list[float]:
    """The per-seed differences ``a - b`` of a comparison.

    Shapes:
        output: ``(seeds,)``
    """
    return [a - b for a, b in zip(c["a_values"], c["b_values"])]


def describe(c: dict[str, Any]) -> str:
    """A comparison in words: the two means, the difference, its interval and p.

    Each side is named by its label up to the first comma (the arm).
    """
    low, high = c["interval"]
    a, b = (c[side].split(",")[0] for side in ("a", "b"))
    return (f"{a} {percent(statistics.fmean(c['a_values']))} against {b} "
            f"{percent(statistics.fmean(c['b_values']))}: {100 * c['mean']:+.1f} "
            f"points ({100 * low:+.1f} to {100 * high:+.1f}), p = {c['p_value']:.3f}")


def _lengths(result: dict[str, Any], name: str, arm: str) -> list[int]:
    runs = result["interventions"][name]["runs"]
    return sorted({int(n) for r in runs for n in r["arms"][arm]})


def row_zero(result: dict[str, Any]) -> dict[str, Any]:
    """``intervention-row-0``: row 0's reads redirected or masked, at the end.

    Many seeds lose nothing (a difference of 0 carries no sign), so one
    training size alone may hold too few losing seeds for any test: the verdict
    pairs each seed's accuracy averaged over the training sizes. With the arm
    (redirected or masked) of the larger mean gain: ``holds`` when that paired
    test shows the gain (:func:`shown`) and it wins back at least half of the
    intact model's mean loss from ``L``; ``qualified`` when it shows a smaller
    gain; ``fails`` when it shows none. The mechanism gives each size's own
    comparisons.
    """
    name = "row_zero"
    runs = result["interventions"][name]["runs"]
    sizes = sorted({r["train_size"] for r in runs})
    lengths = _lengths(result, name, "intact")
    short, long = lengths[0], lengths[-1]

    seeds = sorted({r["seed"] for r in runs})

    def at(arm: str, n: int) -> list[float]:
        """Per seed, the arm's accuracy at ``n`` averaged over the sizes."""
        return [statistics.fmean(r["arms"][arm][str(n)] for r in runs
                                 if r["seed"] == seed) for seed in seeds]

    intact = at("intact", long)
    loss = statistics.fmean(a - b for a, b in zip(at("intact", short), intact))
    pooled = {arm: {**paired_test(at(arm, long), intact), "a_values": at(arm, long),
                    "b_values": intact} for arm in ("redirected", "masked")}
    arm, best = max(pooled.items(), key=lambda item: item[1]["mean"])
    verdict = ("fails" if shown(best) <= 0
               else "holds" if best["mean"] >= loss / 2 else "qualified")
    parts = []
    for size in sizes:
        tests = [comparison(result, name, f"{a} - intact, {size} sequences, n = {long}")
                 for a in ("redirected", "masked")]
        parts.append(f"{size} sequences: " + "; ".join(describe(c) for c in tests))
    reads = statistics.fmean(r["reads"][str(long)]["queries"] for r in runs
                             if r["train_size"] == max(sizes))
    low, high = best["interval"]
    return make_record(
        "intervention-row-0", CHAPTER,
        "`deberta-buckets` loses accuracy on `relative` beyond L because it reads its "
        "untrained row 0.",
        verdict,
        f"At n = {long}, per seed averaged over {len(sizes)} sizes: the intact model "
        f"loses {100 * loss:.1f} points from L in the mean; {arm} wins back "
        f"{100 * best['mean']:.1f} ({100 * low:.1f} to {100 * high:.1f}), p = "
        f"{best['p_value']:.4f}, in {best['wins']} seeds, losing in "
        f"{best['losses']}. " + ". ".join(parts) + f". With {max(sizes)} sequences "
        f"{percent(reads)} of the scored queries read row 0.",
        EVIDENCE,
        differences(best),
        intervention=result["interventions"][name]["change"],
    )


def sinusoid_scale(result: dict[str, Any]) -> dict[str, Any]:
    """``intervention-sinusoid-scale``: the sinusoid with a learned scale, at ``L``.

    The claim blames the similar neighbouring rows; a learned scale frees the
    size and leaves the similarity. ``fails`` when a scaled arm shows a gain
    (:func:`shown`) and reaches :data:`~.rules.FIT` (the size was the cause);
    ``qualified`` when one shows a smaller gain. Without a gain the verdict
    depends on whether the size moved at all: ``holds`` when a scaled arm's
    position rows grew by :data:`GROWN` or more in training (the size changed
    and nothing followed; the similarity itself is not changed, so the record
    says so), ``untested`` when none did (the cause was freed but never moved).
    """
    name = "sinusoid_scale"
    runs = result["interventions"][name]["runs"]
    size = min(r["train_size"] for r in runs)
    short = _lengths(result, name, "trained")[0]
    arms = [s for s in dict.fromkeys(r["scheme"] for r in runs)
            if s.startswith("sinusoidal-")]
    tests = [comparison(result, name, f"{arm} - sinusoidal, {size} sequences, "
                        f"n = {short}") for arm in arms]
    sizes = [comparison(result, name, f"{arm} - sinusoidal, {size} sequences: "
                        "position rms, trained") for arm in arms]
    best = max(tests, key=lambda c: c["mean"])
    growth = max(statistics.fmean(c["a_values"]) / statistics.fmean(c["b_values"])
                 for c in sizes)
    if shown(best) > 0:
        reached = statistics.fmean(best["a_values"]) >= FIT
        verdict = "fails" if reached else "qualified"
    else:
        verdict = "holds" if growth >= GROWN else "untested"
    mine = [r for r in runs if r["train_size"] == size]
    absolute = [r for r in mine if r["scheme"] == "absolute"]
    rate = {r["scheme"]: r["learning_rate"] for r in mine}
    grown = "; ".join(
        f"{c['a'].split(' position')[0]} {statistics.fmean(c['a_values']):.3f} "
        f"against {statistics.fmean(c['b_values']):.3f}" for c in sizes)
    table = ""
    if absolute:
        accuracy = statistics.fmean(r["arms"]["trained"][str(short)] for r in absolute)
        table = f"; absolute {percent(accuracy)}"
        rows = statistics.fmean(r["trained"]["positions_rms"] for r in absolute)
        grown += f"; absolute {rows:.3f}"
    return make_record(
        "intervention-sinusoid-scale", CHAPTER,
        "The sinusoidal features need more training sequences for `relative` because "
        "their neighbouring rows are nearly the same vector, not because of their "
        "fixed size.",
        verdict,
        f"With {size} sequences at L: " + "; ".join(describe(c) for c in tests)
        + table + f". Position rows' root mean square after training: {grown} (largest "
        f"growth of a scaled arm x{growth:.2f}). Rates: "
        + ", ".join(f"{k} {v:g}" for k, v in rate.items())
        + ". The scale was freed and nothing else; the rows' similarity was not "
        "changed.",
        EVIDENCE,
        differences(best),
        intervention=result["interventions"][name]["change"],
    )


def sinusoid_tuned(sweep: dict[str, Any]) -> dict[str, Any]:
    """``intervention-sinusoid-tuned``: the scaled sinusoids, each at its own rate.

    ``sweep`` is ``protocol/sweep_scale.json``: ``sinusoidal``, the two scaled
    sinusoids and ``absolute`` on ``relative``, each tuned like any scheme, on
    the same seeds and data. Each scaled arm is paired by seed with
    ``sinusoidal`` at ``L`` with the fewest sequences. ``fails`` when one shows a
    gain and reaches :data:`~.rules.FIT` (a learned size removes the hunger,
    the rows' similarity unchanged), ``qualified`` when one shows a smaller
    gain, ``holds`` when none shows a gain.
    """
    from ..sweep import summary_cells

    cells = summary_cells(sweep)
    length = sweep["config"]["train_length"]
    size = min(sweep["grid"]["train_size"])
    rate = {c["scheme"]: c["learning_rate"] for c in sweep["tuning"]["chosen"]
            if c["train_size"] == size}

    def values(scheme: str) -> list[float]:
        return list(cells["encoder", "relative", scheme, size, length]["values"])

    base = values("sinusoidal")
    arms = [x for x in sweep["grid"]["scheme"] if x.startswith("sinusoidal-")]
    tests = [{"name": x, "a": x, "b": "sinusoidal", "a_values": values(x),
              "b_values": base, **paired_test(values(x), base)} for x in arms]
    best = max(tests, key=lambda c: c["mean"])
    if shown(best) > 0:
        reached = statistics.fmean(best["a_values"]) >= FIT
        verdict = "fails" if reached else "qualified"
    else:
        verdict = "holds"
    absolute = ""
    if "absolute" in sweep["grid"]["scheme"]:
        absolute = f"; absolute {percent(statistics.fmean(values('absolute')))}"
    return make_record(
        "intervention-sinusoid-tuned", CHAPTER,
        "The sinusoidal features need more training sequences for `relative` because "
        "their neighbouring rows are nearly the same vector, not because of their "
        "fixed size (each arm at its own tuned rate).",
        verdict,
        f"With {size} sequences at L, each scheme at its own tuned rate ("
        + ", ".join(f"{k} {v:g}" for k, v in rate.items()) + "): "
        + "; ".join(describe(c) for c in tests) + absolute + ". A learned factor "
        "changes the rows' size, not their similarity.",
        (f"{FOLDER}/{SCALE}", ["summary", "tuning"]),
        differences(best),
        intervention="the sinusoid times a learned factor (one, or one per "
        "dimension), each arm tuned like any scheme; same seeds and data",
    )


def two_hop(result: dict[str, Any]) -> dict[str, Any]:
    """``intervention-two-hop``: every two-hop path cut, two-layer models at ``L``.

    The claim is chapter 10's: a second layer reaches distance 12 *through a
    window* by two hops. Each windowed scheme of :data:`WINDOWED` *uses* the
    path when cutting it shows a loss of more than :data:`~.rules.FALL`.
    ``holds`` when every windowed scheme uses it, ``fails`` when none does,
    ``qualified`` otherwise; a scheme without a window (rotary) is the control,
    in the mechanism. The record's values are the cut's per-seed differences of
    the windowed scheme it costs most.
    """
    name = "two_hop"
    short = _lengths(result, name, "no_two_hop")[0]
    cuts = ("no_two_hop", "no_one_hop", "no_first_hop")
    runs = result["interventions"][name]["runs"]
    schemes = list(dict.fromkeys(r["scheme"] for r in runs))
    tests = {(scheme, cut): comparison(result, name,
                                       f"{scheme}: {cut} - intact, n = {short}")
             for scheme in schemes for cut in cuts}
    windowed = [x for x in WINDOWED if x in schemes]
    if not windowed:
        raise ValueError(f"{FILE}: two_hop must hold a scheme of {WINDOWED}")
    uses = {x: shown(tests[x, "no_two_hop"]) < 0 and -tests[x, "no_two_hop"]["mean"]
            > FALL for x in windowed}
    verdict = ("holds" if all(uses.values())
               else "fails" if not any(uses.values()) else "qualified")
    costliest = min(windowed, key=lambda x: tests[x, "no_two_hop"]["mean"])
    weight = {x: statistics.fmean(r["paths"]["two_hop_best"] for r in runs
                                  if r["scheme"] == x) for x in schemes}
    paths = "; ".join(f"{x} {w:.3f}" for x, w in weight.items())
    return make_record(
        "intervention-two-hop", CHAPTER,
        "A second layer reaches distance 12 on `far` through a window by two hops (a "
        "key inside the window whose first-layer output holds the token further "
        "back).",
        verdict,
        "Uses the two-hop path (its cut costs more than "
        f"{100 * FALL:.0f} points): "
        + ", ".join(f"{x} {'yes' if used else 'no'}" for x, used in uses.items())
        + f". At L, paired over the seeds: "
        + "; ".join(describe(c) for c in tests.values())
        + f". Strongest two-hop weight, mean over seeds: {paths}.",
        EVIDENCE,
        differences(tests[costliest, "no_two_hop"]),
        intervention=result["interventions"][name]["change"],
    )


def causal_t5(result: dict[str, Any]) -> dict[str, Any]:
    """``intervention-causal-t5``: the bias gap and the competing keys, at the end.

    The claim: causal T5 holds ``relative`` because its buckets give a finer
    resolution, which would show as a larger bias gap for the key 3 back.
    ``fails`` when the causal reading head's gap is not shown larger than the
    encoder's; ``holds`` when it is and cutting the encoder's keys to the
    causal query's gains nothing; ``qualified`` when both show.
    """
    name = "causal_t5"
    long = _lengths(result, name, "intact")[-1]
    gap = comparison(result, name,
                     f"gap of the reading head: causal - encoder, n = {long}")
    keys = comparison(result, name, f"encoder keys_behind - encoder, n = {long}")
    settings = comparison(result, name, f"causal - encoder, n = {long}")
    rest = comparison(result, name, f"causal - encoder keys_behind, n = {long}")
    verdict = ("fails" if shown(gap) <= 0
               else "holds" if shown(keys) <= 0 else "qualified")
    return make_record(
        "intervention-causal-t5", CHAPTER,
        "Causal T5 holds `relative` far past L because its buckets, all behind the "
        "query, give twice the two-sided resolution.",
        verdict,
        f"At n = {long}: bias gap of the reading head, causal - encoder: "
        f"{statistics.fmean(gap['a_values']):.2f} against "
        f"{statistics.fmean(gap['b_values']):.2f} ({gap['mean']:+.2f}, p = "
        f"{gap['p_value']:.3f}). Accuracy: {describe(settings)}; {describe(keys)}; "
        f"{describe(rest)}.",
        EVIDENCE,
        differences(gap),
        intervention=result["interventions"][name]["change"],
    )


#: The rule of each intervention of the file, in the ledger's order.
RULES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "row_zero": row_zero,
    "sinusoid_scale": sinusoid_scale,
    "two_hop": two_hop,
    "causal_t5": causal_t5,
}


def records(folder: str | Path) -> list[dict[str, Any]]:
    """A record per intervention in ``folder / FOLDER / FILE`` (none without it),
    and the tuned scaled sinusoids' (``SCALE``) when that sweep is there too.

    Shapes:
        output: one record dict per intervention the file holds
    """
    path = Path(folder) / FOLDER / FILE
    if not path.is_file():
        return []
    result = json.loads(path.read_text(encoding="utf-8"))
    found = [rule(result) for name, rule in RULES.items()
             if name in result["interventions"]]
    scale = Path(folder) / FOLDER / SCALE
    if scale.is_file():
        found.append(sinusoid_tuned(json.loads(scale.read_text(encoding="utf-8"))))
    return found


__all__ = [
    "ALPHA",
    "EVIDENCE",
    "GROWN",
    "FILE",
    "RULES",
    "SCALE",
    "WINDOWED",
    "causal_t5",
    "comparison",
    "describe",
    "differences",
    "records",
    "row_zero",
    "shown",
    "sinusoid_scale",
    "sinusoid_tuned",
    "two_hop",
]
