"""The one table of chapter 1's four claims, generated from the ledger.

Chapter 1 states the four claims made for relative positions; chapter 14
tests each with a probe built for it (``verdicts.probes``), whose record in
the ledger carries the claim's ``seed_claim``. :func:`claims_rows` gives one
row per claim: the claim in chapter 1's words (:data:`CLAIM_WORDS`), the
probe's verdict, the probe (its record id), its seeds and the 95% interval
its verdict rests on, saying of what. :func:`claims_table` renders them in
Markdown; chapter 1 shows the table and chapters 9 to 13 cite it. For the
sections of chapter 14 that present each probe, :func:`probe_design` renders
its prediction and falsifier (from its design module, before any result) and
:func:`probe_result` its record: the verdict, seeds, interval and what was
measured, or that its sweep is under way.

    >>> rows = claims_rows()
    >>> [r["verdict"] for r in rows]  # doctest: +SKIP
    ['untested', 'untested', 'fails', 'untested']
"""

from __future__ import annotations

from typing import Any

from ..experiments.verdicts.probes import PROBES, Probe, interval_of
from .ledger import SEED_CLAIMS, load_ledger, verdict_table

#: The four claims in chapter 1's words (its section "Four claims").
CLAIM_WORDS = {
    "generalisation": "What is learned about a distance at one place applies "
    "everywhere.",
    "length": "Relative models handle sequences longer than those seen in "
    "training.",
    "linguistic": "Grammar is mostly about relative order, so relative "
    "positions suit language.",
    "gradient": "Since position and content never add up to one vector, "
    "position gradients cannot interfere with content learning.",
}
#: The table's columns.
COLUMNS = ("claim", "verdict", "probe", "seeds", "interval")


def _interval(record: dict[str, Any]) -> str:
    if "interval" not in record:
        if record["seeds"] == 0:
            return "none yet: the probe has not finished"
        return f"none: {record['seeds']} seeds, fewer than ten"
    low, high = record["interval"]
    return f"[{low:+.3f}, {high:+.3f}]: {interval_of(record['id'])}"


def claims_rows(records: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """One row per claim of chapter 1, in :data:`SEED_CLAIMS` order.

    ``records`` defaults to the committed ledger. Each row: ``claim`` (chapter
    1's words), ``verdict``, ``probe`` (the record id), ``seeds`` and
    ``interval`` (``[low, high]: of what``, or why there is none). A claim with
    no record raises ValueError.

    Shapes:
        output: four dicts
    """
    records = load_ledger() if records is None else records
    by_claim = {r["seed_claim"]: r for r in records if "seed_claim" in r}
    missing = [name for name in SEED_CLAIMS if name not in by_claim]
    if missing:
        raise ValueError(f"records must hold a record per seed claim, missing "
                         f"{missing}")
    return [
        {
            "claim": CLAIM_WORDS[name],
            "verdict": by_claim[name]["verdict"],
            "probe": by_claim[name]["id"],
            "seeds": by_claim[name]["seeds"],
            "interval": _interval(by_claim[name]),
        }
        for name in SEED_CLAIMS
    ]


def _probe(record_id: str) -> Probe:
    for probe in PROBES:
        if probe.id == record_id:
            return probe
    raise ValueError(f"record_id must be one of {[p.id for p in PROBES]}, "
                     f"got {record_id!r}")


def probe_design(record_id: str, constants: dict[str, Any] | None = None) -> str:
    """The probe's prediction and falsifier as Markdown, each constant named in
    them (``OFFSET_TOLERANCE``...) replaced by its value from ``constants``."""
    probe = _probe(record_id)
    text = f"**Prediction.** {probe.prediction}\n\n**Falsifier.** {probe.falsifier}"
    for name, value in (constants or {}).items():
        text = text.replace(name, str(value))
    return text


def probe_result(record_id: str, records: list[dict[str, Any]] | None = None) -> str:
    """The probe's result as Markdown, from its ledger record: that its sweep is
    under way, or its verdict, seeds, interval and what it measured."""
    probe = _probe(record_id)
    records = load_ledger() if records is None else records
    record = {r["id"]: r for r in records}[record_id]
    if record["seeds"] == 0:
        return ("**Result.** The sweep is under way; the verdict appears in the "
                "ledger, and here, when it finishes.")
    measured = record["mechanism"].replace(probe.mechanism, "").strip()
    return (f"**Result: {record['verdict']}**, {record['seeds']} seeds; interval "
            f"{_interval(record)}. {measured}")


def claims_table(records: list[dict[str, Any]] | None = None) -> str:
    """:func:`claims_rows` as a Markdown table (the verdict in bold).

    Shapes:
        output: six lines joined by newlines
    """
    return verdict_table(claims_rows(records), COLUMNS)


__all__ = ["CLAIM_WORDS", "COLUMNS", "claims_rows", "claims_table", "probe_design",
           "probe_result"]
