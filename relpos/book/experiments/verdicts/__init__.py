"""Chapters 9 and 10's trained verdicts, judged on the sweeps by rules written here.

Every verdict those chapters state is a record of the ledger
(``results/claims.json``), computed by one small function from the sweep JSONs
(never typed in), so a new sweep that moves a number can move a verdict:

- ``rules``: the thresholds, the sweep reader and the rules many records share;
- ``chapter9``: the encoder sweep's verdicts;
- ``chapter10``: the ablation, the band, two layers and the causal decoders.

Adding a record is adding one function ``(Sweeps) -> record`` decorated with
``@rule`` in the module of its chapter; :func:`records` runs every rule in order
and ``python -m relpos.book.results`` writes the ledger. Mechanisms that were
only correlated with a verdict have their own records, ``untested``, with the
reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import chapter9, chapter10  # noqa: F401  (each registers its rules)
from .rules import RULES, Sweeps, rule


def records(folder: str | Path) -> list[dict[str, Any]]:
    """Every chapter 9 and 10 record, from the sweep files in ``folder``."""
    sweeps = Sweeps(folder)
    return [each(sweeps) for each in RULES]


__all__ = ["RULES", "Sweeps", "records", "rule"]
