"""The print edition (make pdf): the book typeset by LaTeX, read back with pypdf.

Built once per session by tools/build_pdf.py (Jupyter Book's LaTeX builder, then
latexmk with xelatex) into _build/pdf/relpos-book.pdf. The chapters and their
titles come from _toc.yml and each page's first heading, never from this file.
Without xelatex and latexmk the test skips with a message; with
RELPOS_REQUIRE_LATEX=1 (as in CI) that skip is a failure.
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
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import build_pdf  # noqa: E402
import print_edition  # noqa: E402
import solution_markers  # noqa: E402

OUTPUT = ROOT / "_build" / "pdf" / "relpos-book.pdf"
# Code cells of at most this many lines must print on one page.
SHORT_BLOCK = 15
# Tags whose cells (or their parts) the book does not print.
HIDDEN_INPUT = {"hide-input", "remove-input", "remove-cell"}
HIDDEN_OUTPUT = {"hide-output", "remove-output", "remove-cell"}


def chapter_files() -> list[Path]:
    """Every page of _toc.yml's parts, in order (the root page is the preface)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    entries = [c["file"] for c in toc.get("chapters", [])]
    for part in toc.get("parts", []):
        entries += [c["file"] for c in part["chapters"]]
    paths = []
    for entry in entries:
        found = [ROOT / f"{entry}{s}" for s in (".ipynb", ".md")]
        paths += [p for p in found if p.exists()][:1]
    assert len(paths) == len(entries), (entries, paths)
    return paths


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"] if path.suffix == ".ipynb" else []


def source(cell: dict) -> str:
    text = cell["source"]
    return text if isinstance(text, str) else "".join(text)


def markdown(path: Path) -> str:
    if path.suffix == ".md":
        return path.read_text()
    return "\n".join(source(c) for c in cells(path) if c["cell_type"] == "markdown")


def prose(text: str) -> str:
    """Markdown without its code: fenced blocks and inline literals, where an image's
    syntax is shown, not used (the instructors' page explains the slides' figures)."""
    text = re.sub(r"^(`{3,}|~{3,})[^\n]*\n.*?^\1[ \t]*$", "", text, flags=re.M | re.S)
    return re.sub(r"(?<!`)(`+)(?!`).+?(?<!`)\1(?!`)", "", text, flags=re.S)


def title(path: Path) -> str:
    """The page's first heading, as the print edition heads it."""
    heading = re.search(r"^# (.+)$", markdown(path), flags=re.MULTILINE).group(1)
    plain = heading.replace("`", "").replace("$", "").strip()
    return print_edition.print_title(plain)


def tags(cell: dict) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


def text_outputs(cell: dict) -> list[str]:
    """The text a code cell prints: streams, and results without an image (or
    markdown: the print edition typesets that as prose, a table say)."""
    texts = []
    for output in cell.get("outputs", []):
        data = output.get("data", {})
        if output.get("output_type") == "stream":
            text = output["text"]
        elif "text/plain" in data and not {"image/png", "text/markdown"} & set(data):
            text = data["text/plain"]
        else:
            continue
        texts.append(text if isinstance(text, str) else "".join(text))
    return texts


def squeeze(text: str) -> str:
    """Text without white space or the marks of wrapped code lines, case-folded.

    pypdf does not always see the space between two words of a line; the
    comparisons below therefore ignore white space.
    """
    return re.sub(r"[\s↪␣]+", "", text).casefold()


@pytest.fixture(scope="session")
def pdf():
    missing = build_pdf.missing_tex()
    if missing:
        message = (
            f"{', '.join(missing)} not found: install TeX ({build_pdf.INSTALL_HINT})"
        )
        if os.environ.get("RELPOS_REQUIRE_LATEX") == "1":
            pytest.fail(message)
        pytest.skip(message)
    build_pdf.build(OUTPUT)
    from pypdf import PdfReader

    reader = PdfReader(str(OUTPUT))
    # NFKC undoes ligatures and maps the math italic letters to plain ones
    texts = [
        unicodedata.normalize("NFKC", p.extract_text() or "") for p in reader.pages
    ]
    return reader, texts


