"""The first pass, kept as history: chapters 9 and 10's rules on the archived sweeps.

Before the protocol, every sweep of chapters 9 and 10 ran with one untuned
learning rate per (setting, task, scheme) and five seeds (sweep schema 2). Its
files are archived, names unchanged, in the results subfolder :data:`FOLDER`.
:func:`records` runs every rule of ``RULES`` on them, the four mechanism rules
included (``untested`` there), and files each record as ``first-pass-<id>``,
chapter 12 (``protocol.CHAPTER``), its evidence in the subfolder, so chapter 12
can set each verdict of chapters 9 and 10 beside the one it moved from
(:func:`verdict_changes`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from .protocol import CHAPTER, in_folder, run_rules

#: The results subfolder of the first pass's sweeps.
FOLDER = "first_pass"
#: The prefix of a first-pass record's id.
PREFIX = "first-pass-"


def as_first_pass(record: dict[str, Any]) -> dict[str, Any]:
    """A record of a rule, filed as the first pass's: chapter 12, prefixed, checked.

    Shapes:
        record, output: record dicts
    """
    return in_folder(record, FOLDER, id=PREFIX + record["id"], chapter=CHAPTER)


def verdict_changes(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each first-pass record beside the protocol's record of the same rule.

    One row per record whose id starts with :data:`PREFIX` and whose protocol
    record (the id without the prefix) is in ``records`` (the ledger), in the
    ledger's order: ``id`` (the protocol's), ``claim`` (the protocol's
    sentence), ``first pass`` and ``protocol`` (verdict and seeds), ``interval``
    (the protocol's, in percent), ``changed`` (whether the verdicts differ).

    Shapes:
        output: one dict per row
    """
    by_id = {r["id"]: r for r in records}
    rows = []
    for first in records:
        now = by_id.get(first["id"].removeprefix(PREFIX))
        if not first["id"].startswith(PREFIX) or now is None:
            continue
        low, high = now.get("interval", (math.nan, math.nan))
        rows.append({
            "id": now["id"],
            "claim": now["claim"],
            "first pass": f"{first['verdict']} ({first['seeds']} seeds)",
            "protocol": f"{now['verdict']} ({now['seeds']} seeds)",
            "interval": f"{100 * low:.0f} to {100 * high:.0f}%",
            "changed": first["verdict"] != now["verdict"],
        })
    return rows


def records(folder: str | Path) -> list[dict[str, Any]]:
    """Every rule's record on the sweeps in ``folder / FOLDER``, as the first pass's.

    Shapes:
        output: one record dict per rule whose sweeps are all there
    """
    return [as_first_pass(r) for r in run_rules(Path(folder) / FOLDER)]


__all__ = ["FOLDER", "PREFIX", "as_first_pass", "records", "verdict_changes"]
