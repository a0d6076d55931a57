"""Chapters 9 and 10's verdicts, computed on the protocol's sweeps.

The protocol runs every sweep of chapters 9 and 10 with the learning rate tuned
per cell until it is interior to its grid, ten measured seeds and a bootstrap
interval per cell; its files keep their names in the subfolder :data:`FOLDER`
of the results. :func:`records` runs every rule of ``RULES`` on those files and
files each record under its own id and chapter, its evidence file in the
subfolder (``protocol/sweep.json``). A rule that reads a sweep the folder does
not hold gives no record (the record is missing, not guessed). The rules that
read a mechanism off a correlation (:data:`TESTED_ELSEWHERE`, ``untested`` by
construction) are not run here: the interventions of chapter :data:`CHAPTER`
(``verdicts.interventions``) test those causes. The first pass, the same rules
on the archived sweeps, is ``verdicts.first_pass``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...results import ledger
from .rules import RULES, Sweeps

#: The results subfolder of the protocol's sweeps.
FOLDER = "protocol"
#: The chapter of the protocol's method, the interventions and the first pass.
CHAPTER = 12
#: Records of a mechanism read off a correlation, tested by an intervention instead.
TESTED_ELSEWHERE = ("buckets-row-0", "sinusoid-scale", "two-hop-path", "causal-t5-why")


class NotYetRun(LookupError):
    """A rule asked for a sweep file that its folder does not hold."""


class FolderSweeps(Sweeps):
    """The sweeps of a results subfolder; a file not there raises :class:`NotYetRun`."""

    def __call__(self, name: str) -> dict[str, Any]:
        if not (self.folder / name).is_file():
            raise NotYetRun(name)
        return super().__call__(name)


def in_folder(record: dict[str, Any], folder: str, **changes: Any) -> dict[str, Any]:
    """``record`` with its evidence file in the subfolder ``folder``, checked.

    ``changes`` replace other fields (``id``, ``chapter``).

    Shapes:
        record, output: record dicts
    """
    evidence = record["evidence"]
    moved = {
        **record,
        **changes,
        "evidence": {"file": f"{folder}/{evidence['file']}",
                     "keys": list(evidence["keys"])},
    }
    return ledger.check_record(moved)


def run_rules(folder: str | Path, skip: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Every rule's record on the sweeps in ``folder``, but those of ``skip``.

    Evidence files are named as the rules name them (``sweep.json``).

    Shapes:
        output: one record dict per rule whose sweeps are all there
    """
    sweeps = FolderSweeps(folder)
    found = []
    for each in RULES:
        try:
            record = each(sweeps)
        except NotYetRun:
            continue
        if record["id"] not in skip:
            found.append(record)
    return found


def records(folder: str | Path) -> list[dict[str, Any]]:
    """Chapters 9 and 10's records, from the sweeps in ``folder / FOLDER``.

    Shapes:
        output: one record dict per rule whose sweeps are all there, but the
        rules of :data:`TESTED_ELSEWHERE`
    """
    return [in_folder(r, FOLDER)
            for r in run_rules(Path(folder) / FOLDER, skip=TESTED_ELSEWHERE)]


__all__ = [
    "CHAPTER",
    "FOLDER",
    "FolderSweeps",
    "NotYetRun",
    "TESTED_ELSEWHERE",
    "in_folder",
    "records",
    "run_rules",
]
