"""The claims ledger: every verdict of the book, one record each, checked on load.

``claims.json`` (in this folder) is ``{"schema": 1, "claims": [record, ...]}``;
a record::

    {"id": "text-length", "chapter": 11, "claim": "...",
     "verdict": "holds" | "fails" | "qualified" | "untested",
     "mechanism": "why the verdict is what it is",
     "evidence": {"file": "text_causal.json", "keys": ["summary", ...]},
     "seeds": 3,
     "interval": [low, high],        # only (and always) when seeds >= 10
     "intervention": "what was changed to test the mechanism",   # when one ran
     "seed_claim": "generalisation" | "length" | "linguistic" | "gradient",
     "prediction": "what the claim predicts, written before the run",  # a probe's
     "falsifier": "the result that would falsify it"}                   # a probe's

``seed_claim`` marks the four claims chapter 1 makes for relative positions
(at most one record each). :func:`check_record` refuses a record that breaks
the schema (ValueError naming the field); :func:`load_ledger` reads and checks
the file, every ``evidence.file`` among the committed results and every key a
top-level key of it; :func:`verdict_rows` gives the rows of a verdict table
(the seed claims', a chapter's, or chosen records') and :func:`verdict_table`
renders them in Markdown; :func:`disagreements`
lists the verdicts a chapter states that the ledger does not hold.
:func:`relative_verdict` is the verdict of a claim made for relative positions
as one thing, from which of :data:`RELATIVE_SCHEMES` pass.

The ledger is written by ``python -m relpos.book.results`` (``build.py``) from
the rules of ``relpos.book.experiments.verdicts`` (on the protocol's sweeps, and
on the first pass for chapter 12) and ``relpos.book.text.verdicts``.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from collections.abc import Mapping, Sequence
from typing import Any

from relpos.schemes import REGISTRY

#: The verdicts a record may carry.
VERDICTS = ("holds", "fails", "qualified", "untested")
#: The four claims chapter 1 makes for relative positions.
SEED_CLAIMS = ("generalisation", "length", "linguistic", "gradient")
#: The ledger's JSON schema.
LEDGER_SCHEMA = 1
#: Seeds from which a record must give an interval.
INTERVAL_SEEDS = 10
#: The relative schemes a claim for relative positions is judged on (those of a
#: sweep among them): DeBERTa's two tables and every scheme the core's registry
#: marks relative and positional (not ``none``, which has no positions). (FIRE is not: its distance is divided by the query's
#: position; ``deberta-emd`` adds absolute positions before its last layer.)
RELATIVE_SCHEMES = tuple(dict.fromkeys(("deberta", "deberta-buckets") + tuple(
    name for name, entry in REGISTRY.items() if entry.relative and entry.positional
)))  # each once, where the registry lists DeBERTa too
REQUIRED = ("id", "chapter", "claim", "verdict", "mechanism", "evidence", "seeds")
OPTIONAL = ("interval", "intervention", "seed_claim", "prediction", "falsifier")


def _text(record: dict[str, Any], name: str) -> str:
    value = record.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"record {name} must be a non-empty str, got {value!r}")
    return value


def check_record(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` if it follows the schema, else ValueError naming the field."""
    if not isinstance(record, dict):
        raise TypeError(f"record must be a dict, got {type(record).__name__}")
    missing = [name for name in REQUIRED if name not in record]
    unknown = sorted(set(record) - set(REQUIRED) - set(OPTIONAL))
    if missing or unknown:
        raise ValueError(f"record must hold {REQUIRED} (+ {OPTIONAL}); "
                         f"missing {missing}, unknown {unknown}")
    for name in ("id", "claim", "mechanism"):
        _text(record, name)
    chapter, seeds = record["chapter"], record["seeds"]
    if isinstance(chapter, bool) or not isinstance(chapter, int) or chapter < 1:
        raise ValueError(f"record chapter must be an int >= 1, got {chapter!r}")
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 0:
        raise ValueError(f"record seeds must be an int >= 0, got {seeds!r}")
    if record["verdict"] not in VERDICTS:
        raise ValueError(f"record verdict must be one of {VERDICTS}, "
                         f"got {record['verdict']!r}")
    evidence = record["evidence"]
    if (
        not isinstance(evidence, dict)
        or set(evidence) != {"file", "keys"}
        or not isinstance(evidence["file"], str)
        or not isinstance(evidence["keys"], list)
        or not all(isinstance(k, str) for k in evidence["keys"])
    ):
        raise ValueError("record evidence must be {'file': str, 'keys': [str, ...]}, "
                         f"got {evidence!r}")
    has_interval = "interval" in record
    if (seeds >= INTERVAL_SEEDS) != has_interval:
        raise ValueError(f"record interval must be given exactly when seeds >= "
                         f"{INTERVAL_SEEDS} (seeds={seeds})")
    if has_interval:
        low_high = record["interval"]
        if (
            not isinstance(low_high, list)
            or len(low_high) != 2
            or not all(isinstance(v, (int, float)) for v in low_high)
            or low_high[0] > low_high[1]
        ):
            raise ValueError(f"record interval must be [low, high], got {low_high!r}")
    for name in ("intervention", "prediction", "falsifier"):
        if name in record:
            _text(record, name)
    if "seed_claim" in record and record["seed_claim"] not in SEED_CLAIMS:
        raise ValueError(f"record seed_claim must be one of {SEED_CLAIMS}, "
                         f"got {record['seed_claim']!r}")
    if record["verdict"] != "untested" and seeds < 1 and "intervention" not in record:
        raise ValueError("record seeds must be >= 1 for a verdict other than "
                         "'untested' (or an intervention must be named)")
    return record


