"""The ledger's records of the six mechanisms (``interventions.mechanisms``).

One record per design, in the designs' order, whatever has run:

- ``mechanism-mqar-spread`` from the committed task sweep
  (``protocol/sweep_tasks.json``): DeBERTa's ``mqar`` accuracy over its ten
  seeds, the mean's bootstrap interval, the seeds that reach :data:`~.rules.FIT`.
  ``holds`` (DeBERTa learns recall) when the interval's low end reaches FIT,
  ``fails`` when no seed does, ``qualified`` otherwise; and
  ``mechanism-mqar-rates``, the re-tune arm.
- ``mechanism-sinusoid-one-rate``, ``mechanism-deberta-reach``: from the
  interventions' file of ``make mechanisms`` (``protocol/mechanisms.json``).
- ``mechanism-t5-last-bucket`` and ``mechanism-fire-settings``: from the text
  sweeps of ``make mechanisms-text`` (:data:`T5_FILES`), the rise from ``L`` to
  the longest window paired by seed between the two arms;
  ``mechanism-masked-far-keys``: from the far-keys readings of ``make
  mechanism-far-keys`` (:data:`FAR_KEYS_FILE`, ``relpos.book.text.far_keys``):
  masked DeBERTa read as trained and with its far keys cut, at ``8L`` and
  ``16L``.

A design whose file or intervention is missing gets an ``untested`` record that
names the command to run (:func:`pending`); every record carries the design's
prediction and falsifier, written before the runs.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any, Callable

from ...results import ledger
from ...stats import bootstrap_interval, paired_test
from ..interventions.mechanisms import (
    DEBERTA_REACH,
    DESIGNS,
    FIRE_SETTINGS,
    MASKED_FAR_KEYS,
    MQAR_SPREAD,
    SINUSOID_ONE_RATE,
    T5_LAST_BUCKET,
    Design,
)
from ..interventions.run import MQAR_RATES, REACH_SPANS
from .interventions import comparison, describe, differences, shown
from .protocol import FOLDER
from .rules import FALL, FIT, make_record, percent

#: The interventions' file of ``make mechanisms``, in the protocol's folder.
FILE = "mechanisms.json"
#: The committed task sweep chapter 13 reads (DeBERTa's mqar spread).
TASKS = "sweep_tasks.json"
#: The text sweeps of ``make mechanisms-text``: T5's buckets ending at L (beside
#: FIRE's two arms) and at L / 2, relative to the results folder.
T5_FILES = {
    64: "probes/mechanism_text.json",
    32: "probes/mechanism_t5_max_32.json",
}
#: The rise from L to the longest window a flat arm stays within (bits per byte).
FLAT_BPB = 0.1
#: The rise FIRE with Li et al.'s threshold may keep for its prediction to hold.
FIRE_BPB = 0.2
#: The file a text design's record awaits.
TEXT_EVIDENCE = {T5_LAST_BUCKET.id: T5_FILES[32], FIRE_SETTINGS.id: T5_FILES[64]}
#: The far-keys readings of masked DeBERTa and Shaw, relative to the results folder.
FAR_KEYS_FILE = "probes/far_keys.json"
#: How far above its own 4L a cut reading may stay for the prediction (bits per byte).
NEAR_BPB = 0.05
#: The windows the far-keys prediction names, as multiples of L.
FAR_FACTORS = (8, 16)
#: Seeds below this accuracy at ``L`` count as stranded (``mqar_rates``).
STRANDED = 0.5
#: How many stranded seeds of ten keep the split (``mqar_rates``).
SPLIT = 3


def _with_design(record: dict[str, Any], design: Design) -> dict[str, Any]:
    return ledger.check_record(
        {**record, "prediction": design.prediction, "falsifier": design.falsifier}
    )


def pending(design: Design, record_id: str | None = None) -> dict[str, Any]:
    """The ``untested`` record of a design whose results do not exist yet.

    Shapes:
        output: a record dict (``ledger.check_record``)
    """
    how = design.target
    reason = f"untested: {how}" if how.startswith("make ") else f"untested ({how})"
    record = {
        "id": record_id or design.id,
        "chapter": design.chapter,
        "claim": design.claim,
        "verdict": "untested",
        "mechanism": f"{reason[0].upper()}{reason[1:]}. {design.mechanism}",
        "evidence": {"file": TEXT_EVIDENCE.get(design.id, f"{FOLDER}/{FILE}"),
                     "keys": []},
        "seeds": 0,
    }
    return _with_design(record, design)


def mqar_spread(sweep: dict[str, Any]) -> dict[str, Any]:
    """``mechanism-mqar-spread``: DeBERTa's ten mqar seeds, from the task sweep.

    Shapes:
        output: a record; its values: DeBERTa's accuracy at ``L`` per seed
    """
    lengths = sweep["config"]["test_lengths"]
    rows = {s["length"]: s for s in sweep["summary"]
            if (s["task"], s["scheme"]) == ("mqar", "deberta")}
    if sorted(rows) != sorted(lengths):
        raise ValueError(f"{TASKS} must hold deberta on mqar at {lengths}")
    at_l = rows[lengths[0]]
    values = list(at_l["values"])
    low = ledger_interval(values)[0]
    reached = sum(v >= FIT for v in values)
    verdict = "holds" if low >= FIT else "fails" if reached == 0 else "qualified"
    parts = []
    for n in lengths:
        row, interval = rows[n], ledger_interval(rows[n]["values"])
        parts.append(
            f"n = {n}: mean {percent(row['mean'])} ({percent(interval[0])} to "
            f"{percent(interval[1])}), seeds {percent(min(row['values']))} to "
            f"{percent(max(row['values']))}"
        )
    record = make_record(
        MQAR_SPREAD.id, MQAR_SPREAD.chapter, MQAR_SPREAD.claim, verdict,
        "Over the ten seeds, with the 95% bootstrap interval of the mean: "
        + "; ".join(parts) + f". {reached} of {len(values)} seeds reach "
        f"{percent(FIT)} at L; {sum(v < STRANDED for v in values)} stay below "
        f"{percent(STRANDED)}. One seed's result is not the scheme's.",
        (f"{FOLDER}/{TASKS}", ["summary"]),
        values,
    )
    return _with_design(record, MQAR_SPREAD)


def ledger_interval(values: list[float]) -> list[float]:
    """The 95% bootstrap interval of the mean of ``values`` (``relpos.book.stats``)."""
    return list(bootstrap_interval(values))


def mqar_rates(result: dict[str, Any]) -> dict[str, Any]:
    """``mechanism-mqar-rates``: the chosen rate's neighbours, ten seeds each.

    ``fails`` (the rate, not the seed, strands seeds) when a neighbouring rate
    shows a gain at ``L`` of more than :data:`~.rules.FALL` or leaves fewer than
    :data:`SPLIT` seeds below :data:`STRANDED`; ``holds`` otherwise.
    """
    name = "mqar_rates"
    runs = result["interventions"][name]["runs"]
    short = min(int(n) for r in runs for n in r["arms"]["trained"])
    base = MQAR_RATES[len(MQAR_RATES) // 2]
    tests = [comparison(result, name, f"learning_rate {rate:g} - {base:g}, n = {short}")
             for rate in MQAR_RATES if rate != base]
    stranded = {rate: sum(r["arms"]["trained"][str(short)] < STRANDED for r in runs
                          if r["learning_rate"] == rate) for rate in MQAR_RATES}
    lifted = [c for c in tests if shown(c) > 0 and c["mean"] > FALL]
    verdict = ("fails" if lifted or min(stranded.values()) < SPLIT else "holds")
    best = max(tests, key=lambda c: c["mean"])
    record = make_record(
        "mechanism-mqar-rates", MQAR_SPREAD.chapter, MQAR_SPREAD.claim, verdict,
        f"At L, paired over the seeds: " + "; ".join(describe(c) for c in tests)
        + ". Seeds below " + percent(STRANDED) + ": "
        + ", ".join(f"{rate:g} {count}" for rate, count in stranded.items()) + ".",
        (f"{FOLDER}/{FILE}", ["interventions"]),
        differences(best),
        intervention=result["interventions"][name]["change"],
    )
    return _with_design(record, MQAR_SPREAD)


def sinusoid_one_rate(result: dict[str, Any]) -> dict[str, Any]:
    """``mechanism-sinusoid-one-rate``: every sinusoid arm at one rate, at ``L``.

    ``fails`` (the size, not the likeness of the rows, is the cause; or the
    plain sinusoid fits at this rate, so the rate was) when a scaled arm shows a
    gain and reaches :data:`~.rules.FIT`, or the plain sinusoid reaches FIT;
    ``qualified`` when a scaled arm shows a smaller gain; ``holds`` when none
    shows a gain.
    """
    name = "sinusoid_one_rate"
    runs = result["interventions"][name]["runs"]
    size = min(r["train_size"] for r in runs)
    short = min(int(n) for r in runs for n in r["arms"]["trained"])
    arms = [s for s in dict.fromkeys(r["scheme"] for r in runs)
            if s.startswith("sinusoidal-")]
    tests = [comparison(result, name, f"{arm} - sinusoidal, {size} sequences, "
                        f"n = {short}") for arm in arms]
    best = max(tests, key=lambda c: c["mean"])
    plain = statistics.fmean(best["b_values"])
    if plain >= FIT:
        verdict = "fails"
    elif shown(best) > 0:
        verdict = "fails" if statistics.fmean(best["a_values"]) >= FIT else "qualified"
    else:
        verdict = "holds"
    rate = sorted({r["learning_rate"] for r in runs})
    record = make_record(
        SINUSOID_ONE_RATE.id, SINUSOID_ONE_RATE.chapter, SINUSOID_ONE_RATE.claim,
        verdict,
        f"Every arm at {', '.join(f'{x:g}' for x in rate)}, {size} sequences, at L: "
        + "; ".join(describe(c) for c in tests) + ". Only the learned factor differs "
        "between the sinusoids.",
        (f"{FOLDER}/{FILE}", ["interventions"]),
        differences(best),
        intervention=result["interventions"][name]["change"],
    )
    return _with_design(record, SINUSOID_ONE_RATE)


def deberta_reach(result: dict[str, Any]) -> dict[str, Any]:
    """``mechanism-deberta-reach``: k = 16 against k = 8 on copy, at ``L``.

    ``holds`` when k = 16 shows a gain and reaches :data:`~.rules.FIT`,
    ``qualified`` when it shows a smaller gain, ``fails`` when none.
    """
    name = "deberta_reach"
    runs = result["interventions"][name]["runs"]
    lengths = sorted({int(n) for r in runs for n in r["arms"]["trained"]})
    small, large = REACH_SPANS[0], REACH_SPANS[-1]
    tests = [comparison(result, name, f"max_relative_positions {large:g} - "
                        f"{small:g}, n = {n}") for n in lengths]
    at_l = tests[0]
    if shown(at_l) > 0:
        verdict = "holds" if statistics.fmean(at_l["a_values"]) >= FIT else "qualified"
    else:
        verdict = "fails"
    record = make_record(
        DEBERTA_REACH.id, DEBERTA_REACH.chapter, DEBERTA_REACH.claim, verdict,
        f"k = {large} against k = {small}, paired over the seeds: "
        + "; ".join(f"n = {n}: {describe(c)}" for n, c in zip(lengths, tests)) + ".",
        (f"{FOLDER}/{FILE}", ["interventions"]),
        differences(at_l),
        intervention=result["interventions"][name]["change"],
    )
    return _with_design(record, DEBERTA_REACH)


def rises(sweep: dict[str, Any], scheme: str = "t5") -> dict[int, float]:
    """Per seed, ``scheme``'s bits per byte at the longest window minus at ``L``.

    Shapes:
        output: ``{seed: float}``
    """
    short, long = min(sweep["config"]["eval_lengths"]), max(
        sweep["config"]["eval_lengths"])
    found: dict[int, dict[int, float]] = {}
    for run in sweep["runs"]:
        if run["scheme"] == scheme:
            found[run["seed"]] = {n: run["eval"][str(n)]["bpb"] for n in (short, long)}
    return {seed: bpb[long] - bpb[short] for seed, bpb in sorted(found.items())}


def _rise_test(a: dict[int, float], b: dict[int, float]) -> dict[str, Any]:
    """``a - b`` paired by seed: ``paired_test``'s fields and both sides' values."""
    if set(a) != set(b) or len(a) < 2:
        raise ValueError(f"both arms must hold the same two or more seeds, got "
                         f"{sorted(a)} and {sorted(b)}")
    seeds = sorted(a)
    a_values, b_values = [a[s] for s in seeds], [b[s] for s in seeds]
    return {**paired_test(a_values, b_values), "a_values": a_values,
            "b_values": b_values}


def _rises_text(test: dict[str, Any], a: str, b: str) -> str:
    low, high = test["interval"]
    return (f"Rise from L to the longest window, bits per byte: {a} "
            f"{statistics.fmean(test['a_values']):+.2f}, {b} "
            f"{statistics.fmean(test['b_values']):+.2f}; difference "
            f"{test['mean']:+.2f} ({low:+.2f} to {high:+.2f}), p = "
            f"{test['p_value']:.3f}.")


def fire_settings(sweep: dict[str, Any]) -> dict[str, Any]:
    """``mechanism-fire-settings``: FIRE's threshold starting at L and at L / 4.

    ``holds`` (our threshold is why FIRE rises) when the paired difference of
    the rises (``fire`` minus ``fire-quarter``) is shown above zero and
    ``fire-quarter`` rises at most :data:`FIRE_BPB`; ``qualified`` when shown
    but it rises more; ``fails`` otherwise.
    """
    return _rise_record(
        FIRE_SETTINGS, rises(sweep, "fire"), rises(sweep, "fire-quarter"), FIRE_BPB,
        ("threshold from L", "threshold from L / 4"), T5_FILES[64],
        "FIRE's threshold starting at L / 4 (Li et al.'s code: 512 at a training "
        "length of 2048) instead of L; each arm tuned; same seeds",
    )


def t5_last_bucket(ending_at_l: dict[str, Any], shorter: dict[str, Any]) -> dict:
    """``mechanism-t5-last-bucket``: the rise to 16L, buckets ending at L and L / 2.

    ``holds`` when the paired difference of the rises (ending at L minus ending
    at L / 2) is shown above zero and the shorter arm rises at most
    :data:`FLAT_BPB`; ``qualified`` when shown but the shorter arm rises more;
    ``fails`` otherwise.
    """
    return _rise_record(
        T5_LAST_BUCKET, rises(ending_at_l), rises(shorter), FLAT_BPB,
        ("buckets ending at L", "ending at L / 2"), T5_FILES[32],
        "T5's buckets ending at L / 2 instead of L; each arm tuned on validation "
        "text at L; same seeds and corpus",
    )


def _rise_record(
    design: Design,
    as_run: dict[int, float],
    changed: dict[int, float],
    bound: float,
    names: tuple[str, str],
    evidence: str,
    intervention: str,
) -> dict[str, Any]:
    """The record of a text intervention judged on the rise from L to 16L:
    ``holds`` when the paired difference of the rises (as run minus changed) is
    shown above zero and the changed arm rises at most ``bound`` bits per byte;
    ``qualified`` when shown but it rises more; ``fails`` otherwise.

    Shapes:
        as_run, changed: seed -> rise; output: a record dict
    """
    test = _rise_test(as_run, changed)
    small = statistics.fmean(test["b_values"]) <= bound
    verdict = "fails" if shown(test) <= 0 else "holds" if small else "qualified"
    record = make_record(
        design.id, design.chapter, design.claim, verdict,
        _rises_text(test, *names), (evidence, ["runs"]),
        [x - y for x, y in zip(test["a_values"], test["b_values"])],
        intervention=intervention,
    )
    return _with_design(record, design)


def _far_row(result: dict[str, Any], scheme: str, factor: int) -> dict[str, Any]:
    L = result["config"]["train_length"]
    found = [r for r in result["contrasts"]
             if r["scheme"] == scheme and r["length"] == factor * L]
    if len(found) != 1:
        raise ValueError(f"{FAR_KEYS_FILE} must hold one row of {scheme} at "
                         f"{factor}L, got {len(found)}")
    return found[0]


def _far_shown(d: dict[str, Any]) -> int:
    """+1 or -1 when a far-keys difference is shown (interval and p), else 0."""
    low, high = d["interval"]
    if d["p_value"] is None or d["p_value"] >= 0.05 or low <= 0 <= high:
        return 0
    return 1 if d["mean"] > 0 else -1


def _far_text(result: dict[str, Any]) -> str:
    """Per scheme and window: the rise over 4L as read and with far keys cut, and
    the share of it each cut removes (bits per byte)."""
    bits = 1 / math.log(2)
    parts = []
    for scheme in ("deberta", "shaw"):
        for factor in FAR_FACTORS:
            row = _far_row(result, scheme, factor)
            rise, share = row["rise_over_4l"], row["share_removed"]
            d = row["full_minus"]["cut"]
            low, high = (bits * v for v in d["interval"])
            shares = ", ".join(
                f"{name} {share[name]:.0%}" if share[name] is not None
                else f"{name} n/a"
                for name in ("cut", "ahead", "behind")
            )
            parts.append(
                f"{scheme} at {factor}L: rise over 4L {bits * rise['full']:+.2f} as "
                f"read, {bits * rise['cut']:+.2f} with both sides cut; full minus "
                f"cut {bits * d['mean']:+.2f} ({low:+.2f} to {high:+.2f}), p = "
                f"{d['p_value']:.3f}; share of the rise removed: {shares}"
            )
    return "; ".join(parts) + "."


def masked_far_keys(result: dict[str, Any]) -> dict[str, Any]:
    """``mechanism-masked-far-keys``: masked DeBERTa with its far keys cut.

    ``holds`` when, at both ``8L`` and ``16L``, full minus cut is shown above
    zero (interval over modules and seeds, paired test over seeds) and the cut
    reading stays within :data:`NEAR_BPB` of the model's own ``4L``;
    ``qualified`` when shown at both but the cut stays higher; ``fails``
    otherwise (no part of the rise recovered, or worse). The per-seed values of
    the record are full minus cut at ``16L`` (bits per byte).
    """
    rows = [_far_row(result, "deberta", factor) for factor in FAR_FACTORS]
    recovered = all(_far_shown(r["full_minus"]["cut"]) > 0 for r in rows)
    near = all(r["rise_over_4l"]["cut"] / math.log(2) <= NEAR_BPB for r in rows)
    verdict = "fails" if not recovered else "holds" if near else "qualified"
    values = [v / math.log(2) for v in rows[-1]["full_minus"]["cut"]["per_seed"]]
    record = make_record(
        MASKED_FAR_KEYS.id, MASKED_FAR_KEYS.chapter, MASKED_FAR_KEYS.claim, verdict,
        _far_text(result), (FAR_KEYS_FILE, ["contrasts"]), values,
        intervention=(
            "on the same trained masked models, every key k = 32 or more away "
            "removed at test time (both sides; ahead only; behind only); same "
            "windows, same masked bytes"
        ),
    )
    return _with_design(record, MASKED_FAR_KEYS)


#: The rules of the interventions of ``FILE``: name -> (record id, rule).
RULES: dict[str, tuple[Design, str, Callable[[dict[str, Any]], dict[str, Any]]]] = {
    "mqar_rates": (MQAR_SPREAD, "mechanism-mqar-rates", mqar_rates),
    "sinusoid_one_rate": (SINUSOID_ONE_RATE, SINUSOID_ONE_RATE.id, sinusoid_one_rate),
    "deberta_reach": (DEBERTA_REACH, DEBERTA_REACH.id, deberta_reach),
}


def _read(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def records(folder: str | Path) -> list[dict[str, Any]]:
    """One record per design (two for mqar), in :data:`DESIGNS` order.

    Shapes:
        output: record dicts (``ledger.check_record``)
    """
    results = Path(folder)
    folder = results / FOLDER
    sweep, result = _read(folder / TASKS), _read(folder / FILE)
    t5 = {end: _read(results / path) for end, path in T5_FILES.items()}
    far = _read(results / FAR_KEYS_FILE)
    seeds = set() if far is None else {r["seed"] for r in far["runs"]}
    if len(seeds) < ledger.INTERVAL_SEEDS:
        far = None  # none, or a quick check's file: no verdict
    # the protocol's ten seeds or none: a quick check's file states no verdict
    full = result is not None and len(result["seeds"]) >= ledger.INTERVAL_SEEDS
    held = result["interventions"] if full else {}
    t5 = {end: None if found is None or len(rises(found)) < ledger.INTERVAL_SEEDS
          else found for end, found in t5.items()}
    found = []
    for design in DESIGNS:
        if design is MQAR_SPREAD:
            found.append(pending(design) if sweep is None else mqar_spread(sweep))
        for name, (owner, record_id, rule) in RULES.items():
            if owner is design:
                found.append(rule(result) if name in held
                             else pending(design, record_id))
        if design is T5_LAST_BUCKET and None not in t5.values():
            found.append(t5_last_bucket(t5[64], t5[32]))
        elif design is FIRE_SETTINGS and t5[64] is not None:
            found.append(fire_settings(t5[64]))
        elif design is MASKED_FAR_KEYS and far is not None:
            found.append(masked_far_keys(far))
        elif design not in {owner for owner, _, _ in RULES.values()}:
            found.append(pending(design))
    return found


__all__ = [
    "FAR_KEYS_FILE",
    "FILE",
    "NEAR_BPB",
    "RULES",
    "SPLIT",
    "STRANDED",
    "TASKS",
    "FIRE_BPB",
    "FLAT_BPB",
    "T5_FILES",
    "deberta_reach",
    "fire_settings",
    "masked_far_keys",
    "mqar_rates",
    "mqar_spread",
    "pending",
    "records",
    "rises",
    "sinusoid_one_rate",
    "t5_last_bucket",
]