@pytest.fixture(scope="session")
def starts(pdf) -> dict[Path, int]:
    """The page index where each chapter opens, from the PDF's bookmarks."""
    reader, _ = pdf

    def flat(items):
        for item in items:
            if isinstance(item, list):
                yield from flat(item)
            else:
                yield item

    marks = [
        (squeeze(mark.title), reader.get_destination_page_number(mark))
        for mark in flat(reader.outline)
    ]
    found = {}
    for path in chapter_files():
        pages = [page for name, page in marks if name.endswith(squeeze(title(path)))]
        assert pages, f"no bookmark for {title(path)!r}"
        found[path] = pages[0]
    return found


def front_pages(reader) -> list[int]:
    """The pages numbered in roman: the contents."""
    labels = reader.page_labels
    return [i for i, label in enumerate(labels) if re.fullmatch(r"[ivxl]+", label)]


def opens_with(text: str, heading: str) -> bool:
    """The page's first words are its heading ("CHAPTER ONE", "APPENDIX A" aside)."""
    body = squeeze(text)
    at = body.find(squeeze(heading))
    return 0 <= at <= len("chaptertwentyeight")


def test_title_page(pdf):
    _, texts = pdf
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    first = squeeze(texts[0])
    for expected in (config["title"], config["author"], print_edition.relpos_version()):
        assert squeeze(expected) in first, expected
    assert "ccby4.0" in first and "mitlicense" in first, "the licences"
    for path in chapter_files():
        assert squeeze(title(path)) not in first, title(path)


def test_no_blank_page(pdf):
    _, texts = pdf
    blank = [number for number, text in enumerate(texts) if not text.strip()]
    assert not blank, f"blank pages (a chapter opens the next page, any side): {blank}"


def test_contents_give_each_chapter_its_page(pdf, starts):
    reader, texts = pdf
    front = front_pages(reader)
    assert front and front[0] > 0, "the contents follow the title page"
    assert squeeze(texts[front[0]]).startswith("contents")
    lines = [squeeze(line) for i in front for line in texts[i].splitlines()]
    after_contents = {
        label: i for i, label in enumerate(reader.page_labels) if i > front[-1]
    }
    for path in chapter_files():
        name = re.escape(squeeze(title(path)))
        matches = (re.fullmatch(rf"(\d+|[a-z])?{name}(\d+)", s) for s in lines)
        entry = [m for m in matches if m]
        assert entry, f"{title(path)!r} is not in the contents with a page number"
        page = after_contents[entry[0].group(2)]
        assert page == starts[path], (title(path), page, starts[path])
        assert opens_with(texts[page], title(path)), texts[page][:200]


def test_each_chapter_opens_a_page(pdf, starts):
    _, texts = pdf
    pages = [starts[path] for path in chapter_files()]
    assert pages == sorted(set(pages)), "the chapters in the order of _toc.yml"
    for path, page in starts.items():
        assert opens_with(texts[page], title(path)), (title(path), texts[page][:200])


def test_running_heads(pdf, starts):
    reader, texts = pdf
    files = chapter_files()
    ends = [starts[p] for p in files[1:]] + [len(texts)]
    checked = 0
    for path, end in zip(files, ends):
        for page in range(starts[path] + 1, end):
            head = texts[page].strip().splitlines()[0] if texts[page].strip() else ""
            if squeeze(head).startswith("part"):
                continue  # a part's own page, before its first chapter
            label = reader.page_labels[page]
            assert squeeze(title(path)) in squeeze(head), (page, head)
            assert re.search(rf"(^|\D){label}$", head.strip()), (page, label, head)
            checked += 1
    assert checked > len(files), checked


def image_count(page_or_form) -> int:
    """The images a PDF page draws: its image XObjects, those inside its form
    XObjects included (read from the resources, never decoded)."""
    resources = page_or_form.get("/Resources") or {}
    total = 0
    for reference in (resources.get("/XObject") or {}).values():
        xobject = reference.get_object()
        if xobject.get("/Subtype") == "/Image":
            total += 1
        elif xobject.get("/Subtype") == "/Form":
            total += image_count(xobject)
    return total


