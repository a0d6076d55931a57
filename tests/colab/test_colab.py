"""Every chapter as a student's Colab runs it: alone, in a Python without relpos.

A launch button opens one notebook by itself, with nothing of the repository
beside it, in a Python that has torch, numpy, matplotlib and a kernel but not
relpos. This module builds such a Python (``.venv-colab``, kept between runs and
rebuilt when constraints.txt changes), then:

- the setup cell, where relpos is missing (``colab_relpos``, once): relpos is
  uninstalled and checked to be gone; the setup cell's own code, its REPO_URL
  pointed at this clone's HEAD commit (``git+file://...@SHA``, so the committed
  state of the checkout is what gets installed), runs in an empty folder; relpos
  then imports there, from the installed wheel, and torch, numpy and matplotlib are
  as they were. Every chapter's setup cell is this same code
  (``tests/test_book_config.py`` checks each against ``tools/set_repo_url.py``), so
  it is installed once, not once per chapter (about 8 s of CPU each);
- every chapter (``chapter_reports``: one call of ``tools/run_as_colab.py
  --compare book/sanitize.cfg`` for all of them, so one pytest+nbval process): each
  notebook copied alone into an empty folder of its own, every cell executed top
  to bottom by nbval in a kernel started in that folder, with that relpos
  installed (its setup cell then finds relpos and does nothing, as after the
  README's commands), and every output compared with the stored one (the stored
  notebooks' test: ``make test`` runs each chapter once, here, instead of once here
  and once more under nbval in the developer's environment; ``make notebooks``
  still runs that alone). Each chapter is still its own test, failing with its
  own report (which cell, the traceback or the difference), and a failed chapter
  does not stop the others;
- torch, numpy and matplotlib checked unchanged once, after all the chapters: a
  chapter that changed them would be caught, though not named;
- the runner itself, on small notebooks, in two calls: with nbval, a cell that
  raises is named, a stale output is caught (and the same notebook with the output
  corrected passes), and those failures leave the other notebooks of the call run
  and reported; without nbval (nbclient only, as the runner needs on Colab), a
  cell that raises is named too.

pip resolves relpos's dependencies under constraints.txt (``PIP_CONSTRAINT``), so
the run is repeatable; the mechanism is the one a student's notebook uses. The
environment also has pytest and nbval, the harness that runs the notebook; no
chapter imports them.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import NamedTuple

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import set_repo_url  # noqa: E402

ENV = ROOT / ".venv-colab"
PYTHON = ENV / "bin" / "python"
STAMP = ENV / ".installed"
CONSTRAINTS = ROOT / "constraints.txt"
RUNNER = ROOT / "tools" / "run_as_colab.py"
# What Colab provides before the setup cell runs (a kernel to run cells in).
PROVIDED = ("torch", "numpy", "matplotlib", "ipykernel", "nbclient", "nbformat")
KEPT = ("torch", "numpy", "matplotlib")
# What runs the notebook and compares its outputs (never imported by a chapter).
HARNESS = ("pytest", "nbval")
SANITIZE = ROOT / "book" / "sanitize.cfg"
CHAPTERS = sorted((ROOT / "book").glob("*.ipynb"))
# Where relpos imports from (None: it does not) and the versions of KEPT, in one
# Python start.
PROBE = f"""
import importlib.metadata as metadata, json
try:
    import relpos
    where = relpos.__file__
except ImportError:
    where = None