def _awaits(record: dict[str, Any]) -> bool:
    """Whether ``record`` awaits its evidence: untested, no seeds, no keys."""
    return (record["verdict"] == "untested" and record["seeds"] == 0
            and not record["evidence"]["keys"])


def _top_level_keys(file: Path) -> frozenset[str]:
    """The top-level keys of the JSON ``file``, read once per version of it."""
    stat = file.stat()
    return _keys_of(str(file.resolve()), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=256)
def _keys_of(path: str, mtime_ns: int, size: int) -> frozenset[str]:
    # The file's time and size are in the key: a rewritten file is read again. A
    # chapter checks its verdicts against the ledger many times; the evidence files
    # (megabytes of sweeps) are parsed once.
    return frozenset(json.loads(Path(path).read_text(encoding="utf-8")))


def check_ledger(ledger: dict[str, Any], folder: Path | None = None) -> list[dict]:
    """The records of ``ledger``, each checked; ids and seed claims unique.

    With ``folder`` (the results folder), each evidence file must be in it or
    in a subfolder of it (``"protocol/sweep.json"``, ``"first_pass/sweep.json"``)
    and each key a top-level key of its JSON; only an ``untested`` record on no
    seeds and no keys (a probe whose sweep has not finished) may name a file
    that does not exist yet.
    """
    if not isinstance(ledger, dict) or ledger.get("schema") != LEDGER_SCHEMA:
        raise ValueError(f"ledger must be a dict with schema {LEDGER_SCHEMA}")
    records = [check_record(r) for r in ledger.get("claims", [])]
    ids = [r["id"] for r in records]
    if len(set(ids)) != len(ids):
        raise ValueError(f"ledger ids must be unique, got {ids}")
    seeded = [r["seed_claim"] for r in records if "seed_claim" in r]
    if len(set(seeded)) != len(seeded):
        raise ValueError(f"ledger must hold each seed_claim once, got {seeded}")
    if folder is not None:
        for record in records:
            name = record["evidence"]["file"]
            parts = name.split("/")
            file = Path(folder).joinpath(*parts)
            if _awaits(record) and ".." not in parts and len(parts) <= 2:
                continue
            if len(parts) > 2 or ".." in parts or not file.is_file():
                raise ValueError(f"record {record['id']} evidence file {name} "
                                 "must be among the results (a file name, or "
                                 "a subfolder's 'protocol/sweep.json')")
            data = _top_level_keys(file)
            absent = [k for k in record["evidence"]["keys"] if k not in data]
            if absent:
                raise ValueError(f"record {record['id']} evidence keys {absent} "
                                 f"are not in {name}")
    return records


def load_ledger(path: str | Path | None = None) -> list[dict[str, Any]]:
    """The checked records of ``claims.json`` (default: the committed one)."""
    path = Path(__file__).with_name("claims.json") if path is None else Path(path)
    ledger = json.loads(path.read_text(encoding="utf-8"))
    return check_ledger(ledger, path.parent)


def relative_verdict(passed: Mapping[str, bool]) -> str:
    """The verdict of a claim for relative positions, from which schemes pass.

    ``fails`` when DeBERTa (``deberta``) does not pass, ``holds`` when every
    scheme of ``passed`` does, ``qualified`` when DeBERTa does and another does not.
    """
    if "deberta" not in passed:
        raise ValueError(f"passed must judge 'deberta', got {sorted(passed)}")
    if not passed["deberta"]:
        return "fails"
    return "holds" if all(passed.values()) else "qualified"


