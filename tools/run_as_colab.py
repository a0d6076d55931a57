"""Run chapters the way Colab opens them: each alone, in an empty folder, top to bottom.

Usage (with the Python of a Colab-like environment: torch, numpy, matplotlib, a
kernel, and no relpos):

    PYTHON tools/run_as_colab.py book/05_efficient_attention.ipynb --repo file:///path/to/clone

Each notebook named (one, or several: ``book/0*.ipynb``) is copied by itself into
a fresh, empty temporary folder of its own (nothing of the repository or of the
other notebooks beside it), its setup cell's REPO_URL is pointed at ``--repo`` (so
the cell's ``pip install relpos[book,interop] @ git+REPO_URL`` installs the clone
under test), and every cell runs in a new kernel of this Python with that folder
as the working directory. Every notebook is run, whatever the others do; for each
the script prints one line when it ran, or a report naming the chapter and the
failed cell (its index in the notebook), with the cell's first lines and the
traceback. It exits with 1 if any notebook failed.

With ``--compare SANITIZE_CFG`` the copies are run by nbval instead (one ``pytest
--nbval --nbval-current-env`` process for all of them, with that file's
sanitizers; nbval starts each notebook's kernel in the notebook's own folder):
every cell's output must also equal the stored one, as ``make notebooks`` checks
in the developer's environment. One run then checks both that each chapter runs
alone and what it prints; a failed cell's report shows the difference. This
needs pytest and nbval in this Python (the test harness, which the chapters never
import).

Without ``--compare`` this script needs only nbformat and nbclient (Colab has
both); it imports nothing of the project.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

_REPO_LINE = re.compile(r'^REPO_URL = "[^"]*"$', re.MULTILINE)
# A failed cell's report is cut to this many characters, and at most this many
# failed cells of one notebook are shown (the first: later ones often only follow).
_CELL_REPORT = 3000
_CELLS_SHOWN = 3
# The kernel's colours in a traceback, as pytest writes them into XML.
_COLOUR = re.compile(r"#x1B\[[0-9;]*m")


def point_setup_cell(notebook: nbformat.NotebookNode, repo: str) -> int:
    """Rewrite the REPO_URL line of the setup cell; return that cell's index."""
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code":
            if not _REPO_LINE.search(cell.source):
                raise ValueError("the first code cell is not the setup cell (no REPO_URL line)")
            cell.source = _REPO_LINE.sub(f'REPO_URL = "{repo}"', cell.source, count=1)
            return index
    raise ValueError("the notebook has no code cell")


def copy_alone(source: Path, folder: Path, repo: str) -> Path:
    """``source``, its setup cell pointed at ``repo``, alone in the new ``folder``."""
    folder.mkdir()
    notebook = nbformat.read(source, as_version=4)
    point_setup_cell(notebook, repo)
    copy = folder / source.name
    nbformat.write(notebook, copy)
    return copy


def _code_cells(copy: Path) -> list[int]:
    """The notebook index of each code cell, in order (nbval numbers only these)."""
    cells = nbformat.read(copy, as_version=4).cells
    return [i for i, cell in enumerate(cells) if cell.cell_type == "code"]


def _testcases(junit: Path) -> dict[str, list[ElementTree.Element]]:
    """pytest's junit XML: each test file's classname -> its test cases, in order."""
    cases: dict[str, list[ElementTree.Element]] = {}
    if junit.is_file():
        for case in ElementTree.parse(junit).iter("testcase"):
            cases.setdefault(case.get("classname", ""), []).append(case)
    return cases


def _cell_report(name: str, case: ElementTree.Element, code_cells: list[int]) -> str:
    """A failed (or skipped) cell of ``name``: which cell, and nbval's report."""
    match = re.match(r"Cell (\d+)$", case.get("name", ""))
    number = int(match.group(1)) if match else -1
    index = code_cells[number] if 0 <= number < len(code_cells) else "?"
    problem = next(iter(case), None)
    text = "" if problem is None else (problem.text or problem.get("message", ""))
    text = _COLOUR.sub("", text)
    return (f"{name}: cell {index} (code cell {number}) failed under nbval when run "
            f"alone:\n{text[:_CELL_REPORT]}")


