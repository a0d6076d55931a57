"""Run one chapter the way Colab opens it: alone, in an empty folder, top to bottom.

Usage (with the Python of a Colab-like environment: torch, numpy, matplotlib, a
kernel, and no relpos):

    PYTHON tools/run_as_colab.py book/05_efficient_attention.ipynb --repo file:///path/to/clone

The notebook is copied by itself into a fresh temporary folder (nothing of the
repository beside it), its setup cell's REPO_URL is pointed at ``--repo`` (so the
cell's ``pip install relpos[book,interop] @ git+REPO_URL`` installs the clone under
test), and every cell runs in a kernel of this Python with that folder as the
working directory. On an error it names the chapter and the cell, shows the
cell's first lines and the traceback, and exits with 1.

With ``--compare SANITIZE_CFG`` the copy is run by nbval instead (``pytest
--nbval --nbval-current-env``, with that file's sanitizers): every cell's output
must also equal the stored one, as ``make notebooks`` checks in the developer's
environment. One run then checks both that the chapter runs alone and what it
prints. This needs pytest and nbval in this Python (the test harness, which the
chapters never import).

Without ``--compare`` this script needs only nbformat and nbclient (Colab has
both); it imports nothing of the project.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
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


def compare_alone(copy: Path, sanitize: Path, timeout: int) -> str:
    """Run ``copy`` under nbval; an empty string if every cell ran and matched."""
    result = subprocess.run(
        [
            sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env",
            f"--nbval-sanitize-with={sanitize}", f"--nbval-cell-timeout={timeout}",
            "-p", "no:cacheprovider", "-q", str(copy),
        ],
        cwd=copy.parent, capture_output=True, text=True,
    )
    cells = sum(c.cell_type == "code" for c in nbformat.read(copy, as_version=4).cells)
    if result.returncode != 0 or f"{cells} passed" not in result.stdout:
        report = (result.stdout + result.stderr)[-6000:]
        return f"{copy.name}: nbval, {cells} code cells, when run alone:\n{report}"
    return ""


def run_alone(
    source: Path, repo: str, timeout: int, sanitize: Path | None = None
) -> str:
    """Copy ``source`` alone into an empty folder and execute it there.

    Returns an empty string on success, else a report naming the failed cell.
    """
    with tempfile.TemporaryDirectory(prefix="colab-") as folder:
        copy = Path(folder) / source.name
        shutil.copyfile(source, copy)
        notebook = nbformat.read(copy, as_version=4)
        point_setup_cell(notebook, repo)
        if sanitize is not None:
            nbformat.write(notebook, copy)
            return compare_alone(copy, sanitize.resolve(), timeout)
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


def _seconds(text: str) -> int:
    """A cell's timeout: an int >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {value}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook", type=Path, help="the chapter notebook to run")
    parser.add_argument("--repo", required=True, help="URL pip installs relpos from")
    parser.add_argument(
        "--timeout", type=_seconds, default=900, help="seconds per cell"
    )
    parser.add_argument(
        "--compare", type=Path, metavar="SANITIZE_CFG",
        help="run under nbval with these sanitizers: outputs must equal the stored",
    )
    args = parser.parse_args(argv)
    if not args.notebook.is_file():
        parser.error(f"argument notebook: no notebook at {str(args.notebook)!r}")
    if args.compare is not None and not args.compare.is_file():
        parser.error(f"argument --compare: no file at {str(args.compare)!r}")
    start = time.perf_counter()
    failure = run_alone(args.notebook, args.repo, args.timeout, args.compare)
    if failure:
        print(failure)
        return 1
    seconds = time.perf_counter() - start
    compared = ", every output as stored" if args.compare else ""
    name = args.notebook.name
    print(f"{name}: ran alone, top to bottom{compared}, in {seconds:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
