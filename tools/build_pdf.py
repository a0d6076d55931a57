"""Build the print edition: the whole book as one PDF, math and figures rendered.

Usage: .venv/bin/python tools/build_pdf.py [OUTPUT]
(default OUTPUT: _build/pdf/relpos-book.pdf)

1. ``jupyter-book build --builder singlehtml`` writes the whole book as one HTML
   page (offline, warnings as errors), into _build/singlehtml/book.html.
2. That page is served on 127.0.0.1 and opened in headless Chromium (the browser
   the site test drives, through Playwright); the script waits until the site's
   own MathJax has typeset every formula and every image has loaded.
3. For print, the exercises' solutions are opened (a printed solution cannot be
   clicked open), the collapsed setup cells are left out, and Chromium prints the
   page to A4 with page numbers in the footer.

Needs Chromium: Debian's ``chromium`` package (``apt-get install chromium``).
"""

from __future__ import annotations

import functools
import http.server
import shutil
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SINGLE = ROOT / "_build" / "singlehtml"
DEFAULT_OUTPUT = ROOT / "_build" / "pdf" / "relpos-book.pdf"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"]

# Print-only adjustments: no setup cells, no toggle buttons, no page chrome.
PRINT_CSS = """
.cell.tag_hide-input, .toggle-button, .headerlink, .bd-header-article,
.bd-sidebar-primary, .bd-sidebar-secondary, .prev-next-area, footer {
  display: none !important;
}
.bd-page-width, .bd-main, .bd-content, .bd-article-container, .bd-article {
  max-width: none !important;
}
div.cell_output img { max-width: 100% !important; }
div.highlight pre { white-space: pre-wrap; font-size: 0.74em; }
h1 { break-before: page; }
"""

FOOTER = (
    '<div style="font-size:8px;width:100%;text-align:center;color:#555">'
    '<span class="pageNumber"></span> / <span class="totalPages"></span></div>'
)


def chromium_path() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise SystemExit(
        "Chromium not found: install it (Debian: apt-get install chromium)"
    )


def build_single_page() -> Path:
    """The book as one HTML page; returns its path."""
    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    command = [
        str(jupyter_book),
        "build",
        ".",
        "--all",
        "--builder",
        "singlehtml",
        "-W",
        "-n",
        "--keep-going",
    ]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    log = result.stdout + result.stderr
    if result.returncode != 0 or "WARNING" in log:
        raise SystemExit(f"the single-page build failed:\n{log[-4000:]}")
    # the master document, book/intro, holds the whole book; top-level files are
    # the redirect (index.html) and an earlier run's copy (book.html)
    pages = [p for p in SINGLE.glob("*/*.html") if p.stat().st_size > 10_000]
    if len(pages) != 1:
        raise SystemExit(f"expected one book page in {SINGLE}, found {pages}")
    # The page lies in book/ but its links to _static and _images are written
    # relative to the top folder: serve a copy from there.
    top = SINGLE / "book.html"
    shutil.copyfile(pages[0], top)
    return top


def print_to_pdf(page_path: Path, output: Path) -> None:
    """Open the page in headless Chromium, let it typeset, print it to ``output``."""
    from playwright.sync_api import sync_playwright

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(SINGLE))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/{page_path.relative_to(SINGLE)}"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=chromium_path(), args=CHROMIUM_ARGS
            )
            page = browser.new_page(viewport={"width": 1100, "height": 1400})
            page.goto(url, wait_until="load", timeout=120_000)
            page.wait_for_function(
                "() => window.MathJax && MathJax.startup && MathJax.startup.promise",
                timeout=60_000,
            )
            page.evaluate("() => MathJax.startup.promise")
            page.evaluate(
                "() => document.querySelectorAll('div.solution.dropdown "
                "button.toggle-button').forEach(b => b.click())"
            )
            page.evaluate(
                "() => Promise.all(Array.from(document.images)"
                ".filter(i => !i.complete)"
                ".map(i => new Promise(r => { i.onload = i.onerror = r; })))"
            )
            page.add_style_tag(content=PRINT_CSS)
            # every chapter starts a page, except the first title of all
            page.evaluate(
                "() => { const first = document.querySelector('h1');"
                " if (first) first.style.breakBefore = 'auto'; }"
            )
            page.evaluate("() => MathJax.startup.promise")
            output.parent.mkdir(parents=True, exist_ok=True)
            page.pdf(
                path=str(output),
                format="A4",
                print_background=True,
                margin={
                    "top": "16mm",
                    "bottom": "18mm",
                    "left": "14mm",
                    "right": "14mm",
                },
                display_header_footer=True,
                header_template="<div></div>",
                footer_template=FOOTER,
            )
            browser.close()
    finally:
        server.shutdown()


def page_count(pdf: Path) -> int | None:
    """The number of pages, read with poppler's pdfinfo where it is installed."""
    if shutil.which("pdfinfo") is None:
        return None
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True).stdout
    for line in info.splitlines():
        if line.startswith("Pages:"):
            return int(line.split()[1])
    return None


def main(argv: list[str]) -> int:
    if len(argv) > 1 or (argv and argv[0] in ("-h", "--help")):
        print(__doc__)
        return 2
    output = Path(argv[0]).resolve() if argv else DEFAULT_OUTPUT
    page = build_single_page()
    print_to_pdf(page, output)
    pages = page_count(output)
    size = output.stat().st_size / 2**20
    print(f"print edition: {output} ({pages or '?'} pages, {size:.1f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
