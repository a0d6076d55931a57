"""The verdict of claim 4's probe ("cleaner gradient flow") from its result file.

``results/probes/gradients.json`` (``make probe-gradients``) holds, per arm,
the content loss of ten seeds trained with and without a position objective.
The rule reads the runs (the summary is recomputed from them, never taken as
stored) and applies the verdict written before the runs
(``relpos.book.probes.gradients.design``): a difference is *shown* when its
paired test's p-value is below ``ALPHA`` and its 95% bootstrap interval
excludes zero (``verdicts.interventions.shown``).

- ``untested``: the position objective is not matched (an arm's mean test
  loss above ``AUX_TARGET``) or a cell's rate is at an edge of its grid;
- ``holds``: the absolute arm's cost is shown above zero and above the cost
  of every untied arm;
- ``fails``: it is shown above no untied arm's cost;
- ``qualified``: otherwise.

The record's ``values`` (its interval) are the per-seed differences
``cost(absolute) - cost(arm)`` of the untied arm whose difference has the
lower interval: the comparison the verdict turns on. Its mechanism states both
halves of the claim: whether position gradients interfere (a cosine on the
shared parameters whose interval excludes zero) and whether the interference
costs content. Not in the ledger's build yet: :func:`probe_record` is tested on
synthetic results.
"""

from __future__ import annotations

from typing import Any

from ...probes.gradients import design
from ...probes.gradients.analysis import TIED, summarize
from ...stats import excludes
from .interventions import shown
from .rules import make_record

#: The chapter that states the claim's verdict (chapter 14, the four claims probed).
CHAPTER = 14
#: The result file, relative to ``relpos/book/results``.
FILE = "probes/gradients.json"
ID = "probe-gradient"
CLAIM = (
    "Since position and content never add up to one vector, position gradients "
    "cannot interfere with content learning (chapter 1, claim 4)."
)
INTERVENTION = (
    "Positions enter the same byte model in three ways (added to the input, "
    "an untied attention term, DeBERTa's relative terms); each is trained on "
    "next-byte prediction with and without a position objective (recall the "
    "byte 3 back), rates tuned per cell, ten seeds paired."
)


def interferes(row: dict[str, Any]) -> bool:
    """Whether any group's mean cosine has an interval that excludes zero."""
    return any(excludes(c["interval"], 0.0) for c in row["cosine"].values())


def _cosines(row: dict[str, Any]) -> str:
    return ", ".join(
        f"{group} {c['mean']:+.3f} [{c['interval'][0]:+.3f}, {c['interval'][1]:+.3f}]"
        for group, c in row["cosine"].items()
    )


def mechanism_text(summary: dict[str, Any]) -> str:
    """Both halves of the claim, arm by arm, with the numbers they rest on."""
    parts = []
    for arm, row in summary["arms"].items():
        cost = row["cost_test"]
        word = {1: "costs", -1: "helps", 0: "costs nothing shown to"}[shown(cost)]
        interference = "interfere" if interferes(row) else "do not interfere"
        parts.append(
            f"{arm}: the position objective (test loss {row['aux']['mean']:.3f} "
            f"nats) {word} content ({cost['mean']:+.4f} nats per byte "
            f"[{cost['interval'][0]:+.4f}, {cost['interval'][1]:+.4f}], "
            f"p = {cost['p_value']:.3f}); gradient cosines {_cosines(row)}, so "
            f"position gradients {interference}"
        )
    return "; ".join(parts) + "."


def verdict_of(summary: dict[str, Any]) -> tuple[str, str | None]:
    """The verdict word and the untied arm the verdict turns on (None if none).

    Shapes:
        summary: ``analysis.summarize``'s dict
    """
    untied = [a for a in summary["arms"] if a != TIED]
    if TIED not in summary["arms"] or not untied:
        raise ValueError(f"summary must hold arm {TIED!r} and an untied arm")
    diffs = {a: summary["differences"][f"{TIED}-{a}"] for a in untied}
    binding = min(untied, key=lambda a: diffs[a]["interval"][0])
    if not summary["matched"] or not summary["bracketed"]:
        return "untested", binding
    above = [shown(diffs[a]) == 1 for a in untied]
    tied_cost = shown(summary["arms"][TIED]["cost_test"]) == 1
    if all(above) and tied_cost:
        return "holds", binding
    if not any(above):
        return "fails", binding
    return "qualified", binding


def probe_record(result: dict[str, Any]) -> dict[str, Any]:
    """The ledger-style record of the probe result ``result`` (its JSON).

    Shapes:
        output: a record (``ledger.check_record``'s fields) with ``seed_claim``,
        ``prediction`` and ``falsifier``
    """
    summary = summarize(result)
    verdict, binding = verdict_of(summary)
    diff = summary["differences"][f"{TIED}-{binding}"]
    tied = summary["arms"][TIED]["cost"]["values"]
    other = summary["arms"][binding]["cost"]["values"]
    values = [a - b for a, b in zip(tied, other)]
    reasons = []
    if not summary["matched"]:
        reasons.append(
            f"the position objective is not matched (target {design.AUX_TARGET} nats)"
        )
    if not summary["bracketed"]:
        reasons.append("a cell's learning rate is at an edge of its grid")
    mechanism = (
        f"cost(absolute) - cost({binding}) = {diff['mean']:+.4f} nats per byte "
        f"[{diff['interval'][0]:+.4f}, {diff['interval'][1]:+.4f}], p = "
        f"{diff['p_value']:.3f}. " + mechanism_text(summary)
    )
    if reasons:
        mechanism = "Untested: " + " and ".join(reasons) + ". " + mechanism
    record = make_record(
        ID,
        CHAPTER,
        CLAIM,
        verdict,
        mechanism,
        (FILE, ["summary", "runs", "tuning"]),
        values,
        intervention=INTERVENTION,
    )
    return {
        **record,
        "seed_claim": "gradient",
        "prediction": design.PREDICTION,
        "falsifier": design.FALSIFIER,
    }


__all__ = [
    "CHAPTER",
    "CLAIM",
    "FILE",
    "ID",
    "INTERVENTION",
    "interferes",
    "mechanism_text",
    "probe_record",
    "verdict_of",
]
