"""Chapters 9 and 10's trained verdicts, judged on the sweeps by rules written here.

Every verdict those chapters state is a record of the ledger
(``results/claims.json``), computed by one small function from the sweep JSONs
(never typed in), so a new sweep that moves a number can move a verdict:

- ``rules``: the thresholds, the sweep reader and the rules many records share;
- ``chapter9``: the encoder sweep's verdicts;
- ``chapter10``: the ablation, the band, two layers and the causal decoders;
- ``protocol``: where the records of chapters 9 and 10 are computed, the
  protocol's sweeps (``results/protocol/``: tuned rates, ten seeds, intervals);
- ``first_pass``: the same rules on the archived first pass
  (``results/first_pass/``), chapter 12's records ``first-pass-<id>``;
- ``interventions``: chapter 12's tests of the mechanisms.

Adding a record is adding one function ``(Sweeps) -> record`` decorated with
``@rule`` in the module of its chapter; :func:`records` runs every rule in order
on the protocol's sweeps and ``python -m relpos.book.results`` writes the
ledger. Mechanisms that were only correlated with a verdict have their own
rules, ``untested`` by construction; the protocol does not run them
(``protocol.TESTED_ELSEWHERE``), since chapter 12's interventions test them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import chapter9, chapter10  # noqa: F401  (each registers its rules)
from . import protocol
from .rules import RULES, Sweeps, rule


def records(folder: str | Path) -> list[dict[str, Any]]:
    """Every chapter 9 and 10 record, from the protocol's sweeps in ``folder``.

    ``folder`` is the results folder; the sweeps are read from its subfolder
    ``protocol.FOLDER``.

    Shapes:
        output: one record dict per rule, but ``protocol.TESTED_ELSEWHERE``
    """
    return protocol.records(folder)


__all__ = ["RULES", "Sweeps", "records", "rule"]