versions = {{name: metadata.version(name) for name in {KEPT!r}}}
print(json.dumps({{"relpos": where, "versions": versions}}))
"""


def _run(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = f"{ENV / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PIP_CONSTRAINT"] = str(CONSTRAINTS)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    # the setup cell's pip prints nothing (CI runs as root)
    env["PIP_ROOT_USER_ACTION"] = "ignore"
    env["MPLBACKEND"] = "Agg"
    return subprocess.run(args, capture_output=True, text=True, env=env, **kwargs)


def _check(result: subprocess.CompletedProcess, what: str) -> str:
    assert result.returncode == 0, f"{what} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def _probe(python: Path, folder: Path) -> dict:
    """``PROBE`` run by ``python`` in ``folder``: where relpos is, the versions."""
    return json.loads(_check(_run([str(python), "-c", PROBE], cwd=folder), "probing"))


@pytest.fixture(scope="session")
def head_commit() -> str:
    """The clone's commit as pip names it: ``file:///path/to/clone@SHA``."""
    sha = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    return f"{ROOT.as_uri()}@{sha}"


def _uv() -> Path | None:
    """.venv's uv, where it has one (as `make` installs it)."""
    uv = Path(sys.executable).parent / "uv"
    return uv if uv.exists() else None


def _installer() -> list[str]:
    """What builds .venv-colab: uv where .venv has it (seconds instead of a minute),
    else pip. The setup cell itself always runs pip, as on Colab. uv reads no pip
    configuration: pip's find-links are passed on."""
    uv = _uv()
    if uv is None:
        return [str(PYTHON), "-m", "pip", "install", "-q"]
    links = os.environ.get("PIP_FIND_LINKS") or subprocess.run(
        [sys.executable, "-m", "pip", "config", "get", "global.find-links"],
        capture_output=True, text=True,
    ).stdout.strip()
    found = [arg for link in links.split() for arg in ("--find-links", link)]
    return [str(uv), "pip", "install", "-q", "--python", str(PYTHON),
            "-c", str(CONSTRAINTS), *found]


def _uninstall_relpos() -> None:
    """Remove relpos from .venv-colab (uv where there is one: no pip start); the
    caller checks that it is gone."""
    uv = _uv()
    if uv is None:
        _run([str(PYTHON), "-m", "pip", "uninstall", "-y", "-q", "relpos"])
    else:
        _run([str(uv), "pip", "uninstall", "-q", "--python", str(PYTHON), "relpos"])


@pytest.fixture(scope="session")
def colab_python() -> Path:
    """A fresh-enough Python with only what Colab provides."""
    if not STAMP.exists() or STAMP.stat().st_mtime < CONSTRAINTS.stat().st_mtime:
        _check(_run([sys.executable, "-m", "venv", "--clear", str(ENV)]), "venv")
        pip = _installer()
        _check(_run([*pip, "--upgrade", "pip"]), "pip upgrade")
        _check(_run([*pip, *PROVIDED]), "installing what Colab provides")
        _check(_run([*pip, *HARNESS]), "installing the harness")
        STAMP.touch()
    return PYTHON


class Installed(NamedTuple):
    """relpos as the setup cell left it: its ``__init__.py``, and the versions of
    what Colab provides then."""

    where: str
    versions: dict[str, str]


@pytest.fixture(scope="session")
def colab_relpos(colab_python: Path, head_commit: str, tmp_path_factory) -> Installed:
    """relpos installed by the setup cell's own code where it was missing; the
    versions of what Colab provides, unchanged by it."""
    folder = tmp_path_factory.mktemp("setup-cell")
    _uninstall_relpos()
    before = _probe(colab_python, folder)
    assert before["relpos"] is None, "relpos is still importable before the setup cell"
    setup = set_repo_url.SETUP_CELL.format(url=head_commit)
    ran = _run([str(colab_python), "-c", setup], cwd=folder)
    assert ran.returncode == 0, f"the setup cell failed:\n{ran.stdout}\n{ran.stderr}"
    after = _probe(colab_python, folder)
    assert after["relpos"] is not None, "the setup cell did not leave relpos installed"
    assert "site-packages" in after["relpos"], after  # the wheel, not the clone
    assert after["versions"] == before["versions"], (
        "the setup cell changed a package Colab provides"
    )
    return Installed(after["relpos"], after["versions"])


