"""Point the book at a repository: _config.yml, every notebook's setup cell, the URLs.

Usage: .venv/bin/python tools/set_repo_url.py https://github.com/YOUR-ORG/relpos

The repository URL lives in one place, `repository.url` in _config.yml: the
launch buttons and the repository button read it there. The setup cell of each
notebook must also know it (on Colab a notebook is opened alone), so this script
rewrites those cells from SETUP_CELL below, and tests/test_book_config.py checks
that every notebook's first code cell is exactly SETUP_CELL for the URL in
_config.yml. pyproject.toml's project URLs and CITATION.cff are rewritten too
(tests/test_packaging.py checks them). Run `make test` afterwards.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent

SETUP_CELL = '''# Setup: on Colab, or wherever relpos is missing, install it from the book's
# repository. pip keeps the torch, numpy and matplotlib already installed.
# After the README's `make` commands relpos is installed and this does nothing.
REPO_URL = "{url}"
try:
    import relpos
except ImportError:
    import importlib
    import subprocess
    import sys

    package = f"relpos[book,interop] @ git+{{REPO_URL}}"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", package], check=True)
    importlib.invalidate_caches()
    import relpos'''

# The site collapses the setup cell: boilerplate to a reader, one click away.
SETUP_TAGS = ("hide-input",)

_URL_LINE = re.compile(r"^(\s*url:\s*)(\S+)\s*$", re.MULTILINE)


def configured_url(config_path: Path = ROOT / "_config.yml") -> str:
    """The repository URL that _config.yml declares."""
    match = _URL_LINE.search(config_path.read_text())
    if match is None:
        raise ValueError(f"{config_path.name} has no 'repository: url:' line")
    return match.group(2)


def pages_url(url: str) -> str:
    """Where GitHub Pages serves the site of repository ``url`` (the workflow's target)."""
    match = re.fullmatch(r"https://github\.com/([^/]+)/([^/]+?)/?", url)
    if match is None:
        return url
    return f"https://{match.group(1).lower()}.github.io/{match.group(2)}/"


def notebooks() -> list[Path]:
    """Every chapter notebook of the book."""
    return sorted((ROOT / "book").glob("*.ipynb"))


def first_code_cell(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The first code cell: the setup cell."""
    return next(cell for cell in notebook.cells if cell.cell_type == "code")


def write_setup_cell(cell: nbformat.NotebookNode, url: str) -> None:
    """Make ``cell`` the setup cell for ``url``, tagged for the site."""
    cell.source = SETUP_CELL.format(url=url)
    tags = cell.metadata.setdefault("tags", [])
    tags.extend(tag for tag in SETUP_TAGS if tag not in tags)


def set_url(url: str) -> None:
    """Write ``url`` into _config.yml and into every notebook's setup cell."""
    if not re.fullmatch(r"https://\S+", url):
        raise ValueError(f"url must be an https:// repository URL, got {url!r}")
    config = ROOT / "_config.yml"
    previous = configured_url(config)
    # pyproject.toml's project URLs and CITATION.cff name the repository and its site
    for name in ("pyproject.toml", "CITATION.cff"):
        path = ROOT / name
        text = path.read_text().replace(pages_url(previous), pages_url(url))
        path.write_text(text.replace(previous, url))
    config.write_text(_URL_LINE.sub(lambda m: m.group(1) + url, config.read_text(), count=1))
    for path in notebooks():
        notebook = nbformat.read(path, as_version=4)
        write_setup_cell(first_code_cell(notebook), url)
        nbformat.write(notebook, path)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    set_url(sys.argv[1])
    print(f"repository URL set to {sys.argv[1]} in _config.yml and {len(notebooks())} notebooks")
