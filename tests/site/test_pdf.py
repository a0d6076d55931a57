"""The print edition (make pdf): one PDF of the whole book, math and figures rendered.

Built once per session by tools/build_pdf.py (the single-page HTML build printed
by headless Chromium) into _build/pdf/relpos-book.pdf, then read with pypdf.
Without Chromium the test skips with a message; with RELPOS_REQUIRE_BROWSER=1
that skip is a failure, as in the site test.
"""

from __future__ import annotations

import json
import os
import re
import sys
import unicodedata
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import build_pdf  # noqa: E402

OUTPUT = ROOT / "_build" / "pdf" / "relpos-book.pdf"


def toc_pages() -> list[Path]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]] + [c["file"] for c in toc.get("chapters", [])]
    for part in toc.get("parts", []):
        files += [c["file"] for c in part["chapters"]]
    paths = []
    for entry in files:
        for suffix in (".ipynb", ".md"):
            if (ROOT / f"{entry}{suffix}").exists():
                paths.append(ROOT / f"{entry}{suffix}")
    return paths


def title(path: Path) -> str:
    if path.suffix == ".ipynb":
        text = "\n".join(
            c["source"] if isinstance(c["source"], str) else "".join(c["source"])
            for c in json.loads(path.read_text())["cells"]
            if c["cell_type"] == "markdown"
        )
    else:
        text = path.read_text()
    return re.search(r"^# (.+)$", text, flags=re.MULTILINE).group(1).strip()


def figures(path: Path) -> int:
    if path.suffix != ".ipynb":
        return 0
    cells = json.loads(path.read_text())["cells"]
    return sum(
        "image/png" in output.get("data", {})
        for cell in cells
        if "remove-cell" not in cell.get("metadata", {}).get("tags", [])
        for output in cell.get("outputs", [])
    )


@pytest.fixture(scope="session")
def pdf():
    if (
        build_pdf.shutil.which("chromium") is None
        and build_pdf.shutil.which("chromium-browser") is None
    ):
        message = "Chromium not found: install it (Debian: apt-get install chromium)"
        if os.environ.get("RELPOS_REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    page = build_pdf.build_single_page()
    build_pdf.print_to_pdf(page, OUTPUT)
    from pypdf import PdfReader

    reader = PdfReader(str(OUTPUT))
    # NFKC undoes the printed ligatures (the "ffi" of "efficient" is one glyph)
    texts = [
        unicodedata.normalize("NFKC", p.extract_text() or "") for p in reader.pages
    ]
    return reader, texts


def test_page_count(pdf):
    reader, texts = pdf
    pages = len(reader.pages)
    chapters = len(toc_pages())
    # every page of the book starts a printed page; no page runs to hundreds
    assert 2 * chapters <= pages <= 40 * chapters, pages
    assert f"{pages} / {pages}" in texts[-1], "the last page's footer"
    assert all(text.strip() for text in texts), "a blank page"


def test_every_chapter_title_is_printed(pdf):
    _, texts = pdf
    flat = " ".join(" ".join(texts).split())
    for path in toc_pages():
        assert title(path) in flat, title(path)


def test_math_is_typeset(pdf):
    _, texts = pdf
    tight = re.sub(r"\s+", "", "".join(texts))
    assert "δ(i,j)=clamp(i−j,−k,k−1)+k" in tight  # chapter 3's opening formula
    for raw in ("\\operatorname", "\\begin{", "\\frac", "$$"):  # no TeX left unset
        assert raw not in tight, raw


def test_figures_are_printed(pdf):
    reader, _ = pdf
    images = sum(len(page.images) for page in reader.pages)
    drawn = sum(figures(path) for path in toc_pages())
    assert drawn > 0 and images >= drawn, (images, drawn)


def test_solutions_are_open_and_setup_cells_left_out(pdf):
    _, texts = pdf
    flat = " ".join(" ".join(texts).split())
    assert "ch2-ex1: correct." in flat
    assert "invalidate_caches" not in flat  # a line of every setup cell
