"""Nothing on a page is wider than its column: every line a reader sees in a code block.

At 1280 px the book's column holds 88 characters of code (book/_static/relpos.css sets
the font size for it; tests/site/test_site.py measures the rendered blocks). So every
line of every code block the site shows is at most 88 characters: the code cells of
every notebook in book/, the text outputs stored under them (stream text, errors, and
the plain text of a result that has no richer form to show), and the fenced code
blocks of the Markdown cells and pages.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb"))
PAGES = sorted((ROOT / "book").glob("*.md"))
MAX_LINE = 88

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")
# A result shown as one of these is not shown as its text/plain (myst-nb's priority).
RICHER = ("text/html", "image/svg+xml", "image/png", "image/jpeg", "text/latex")


def fenced_code(markdown: str) -> list[str]:
    """The lines inside fenced code blocks, not those of directives ({figure}, ...)."""
    lines: list[str] = []
    open_fences: list[tuple[str, bool]] = []  # (fence, holds code), innermost last
    for line in markdown.splitlines():
        match = FENCE.match(line)
        if match and match.group(2)[0] == "`" and "`" in match.group(3):
            match = None  # inline code that starts a line (CommonMark: not a fence)
        inside_code = bool(open_fences) and open_fences[-1][1]
        if match:
            fence, info = match.group(2), match.group(3).strip()
            closes = (
                open_fences
                and not info
                and fence[0] == open_fences[-1][0][0]
                and len(fence) >= len(open_fences[-1][0])
            )
            if closes:
                open_fences.pop()
                continue
            if not inside_code:
                open_fences.append((fence, not info.startswith("{")))
                continue
        if inside_code:
            lines.append(line)
    return lines


def shown_output_lines(output) -> list[str]:
    """The text lines an output shows on the page."""
    if output.output_type == "stream":
        text = output.text
    elif output.output_type == "error":
        text = "\n".join(output.traceback)
    else:
        data = output.get("data", {})
        if any(kind in data for kind in RICHER) or "text/plain" not in data:
            return []
        text = data["text/plain"]
    if isinstance(text, list):
        text = "".join(text)
    return ANSI.sub("", text).expandtabs().splitlines()


def too_wide(lines: list[str]) -> list[str]:
    return [f"{len(line)}: {line!r}" for line in lines if len(line) > MAX_LINE]


def notebook_lines(notebook) -> dict[str, list[str]]:
    """Each cell's shown lines, keyed by where they are ('code cell 3', ...)."""
    found: dict[str, list[str]] = {}
    for number, cell in enumerate(notebook.cells):
        if cell.cell_type == "code":
            found[f"code cell {number}"] = cell.source.expandtabs().splitlines()
            output = [line for out in cell.outputs for line in shown_output_lines(out)]
            found[f"output of code cell {number}"] = output
        elif cell.cell_type == "markdown":
            found[f"code block in markdown cell {number}"] = fenced_code(cell.source)
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_shown_line_of_a_notebook_fits_the_column(path):
    shown = notebook_lines(nbformat.read(path, as_version=4))
    wide = {where: found for where, lines in shown.items() if (found := too_wide(lines))}
    report = "\n".join(f"  {where}: {line}" for where in wide for line in wide[where])
    assert not wide, f"{path.name}: lines over {MAX_LINE} characters:\n{report}"


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.stem)
def test_every_code_line_of_a_page_fits_the_column(path):
    wide = too_wide(fenced_code(path.read_text()))
    report = "\n".join(wide)
    assert not wide, f"{path.name}: code lines over {MAX_LINE} characters:\n{report}"


def test_the_width_check_sees_what_a_page_shows():
    """A long output line and a long fenced line are found; a figure's text is not."""
    notebook = nbformat.v4.new_notebook()
    long = "x" * (MAX_LINE + 1)
    notebook.cells = [
        nbformat.v4.new_code_cell(
            "print(1)",
            outputs=[
                nbformat.v4.new_output("stream", name="stdout", text=long + "\n"),
                nbformat.v4.new_output(
                    "display_data",
                    data={"image/png": "", "text/plain": f"<Figure {long}>"},
                ),
                nbformat.v4.new_output("execute_result", data={"text/plain": "ok"}),
            ],
        ),
        nbformat.v4.new_markdown_cell(f"```python\n{long}\n```\n```{{math}}\n{long}\n```"),
    ]
    found = {where: too_wide(lines) for where, lines in notebook_lines(notebook).items()}
    assert len(found["output of code cell 0"]) == 1
    assert found["code cell 0"] == []
    assert len(found["code block in markdown cell 1"]) == 1

