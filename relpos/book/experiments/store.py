"""The finished runs of a sweep, one JSON record per run, in a runs folder.

A sweep writes every run the moment it finishes, as its own file named by a
hash of everything the run's numbers depend on (:func:`run_key`: the kind of
run, its ``Config.to_dict()``, the JSON schema and ``relpos.__version__``).
Each file is written to a temporary name and moved into place with
``os.replace``, so a sweep that is stopped leaves whole records or none. A
rerun of the same command reads the records that exist and trains only the
missing runs; a file whose stored kind, config, schema or version differs from
the run asked for is never reused (it is overwritten when that run finishes).

A store of its own schema, ``RunStore(folder, schema=N, versioned=False)``,
keys its runs on that schema alone and not on ``relpos.__version__``: the runs
of a probe committed to git (``results/probes/<probe>/runs/``) outlive a
release, and only a bump of the probe's schema (its numbers changed) orphans
them.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import relpos

from .config import Config

#: The JSON schema of the sweep (and of its records); see ``sweep``.
SCHEMA = 3
#: The two kinds of run: a measured run of the grid, a tuning run of the rates.
KINDS = ("measured", "tuning")


def _identity(
    kind: str, config: Config, schema: int = SCHEMA, versioned: bool = True
) -> dict[str, Any]:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    identity = {"kind": kind, "config": config.to_dict(), "schema": schema}
    if versioned:
        identity["relpos"] = relpos.__version__
    return identity


def run_key(
    kind: str, config: Config, schema: int = SCHEMA, versioned: bool = True
) -> str:
    """The name of a run's record: SHA-256 of its kind, config, schema and version.

    Two runs share a key only if every field of their ``Config`` is equal (and
    kind, schema and relpos version), so a record is never taken for a run it
    does not belong to. ``versioned=False`` leaves the version out.
    """
    text = json.dumps(_identity(kind, config, schema, versioned), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class RunStore:
    """A runs folder: ``get`` a finished run's record, ``put`` one atomically.

    ``folder=None`` keeps the records in memory only (nothing survives the
    process: a sweep in a notebook or a test). ``schema`` and ``versioned``:
    what a key holds besides the run (default: the sweeps' schema and
    ``relpos.__version__``).
    """

    def __init__(
        self,
        folder: str | os.PathLike | None = None,
        *,
        schema: int = SCHEMA,
        versioned: bool = True,
    ) -> None:
        self.schema, self.versioned = schema, versioned
        self.folder = None if folder is None else Path(folder)
        self._memory: dict[str, dict[str, Any]] = {}
        if self.folder is not None:
            self.folder.mkdir(parents=True, exist_ok=True)

    def path(self, kind: str, config: Config) -> Path | None:
        """Where the record of this run lives (None for an in-memory store)."""
        if self.folder is None:
            return None
        return self.folder / f"{kind}-{self.key(kind, config)}.json"

    def key(self, kind: str, config: Config) -> str:
        """This store's key of a run (:func:`run_key` with its schema)."""
        return run_key(kind, config, self.schema, self.versioned)

    def identity(self, kind: str, config: Config) -> dict[str, Any]:
        """What a record of this run stores besides the record itself."""
        return _identity(kind, config, self.schema, self.versioned)

    def get(self, kind: str, config: Config) -> dict[str, Any] | None:
        """The stored record of this run, or None (missing, unreadable, other run)."""
        key = self.key(kind, config)
        if self.folder is None:
            return self._memory.get(key)
        try:
            data = json.loads(self.path(kind, config).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or "record" not in data:
            return None
        identity = self.identity(kind, config)
        if {k: data.get(k) for k in identity} != identity or (
            "relpos" in data and not self.versioned
        ):
            return None  # a record of another run (or another version)
        return data["record"]

    def put(self, kind: str, config: Config, record: dict[str, Any]) -> dict[str, Any]:
        """Store ``record`` for this run; return it as it reads back (plain JSON)."""
        text = json.dumps({**self.identity(kind, config), "record": record}, indent=1)
        stored = json.loads(text)["record"]
        if self.folder is None:
            self._memory[self.key(kind, config)] = stored
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


__all__ = ["KINDS", "SCHEMA", "RunStore", "run_key"]
