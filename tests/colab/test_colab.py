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
- each chapter (``tools/run_as_colab.py --compare book/sanitize.cfg``): the
  notebook copied alone into an empty folder, every cell executed top to bottom by
  nbval with that relpos installed (its setup cell then finds relpos and does
  nothing, as after the README's commands), and every output compared with the
  stored one (the stored notebooks' test: ``make test`` runs each chapter once, here,
  instead of once here and once more under nbval in the developer's environment;
  ``make notebooks`` still runs that alone); torch, numpy and matplotlib are checked
  unchanged after each chapter too.

pip resolves relpos's dependencies under constraints.txt (``PIP_CONSTRAINT``), so
the run is repeatable; the mechanism is the one a student's notebook uses. The
environment also has pytest and nbval, the harness that runs the notebook; no
chapter imports them.
"""

from __future__ import annotations

import json
import io
import os
import subprocess
import tarfile
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import set_repo_url  # noqa: E402

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


def _installer() -> list[str]:
    """What builds .venv-colab: uv where .venv has it (as `make` installs it; seconds
    instead of a minute), else pip. The setup cell itself always runs pip, as on
    Colab. uv reads no pip configuration: pip's find-links are passed on."""
    uv = Path(sys.executable).parent / "uv"
    if not uv.exists():
        return [str(PYTHON), "-m", "pip", "install", "-q"]
    links = os.environ.get("PIP_FIND_LINKS") or subprocess.run(
        [sys.executable, "-m", "pip", "config", "get", "global.find-links"],
        capture_output=True, text=True,
    ).stdout.strip()
    found = [arg for link in links.split() for arg in ("--find-links", link)]
    return [str(uv), "pip", "install", "-q", "--python", str(PYTHON),
            "-c", str(CONSTRAINTS), *found]


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


def _versions(python: Path) -> dict[str, str]:
    code = (
        "import json, importlib.metadata as m;"
        f"print(json.dumps({{n: m.version(n) for n in {KEPT!r}}}))"
    )
    return json.loads(_check(_run([str(python), "-c", code]), "reading versions"))


@pytest.fixture(scope="session")
def colab_relpos(colab_python: Path, head_commit: str, tmp_path_factory) -> str:
    """relpos installed by the setup cell's own code where it was missing; the
    versions of what Colab provides, unchanged by it."""
    folder = tmp_path_factory.mktemp("setup-cell")
    _run([str(colab_python), "-m", "pip", "uninstall", "-y", "-q", "relpos"])
    gone = _run([str(colab_python), "-c", "import relpos"], cwd=folder)
    assert gone.returncode != 0, "relpos is still importable before the setup cell runs"
    before = _versions(colab_python)
    setup = set_repo_url.SETUP_CELL.format(url=head_commit)
    ran = _run([str(colab_python), "-c", setup], cwd=folder)
    assert ran.returncode == 0, f"the setup cell failed:\n{ran.stdout}\n{ran.stderr}"
    where = _run([str(colab_python), "-c", "import relpos; print(relpos.__file__)"],
                 cwd=folder)
    assert where.returncode == 0, "the setup cell did not leave relpos installed"
    assert "site-packages" in where.stdout, where.stdout  # the wheel, not the clone
    assert _versions(colab_python) == before, "the setup cell changed a package Colab provides"
    return where.stdout.strip()


def test_the_setup_cell_installs_this_commit(colab_relpos: str):
    """The relpos the chapters run on is HEAD's: every module of the package in
    the commit is installed, byte for byte (``git archive HEAD relpos``)."""
    installed = Path(colab_relpos).parent
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


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_runs_alone_as_on_colab(
    colab_python: Path, colab_relpos: str, head_commit: str, chapter: Path,
    tmp_path: Path,
):
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
    assert _versions(colab_python) == before, "the chapter changed a package Colab provides"


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
