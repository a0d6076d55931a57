"""Every chapter as a student's Colab runs it: alone, in a Python without relpos.

A launch button opens one notebook by itself, with nothing of the repository
beside it, in a Python that has torch, numpy, matplotlib and a kernel but not
relpos. This module builds such a Python (``.venv-colab``, kept between runs and
rebuilt when constraints.txt changes), then for each chapter:

- uninstalls relpos there and checks that it is really gone;
- runs ``tools/run_as_colab.py --compare book/sanitize.cfg``: the notebook copied
  alone into an empty folder, its setup cell pointed at this clone's HEAD commit
  (``git+file://...@SHA``, so the committed state of the checkout is what gets
  installed), every cell executed top to bottom by nbval, and every output
  compared with the stored one (the stored notebooks' test: ``make test`` runs
  each chapter once, here, instead of once here and once more under nbval in the
  developer's environment; ``make notebooks`` still runs that alone);
- checks that the setup cell left torch, numpy and matplotlib as they were.

pip resolves relpos's dependencies under constraints.txt (``PIP_CONSTRAINT``), so
the run is repeatable; the mechanism is the one a student's notebook uses. The
environment also has pytest and nbval, the harness that runs the notebook; no
chapter imports them. Naming
the commit makes the reference immutable, so pip builds relpos's wheel for the
first chapter and takes it from its cache for the others (about 25 seconds saved
per chapter); every chapter still installs it anew.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV = ROOT / ".venv-colab"
PYTHON = ENV / "bin" / "python"
STAMP = ENV / ".installed"
CONSTRAINTS = ROOT / "constraints.txt"
# What Colab provides before the setup cell runs (a kernel to run cells in).
PROVIDED = ("torch", "numpy", "matplotlib", "ipykernel", "nbclient", "nbformat")
KEPT = ("torch", "numpy", "matplotlib")
# What runs the notebook and compares its outputs (never imported by a chapter).
HARNESS = ("pytest", "nbval")
SANITIZE = ROOT / "book" / "sanitize.cfg"
CHAPTERS = sorted((ROOT / "book").glob("*.ipynb"))


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


@pytest.fixture(scope="session")
def head_commit() -> str:
    """The clone's commit as pip names it: ``file:///path/to/clone@SHA``."""
    sha = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    return f"{ROOT.as_uri()}@{sha}"


@pytest.fixture(scope="session")
def colab_python() -> Path:
    """A fresh-enough Python with only what Colab provides."""
    if not STAMP.exists() or STAMP.stat().st_mtime < CONSTRAINTS.stat().st_mtime:
        _check(_run([sys.executable, "-m", "venv", "--clear", str(ENV)]), "venv")
        pip = [str(PYTHON), "-m", "pip", "install", "-q"]
        _check(_run([*pip, "--upgrade", "pip"]), "pip upgrade")
        _check(_run([*pip, *PROVIDED]), "installing what Colab provides")
        _check(_run([*pip, *HARNESS]), "installing the harness")
        STAMP.touch()
    return PYTHON


def _versions(python: Path) -> dict[str, str]:
    code = (
        "import json, importlib.metadata as m;"
        f"print(json.dumps({{n: m.version(n) for n in {KEPT!r}}}))"
    )
    return json.loads(_check(_run([str(python), "-c", code]), "reading versions"))


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_runs_alone_as_on_colab(
    colab_python: Path, head_commit: str, chapter: Path, tmp_path: Path
):
    _run([str(colab_python), "-m", "pip", "uninstall", "-y", "-q", "relpos"])
    gone = _run([str(colab_python), "-c", "import relpos"], cwd=tmp_path)
    assert gone.returncode != 0, "relpos is still importable before the setup cell runs"
    before = _versions(colab_python)

    result = _run(
        [
            str(colab_python),
            str(ROOT / "tools" / "run_as_colab.py"),
            str(chapter),
            "--repo",
            head_commit,
            "--compare",
            str(SANITIZE),
        ],
        cwd=tmp_path,
    )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr[-3000:]}"
    assert "ran alone, top to bottom, every output as stored" in result.stdout

    installed = _run([str(colab_python), "-c", "import relpos"], cwd=tmp_path)
    assert installed.returncode == 0, "the setup cell did not leave relpos installed"
    assert _versions(colab_python) == before, "the setup cell changed a package Colab provides"


def test_a_failing_cell_is_named(colab_python: Path, tmp_path: Path):
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_markdown_cell("# A chapter"),
        nbformat.v4.new_code_cell('REPO_URL = "https://example.invalid/relpos"'),
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_code_cell("raise ValueError('the chapter broke here')"),
    ]
    path = tmp_path / "broken_chapter.ipynb"
    nbformat.write(notebook, path)
    runner = ROOT / "tools" / "run_as_colab.py"
    result = _run([str(colab_python), str(runner), str(path), "--repo", ROOT.as_uri()])
    assert result.returncode == 1
    assert "broken_chapter.ipynb: cell 3 failed" in result.stdout
    assert "the chapter broke here" in result.stdout


def test_an_output_that_changed_is_caught(colab_python: Path, tmp_path: Path):
    import nbformat

    notebook = nbformat.v4.new_notebook()
    stale = nbformat.v4.new_code_cell("print(6 * 7)", execution_count=1)
    stale.outputs = [nbformat.v4.new_output("stream", name="stdout", text="41\n")]
    notebook.cells = [
        nbformat.v4.new_code_cell('REPO_URL = "https://example.invalid/relpos"'),
        stale,
    ]
    path = tmp_path / "stale_chapter.ipynb"
    nbformat.write(notebook, path)
    runner = ROOT / "tools" / "run_as_colab.py"
    args = [str(colab_python), str(runner), str(path), "--repo", ROOT.as_uri()]
    result = _run([*args, "--compare", str(SANITIZE)])
    assert result.returncode == 1, result.stdout
    assert "stale_chapter.ipynb: nbval" in result.stdout
    assert "41" in result.stdout and "42" in result.stdout
    stale.outputs[0].text = "42\n"
    nbformat.write(notebook, path)
    assert _run([*args, "--compare", str(SANITIZE)]).returncode == 0
