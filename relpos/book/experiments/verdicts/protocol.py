"""Chapter 12's verdicts: chapters 9 and 10's rules applied to the protocol's sweeps.

The protocol reruns every sweep of chapters 9 and 10 with the learning rate
tuned per cell until it is interior to its grid, ten measured seeds and a
bootstrap interval per cell; its files keep their names in the subfolder
:data:`FOLDER` of the results. :func:`records` runs every rule of
``RULES`` (the same functions, thresholds and subjects as the first pass) on
those files and files each record as ``protocol-<first-pass id>``, chapter
:data:`CHAPTER`, its evidence file in the subfolder. A rule that reads a sweep
the protocol has not yet written gives no record (the record is missing, not
guessed). The records whose first-pass verdict is ``untested`` (a mechanism
read off a correlation, :data:`TESTED_ELSEWHERE`) are not rerun: the
interventions (``verdicts.interventions``) test those causes.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ...results import ledger
from .rules import RULES, Sweeps

#: The results subfolder of the protocol's sweeps.
FOLDER = "protocol"
#: The chapter that states the protocol's verdicts.
CHAPTER = 12
#: The prefix of a protocol record's id.
PREFIX = "protocol-"
#: First-pass records of a mechanism, tested by an intervention instead.
TESTED_ELSEWHERE = ("buckets-row-0", "sinusoid-scale", "two-hop-path", "causal-t5-why")


class NotYetRun(LookupError):
    """A rule asked for a sweep file that the protocol folder does not hold."""


class ProtocolSweeps(Sweeps):
    """The protocol folder's sweeps; a file not there raises :class:`NotYetRun`."""

    def __call__(self, name: str) -> dict[str, Any]:
        if not (self.folder / name).is_file():
            raise NotYetRun(name)
        return super().__call__(name)


def as_protocol(record: dict[str, Any]) -> dict[str, Any]:
    """A first-pass record of the same rule filed as chapter 12's, checked.

    Shapes:
        record, output: record dicts
    """
    evidence = record["evidence"]
    moved = {
        **record,
        "id": PREFIX + record["id"],
        "chapter": CHAPTER,
        "evidence": {"file": f"{FOLDER}/{evidence['file']}",
                     "keys": list(evidence["keys"])},
    }
    return ledger.check_record(moved)


def verdict_changes(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each protocol record beside its first-pass record: the rows of a table.

    One row per record whose id starts with :data:`PREFIX` and whose first-pass
    record is in ``records`` (the ledger), in the ledger's order: ``id`` (the
    first pass's), ``claim`` (the protocol's sentence), ``first pass`` and
    ``protocol`` (verdict and seeds), ``interval`` (the protocol's, in percent),
    ``changed`` (whether the verdicts differ).

    Shapes:
        output: one dict per row
    """
    by_id = {r["id"]: r for r in records}
    rows = []
    for record in records:
        first = by_id.get(record["id"].removeprefix(PREFIX))
        if not record["id"].startswith(PREFIX) or first is None:
            continue
        low, high = record.get("interval", (math.nan, math.nan))
        rows.append({
            "id": first["id"],
            "claim": record["claim"],
            "first pass": f"{first['verdict']} ({first['seeds']} seeds)",
            "protocol": f"{record['verdict']} ({record['seeds']} seeds)",
            "interval": f"{100 * low:.0f} to {100 * high:.0f}%",
            "changed": first["verdict"] != record["verdict"],
        })
    return rows


def records(folder: str | Path) -> list[dict[str, Any]]:
    """Every rerun record, from the sweeps in ``folder / FOLDER``.

    Shapes:
        output: one record dict per rule whose sweeps are all there
    """
    sweeps = ProtocolSweeps(Path(folder) / FOLDER)
    found = []
    for each in RULES:
        try:
            record = each(sweeps)
        except NotYetRun:
            continue
        if record["id"] not in TESTED_ELSEWHERE:
            found.append(as_protocol(record))
    return found


__all__ = [
    "CHAPTER",
    "FOLDER",
    "NotYetRun",
    "PREFIX",
    "ProtocolSweeps",
    "TESTED_ELSEWHERE",
    "as_protocol",
    "records",
    "verdict_changes",
]
