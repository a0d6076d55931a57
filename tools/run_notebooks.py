"""Execute chapter notebooks in place, the way nbval will re-run them.

Usage: .venv/bin/python tools/run_notebooks.py book/02_delta.ipynb [...]

Each notebook runs in a fresh kernel of this Python (the project's .venv), with
book/ as the working directory, and is saved with its outputs: those stored
outputs are what the site shows and what nbval compares against.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def run(path: Path) -> float:
    """Execute one notebook in place; return the seconds it took."""
    notebook = nbformat.read(path, as_version=4)
    notebook.metadata["kernelspec"] = {
        "name": "python3", "display_name": "Python 3", "language": "python"
    }
    client = NotebookClient(
        notebook,
        timeout=600,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    start = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - start
    notebook.metadata.pop("widgets", None)
    nbformat.write(notebook, path)
    return elapsed


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    for name in argv:
        path = Path(name)
        if path.suffix != ".ipynb" or not path.is_file():
            print(f"run_notebooks: error: notebook: {name} is not a .ipynb file",
                  file=sys.stderr)
            return 2
    for name in argv:
        print(f"{name}: {run(Path(name)):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
