"""The pieces every trained verdict of chapters 9 and 10 is built from.

- :class:`Sweeps`: the sweep files of a results folder, each read once
  (``load_sweep``), with the summary cell of any (task, scheme, training size,
  length) and the coverage the sweep stored.
- The thresholds (named here, used by every rule): a scheme has *learned* a
  task at a mean of :data:`FIT`, *solved* it at :data:`SOLVED`; it *falls* when
  it loses more than :data:`FALL` of its own accuracy at ``L``; a measured
  accuracy keeps to a proved bound when it exceeds it by at most
  :data:`NOISE_SE` binomial standard errors of the test set.
- The rules shared by many records: :func:`length_verdict`, :func:`combine`,
  :func:`every`, :func:`separation`, :func:`under_bound`.
- :func:`rule` registers a record's function (``Sweeps -> record``) in
  :data:`RULES`; :func:`make_record` writes a record in the ledger's schema,
  seeds counted from the values it rests on, with the bootstrap interval of
  their mean when there are at least ``INTERVAL_SEEDS`` of them.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ...results import ledger
from ...stats import bootstrap_interval
from ..sweep import load_sweep, summary_cells

#: The mean accuracy at which a scheme has learned a task (chapter 9's 90%).
FIT = 0.9
#: The mean accuracy at which a scheme has solved a task.
SOLVED = 0.99
#: A fall: more than this below the scheme's own accuracy at ``L``.
FALL = 0.10
#: How far above chance a score must be to count as a signal.
ABOVE_CHANCE = 0.03
#: How many binomial standard errors of the test set a measured accuracy may
#: exceed a proved bound by (the test set is finite; the bound is exact).
NOISE_SE = 3.0
#: A flat curve: the mean moves at most this much from ``L`` to the longest length.
FLAT = 0.02


class Sweeps:
    """The sweep JSONs of ``folder``, read on first use, and their summary cells."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self._read: dict[str, tuple[dict[str, Any], dict]] = {}

    def __call__(self, name: str) -> dict[str, Any]:
        """The checked JSON of the sweep file ``name`` (``"sweep.json"``, ...)."""
        if name not in self._read:
            result = load_sweep(self.folder / name, name=name)
            self._read[name] = (result, summary_cells(result))
        return self._read[name][0]

    def train_length(self, name: str) -> int:
        return self(name)["config"]["train_length"]

    def longest(self, name: str) -> int:
        return max(self(name)["config"]["test_lengths"])

    def cell(
        self,
        name: str,
        task: str,
        scheme: str,
        n: int | None = None,
        size: int | None = None,
    ) -> dict[str, Any]:
        """The summary row of one cell (default: length ``L``, the largest size)."""
        result = self(name)
        setting = result["grid"]["setting"][0]
        n = self.train_length(name) if n is None else n
        size = max(result["grid"]["train_size"]) if size is None else size
        return self._read[name][1][setting, task, scheme, size, n]

    def values(self, name: str, task: str, scheme: str, n: int | None = None,
               size: int | None = None) -> list[float]:
        """One accuracy per seed of one cell."""
        return list(self.cell(name, task, scheme, n, size)["values"])

    def mean(self, name: str, task: str, scheme: str, n: int | None = None,
             size: int | None = None) -> float:
        return self.cell(name, task, scheme, n, size)["mean"]

    def fewest(self, name: str, task: str, scheme: str) -> int | None:
        """The fewest training sequences with a mean of :data:`FIT` at ``L``."""
        sizes = sorted(self(name)["grid"]["train_size"])
        return next((z for z in sizes if self.mean(name, task, scheme, size=z) >= FIT),
                    None)

    def untrained(self, name: str, task: str, scheme: str, n: int) -> float:
        """The share of scored queries at length ``n`` that read an untrained entry."""
        rows = [
            r for r in self(name)["coverage"]
            if (r["task"], r["scheme"], r["length"]) == (task, scheme, n)
            and r["learned"]
        ]
        return max((r["touched"] for r in rows), default=0.0)

    def labels(self, name: str, task: str, n: int) -> int:
        """The scored labels of the test set at length ``n`` (for the noise)."""
        spec = self(name)["tasks"][task]
        scored = n - spec["param"] if spec["kind"] in ("shift", "window") else n
        return self(name)["config"]["test_size"] * scored


