"""Committed results: the measurements the book shows, shipped inside the package.

Benchmarks (``python -m relpos.book.bench``) and trained sweeps
(``python -m relpos.book.experiments``) take minutes to hours, so the book does not
rerun them: their JSON (and any figure drawn from it) is committed here, in the
package, with the machine it ran on. Because they are package data, every way of
opening a chapter reads the same file: the site build, a local checkout, and a
notebook opened alone on Colab after ``pip install`` from the repository
(offline too, once installed).

    >>> from relpos import results
    >>> "bench_cpu.json" in results.names()
    True
    >>> data = results.load("bench_cpu.json")  # the parsed JSON

Two subfolders hold the trained sweeps: ``protocol/`` (schema 3: rates tuned
per cell until interior, ten seeds, bootstrap intervals; the files chapters 9 to
12 read) and ``first_pass/`` (schema 2: five seeds, untuned rates; the archive
chapter 12 compares the protocol with). Name a file there as
``"protocol/sweep.json"`` or ``"first_pass/sweep.json"``.

To refresh a result, rerun its command with
``--output relpos/book/results/NAME.json`` from the repository root and commit the
file.
"""

from __future__ import annotations

import json
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

_SUFFIXES = (".json", ".png", ".svg")
#: The subfolders of committed results: the protocol's sweeps, the first pass,
#: and the probes of chapter 1's claims (each probe's runs folder below it).
SUBFOLDERS = ("protocol", "first_pass", "probes")


def names() -> list[str]:
    """The committed result files, sorted by name; a subfolder's as ``"protocol/x"``."""
    folder = resources.files(__name__)
    found = [p.name for p in folder.iterdir() if p.name.endswith(_SUFFIXES)]
    for sub in SUBFOLDERS:
        inner = folder.joinpath(sub)
        if inner.is_dir():
            found += [f"{sub}/{p.name}" for p in inner.iterdir()
                      if p.name.endswith(_SUFFIXES)]
    return sorted(found)


def path(name: str) -> Traversable:
    """The committed file ``name`` (``"bench_cpu.json"``, ``"protocol/sweep.json"``,
    ``"first_pass/sweep.json"``).

    Returns an ``importlib.resources`` traversable: a ``pathlib.Path`` for every
    ordinary install, readable with ``.read_text()`` / ``.read_bytes()`` either way.
    Raises ``FileNotFoundError`` listing the files that exist.
    """
    parts = name.split("/") if isinstance(name, str) else []
    if (
        not parts
        or len(parts) > 2
        or not all(parts)
        or ".." in parts
        or "\\" in name
    ):
        raise ValueError(
            "name must be a file name such as 'bench_cpu.json' or one in a "
            "subfolder such as 'protocol/sweep.json' or 'first_pass/sweep.json', "
            f"got {name!r}"
        )
    file = resources.files(__name__).joinpath(name)
    if not file.is_file():
        raise FileNotFoundError(
            f"no committed result named {name!r}; available: {', '.join(names())}"
        )
    return file


def load(name: str) -> dict[str, Any]:
    """The parsed JSON of the committed file ``name``."""
    if not isinstance(name, str) or not name.endswith(".json"):
        raise ValueError(f"name must name a .json file, got {name!r}")
    return json.loads(path(name).read_text(encoding="utf-8"))


__all__ = ["SUBFOLDERS", "load", "names", "path"]
