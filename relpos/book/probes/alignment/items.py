"""The committed test items: written once by the generator, read by every run.

``results/probes/alignment/items.json`` holds ``{"provenance": {...}, "items":
[...]}``, one item a line: the generator (``grammar.make_items``), its seed,
the grammar's version, the distances, offsets and cores, and the command that
wrote it (``python -m relpos.book.probes.alignment.items``). :func:`load_items`
checks the provenance against this code: items of another grammar version are
refused, so a run never scores items its stream did not generate.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from .grammar import CORES, DISTANCES, GRAMMAR_VERSION, OFFSETS, make_items

#: Where the items are committed.
ITEMS_PATH = (
    Path(__file__).resolve().parents[2] / "results" / "probes" / "alignment"
    / "items.json"
)
#: The seed the committed items were drawn with.
ITEMS_SEED = 0


def provenance(seed: int = ITEMS_SEED) -> dict[str, Any]:
    """Where the items come from: generator, seed, version, design."""
    return {
        "generator": "relpos.book.probes.alignment.grammar.make_items",
        "command": "python -m relpos.book.probes.alignment.items",
        "seed": seed,
        "grammar_version": GRAMMAR_VERSION,
        "distances": list(DISTANCES),
        "offsets": list(OFFSETS),
        "cores": CORES,
    }


def items_text(seed: int = ITEMS_SEED) -> str:
    """The file's text: provenance, then one item per line."""
    lines = ",\n".join(json.dumps(item) for item in make_items(seed))
    about = json.dumps(provenance(seed))
    return f'{{"provenance": {about},\n"items": [\n{lines}\n]}}\n'


def write_items(path: str | Path = ITEMS_PATH, seed: int = ITEMS_SEED) -> Path:
    """Generate the items and write them to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(items_text(seed), encoding="utf-8")
    return path


def load_items(path: str | Path = ITEMS_PATH) -> tuple[list[dict[str, Any]], dict]:
    """The items and their provenance; ValueError if another grammar made them."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    about = data.get("provenance", {})
    if about.get("grammar_version") != GRAMMAR_VERSION:
        raise ValueError(
            f"path {str(path)!r} holds items of grammar version "
            f"{about.get('grammar_version')!r}, this code's is {GRAMMAR_VERSION!r}"
        )
    return data["items"], about


def file_sha256(path: str | Path = ITEMS_PATH) -> str:
    """SHA-256 of the items file (recorded in the results)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


if __name__ == "__main__":
    print(f"wrote {write_items()}")


__all__ = ["ITEMS_PATH", "ITEMS_SEED", "file_sha256", "items_text", "load_items",
           "provenance", "write_items"]
