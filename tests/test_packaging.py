"""relpos packaged like a library: the sdist, the wheel, and the wheel installed alone.

The sdist is built from a copy of the checkout and the wheel from the unpacked sdist
(as pip does it from PyPI), both with setuptools' own PEP 517 hooks (offline, with
this Python's setuptools). The wheel is then installed into a fresh virtual
environment that cannot see the checkout; the packages it depends on (torch, and
the book extra's numpy, matplotlib, tqdm) are borrowed from this Python's
site-packages through a ``.pth`` line, so nothing is downloaded. Only relpos itself
comes from the wheel, which the test checks by its ``__file__``.
"""

from __future__ import annotations

import email
import json
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest
import yaml

import relpos

ROOT = Path(__file__).resolve().parent.parent

# What the copy of the checkout leaves out: environments, builds, caches.
_NOT_SOURCE = shutil.ignore_patterns(
    ".git",
    ".venv*",
    "_build",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".hypothesis",
    ".pytest_cache",
    ".jupyter_cache",
    ".ipynb_checkpoints",
)


def _hook(name: str, source: Path, output: Path) -> Path:
    """Run setuptools' PEP 517 hook ``name`` in ``source``; the file it wrote."""
    output.mkdir(parents=True, exist_ok=True)
    code = f"from setuptools import build_meta as b; print(b.{name}({str(output)!r}))"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=source, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return output / result.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def sdist(tmp_path_factory) -> Path:
    copy = tmp_path_factory.mktemp("checkout") / "relpos"
    shutil.copytree(ROOT, copy, ignore=_NOT_SOURCE)
    return _hook("build_sdist", copy, tmp_path_factory.mktemp("sdist"))


@pytest.fixture(scope="module")
def wheel(sdist, tmp_path_factory) -> Path:
    unpacked = tmp_path_factory.mktemp("unpacked")
    with tarfile.open(sdist) as archive:
        archive.extractall(unpacked, filter="data")
    (source,) = unpacked.iterdir()
    return _hook("build_wheel", source, tmp_path_factory.mktemp("wheel"))


def _sdist_files(sdist: Path) -> set[str]:
    with tarfile.open(sdist) as archive:
        return {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}


def _wheel_metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return email.message_from_bytes(archive.read(name))


def test_the_sdist_is_the_library_without_the_tests(sdist):
    files = _sdist_files(sdist)
    for needed in (
        "pyproject.toml",
        "README.md",
        "LICENSE",
        "LICENSE-text",
        "CITATION.cff",
        "relpos/__init__.py",
        "relpos/py.typed",
        "relpos/book/results/protocol/sweep.json",
        "relpos/book/results/first_pass/sweep.json",
    ):
        assert needed in files, needed
    # Test-free: no test module without the helpers and the book it needs.
    assert not [f for f in files if f.startswith("tests/") or "/test_" in f]
    assert not [f for f in files if f.startswith(("book/", "tools/", ".github/"))]


def test_one_version_for_the_package_the_wheel_and_the_citation(wheel):
    metadata = _wheel_metadata(wheel)
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert metadata["Version"] == relpos.__version__
    assert str(citation["version"]) == relpos.__version__
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" not in project and "version" in project["dynamic"]


def test_the_wheel_carries_its_licences_types_and_results(wheel):
    metadata = _wheel_metadata(wheel)
    assert metadata["License-Expression"] == "MIT"
    assert sorted(metadata.get_all("License-File")) == ["LICENSE", "LICENSE-text"]
    urls = dict(u.split(", ", 1) for u in metadata.get_all("Project-URL"))
    assert set(urls) == {"Homepage", "Documentation", "Source", "Issues"}
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert "relpos/py.typed" in names
    assert "relpos/book/results/protocol/sweep.json" in names
    assert "relpos/book/results/first_pass/sweep.json" in names
    assert {n.split("/", 1)[0] for n in names} == {
        "relpos",
        f"relpos-{relpos.__version__}.dist-info",
    }


def test_project_urls_point_at_the_configured_repository():
    """pyproject's URLs and CITATION.cff name the repository _config.yml declares."""
    sys.path.insert(0, str(ROOT / "tools"))
    import set_repo_url

    url = set_repo_url.configured_url()
    urls = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]
    assert urls["Source"] == urls["Homepage"] == url
    assert urls["Issues"] == f"{url}/issues"
    assert urls["Documentation"] == set_repo_url.pages_url(url)
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert citation["repository-code"] == url
    assert citation["url"] == urls["Documentation"]


def test_the_licences_are_stated_in_the_files_the_site_and_the_readme():
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert "CC BY 4.0" in (ROOT / "LICENSE-text").read_text()
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    footer = config["html"]["extra_footer"]
    assert "https://creativecommons.org/licenses/by/4.0/" in footer
    assert "CC BY 4.0" in footer and "MIT License" in footer
    readme = (ROOT / "README.md").read_text()
    assert "CC BY 4.0" in readme and "MIT" in readme


def test_citation_has_the_keys_cff_1_2_requires():
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert citation["cff-version"] == "1.2.0"
    for key in ("message", "title", "authors", "version", "date-released", "license"):
        assert citation.get(key), key
    for author in citation["authors"]:
        assert author.get("name") or author.get("family-names"), author


_IN_THE_FRESH_PYTHON = """
import importlib.metadata, importlib.resources, json, sys
import relpos
loaded = {"matplotlib": "matplotlib" in sys.modules,
          "relpos.book": "relpos.book" in sys.modules}
from relpos.book import plot, results
sweep = results.load("protocol/sweep.json")
print(json.dumps({
    "file": relpos.__file__,
    "results": str(results.path("protocol/sweep.json")),
    "version": relpos.__version__,
    "metadata_version": importlib.metadata.version("relpos"),
    "py_typed": importlib.resources.files("relpos").joinpath("py.typed").is_file(),
    "loaded_by_import_relpos": loaded,
    "sweep_is_data": bool(sweep),
}))
"""


@pytest.mark.slow
def test_the_wheel_works_alone_in_a_fresh_environment(wheel, tmp_path):
    fresh = tmp_path / "fresh"
    venv.create(fresh, with_pip=False)
    python = fresh / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    # relpos's dependencies from this Python, after the fresh site-packages; a .pth
    # file there is not processed, so this environment's editable relpos stays out.
    borrowed = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "borrowed-dependencies.pth").write_text("\n".join(sorted(borrowed)) + "\n")
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
         "--no-deps", "--no-index", str(wheel)],
        capture_output=True,
        text=True,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run = subprocess.run(
        [python, "-I", "-c", _IN_THE_FRESH_PYTHON],  # -I: no PYTHONPATH, no cwd
        cwd=elsewhere,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert Path(seen["file"]).is_relative_to(site), seen["file"]
    assert not Path(seen["file"]).is_relative_to(ROOT)
    assert Path(seen["results"]).is_relative_to(site), seen["results"]
    loaded = seen["loaded_by_import_relpos"]
    assert loaded == {"matplotlib": False, "relpos.book": False}, loaded
    assert seen["version"] == seen["metadata_version"] == relpos.__version__
    assert seen["py_typed"] and seen["sweep_is_data"]
