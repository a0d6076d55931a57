"""Build the print edition: the whole book as one PDF, typeset by LaTeX.

Usage: .venv/bin/python tools/build_pdf.py [OUTPUT]
(default OUTPUT: _build/pdf/relpos-book.pdf)

1. ``jupyter-book build --builder latex`` writes the book as one LaTeX file,
   _build/latex/relpos-book.tex (offline, warnings as errors). The ``latex``
   section of _config.yml and its ``latex_elements`` choose the page: A4, a title
   page, contents with page numbers, each chapter on a new page, running heads;
   book/_ext/print_edition.py leaves the setup cells out, keeps short code
   blocks on one page and letters the appendix.
2. ``latexmk`` runs xelatex until the cross-references settle (three passes:
   the contents move the chapters' pages, then hyperref's page labels follow),
   each pass writing only XDV, and xdvipdfmx makes the PDF once from the last
   (``-xelatex``: the same PDF as xelatex writing one on every pass, which took
   about 4 s of the 11 of each pass); any LaTeX error stops the build with the
   lines of the log that name it.
3. The PDF is copied to OUTPUT.

With ``RELPOS_EDITION=students`` (``make student-pdf``) it builds the students'
edition, every solution taken out (book/_ext/editions.py), in _build/students/.

Needs a TeX installation with xelatex and latexmk (Debian: apt-get install
texlive-xetex latexmk texlive-fonts-recommended texlive-latex-extra
fonts-freefont-otf fonts-dejavu-core).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_ext"))

from editions import students  # noqa: E402

LATEX = ROOT / "_build" / "latex"  # the instructors' edition's
TEX_NAME = "relpos-book"
DEFAULT_OUTPUT = ROOT / "_build" / "pdf" / f"{TEX_NAME}.pdf"
TEX_PROGRAMS = ("xelatex", "latexmk")
INSTALL_HINT = (
    "apt-get install texlive-xetex latexmk texlive-fonts-recommended "
    "texlive-latex-extra fonts-freefont-otf fonts-dejavu-core"
)


def missing_tex() -> list[str]:
    """The TeX programs the build needs and the PATH lacks."""
    return [name for name in TEX_PROGRAMS if shutil.which(name) is None]


def output_folder() -> Path:
    """Where Jupyter Book writes this edition's builds (``_build`` under it)."""
    return ROOT / "_build" / "students" if students() else ROOT


def latex_folder() -> Path:
    """Where this edition's LaTeX is written (LATEX for the instructors')."""
    return output_folder() / "_build" / "latex"


def build_latex() -> Path:
    """The book as one LaTeX file; returns its path."""
    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    command = [
        str(jupyter_book),
        "build",
        ".",
        "--path-output",
        str(output_folder()),
        "--builder",
        "latex",
        "-W",
        "-n",
        "--keep-going",
    ]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    log = result.stdout + result.stderr
    if result.returncode != 0 or "WARNING" in log:
        raise SystemExit(f"the LaTeX build failed:\n{log[-4000:]}")
    tex = latex_folder() / f"{TEX_NAME}.tex"
    if not tex.exists():
        raise SystemExit(f"the LaTeX build wrote no {tex}")
    return tex


def latex_errors(log: str) -> list[str]:
    """The lines of a TeX log that report an error, each with the two after it."""
    lines = log.splitlines()
    found = []
    for number, line in enumerate(lines):
        if line.startswith("!") or re.match(r"[^:\s]+\.(tex|sty|cls):\d+: ", line):
            found.append("\n".join(lines[number : number + 3]))
    return found


def typeset(tex: Path) -> Path:
    """Run latexmk (xelatex, then xdvipdfmx) on ``tex``; returns the PDF, or stops
    on an error."""
    missing = missing_tex()
    if missing:
        names = ", ".join(missing)
        raise SystemExit(f"{names} not found: install TeX ({INSTALL_HINT})")
    pdf = tex.with_suffix(".pdf")
    pdf.unlink(missing_ok=True)
    command = [
        "latexmk",
        "-xelatex",  # XDV on each pass, the PDF once (xdvipdfmx)
        "-dvi-",
        "-ps-",
        "-interaction=nonstopmode",
        "-halt-on-error",
        "-file-line-error",
        tex.name,
    ]
    env = dict(os.environ, LATEXOPTS="")
    result = subprocess.run(
        command, cwd=tex.parent, capture_output=True, text=True, env=env
    )
    log_path = tex.with_suffix(".log")
    log = log_path.read_text(errors="replace") if log_path.exists() else ""
    errors = latex_errors(log)
    if result.returncode != 0 or errors or not pdf.exists():
        shown = "\n".join(errors[:10]) or (result.stdout + result.stderr)[-4000:]
        raise SystemExit(f"LaTeX failed on {tex} (log: {log_path}):\n{shown}")
    return pdf


def page_count(pdf: Path) -> int | None:
    """The number of pages, read with poppler's pdfinfo where it is installed."""
    if shutil.which("pdfinfo") is None:
        return None
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True).stdout
    for line in info.splitlines():
        if line.startswith("Pages:"):
            return int(line.split()[1])
    return None


def build(output: Path = DEFAULT_OUTPUT) -> Path:
    """Build the print edition into ``output``; returns it."""
    started = time.perf_counter()
    tex = build_latex()
    latex_done = time.perf_counter()
    pdf = typeset(tex)
    output.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(pdf, output)
    done = time.perf_counter()
    pages = page_count(output)
    size = output.stat().st_size / 2**20
    print(
        f"print edition: {output} ({pages or '?'} pages, {size:.1f} MiB; "
        f"LaTeX build {latex_done - started:.0f} s, "
        f"xelatex {done - latex_done:.0f} s)"
    )
    return output


def main(argv: list[str]) -> int:
    if len(argv) > 1 or (argv and argv[0] in ("-h", "--help")):
        print(__doc__)
        return 2
    build(Path(argv[0]).resolve() if argv else DEFAULT_OUTPUT)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
