"""The alignment probe's verdict (chapter 1's claim 3), by the rule its design states.

Read from the probe's JSON (``results/probes/alignment.json``, written by
``make probe-alignment``), never typed in. An arm *passes* when:

- it knows the relations better than every absolute arm present (the learned
  table, the sinusoid): the 95% bootstrap interval of its overall accuracy
  minus theirs, paired by seed, lies above zero; and
- its accuracy does not move with the offset: the 95% bootstrap interval of
  its offsets' spread lies below ``design.OFFSET_TOLERANCE``; and
- it knows the relations at all: the interval of its overall accuracy lies
  above :data:`CHANCE` (at chance no offset can matter).

``holds`` when the main arm (DeBERTa with ``k >= L``) and every other relative
arm pass, ``qualified`` when the main arm passes and another relative arm does
not, ``fails`` when the main arm does not. The record's ``interval`` is the
bootstrap interval of the main arm's paired advantage over the stronger of
the absolute arms (the difference the verdict rests on). Not in the ledger build
yet: the record is checked against the ledger's schema. The claim's record is
the one at ``design.VERDICT_STEPS``; a sweep at another budget gives a record
``probe-alignment-<steps>-steps`` without ``seed_claim``.
"""

from __future__ import annotations

from typing import Any

from ...probes.alignment import design
from ...results import ledger
from ...stats import bootstrap_interval, paired_test

#: The record's id.
RECORD_ID = "probe-alignment"
#: The accuracy of a guess between the two members of a pair.
CHANCE = 0.5
#: Where the evidence is, relative to the results folder.
EVIDENCE = "probes/alignment.json"


def advantage(result: dict[str, Any], arm: str, other: str) -> list[float]:
    """Per seed, ``arm``'s overall accuracy minus ``other``'s (same seeds)."""
    overall = result["summary"]["overall"]
    a, b = overall[arm]["values"], overall[other]["values"]
    if len(a) != len(b):
        raise ValueError(f"{arm} and {other} must share their seeds, got "
                         f"{len(a)} and {len(b)} values")
    return [x - y for x, y in zip(a, b)]


def arm_passes(result: dict[str, Any], arm: str) -> dict[str, Any]:
    """Whether ``arm`` passes both parts, with the numbers behind each."""
    absolute = [a for a in design.ABSOLUTE_ARMS if a in result["grid"]["arm"]]
    if not absolute:
        raise ValueError("result must hold an absolute arm, got arms "
                         f"{result['grid']['arm']}")
    beats = {}
    for other in absolute:
        overall = result["summary"]["overall"]
        test = paired_test(overall[arm]["values"], overall[other]["values"])
        beats[other] = test["interval"][0] > 0
    spread = result["summary"]["offset_spread"][arm]["values"]
    high = bootstrap_interval(spread)[1] if len(spread) > 1 else spread[0]
    flat = high < design.OFFSET_TOLERANCE
    values = result["summary"]["overall"][arm]["values"]
    learned = (bootstrap_interval(values)[0] if len(values) > 1 else values[0]) > CHANCE
    return {"beats": beats, "spread_high": high, "flat": flat, "learned": learned,
            "passes": all(beats.values()) and flat and learned}


def verdict_of(passed: dict[str, bool]) -> str:
    """``fails`` unless the main arm passes; ``holds`` when every arm does."""
    if design.MAIN_ARM not in passed:
        raise ValueError(f"passed must judge {design.MAIN_ARM!r}, got {sorted(passed)}")
    if not passed[design.MAIN_ARM]:
        return "fails"
    return "holds" if all(passed.values()) else "qualified"


def alignment_record(result: dict[str, Any]) -> dict[str, Any]:
    """The ledger-style record of the probe, from its JSON."""
    arms = [a for a in design.RELATIVE_ARMS if a in result["grid"]["arm"]]
    judged = {arm: arm_passes(result, arm) for arm in arms}
    passed = {arm: j["passes"] for arm, j in judged.items()}
    verdict = verdict_of(passed)
    steps = result["config"]["steps"]
    verdict_budget = steps == design.VERDICT_STEPS
    main = judged[design.MAIN_ARM]
    if len(result["grid"]["seed"]) < ledger.INTERVAL_SEEDS:
        verdict = "untested"
    absolute = list(main["beats"])
    overall = result["summary"]["overall"]
    rival = max(absolute, key=lambda a: overall[a]["mean"])  # the stronger one
    values = advantage(result, design.MAIN_ARM, rival)
    names = lambda group: ", ".join(group) or "none"  # noqa: E731
    mechanism = (
        f"{design.MECHANISM} Measured after {steps} steps: DeBERTa with k >= L "
        "right on "
        f"{100 * overall[design.MAIN_ARM]['mean']:.1f}% of the items, "
        + ", ".join(f"{a} {100 * overall[a]['mean']:.1f}%" for a in absolute)
        + f"; the offsets' spread of its accuracy at most {main['spread_high']:.3f} "
        f"(tolerance {design.OFFSET_TOLERANCE}); seeds: {len(values)}. Relative "
        "arms passing: "
        f"{names([a for a in arms if passed[a]])}; not passing: "
        f"{names([a for a in arms if not passed[a]])}."
    )
    record: dict[str, Any] = {
        "id": RECORD_ID if verdict_budget else f"{RECORD_ID}-{steps}-steps",
        "chapter": design.CHAPTER,
        "claim": "Grammar is mostly about relative order, so relative positions "
        "suit language: on minimal pairs inside L whose grammaticality is fixed "
        "by relative order, a relative model is right more often than an "
        "absolute one, whatever the offset.",
        "verdict": verdict,
        "mechanism": mechanism,
        "evidence": {"file": EVIDENCE, "keys": ["summary", "comparisons"]},
        "seeds": len(values),
        "prediction": design.PREDICTION,
        "falsifier": design.FALSIFIER,
    }
    if verdict_budget:  # the other budget's record is reported, not the claim's
        record["seed_claim"] = design.SEED_CLAIM
    if len(values) >= ledger.INTERVAL_SEEDS:
        record["interval"] = bootstrap_interval(values)
    return ledger.check_record(record)


__all__ = ["CHANCE", "EVIDENCE", "RECORD_ID", "advantage", "alignment_record",
           "arm_passes", "verdict_of"]