def test_every_figure_is_printed(pdf):
    reader, _ = pdf
    images = sum(image_count(page) for page in reader.pages)
    drawn = 0
    for path in chapter_files():
        drawn += sum(
            "image/png" in output.get("data", {})
            for cell in cells(path)
            if not tags(cell) & HIDDEN_OUTPUT
            for output in cell.get("outputs", [])
        )
        drawn += len(re.findall(r"!\[", prose(markdown(path))))
        # A figure directive is a fence of its own (``prose`` drops every fence).
        directive = r"^(`{3,}|:{3,})\{(figure|image)\}"
        drawn += len(re.findall(directive, markdown(path), flags=re.MULTILINE))
    assert drawn > 0 and images == drawn, (images, drawn)


def test_short_code_blocks_are_not_split(pdf):
    _, texts = pdf
    pages = [squeeze(text) for text in texts]
    blocks = []
    for path in chapter_files():
        for cell in cells(path):
            if cell["cell_type"] != "code":
                continue
            if not tags(cell) & HIDDEN_INPUT:  # as printed: without nbgrader's markers
                code = solution_markers.without_markers(source(cell))
                blocks.append((path.name, code))
            if not tags(cell) & HIDDEN_OUTPUT:
                blocks += [(path.name, text) for text in text_outputs(cell)]
    short = 0
    for name, block in blocks:
        lines = [squeeze(line) for line in block.splitlines() if line.strip()]
        if not lines or len(lines) > SHORT_BLOCK:
            continue
        short += 1
        whole = [i for i, page in enumerate(pages) if all(ln in page for ln in lines)]
        assert whole, f"{name}: a block of {len(lines)} lines split:\n{block}"
    assert short > 50, short


def test_no_unresolved_reference(pdf):
    _, texts = pdf
    for number, text in enumerate(texts):
        assert "??" not in text, (number, text)
    log = (build_pdf.LATEX / f"{build_pdf.TEX_NAME}.log").read_text(errors="replace")
    assert "There were undefined references" not in log
    assert "undefined on input line" not in log


def test_math_is_typeset(pdf, starts):
    _, texts = pdf
    # The instructors' page shows TeX in its code on purpose (how a slide is written).
    files = chapter_files()
    shown = next(i for i, path in enumerate(files) if path.stem == "instructors")
    first, end = starts[files[shown]], starts[files[shown + 1]]
    kept = texts[:first] + texts[end:]
    tight = re.sub(r"\s+", "", "".join(kept))
    assert "δ(i,j)=clamp(i−j,−k,k−1)+k" in tight  # chapter 3's opening formula
    for raw in ("\\operatorname", "\\begin{", "\\frac", "$$"):  # no TeX left unset
        assert raw not in tight, raw


def test_exercises_numbered_as_on_the_site_without_solution_markers(pdf, starts):
    """"Exercise 4.2" in print as on the site (not 4.6.2, a section's number), and
    no nbgrader marker in a solution's code (the instructors' page names the
    markers on purpose: how the student edition is made)."""
    _, texts = pdf
    files = chapter_files()
    shown = next(i for i, path in enumerate(files) if path.stem == "instructors")
    first, end = starts[files[shown]], starts[files[shown + 1]]
    flat = " ".join(texts[:first] + texts[end:])
    numbers = set(re.findall(r"Exercise\s*(\d+(?:\.\d+)+)", flat))
    labels = {
        f"{chapter}.{m}"
        for path in chapter_files()
        for chapter, m in re.findall(r":label: ch(\d+)-ex(\d+)", markdown(path))
    }
    assert labels and labels <= numbers, sorted(labels - numbers)
    assert all(n.count(".") == 1 for n in numbers), sorted(numbers)
    assert "beginsolution" not in squeeze(flat) and "endsolution" not in squeeze(flat)


def test_solutions_are_open_and_setup_cells_left_out(pdf):
    _, texts = pdf
    flat = squeeze(" ".join(texts))
    assert squeeze("ch2-ex1: correct.") in flat
    setup = [
        source(cell)
        for path in chapter_files()
        for cell in cells(path)
        if "hide-input" in tags(cell)
    ]
    assert setup and all("invalidate_caches" in s for s in setup)
    assert "invalidate_caches" not in flat