def length_verdict(at_l: Sequence[float], longest: Sequence[float]) -> str:
    """Whether a cell keeps its accuracy from ``L`` to the longest length.

    ``holds``: every seed has learned the task at ``L`` (:data:`FIT`) and loses
    at most :data:`FALL` by the longest length; ``qualified``: the mean does;
    ``fails``: otherwise. The seeds are paired by place.

    Shapes:
        at_l, longest: ``(seeds,)`` accuracies; output: a verdict
    """
    if len(at_l) != len(longest) or not at_l:
        raise ValueError("at_l and longest must hold one value per seed each")
    drops = [a - b for a, b in zip(at_l, longest)]
    if min(at_l) >= FIT and max(drops) <= FALL:
        return "holds"
    if statistics.fmean(at_l) >= FIT and statistics.fmean(drops) <= FALL:
        return "qualified"
    return "fails"


def combine(verdicts: Sequence[str]) -> str:
    """``holds`` when every part holds, ``fails`` when every part fails, else
    ``qualified``."""
    if not verdicts:
        raise ValueError("verdicts must not be empty")
    if all(v == "holds" for v in verdicts):
        return "holds"
    return "fails" if all(v == "fails" for v in verdicts) else "qualified"


def every(hits: Sequence[bool]) -> str:
    """``holds`` when every case is a hit, ``fails`` when none is, else
    ``qualified`` (a scheme best on every task, some of them, or none).

    Shapes:
        hits: ``(cases,)`` bools; output: a verdict
    """
    return combine(["holds" if hit else "fails" for hit in hits])


def separation(better: Sequence[float], worse: Sequence[float]) -> str:
    """``holds`` when every seed of ``better`` beats every seed of ``worse``,
    ``qualified`` when only the mean does, ``fails`` otherwise.

    Shapes:
        better, worse: ``(seeds,)`` each (their counts may differ); output: a verdict
    """
    if min(better) > max(worse):
        return "holds"
    ahead = statistics.fmean(better) > statistics.fmean(worse)
    return "qualified" if ahead else "fails"


def under_bound(values: Sequence[float], bound: float, labels: int) -> bool:
    """Whether every seed keeps to ``bound``, up to the test set's noise.

    ``labels`` is the number of scored labels of the test set at that length.

    Shapes:
        values: ``(seeds,)``; output: a bool
    """
    noise = NOISE_SE * math.sqrt(bound * (1 - bound) / labels)
    return all(v <= bound + noise for v in values)


def percent(values: Sequence[float] | float) -> str:
    """Accuracies as rounded percentages: ``"19%"`` or ``"98, 65, 100%"``.

    Shapes:
        values: a float or ``(seeds,)``; output: a str
    """
    if isinstance(values, (int, float)):
        return f"{100 * values:.0f}%"
    return ", ".join(f"{100 * v:.0f}" for v in values) + "%"


def make_record(
    id: str,
    chapter: int,
    claim: str,
    verdict: str,
    mechanism: str,
    evidence: tuple[str, list[str]],
    values: Sequence[float],
    intervention: str | None = None,
) -> dict[str, Any]:
    """A ledger record; ``seeds`` is ``len(values)``, the per-seed numbers its
    verdict rests on, and with ``INTERVAL_SEEDS`` of them or more ``interval``
    is the bootstrap interval of their mean (``relpos.book.stats``). The record
    is checked (``ledger.check_record``).

    Shapes:
        values: ``(seeds,)``; output: a record dict
    """
    record: dict[str, Any] = {
        "id": id,
        "chapter": chapter,
        "claim": claim,
        "verdict": verdict,
        "mechanism": mechanism,
        "evidence": {"file": evidence[0], "keys": list(evidence[1])},
        "seeds": len(values),
    }
    if len(values) >= ledger.INTERVAL_SEEDS:
        record["interval"] = bootstrap_interval(values)
    if intervention is not None:
        record["intervention"] = intervention
    return ledger.check_record(record)


#: A record's rule: reads the sweeps, returns its record.
Rule = Callable[[Sweeps], dict[str, Any]]
#: Every rule, in the order its record enters the ledger.
RULES: list[Rule] = []


def rule(function: Rule) -> Rule:
    """Register ``function`` as the rule of one record (a decorator)."""
    RULES.append(function)
    return function


__all__ = [
    "ABOVE_CHANCE",
    "FALL",
    "FIT",
    "FLAT",
    "NOISE_SE",
    "RULES",
    "SOLVED",
    "Rule",
    "Sweeps",
    "combine",
    "every",
    "length_verdict",
    "make_record",
    "percent",
    "rule",
    "separation",
    "under_bound",
]