def _notebook_report(
    copy: Path, cases: list[ElementTree.Element], output: str
) -> tuple[str, float]:
    """One notebook's result under nbval: ("", seconds) if every code cell ran and
    matched, else (a report naming the failed cells, seconds)."""
    code_cells = _code_cells(copy)
    seconds = sum(float(case.get("time", 0)) for case in cases)
    failed = [case for case in cases if len(case)]  # failure, error or skipped
    if not failed and len(cases) == len(code_cells):
        return "", seconds
    if not failed:
        ran = f"nbval ran {len(cases)} of its {len(code_cells)} code cells"
        return f"{copy.name}: {ran} when run alone:\n{output[-_CELL_REPORT:]}", seconds
    shown = [_cell_report(copy.name, c, code_cells) for c in failed[:_CELLS_SHOWN]]
    if len(failed) > _CELLS_SHOWN:
        shown.append(f"{copy.name}: and {len(failed) - _CELLS_SHOWN} more cells failed")
    return "\n".join(shown), seconds


def compare_alone(
    copies: list[Path], folder: Path, sanitize: Path, timeout: int
) -> list[tuple[str, float]]:
    """Run every copy (each in its own subfolder of ``folder``) in one nbval process.

    Returns, for each copy, ("", seconds) if every cell ran and matched, else a
    report naming the failed cells, read back from pytest's junit XML.
    """
    junit = folder / "nbval.xml"
    result = subprocess.run(
        [
            sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env",
            f"--nbval-sanitize-with={sanitize}", f"--nbval-cell-timeout={timeout}",
            "-p", "no:cacheprovider", "-q", "--color=no", f"--rootdir={folder}",
            f"--junitxml={junit}", *(str(copy) for copy in copies),
        ],
        cwd=folder, capture_output=True, text=True,
    )
    cases = _testcases(junit)
    output = result.stdout + result.stderr
    # a file's test cases are named after its path from the rootdir, "/" -> "."
    return [
        _notebook_report(copy, cases.get(f"{copy.parent.name}.{copy.name}", []), output)
        for copy in copies
    ]


def execute_alone(copy: Path, timeout: int) -> tuple[str, float]:
    """Execute ``copy`` with nbclient in its folder: ("", seconds) on success, else
    a report naming the failed cell."""
    start = time.perf_counter()
    notebook = nbformat.read(copy, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(copy.parent)}},
    )
    try:
        client.execute()
    except CellExecutionError as error:
        index = next(
            (i for i, cell in enumerate(notebook.cells)
             if any(o.get("output_type") == "error" for o in cell.get("outputs", []))),
            "?",
        )
        report = f"{copy.name}: cell {index} failed when run alone as on Colab\n{error}"
        return report, time.perf_counter() - start
    return "", time.perf_counter() - start


def run_alone(
    sources: list[Path], repo: str, timeout: int, sanitize: Path | None = None
) -> list[tuple[str, float]]:
    """Copy each of ``sources`` alone into an empty folder of its own and execute it
    there, all of them whatever the others do.

    Returns, for each source in order, ("", seconds) on success, else (a report
    naming the failed cell, seconds).
    """
    with tempfile.TemporaryDirectory(prefix="colab-") as temporary:
        folder = Path(temporary)
        copies = [
            copy_alone(source, folder / str(number), repo)
            for number, source in enumerate(sources)
        ]
        if sanitize is not None:
            return compare_alone(copies, folder, sanitize.resolve(), timeout)
        return [execute_alone(copy, timeout) for copy in copies]


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
    parser.add_argument(
        "notebook", type=Path, nargs="+", help="the chapter notebooks, each run alone"
    )
    parser.add_argument("--repo", required=True, help="URL pip installs relpos from")
    parser.add_argument(
        "--timeout", type=_seconds, default=900, help="seconds per cell"
    )
    parser.add_argument(
        "--compare", type=Path, metavar="SANITIZE_CFG",
        help="run under nbval with these sanitizers: outputs must equal the stored",
    )
    args = parser.parse_args(argv)
    for notebook in args.notebook:
        if not notebook.is_file():
            parser.error(f"argument notebook: no notebook at {str(notebook)!r}")
    if args.compare is not None and not args.compare.is_file():
        parser.error(f"argument --compare: no file at {str(args.compare)!r}")
    results = run_alone(args.notebook, args.repo, args.timeout, args.compare)
    compared = ", every output as stored" if args.compare else ""
    for notebook, (failure, seconds) in zip(args.notebook, results):
        ran = f"{notebook.name}: ran alone, top to bottom{compared}, in {seconds:.0f} s"
        print(failure or ran)
    return 1 if any(failure for failure, _ in results) else 0


if __name__ == "__main__":
    sys.exit(main())
