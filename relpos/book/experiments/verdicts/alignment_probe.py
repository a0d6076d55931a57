"""The alignment probe's verdict (chapter 1's claim 3), by the rule its design states.

Read from the probe's JSON (``results/probes/alignment.json``, written by
``make probe-alignment``), never typed in. The probe has two halves, one per
relation of the grammar (``grammar.RELATIONS``: number agreement and
brackets), and each half is judged alone, on its own items:

- a half that no arm learns (for every arm the 95% bootstrap interval of its
  accuracy on the half's items reaches down to :data:`CHANCE`) is
  ``untested``, with the reason ("no arm learned agreement at 300 steps"):
  at chance nothing about positions can be read from it;
- otherwise an arm *passes* the half when it knows the relation better than
  every absolute arm present (the learned table, the sinusoid: the 95%
  interval of its accuracy minus theirs, paired by seed, above zero), its
  accuracy does not move with the offset (the interval of its offsets' spread
  below ``design.OFFSET_TOLERANCE``) and it knows the relation at all (the
  interval of its accuracy above :data:`CHANCE`). The half ``holds`` when the
  main arm (DeBERTa with ``k >= L``) and every other relative arm pass,
  ``qualified`` when the main arm passes and another relative arm does not,
  ``fails`` when the main arm does not.

The claim's verdict combines the tested halves (:func:`combine_halves`):
``holds`` when each holds, ``fails`` when each fails, ``qualified`` otherwise,
``untested`` when no half is tested or on fewer than ten seeds. The record's
``interval`` is the bootstrap interval of the main arm's paired advantage over
the stronger absolute arm on the tested halves' items (all items when none
is). The claim's record is the one at ``design.VERDICT_STEPS``; a sweep at
another budget gives a record ``probe-alignment-<steps>-steps`` without
``seed_claim``; at ``design.FULL_STEPS`` it cites :data:`FULL_EVIDENCE`.
Every cell (relation, distance, offset) of the design holds the same number
of items, so a mean over cells is a mean over items.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from ...probes.alignment import design
from ...probes.alignment.grammar import RELATIONS
from ...results import ledger
from ...stats import bootstrap_interval, paired_test

#: The record's id.
RECORD_ID = "probe-alignment"
#: The claim as the probe tests it (chapter 1's words, then the probe's).
CLAIM = (
    "Grammar is mostly about relative order, so relative positions suit "
    "language: on minimal pairs inside L whose grammaticality is fixed by "
    "relative order, a relative model is right more often than an absolute "
    "one, whatever the offset."
)
#: The accuracy of a guess between the two members of a pair.
CHANCE = 0.5
#: Where the evidence is, relative to the results folder.
EVIDENCE = "probes/alignment.json"
#: Where the same sweep at ``design.FULL_STEPS`` is (``make probe-alignment``).
FULL_EVIDENCE = "probes/alignment_full.json"


def _cells(result: dict[str, Any], arm: str, relation: str) -> list[dict[str, Any]]:
    rows = [r for r in result["summary"]["cells"]
            if r["arm"] == arm and r["relation"] == relation]
    if not rows:
        raise ValueError(f"result must hold cells of arm {arm!r} on relation "
                         f"{relation!r}")
    return rows


def relation_values(result: dict[str, Any], arm: str,
                    relations: tuple[str, ...] = RELATIONS) -> list[float]:
    """Per seed, ``arm``'s accuracy on the items of ``relations``.

    Shapes:
        output: ``(seeds,)``
    """
    rows = [row for rel in relations for row in _cells(result, arm, rel)]
    return [statistics.fmean(seed) for seed in zip(*(r["values"] for r in rows))]


def relation_spread(result: dict[str, Any], arm: str, relation: str) -> list[float]:
    """Per seed, the largest minus the smallest of ``arm``'s accuracies at the
    offsets on ``relation``'s items (distances pooled).

    Shapes:
        output: ``(seeds,)``
    """
    by_offset: dict[int, list[list[float]]] = defaultdict(list)
    for row in _cells(result, arm, relation):
        by_offset[row["offset"]].append(row["values"])
    per_offset = [[statistics.fmean(seed) for seed in zip(*rows)]
                  for rows in by_offset.values()]  # (offsets, seeds)
    return [max(seed) - min(seed) for seed in zip(*per_offset)]


def _low(values: list[float]) -> float:
    return bootstrap_interval(values)[0] if len(values) > 1 else values[0]


def _high(values: list[float]) -> float:
    return bootstrap_interval(values)[1] if len(values) > 1 else values[0]


def learned(values: list[float]) -> bool:
    """Whether accuracies ``values`` (one per seed) lie above chance: the lower
    end of their 95% bootstrap interval above :data:`CHANCE`."""
    return _low(values) > CHANCE


def _absolute(result: dict[str, Any]) -> list[str]:
    found = [a for a in design.ABSOLUTE_ARMS if a in result["grid"]["arm"]]
    if not found:
        raise ValueError("result must hold an absolute arm, got arms "
                         f"{result['grid']['arm']}")
    return found


def arm_passes(result: dict[str, Any], arm: str, relation: str) -> dict[str, Any]:
    """Whether ``arm`` passes the half ``relation``, with the numbers behind it."""
    values = relation_values(result, arm, (relation,))
    beats = {}
    for other in _absolute(result):
        test = paired_test(values, relation_values(result, other, (relation,)))
        beats[other] = test["interval"][0] > 0
    high = _high(relation_spread(result, arm, relation))
    flat = high < design.OFFSET_TOLERANCE
    knows = learned(values)
    return {"mean": statistics.fmean(values), "beats": beats, "spread_high": high,
            "flat": flat, "learned": knows,
            "passes": all(beats.values()) and flat and knows}


def verdict_of(passed: dict[str, bool]) -> str:
    """``fails`` unless the main arm passes; ``holds`` when every arm does."""
    if design.MAIN_ARM not in passed:
        raise ValueError(f"passed must judge {design.MAIN_ARM!r}, got {sorted(passed)}")
    if not passed[design.MAIN_ARM]:
        return "fails"
    return "holds" if all(passed.values()) else "qualified"


def half_verdict(result: dict[str, Any], relation: str) -> dict[str, Any]:
    """The verdict of the half ``relation``: ``verdict``, ``reason`` (why it is
    untested, else ``None``) and ``judged`` (per relative arm, :func:`arm_passes`)."""
    if relation not in RELATIONS:
        raise ValueError(f"relation must be one of {RELATIONS}, got {relation!r}")
    steps = result["config"]["steps"]
    arms = result["grid"]["arm"]
    if not any(learned(relation_values(result, a, (relation,))) for a in arms):
        return {"verdict": "untested", "judged": {},
                "reason": f"no arm learned {relation} at {steps} steps"}
    relative = [a for a in design.RELATIVE_ARMS if a in arms]
    judged = {arm: arm_passes(result, arm, relation) for arm in relative}
    verdict = verdict_of({arm: j["passes"] for arm, j in judged.items()})
    return {"verdict": verdict, "reason": None, "judged": judged}


def combine_halves(verdicts: list[str]) -> str:
    """The claim's verdict from its halves': the untested ones left out."""
    tested = [v for v in verdicts if v != "untested"]
    if not tested:
        return "untested"
    if all(v == "holds" for v in tested):
        return "holds"
    return "fails" if all(v == "fails" for v in tested) else "qualified"


def advantage(result: dict[str, Any], arm: str, other: str,
              relations: tuple[str, ...] = RELATIONS) -> list[float]:
    """Per seed, ``arm``'s accuracy on ``relations`` minus ``other``'s."""
    a = relation_values(result, arm, relations)
    b = relation_values(result, other, relations)
    if len(a) != len(b):
        raise ValueError(f"{arm} and {other} must share their seeds, got "
                         f"{len(a)} and {len(b)} values")
    return [x - y for x, y in zip(a, b)]


def _half_text(relation: str, half: dict[str, Any],
               rivals: dict[str, list[float]]) -> str:
    if half["verdict"] == "untested":
        return f"{relation.capitalize()}: untested ({half['reason']})."
    judged = half["judged"]
    main = judged[design.MAIN_ARM]
    passing = [a for a, j in judged.items() if j["passes"]] or ["none"]
    failing = [a for a, j in judged.items() if not j["passes"]] or ["none"]
    others = ", ".join(f"{a} {100 * statistics.fmean(v):.1f}%"
                       for a, v in rivals.items())
    return (
        f"{relation.capitalize()}: {half['verdict']}; DeBERTa with k >= L right "
        f"on {100 * main['mean']:.1f}% of its items, {others}; the offsets' "
        f"spread of its accuracy at most {main['spread_high']:.3f} (tolerance "
        f"{design.OFFSET_TOLERANCE}); relative arms passing: "
        f"{', '.join(passing)}; not passing: {', '.join(failing)}."
    )


def alignment_record(result: dict[str, Any]) -> dict[str, Any]:
    """The ledger record of the probe, from its JSON.

    Shapes:
        output: a record dict (``ledger.check_record``), with ``prediction``
        and ``falsifier``
    """
    halves = {rel: half_verdict(result, rel) for rel in RELATIONS}
    verdict = combine_halves([h["verdict"] for h in halves.values()])
    steps = result["config"]["steps"]
    verdict_budget = steps == design.VERDICT_STEPS
    tested = tuple(r for r, h in halves.items() if h["verdict"] != "untested")
    scored = tested or RELATIONS
    absolute = _absolute(result)
    values_of = {a: relation_values(result, a, scored) for a in absolute}
    rival = max(absolute, key=lambda a: statistics.fmean(values_of[a]))
    values = advantage(result, design.MAIN_ARM, rival, scored)
    if len(result["grid"]["seed"]) < ledger.INTERVAL_SEEDS:
        verdict = "untested"
    texts = []
    for rel, half in halves.items():
        rivals = {a: relation_values(result, a, (rel,)) for a in absolute}
        texts.append(_half_text(rel, half, rivals))
    judged_on = (" and ".join(tested) + (" judged alone" if len(tested) == 1
                                         else " judged")) if tested else "no half"
    mechanism = (
        f"Measured after {steps} steps, seeds: {len(values)}; {judged_on}. "
        + " ".join(texts) + f" {design.MECHANISM}"
    )
    record: dict[str, Any] = {
        "id": RECORD_ID if verdict_budget else f"{RECORD_ID}-{steps}-steps",
        "chapter": design.CHAPTER,
        "claim": CLAIM,
        "verdict": verdict,
        "mechanism": mechanism,
        "evidence": {"file": FULL_EVIDENCE if steps == design.FULL_STEPS else EVIDENCE,
                     "keys": ["summary", "comparisons"]},
        "seeds": len(values),
        "prediction": design.PREDICTION,
        "falsifier": design.FALSIFIER,
    }
    if verdict_budget:  # the other budget's record is reported, not the claim's
        record["seed_claim"] = design.SEED_CLAIM
    if len(values) >= ledger.INTERVAL_SEEDS:
        record["interval"] = bootstrap_interval(values)
    return ledger.check_record(record)


__all__ = ["CHANCE", "CLAIM", "EVIDENCE", "FULL_EVIDENCE", "RECORD_ID", "advantage",
           "alignment_record", "arm_passes", "combine_halves", "half_verdict", "learned",
           "relation_spread", "relation_values", "verdict_of"]
