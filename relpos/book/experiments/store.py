"""The finished runs of a sweep, one JSON record per run, in a runs folder.

A sweep writes every run the moment it finishes, as its own file named by a
hash of everything the run's numbers depend on (:func:`run_key`: the kind of
run, its ``Config.to_dict()``, the JSON schema and ``relpos.__version__``).
Each file is written to a temporary name and moved into place with
``os.replace``, so a sweep that is stopped leaves whole records or none. A
rerun of the same command reads the records that exist and trains only the
missing runs; a file whose stored kind, config, schema or version differs from
the run asked for is never reused (it is overwritten when that run finishes).

A store opened with a ``stamp`` (a probe's ``{"probe": name, "schema": n}``)
keys its runs on that stamp instead of the sweep schema and the version, so a
runs folder committed to git stays valid when ``relpos.__version__`` moves;
its owner raises its own schema when its numbers change.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Mapping

import relpos

from .config import Config

#: The JSON schema of the sweep (and of its records); see ``sweep``.
SCHEMA = 3
#: The two kinds of run: a measured run of the grid, a tuning run of the rates.
KINDS = ("measured", "tuning")


Stamp = Mapping[str, Any]


def default_stamp() -> dict[str, Any]:
    """What keys a sweep's runs besides kind and config: the schema and version."""
    return {"schema": SCHEMA, "relpos": relpos.__version__}


def check_stamp(stamp: Stamp | None) -> dict[str, Any]:
    """``stamp`` as a dict (``default_stamp()`` for None), JSON-ready, no record
    field's name; TypeError/ValueError naming ``stamp`` otherwise."""
    if stamp is None:
        return default_stamp()
    if not isinstance(stamp, Mapping) or not stamp:
        raise TypeError(f"stamp must be a non-empty mapping or None, got {stamp!r}")
    taken = sorted({"kind", "config", "record"} & set(stamp))
    if taken or not all(isinstance(k, str) for k in stamp):
        raise ValueError(f"stamp keys must be str, none of {taken}, got {list(stamp)}")
    json.dumps(dict(stamp))  # a value JSON cannot write raises TypeError here
    return dict(stamp)


def _identity(
    kind: str, config: Config, stamp: Stamp | None = None
) -> dict[str, Any]:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    return {"kind": kind, "config": config.to_dict(), **check_stamp(stamp)}


def run_key(kind: str, config: Config, stamp: Stamp | None = None) -> str:
    """The name of a run's record: SHA-256 of its kind, config, schema and version.

    Two runs share a key only if every field of their ``Config`` is equal (and
    kind, schema and relpos version), so a record is never taken for a run it
    does not belong to. A ``stamp`` replaces the schema and the version.
    """
    text = json.dumps(_identity(kind, config, stamp), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class RunStore:
    """A runs folder: ``get`` a finished run's record, ``put`` one atomically.

    ``folder=None`` keeps the records in memory only (nothing survives the
    process: a sweep in a notebook or a test). ``stamp`` (default: the sweep
    schema and ``relpos.__version__``) is what keys the runs besides their kind
    and config.
    """

    def __init__(
        self, folder: str | os.PathLike | None = None, *, stamp: Stamp | None = None
    ) -> None:
        self.folder = None if folder is None else Path(folder)
        self.stamp = None if stamp is None else check_stamp(stamp)
        self._memory: dict[str, dict[str, Any]] = {}
        if self.folder is not None:
            self.folder.mkdir(parents=True, exist_ok=True)

    def path(self, kind: str, config: Config) -> Path | None:
        """Where the record of this run lives (None for an in-memory store)."""
        if self.folder is None:
            return None
        return self.folder / f"{kind}-{run_key(kind, config, self.stamp)}.json"

    def get(self, kind: str, config: Config) -> dict[str, Any] | None:
        """The stored record of this run, or None (missing, unreadable, other run)."""
        key = run_key(kind, config, self.stamp)
        if self.folder is None:
            return self._memory.get(key)
        try:
            data = json.loads(self.path(kind, config).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or "record" not in data:
            return None
        identity = _identity(kind, config, self.stamp)
        if {k: data.get(k) for k in identity} != identity:
            return None  # a record of another run (or another version)
        return data["record"]

    def put(self, kind: str, config: Config, record: dict[str, Any]) -> dict[str, Any]:
        """Store ``record`` for this run; return it as it reads back (plain JSON)."""
        identity = _identity(kind, config, self.stamp)
        text = json.dumps({**identity, "record": record}, indent=1)
        stored = json.loads(text)["record"]
        if self.folder is None:
            self._memory[run_key(kind, config, self.stamp)] = stored
            return stored
        target = self.path(kind, config)
        handle, temporary = tempfile.mkstemp(
            dir=self.folder, prefix=".tmp-", suffix=".json"
        )
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                file.write(text + "\n")
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        return stored


__all__ = [
    "KINDS",
    "SCHEMA",
    "RunStore",
    "Stamp",
    "check_stamp",
    "default_stamp",
    "run_key",
]
