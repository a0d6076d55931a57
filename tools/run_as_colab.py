"""Run one chapter the way Colab opens it: alone, in an empty folder, top to bottom.

Usage (with the Python of a Colab-like environment: torch, numpy, matplotlib, a
kernel, and no relpos):

    PYTHON tools/run_as_colab.py book/05_efficient_attention.ipynb --repo file:///path/to/clone

The notebook is copied by itself into a fresh temporary folder (nothing of the
repository beside it), its setup cell's REPO_URL is pointed at ``--repo`` (so the
cell's ``pip install relpos[book,interop] @ git+REPO_URL`` installs the clone under
test), and every cell runs in a kernel of this Python with that folder as the
working directory. Outputs are not compared: this checks that the chapter runs
alone, not what it prints (nbval does that). On an error it names the chapter and
the cell, shows the cell's first lines and the traceback, and exits with 1.

This script needs only nbformat and nbclient (Colab has both); it imports
nothing of the project.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

_REPO_LINE = re.compile(r'^REPO_URL = "[^"]*"$', re.MULTILINE)


def point_setup_cell(notebook: nbformat.NotebookNode, repo: str) -> int:
    """Rewrite the REPO_URL line of the setup cell; return that cell's index."""
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code":
            if not _REPO_LINE.search(cell.source):
                raise ValueError("the first code cell is not the setup cell (no REPO_URL line)")
            cell.source = _REPO_LINE.sub(f'REPO_URL = "{repo}"', cell.source, count=1)
            return index
    raise ValueError("the notebook has no code cell")


def run_alone(source: Path, repo: str, timeout: int) -> str:
    """Copy ``source`` alone into an empty folder and execute it there.

    Returns an empty string on success, else a report naming the failed cell.
    """
    with tempfile.TemporaryDirectory(prefix="colab-") as folder:
        copy = Path(folder) / source.name
        shutil.copyfile(source, copy)
        notebook = nbformat.read(copy, as_version=4)
        point_setup_cell(notebook, repo)
        client = NotebookClient(
            notebook,
            timeout=timeout,
            kernel_name="python3",
            resources={"metadata": {"path": folder}},
        )
        try:
            client.execute()
        except CellExecutionError as error:
            index = next(
                (i for i, cell in enumerate(notebook.cells)
                 if any(o.get("output_type") == "error" for o in cell.get("outputs", []))),
                "?",
            )
            return f"{source.name}: cell {index} failed when run alone as on Colab\n{error}"
    return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook", type=Path, help="the chapter notebook to run")
    parser.add_argument("--repo", required=True, help="URL pip installs relpos from")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per cell")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    failure = run_alone(args.notebook, args.repo, args.timeout)
    if failure:
        print(failure)
        return 1
    seconds = time.perf_counter() - start
    print(f"{args.notebook.name}: ran alone, top to bottom, in {seconds:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
