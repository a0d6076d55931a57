"""Claim 1's verdict from the positions probe (``probes/positions.json``).

The rule is the probe's falsifier (``probes.positions.design``), applied per
relative scheme (``ledger.RELATIVE_SCHEMES`` among the arms) to two parts:

- **transfer**: a scheme that learned the first half (a mean of :data:`FIT`)
  *holds* when its gap's 95% interval lies within ``MARGIN`` of zero and its
  gap is smaller than the absolute table's, seed by seed (``paired_test``, the
  interval above 0); it *fails* when its gap's interval lies wholly above
  ``MARGIN`` or the paired interval does not lie above 0; *qualified* between;
  *untested* when it did not learn the first half (or the absolute table did
  not, so there is nothing to compare with).
- **data**: a scheme that learns the rule at the largest size (a mean of
  :data:`FIT`) *holds* when it scores above the absolute table at 8 and at 16
  sequences, both paired intervals above 0, and *fails* otherwise; *untested*
  when it does not learn the rule at all.

A scheme's verdict combines its two parts (:func:`both`: a failed part fails
it, untested parts are left out). The claim's: *untested* when DeBERTa is, *fails* when DeBERTa
fails, *holds* when every tested relative scheme holds and the absolute
table's gap is at least ``ABSOLUTE_GAP`` (its interval above it), else
*qualified*. Not added to the ledger's build until the probe's results exist.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from ...results import ledger
from ...stats import bootstrap_interval, paired_test
from ...probes.positions import design
from ..sweep import load_sweep, summary_cells
from .rules import FIT, combine, make_record

#: The chapter whose section states the record (chapter 14, the four claims probed).
CHAPTER = 14
#: The record's id.
ID = "probe-positions"
#: Where the record's evidence lives among the results.
EVIDENCE = ("probes/positions.json", ["transfer", "data_efficiency", "design"])
#: The claim as the probe tests it (chapter 1's words, then the probe's).
CLAIM = (
    "What a relative model learns about a distance at one place applies "
    "everywhere inside L: a rule supervised in the first half of each window "
    "serves in the second, and it is learned from fewer sequences than by a "
    "learned absolute table."
)
#: The sizes at which "needs less data" is judged.
FEW = (8, 16)


def _by_seed(runs: list[dict[str, Any]], scheme: str, field: str) -> list[float]:
    mine = sorted(
        (r for r in runs if r["scheme"] == scheme and r["supervision"] == "first"),
        key=lambda r: r["seed"],
    )
    return [float(r[field]) for r in mine]


def transfer_rows(result: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Per arm: each seed's first-half, second-half accuracy and gap (first
    supervision), their means, the gap's interval and, beside the absolute
    table, the paired test of absolute's gap minus the arm's.

    Shapes:
        output: ``{scheme: {"first", "second", "gap": (seeds,), "mean_first",
        "mean_gap", "gap_interval", "paired" or None}}``
    """
    runs = result["transfer"]["runs"]
    schemes = list(dict.fromkeys(r["scheme"] for r in runs))
    absolute = _by_seed(runs, "absolute", "gap") if "absolute" in schemes else None
    rows = {}
    for scheme in schemes:
        gaps = _by_seed(runs, scheme, "gap")
        first = _by_seed(runs, scheme, "first")
        paired = None
        if absolute is not None and scheme != "absolute" and len(gaps) > 1:
            paired = paired_test(absolute, gaps)
        rows[scheme] = {
            "first": first,
            "second": _by_seed(runs, scheme, "second"),
            "gap": gaps,
            "mean_first": statistics.fmean(first),
            "mean_gap": statistics.fmean(gaps),
            "gap_interval": bootstrap_interval(gaps) if len(gaps) > 1 else None,
            "paired": paired,
        }
    return rows


def transfer_verdict(row: Mapping[str, Any], absolute: Mapping[str, Any]) -> str:
    """One relative scheme's transfer verdict (module docstring).

    Shapes:
        row, absolute: rows of :func:`transfer_rows`; output: a verdict
    """
    if row["mean_first"] < FIT or absolute["mean_first"] < FIT:
        return "untested"
    low, high = row["gap_interval"]
    beats = row["paired"]["interval"][0] > 0
    if low > design.MARGIN or not beats:
        return "fails"
    return "holds" if high <= design.MARGIN else "qualified"


