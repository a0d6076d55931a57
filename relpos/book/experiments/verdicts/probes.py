"""The four probes' records: the seed claims of chapter 1, one probe each.

Each probe (:data:`PROBES`) writes one result file among the results
(``probes/<name>.json``, by ``make probe-<target>``); :func:`records` gives one
ledger record per probe, with ``seed_claim``, the prediction, the falsifier
and the mechanism: from its rule (``verdicts.alignment_probe``,
``verdicts.positions``, ``verdicts.probe_gradients``,
``text.length_verdict``) when the file exists, else an ``untested`` record
whose mechanism gives the reason ("the probe's sweep has not finished: make
probe-...") and whose evidence names the file it awaits (:func:`pending`).
So the ledger states all four claims whatever has run. The alignment probe's
sweep at its full budget (``probes/alignment_full.json``) adds a record
beside its claim's, without ``seed_claim``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...probes.alignment import design as alignment_design
from ...probes.gradients import design as gradients_design
from ...probes.positions import design as positions_design
from ...results import ledger
from ...text import length_probe, length_verdict
from . import alignment_probe, positions, probe_gradients


@dataclass(frozen=True)
class Probe:
    """One probe: its record id, claim, result file, rule and design sentences."""

    id: str
    seed_claim: str
    target: str  # the make target that runs its sweep
    file: str  # relative to the results folder
    rule: Callable[[dict[str, Any]], dict[str, Any]]
    claim: str
    prediction: str
    falsifier: str
    mechanism: str
    interval_of: str  # what the record's interval is an interval of


#: The chapter that presents the four probes and states their verdicts.
CHAPTER = 14

#: The probes, in chapter 1's order of the claims.
PROBES = (
    Probe(
        positions.ID, "generalisation", "probe-positions", positions.EVIDENCE[0],
        positions.record, positions.CLAIM, positions_design.PREDICTION,
        positions_design.FALSIFIER, positions_design.MECHANISM,
        "DeBERTa's transfer gap: first-half minus second-half accuracy "
        "(fraction of tokens)",
    ),
    Probe(
        length_verdict.ID, length_probe.SEED_CLAIM, "probe-length",
        length_verdict.EVIDENCE, length_verdict.length_probe_record,
        length_probe.CLAIM, length_probe.PREDICTION, length_probe.FALSIFIER,
        length_probe.MECHANISM,
        "DeBERTa's loss with attention cut to L keys minus its full loss at "
        "the longest window (nats per byte)",
    ),
    Probe(
        alignment_probe.RECORD_ID, alignment_design.SEED_CLAIM, "probe-alignment",
        alignment_probe.EVIDENCE, alignment_probe.alignment_record,
        alignment_probe.CLAIM, alignment_design.PREDICTION,
        alignment_design.FALSIFIER, alignment_design.MECHANISM,
        "DeBERTa (k = L) minus the stronger absolute arm: share of minimal "
        "pairs right, on the halves some arm learned",
    ),
    Probe(
        probe_gradients.ID, "gradient", "probe-gradients", probe_gradients.FILE,
        probe_gradients.probe_record, probe_gradients.CLAIM,
        gradients_design.PREDICTION, gradients_design.FALSIFIER,
        gradients_design.MECHANISM,
        "content cost of the absolute arm minus that of the untied arm the "
        "verdict turns on (nats per byte)",
    ),
)
#: The alignment probe's sweep at its full budget, reported beside the claim's.
ALIGNMENT_FULL = alignment_probe.FULL_EVIDENCE


def pending(probe: Probe) -> dict[str, Any]:
    """The ``untested`` record of a probe whose result file does not exist yet.

    Shapes:
        output: a record dict (``ledger.check_record``)
    """
    reason = f"the probe's sweep has not finished: make {probe.target}"
    record = {
        "id": probe.id,
        "chapter": CHAPTER,
        "claim": probe.claim,
        "verdict": "untested",
        "mechanism": f"Untested: {reason}. {probe.mechanism}",
        "evidence": {"file": probe.file, "keys": []},
        "seeds": 0,
        "seed_claim": probe.seed_claim,
        "prediction": probe.prediction,
        "falsifier": probe.falsifier,
    }
    return ledger.check_record(record)


def _read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def records(folder: Path) -> list[dict[str, Any]]:
    """The probes' records from the results in ``folder``: one per probe, in
    :data:`PROBES` order, then the alignment probe's full budget if it ran."""
    folder = Path(folder)
    found = []
    for probe in PROBES:
        path = folder / probe.file
        found.append(probe.rule(_read(path)) if path.is_file() else pending(probe))
    full = folder / ALIGNMENT_FULL
    if full.is_file():
        found.append(alignment_probe.alignment_record(_read(full)))
    return found


def interval_of(record_id: str) -> str:
    """What the interval of probe record ``record_id`` is an interval of."""
    for probe in PROBES:
        if record_id == probe.id or record_id.startswith(f"{probe.id}-"):
            return probe.interval_of
    raise ValueError(f"record_id must be a probe's record, got {record_id!r}")


__all__ = ["ALIGNMENT_FULL", "CHAPTER", "PROBES", "Probe", "interval_of", "pending", "records"]
