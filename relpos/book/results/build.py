"""The ledger, written from the results: each rule module's records in ``claims.json``.

``python -m relpos.book.results`` runs it after any sweep. Each module of
:data:`SOURCES` has ``records(folder) -> [record, ...]``, computed by rules from
the result files of ``folder`` (never typed in): chapters 9 and 10's, the
rules of ``relpos.book.experiments.verdicts`` on the protocol's sweeps in
``folder / "protocol"``; chapter 11's, from the text results
(``relpos.book.text.verdicts``); chapter 14's, from the four probes of chapter 1's
claims (``verdicts.probes``: one record per probe, with ``seed_claim``, its
prediction, falsifier and mechanism; ``untested`` with the reason while a
probe's result file does not exist); and chapter 12's: the same rules on the
first pass archived in ``folder / "first_pass"`` (``verdicts.first_pass``,
records ``first-pass-<id>``) and the interventions
(``verdicts.interventions``); chapter 13's, the tasks whose distance grows
with the length (``verdicts.tasks``) and the headline verdicts at a second
scale (``verdicts.wide``). :func:`build_ledger` checks the
whole ledger (``ledger.check_ledger``: the schema, unique ids, evidence files
and keys among the results) before :func:`write_ledger` writes it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..experiments import verdicts as synthetic
from ..experiments.verdicts import (
    first_pass,
    interventions,
    mechanisms,
    probes,
    tasks,
    wide,
)
from ..text import verdicts as text
from . import ledger

#: The rule modules, in the ledger's order.
SOURCES = (synthetic, text, probes, first_pass, interventions, mechanisms, tasks, wide)
#: The folder of the results and of ``claims.json``.
FOLDER = Path(__file__).parent


def build_ledger(folder: str | Path | None = None) -> dict[str, Any]:
    """The ledger dict from the results in ``folder`` (default: the package's)."""
    folder = FOLDER if folder is None else Path(folder)
    records = [record for source in SOURCES for record in source.records(folder)]
    result = {"schema": ledger.LEDGER_SCHEMA, "claims": records}
    ledger.check_ledger(result, folder)
    return result


def write_ledger(folder: str | Path | None = None) -> Path:
    """Write ``claims.json`` into ``folder`` (default: the package's); its path."""
    folder = FOLDER if folder is None else Path(folder)
    path = folder / "claims.json"
    text_ = json.dumps(build_ledger(folder), indent=1) + "\n"
    path.write_text(text_, encoding="utf-8")
    return path


def main() -> None:
    """``python -m relpos.book.results``: rewrite ``claims.json`` from the results."""
    print(f"wrote {write_ledger()}")


__all__ = ["FOLDER", "SOURCES", "build_ledger", "main", "write_ledger"]