def _row(record: dict[str, Any]) -> dict[str, Any]:
    evidence = record["evidence"]
    return {
        "id": record["id"],
        "claim": record["claim"],
        "verdict": record["verdict"],
        "seeds": record["seeds"],
        "mechanism": record["mechanism"],
        "evidence": f"{evidence['file']}: " + ", ".join(evidence["keys"]),
    }


def verdict_rows(
    records: list[dict[str, Any]],
    *,
    chapter: int | None = None,
    ids: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """The rows of a verdict table.

    With neither ``chapter`` nor ``ids``: the seed claims', in :data:`SEED_CLAIMS`
    order, each row ``claim`` (the seed claim's name), ``verdict``,
    ``mechanism`` and ``evidence`` (the file and its keys). With ``chapter``:
    every record of that chapter, in the ledger's order; with ``ids``: those
    records, in that order. Those rows hold ``id``, ``claim`` (the sentence),
    ``verdict``, ``seeds``, ``mechanism`` and ``evidence``.

    Shapes:
        output: one dict per row
    """
    if chapter is not None and ids is not None:
        raise ValueError("verdict_rows takes chapter or ids, not both")
    if chapter is not None:
        return [_row(r) for r in records if r["chapter"] == chapter]
    if ids is not None:
        by_id = {r["id"]: r for r in records}
        missing = [i for i in ids if i not in by_id]
        if missing:
            raise ValueError(f"ids must name records of the ledger, got {missing}")
        return [_row(by_id[i]) for i in ids]
    by_claim = {r["seed_claim"]: r for r in records if "seed_claim" in r}
    return [
        {
            "claim": name,
            "verdict": by_claim[name]["verdict"],
            "mechanism": by_claim[name]["mechanism"],
            "evidence": f"{by_claim[name]['evidence']['file']}: "
            + ", ".join(by_claim[name]["evidence"]["keys"]),
        }
        for name in SEED_CLAIMS
        if name in by_claim
    ]


def verdict_table(
    rows: list[dict[str, Any]], columns: Sequence[str] = ("claim", "verdict", "seeds")
) -> str:
    """``rows`` (from :func:`verdict_rows`) as a Markdown table of ``columns``.

    The verdict is set in bold, a record id as code; a ``|`` inside a cell is
    escaped.

    Shapes:
        rows: one dict per row; output: the table's lines joined by newlines
    """
    if not rows or any(c not in rows[0] for c in columns):
        raise ValueError(f"columns must be keys of the rows, got {list(columns)}")

    def cell(name: str, value: Any) -> str:
        text = str(value).replace("|", "\\|")
        return {"verdict": f"**{text}**", "id": f"`{text}`"}.get(name, text)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(cell(c, row[c]) for c in columns) + " |")
    return "\n".join(lines)


def disagreements(
    stated: Mapping[str, str], records: list[dict[str, Any]] | None = None
) -> list[str]:
    """The verdicts in ``stated`` (record id -> verdict) that the ledger does not hold.

    A chapter calls it beside each paragraph that states a verdict, as
    ``assert not disagreements({"id": "holds", ...})``; ``records`` defaults to
    the ledger itself. An id the ledger lacks, or a verdict outside
    :data:`VERDICTS`, raises ValueError.

    Shapes:
        output: one line per disagreement
    """
    records = load_ledger() if records is None else records
    by_id = {r["id"]: r for r in records}
    found = []
    for record_id, verdict in stated.items():
        if record_id not in by_id:
            raise ValueError(f"stated must name records of the ledger, got "
                             f"{record_id!r}")
        if verdict not in VERDICTS:
            raise ValueError(f"stated verdicts must be among {VERDICTS}, got "
                             f"{verdict!r} for {record_id!r}")
        if by_id[record_id]["verdict"] != verdict:
            found.append(f"{record_id}: stated {verdict}, the ledger holds "
                         f"{by_id[record_id]['verdict']}")
    return found


__all__ = [
    "INTERVAL_SEEDS",
    "LEDGER_SCHEMA",
    "RELATIVE_SCHEMES",
    "SEED_CLAIMS",
    "VERDICTS",
    "check_ledger",
    "check_record",
    "disagreements",
    "load_ledger",
    "relative_verdict",
    "verdict_rows",
    "verdict_table",
]