def test_the_setup_cell_installs_this_commit(colab_relpos: Installed):
    """The relpos the chapters run on is HEAD's: every module of the package in
    the commit is installed, byte for byte (``git archive HEAD relpos``)."""
    installed = Path(colab_relpos.where).parent
    archive = subprocess.run(
        ["git", "archive", "HEAD", "relpos"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        modules = [m for m in tar.getmembers() if m.name.endswith(".py")]
        assert len(modules) > 50, [m.name for m in modules]
        differ = [
            m.name
            for m in modules
            if tar.extractfile(m).read()
            != (installed / Path(m.name).relative_to("relpos")).read_bytes()
        ]
    assert not differ, f"installed modules that are not HEAD's: {differ}"


class Reports(NamedTuple):
    """One call of the runner: each notebook's printed report, by name, and the
    whole output with the exit status (for what no report explains)."""

    by_name: dict[str, str]
    output: str


def _reports(stdout: str, names: list[str]) -> dict[str, str]:
    """The runner's output cut into each notebook's report: they come in the order
    the notebooks were given, each starting a line with "NAME: "."""
    text, starts = "\n" + stdout, []
    for name in names:
        found = text.find(f"\n{name}: ", starts[-1] + 1 if starts else 0)
        if found < 0:
            break
        starts.append(found)
    ends = [*starts[1:], len(text)]
    return {
        name: text[start:end].strip() for name, start, end in zip(names, starts, ends)
    }


def _run_runner(
    python: Path, notebooks: list[Path], repo: str, folder: Path, *flags: str
) -> Reports:
    """``tools/run_as_colab.py`` on ``notebooks`` in one call, read back."""
    result = _run([str(python), str(RUNNER), *map(str, notebooks), "--repo", repo,
                   *flags], cwd=folder)
    names = [notebook.name for notebook in notebooks]
    output = f"exit {result.returncode}\n{result.stdout}\n{result.stderr[-3000:]}"
    return Reports(_reports(result.stdout, names), output)


class Chapters(NamedTuple):
    """Every chapter's report, and the versions of what Colab provides after all
    of them."""

    reports: Reports
    versions: dict[str, str]


# Each chapter's seconds as the runner printed them, for the suite's closing report
# (pytest's durations see one setup for all of them).
SECONDS: dict[str, float] = {}


@pytest.fixture(scope="session")
def chapters(
    colab_python: Path, colab_relpos: Installed, head_commit: str, tmp_path_factory
) -> Chapters:
    """Every chapter run alone under nbval, all in one call of the runner."""
    folder = tmp_path_factory.mktemp("chapters")
    reports = _run_runner(colab_python, CHAPTERS, head_commit, folder,
                          "--compare", str(SANITIZE))
    for name, report in reports.by_name.items():
        found = re.search(r" in ([0-9.]+) s", report.splitlines()[0])
        if found:
            SECONDS[name] = float(found.group(1))
    return Chapters(reports, _probe(colab_python, folder)["versions"])


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_runs_alone_as_on_colab(chapters: Chapters, chapter: Path):
    """The chapter ran alone, every cell, every output as stored; else its report
    (the failed cell, the traceback or the difference)."""
    report = chapters.reports.by_name.get(chapter.name)
    output = chapters.reports.output
    assert report is not None, f"no report for {chapter.name}:\n{output}"
    ran = f"{chapter.name}: ran alone, top to bottom, every output as stored"
    assert report.startswith(ran), report


def test_the_chapters_leave_what_colab_provides(
    colab_relpos: Installed, chapters: Chapters
):
    """torch, numpy and matplotlib are as the setup cell left them after every
    chapter has run (checked once, after all: a chapter that changed them is
    caught here, not named)."""
    assert chapters.versions == colab_relpos.versions, (
        "a chapter changed a package Colab provides"
    )


def _printed(source: str, text: str, count: int) -> nbformat.NotebookNode:
    """A code cell whose stored output is ``text`` on stdout."""
    cell = nbformat.v4.new_code_cell(source, execution_count=count)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
    return cell


def _notebook(path: Path, *cells: nbformat.NotebookNode) -> Path:
    """A small chapter of ``cells`` at ``path``."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = list(cells)
    nbformat.write(notebook, path)
    return path


@pytest.fixture(scope="module")
def small_chapters(tmp_path_factory) -> list[Path]:
    """Three small chapters, each with a setup cell (a REPO_URL line): one whose
    last cell raises (cell 3, after a markdown cell), one with a stale output
    (cell 2 printed 41, it prints 42), the same with that output corrected. The
    last two list their working folder in cell 1: stored as the notebook alone."""
    folder = tmp_path_factory.mktemp("small-chapters")
    new = nbformat.v4
    setup = new.new_code_cell('REPO_URL = "https://example.invalid/relpos"')
    broken = _notebook(
        folder / "broken_chapter.ipynb", new.new_markdown_cell("# A chapter"), setup,
        new.new_code_cell("x = 1"),
        new.new_code_cell("raise ValueError('the chapter broke here')"),
    )
    stale, corrected = (
        _notebook(
            folder / name, setup,
            _printed("import os; print(sorted(os.listdir()))", f"['{name}']\n", 1),
            _printed("print(6 * 7)", printed, 2),
        )
        for name, printed in [("stale_chapter.ipynb", "41\n"),
                              ("corrected_chapter.ipynb", "42\n")]
    )
    return [broken, stale, corrected]


@pytest.fixture(scope="module")
def compared_small(
    colab_python: Path, small_chapters: list[Path], tmp_path_factory
) -> Reports:
    """The three small chapters in one call of the runner, under nbval."""
    folder = tmp_path_factory.mktemp("compared")
    return _run_runner(colab_python, small_chapters, ROOT.as_uri(), folder,
                       "--compare", str(SANITIZE))


def test_a_failing_cell_is_named(compared_small: Reports):
    """Under nbval, the cell that raised is named by its index in the notebook,
    with its error; the run fails."""
    assert compared_small.output.startswith("exit 1\n"), compared_small.output
    report = compared_small.by_name.get("broken_chapter.ipynb", "")
    assert report.startswith("broken_chapter.ipynb: cell 3 "), compared_small.output
    assert "the chapter broke here" in report, report


def test_an_output_that_changed_is_caught(compared_small: Reports):
    """Under nbval, a stale stored output fails its chapter, naming the cell and
    showing both outputs; the same chapter with the output corrected passes, in
    the same call, after two chapters that failed (a failed chapter does not
    stop the others). Its cell 1 matched its stored listing: nbval ran it in a
    folder holding only the notebook."""
    report = compared_small.by_name.get("stale_chapter.ipynb", "")
    assert report.startswith("stale_chapter.ipynb: cell 2 "), compared_small.output
    assert "41" in report and "42" in report, report
    corrected = compared_small.by_name.get("corrected_chapter.ipynb", "")
    ran = "corrected_chapter.ipynb: ran alone, top to bottom, every output as stored"
    assert corrected.startswith(ran), compared_small.output


def test_without_nbval_a_failing_cell_is_named(
    colab_python: Path, small_chapters: list[Path], tmp_path: Path
):
    """Without ``--compare`` (nbclient only, all the runner needs on Colab) the
    cell that raised is named too, and the chapter after it still runs."""
    broken, _, corrected = small_chapters
    reports = _run_runner(colab_python, [broken, corrected], ROOT.as_uri(), tmp_path)
    assert reports.output.startswith("exit 1\n"), reports.output
    report = reports.by_name.get("broken_chapter.ipynb", "")
    assert report.startswith("broken_chapter.ipynb: cell 3 failed"), reports.output
    assert "the chapter broke here" in report, report
    ran = "corrected_chapter.ipynb: ran alone, top to bottom, in "
    assert reports.by_name.get("corrected_chapter.ipynb", "").startswith(ran), (
        reports.output
    )