def data_rows(result: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Per scheme: accuracy at ``L`` per seed at each size, and the paired test
    of the scheme minus the absolute table at each of :data:`FEW`.

    Shapes:
        output: ``{scheme: {"values": {size: (seeds,)}, "largest": mean,
        "paired": {size: paired_test or None}}}``
    """
    sweep = load_sweep(result["data_efficiency"], name="data_efficiency")
    cells = summary_cells(sweep)
    grid = sweep["grid"]
    setting, task = grid["setting"][0], grid["task"][0]
    length = sweep["config"]["train_length"]
    sizes = sorted(grid["train_size"])

    def values(scheme: str, size: int) -> list[float]:
        return list(cells[setting, task, scheme, size, length]["values"])

    rows = {}
    for scheme in grid["scheme"]:
        paired = {
            size: paired_test(values(scheme, size), values("absolute", size))
            if scheme != "absolute" and size in sizes
            else None
            for size in FEW
        }
        rows[scheme] = {
            "values": {size: values(scheme, size) for size in sizes},
            "largest": statistics.fmean(values(scheme, sizes[-1])),
            "paired": paired,
        }
    return rows


def data_verdict(row: Mapping[str, Any]) -> str:
    """One relative scheme's data verdict: above absolute at 8 and at 16.

    Shapes:
        row: a row of :func:`data_rows`; output: a verdict
    """
    if row["largest"] < FIT:
        return "untested"
    tests = [row["paired"][size] for size in FEW]
    if any(t is None for t in tests):
        return "untested"
    return "holds" if all(t["interval"][0] > 0 for t in tests) else "fails"


def scheme_verdicts(result: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """Every relative arm's transfer, data and combined verdict.

    Shapes:
        output: ``{scheme: {"transfer", "data", "verdict"}}``
    """
    transfer = transfer_rows(result)
    data = data_rows(result)
    if "absolute" not in transfer or "absolute" not in data:
        raise ValueError("result must hold the absolute arm in both parts")
    found = {}
    for scheme in ledger.RELATIVE_SCHEMES:
        if scheme not in transfer and scheme not in data:
            continue
        parts = {
            "transfer": transfer_verdict(transfer[scheme], transfer["absolute"])
            if scheme in transfer
            else "untested",
            "data": data_verdict(data[scheme]) if scheme in data else "untested",
        }
        found[scheme] = {**parts, "verdict": both(list(parts.values()))}
    return found


def both(parts: list[str]) -> str:
    """A scheme's verdict from its parts': a failed test fails it (the
    falsifier), untested parts are left out, ``rules.combine`` otherwise.

    Shapes:
        parts: one verdict per part; output: a verdict
    """
    tested = [v for v in parts if v != "untested"]
    if not tested:
        return "untested"
    return "fails" if "fails" in tested else combine(tested)


def claim_verdict(
    verdicts: Mapping[str, Mapping[str, str]], absolute: Mapping[str, Any]
) -> str:
    """The claim's verdict from every scheme's and the absolute table's row.

    Shapes:
        verdicts: :func:`scheme_verdicts`; absolute: its :func:`transfer_rows`
        row; output: a verdict
    """
    if "deberta" not in verdicts:
        raise ValueError(f"verdicts must judge 'deberta', got {sorted(verdicts)}")
    deberta = verdicts["deberta"]["verdict"]
    if deberta in ("untested", "fails"):
        return deberta
    tested = [v["verdict"] for v in verdicts.values() if v["verdict"] != "untested"]
    interval = absolute["gap_interval"]
    wide = interval is not None and interval[0] >= design.ABSOLUTE_GAP
    return "holds" if all(v == "holds" for v in tested) and wide else "qualified"


def _names(verdicts: Mapping[str, Mapping[str, str]], word: str) -> str:
    found = [s for s, v in verdicts.items() if v["verdict"] == word]
    # "no scheme", never "none": that is the name of the arm without positions
    return ", ".join(found) if found else "no scheme"


def _points(value: float) -> str:
    return str(round(100 * value) + 0)


def record(result: Mapping[str, Any]) -> dict[str, Any]:
    """The ledger record of claim 1 from the probe's JSON (``seed_claim``
    ``generalisation``); its interval is DeBERTa's transfer gap over the seeds.

    Shapes:
        output: a record dict (``ledger.check_record``)
    """
    transfer = transfer_rows(result)
    verdicts = scheme_verdicts(result)
    absolute = transfer["absolute"]
    rolled = [r["rolled"] for r in result["transfer"]["runs"]
              if r["scheme"] == "absolute" and r["supervision"] == "first"]
    moved = statistics.fmean(r["mirrored"] for r in rolled)
    stayed = statistics.fmean(r["first"] for r in rolled)
    deberta = transfer["deberta"]
    follows = "moves with them" if moved > stayed else "does not move with them"
    mechanism = (
        f"Holds: {_names(verdicts, 'holds')}; qualified: "
        f"{_names(verdicts, 'qualified')}; fails: {_names(verdicts, 'fails')}; "
        f"untested: {_names(verdicts, 'untested')}. DeBERTa's gap is "
        f"{_points(deberta['mean_gap'])} points, the absolute table's "
        f"{_points(absolute['mean_gap'])}. Rolling the absolute table's rows by "
        f"L/2 at test time, its skill {follows}: {_points(moved)}% at the "
        f"second-half positions whose query and key read trained rows, "
        f"{_points(stayed)}% in the first half (as trained: "
        f"{_points(absolute['mean_first'])}% and "
        f"{_points(statistics.fmean(absolute['second']))}%). A relative score "
        "depends on i - j alone, so the parameters a first-half query trained "
        "are the ones a second-half query reads; an absolute row serves only "
        "where it was supervised."
    )
    made = make_record(
        ID,
        CHAPTER,
        CLAIM,
        claim_verdict(verdicts, absolute),
        mechanism,
        EVIDENCE,
        deberta["gap"],
        intervention="the absolute table's rows rolled by L/2 at test time, so "
        "the rows the loss trained sit under the unsupervised half",
    )
    made.update(
        seed_claim="generalisation",
        prediction=design.PREDICTION,
        falsifier=design.FALSIFIER,
    )
    return ledger.check_record(made)


__all__ = [
    "both",
    "CHAPTER",
    "CLAIM",
    "EVIDENCE",
    "FEW",
    "ID",
    "claim_verdict",
    "data_rows",
    "data_verdict",
    "record",
    "scheme_verdicts",
    "transfer_rows",
    "transfer_verdict",
]
