"""The length probe's verdict: a ledger-style record from ``probes/length.json``.

The rule, fixed before the runs (``length_probe.PREDICTION`` and
``FALSIFIER``): a scheme *uses* the longer context at ``W`` when its cut minus
full loss has an interval (over the test split's modules and the seeds) above
zero and a paired test over seeds with p < 0.05 (``length_probe.use_verdict``);
it passes when it uses it at every ``W > L``. The claim's verdict is
``ledger.relative_verdict`` over the relative schemes of the probe: ``fails``
when DeBERTa does not pass, ``holds`` when every relative scheme does,
``qualified`` when DeBERTa does and another does not.

The record has the ledger's fields (``ledger.check_record`` passes on them) and
two more, ``prediction`` and ``falsifier``. It is not in the ledger's build yet.
"""

from __future__ import annotations

from typing import Any

from ..results import ledger
from .length_probe import CLAIM, FALSIFIER, PREDICTION, SEED_CLAIM

#: The chapter that reads the record (chapter 14, the four claims probed).
CHAPTER = 14
#: The record's id.
ID = "probe-length"
#: The evidence file, in the results folder.
EVIDENCE = "probes/length.json"
#: What the probe changes in a trained model.
INTERVENTION = (
    "Every query of every layer cut to its last L keys (a causal band mask), the "
    "weights and the scored bytes unchanged."
)


def _rows(result: dict[str, Any]) -> tuple[int, dict[str, list[dict[str, Any]]]]:
    rows = result.get("contrasts") if isinstance(result, dict) else None
    if not rows:
        raise ValueError("result must be a length probe's JSON with its contrasts")
    L = result["config"]["train_length"]
    by_scheme: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row["length"] > L:
            by_scheme.setdefault(row["scheme"], []).append(row)
    return L, by_scheme


def passes(result: dict[str, Any]) -> dict[str, bool]:
    """Per relative scheme of the probe: whether it uses the context at every ``W > L``.
    """
    _, by_scheme = _rows(result)
    relative = [s for s in ledger.RELATIVE_SCHEMES if s in by_scheme]
    return {s: all(r["verdict"] == "uses" for r in by_scheme[s]) for s in relative}


def _mass(row: dict[str, Any]) -> str:
    mass = row["attention_beyond"]
    return "-" if mass is None else f"{100 * sum(mass) / len(mass):.1f}%"


def length_probe_record(result: dict[str, Any]) -> dict[str, Any]:
    """The probe's record: ledger fields, ``prediction`` and ``falsifier``.

    ``interval`` is DeBERTa's cut minus full at the longest ``W`` (with ten
    seeds or more, as the ledger asks).
    """
    L, by_scheme = _rows(result)
    if "deberta" not in by_scheme:
        raise ValueError("result must hold the scheme 'deberta' beyond L")
    passed = passes(result)
    verdict = ledger.relative_verdict(passed)
    longest = {s: max(rows, key=lambda r: r["length"]) for s, rows in by_scheme.items()}
    deberta = longest["deberta"]
    difference = deberta["cut_minus_full"]
    words = {
        s: ", ".join(f"{r['length'] // L}L {r['verdict']}" for r in rows)
        for s, rows in by_scheme.items()
    }
    mechanism = (
        f"Cut minus full loss at W = {deberta['length']} (nats per byte), DeBERTa "
        f"{difference['mean']:+.4f} [{difference['interval'][0]:+.4f}, "
        f"{difference['interval'][1]:+.4f}]. Per scheme: "
        + "; ".join(f"{s}: {w}" for s, w in words.items())
        + ". Attention mass on keys L or more back at the longest W: "
        + ", ".join(f"{s} {_mass(r)}" for s, r in longest.items())
        + "."
    )
    record: dict[str, Any] = {
        "id": ID,
        "chapter": CHAPTER,
        "claim": CLAIM,
        "verdict": verdict,
        "mechanism": mechanism,
        "evidence": {"file": EVIDENCE, "keys": ["contrasts", "config", "probe"]},
        "seeds": len(deberta["seeds"]),
        "intervention": INTERVENTION,
        "seed_claim": SEED_CLAIM,
    }
    if record["seeds"] >= ledger.INTERVAL_SEEDS:
        record["interval"] = list(difference["interval"])
    ledger.check_record(record)
    return {**record, "prediction": PREDICTION, "falsifier": FALSIFIER}


__all__ = ["CHAPTER", "EVIDENCE", "ID", "INTERVENTION", "length_probe_record", "passes"]
