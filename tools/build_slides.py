"""Build the course's slide decks: `make slides`, or python tools/build_slides.py [OUT].

One deck per teaching session, from book/slides/session-N.md, into OUT (default
_build/slides): session-N.html, an index.html that links them all, the figures each
deck names, drawn now by relpos.book.plot (book/slides/figures.py), and the reveal.js
and KaTeX files the decks load, copied from book/slides/node_modules (pinned in
book/slides/package-lock.json; `npm ci --prefix book/slides` runs first when that
folder is missing or does not match the lock). Nothing is fetched when the decks are
shown: OUT is a self-contained folder, opened from disk or from any static server.

A deck's source is Markdown with a YAML front matter that names its session
(`session: N`; its title and chapters are the course plan's, book/course/plan.yml);
a line `---` separates slides, and a line `Note:` starts the slide's speaker
notes, which every slide has. `$...$` and `$$...$$` are math (KaTeX renders them in
the browser), fenced code is highlighted by reveal's highlight plugin, and an image
whose address is `figure:NAME` is the figure of recipe NAME, with the image's text as
its alt text. A slide whose only line is `<!-- plan: PART -->` is a placeholder: the
build writes that part of the session from the plan in its place
(tools/plan_slides.py: the title, the agenda, each demo, the lab, the homework, the
discussion and the final project), so the teaching slides are all a deck's author
writes, and no deck states a minute, an exercise or a question the plan does not.
"""

from __future__ import annotations

import argparse
import html
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import yaml
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin

sys.path.insert(0, str(Path(__file__).resolve().parent))

import plan_slides  # noqa: E402
from plan_slides import course_plan  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "book" / "slides"
NODE_MODULES = SOURCES / "node_modules"
DEFAULT_OUT = ROOT / "_build" / "slides"

# The course plan, and the chapters each of its sessions teaches.
PLAN = course_plan.load_plan()
SESSION_CHAPTERS: dict[int, tuple[int, ...]] = {
    session["number"]: tuple(session["chapters"]) for session in PLAN["sessions"]
}
# A deck holds a 90-minute session's lecture parts.
SLIDES_PER_DECK = (12, 20)
# The widest code line a slide shows without scrolling (monospace characters).
MAX_CODE_COLUMNS = 64

# What the decks load, from node_modules (source) to OUT/lib (target).
ASSETS: dict[str, str] = {
    "reveal.js/dist/reset.css": "reveal/reset.css",
    "reveal.js/dist/reveal.css": "reveal/reveal.css",
    "reveal.js/dist/reveal.js": "reveal/reveal.js",
    "reveal.js/dist/theme/white.css": "reveal/theme/white.css",
    "reveal.js/dist/theme/fonts": "reveal/theme/fonts",
    "reveal.js/plugin/highlight/highlight.js": "reveal/plugin/highlight/highlight.js",
    "reveal.js/plugin/highlight/monokai.css": "reveal/plugin/highlight/monokai.css",
    "reveal.js/plugin/notes/notes.js": "reveal/plugin/notes/notes.js",
    "reveal.js/LICENSE": "reveal/LICENSE",
    "katex/dist/katex.min.js": "katex/katex.min.js",
    "katex/dist/katex.min.css": "katex/katex.min.css",
    "katex/dist/fonts": "katex/fonts",
    "katex/LICENSE": "katex/LICENSE",
}

SEPARATOR = re.compile(r"^---[ \t]*$", re.M)
NOTE = re.compile(r"^Note:[ \t]*$", re.M)
FIGURE = "figure:"


@dataclass
class Slide:
    """One slide: its Markdown, its speaker notes and the figures it names; a slide
    written from the plan has the placeholder's part as its ``origin``."""

    body: str
    notes: str
    figures: list[str] = field(default_factory=list)
    origin: str = ""


@dataclass
class Deck:
    """One session's deck, parsed from book/slides/session-N.md."""

    source: Path
    session: int
    title: str
    chapters: tuple[int, ...]
    slides: list[Slide]

    @property
    def name(self) -> str:
        return f"session-{self.session}"


def markdown() -> MarkdownIt:
    """CommonMark with tables and dollar math: `$x$` and `$$x$$` become math spans."""
    return MarkdownIt("commonmark").use(dollarmath_plugin).enable("table")


def deck_sources(folder: Path = SOURCES) -> list[Path]:
    return sorted(folder.glob("session-*.md"))


def parse_deck(source: Path, plan: dict | None = None) -> Deck:
    """Read a deck's front matter, split its slides and their notes, and write the
    plan's slides (``plan``, default book/course/plan.yml) in its placeholders.

    Raises ValueError naming the file when the front matter is missing or holds more
    than the session, the session is not the plan's, a placeholder is missing,
    repeated or unknown, a slide has no speaker notes, the deck's size is outside
    SLIDES_PER_DECK, or a code line is wider than MAX_CODE_COLUMNS.
    """
    plan = plan or PLAN
    text = source.read_text(encoding="utf-8")
    parts = SEPARATOR.split(text)
    if len(parts) < 3 or parts[0].strip():
        raise ValueError(
            f"{source.name}: expected a YAML front matter between '---' lines"
        )
    meta = yaml.safe_load(parts[1]) or {}
    sessions = {s["number"]: s for s in plan["sessions"]}
    session = meta.get("session")
    if session not in sessions:
        raise ValueError(f"{source.name}: session must be one of {list(sessions)}")
    if set(meta) != {"session"}:
        raise ValueError(
            f"{source.name}: the front matter holds the session alone; "
            f"{sorted(set(meta) - {'session'})} come from book/course/plan.yml"
        )
    written = plan_slides.SessionSlides(plan, session)
    slides = _with_plan(source.name, parts[2:], written)
    for number, slide in enumerate(slides, 1):
        if not slide.notes:
            heading = slide.body.splitlines()[0] if slide.body else ""
            raise ValueError(
                f"{source.name}, slide {number} ({heading}): no speaker notes "
                "(a line 'Note:' and the notes after it)"
            )
    low, high = SLIDES_PER_DECK
    if not low <= len(slides) <= high:
        raise ValueError(
            f"{source.name}: {len(slides)} slides, expected {low} to {high}"
        )
    for number, slide in enumerate(slides, 1):
        for line in _code_lines(slide.body):
            if len(line) > MAX_CODE_COLUMNS:
                raise ValueError(
                    f"{source.name}, slide {number}: a code line is {len(line)} "
                    f"characters wide, at most {MAX_CODE_COLUMNS} fit: {line!r}"
                )
    chapters = tuple(sessions[session]["chapters"])
    return Deck(source, session, str(sessions[session]["title"]), chapters, slides)


def _with_plan(
    name: str, parts: list[str], written: plan_slides.SessionSlides
) -> list[Slide]:
    """The slides of a deck, each placeholder replaced by the plan's slide."""
    slides, found = [], []
    for part in parts:
        body, notes = _split_notes(part)
        placeholder = plan_slides.PLACEHOLDER.match(body.strip())
        if placeholder is None:
            slides.append(Slide(body.strip(), notes.strip(), _figures_of(body)))
            continue
        kind = placeholder["part"]
        if kind not in plan_slides.PARTS:
            raise ValueError(
                f"{name}: unknown placeholder {kind!r}; the plan's parts are "
                f"{plan_slides.PARTS}"
            )
        markdown, spoken = written.slide(kind, found.count(kind))
        found.append(kind)
        slides.append(Slide(markdown, spoken, _figures_of(markdown), f"plan:{kind}"))
    expected = plan_slides.expected_parts(written.session)
    if sorted(found) != sorted(expected):
        raise ValueError(
            f"{name}: placeholders {sorted(found)}, but session {written.number} "
            f"needs {sorted(expected)} ('<!-- plan: PART -->' slides)"
        )
    return slides


def _split_notes(part: str) -> tuple[str, str]:
    """A slide's Markdown and its speaker notes (after a line `Note:`)."""
    pieces = NOTE.split(part, maxsplit=1)
    return (pieces[0], pieces[1]) if len(pieces) == 2 else (part, "")


def _figures_of(body: str) -> list[str]:
    return re.findall(r"!\[[^\]]*\]\(figure:([\w-]+)\)", body)


def _code_lines(body: str) -> list[str]:
    lines, inside = [], False
    for line in body.splitlines():
        if line.startswith("```"):
            inside = not inside
        elif inside:
            lines.append(line)
    return lines


def load_figures() -> ModuleType:
    """book/slides/figures.py, the recipes (imported from its file)."""
    spec = importlib.util.spec_from_file_location(
        "relpos_slides_figures", SOURCES / "figures.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def render_slide(slide: Slide, md: MarkdownIt) -> str:
    """One <section>: the slide's HTML and its notes in <aside class="notes">; a
    title slide's section has the class ``title`` (centred, slides.css).

    Raises ValueError when an image has no alt text.
    """
    tokens = md.parse(slide.body)
    for token in tokens:
        for child in token.children or ():
            if child.type == "image":
                alt = "".join(c.content for c in child.children or ())
                if not alt.strip():
                    source = child.attrGet("src")
                    raise ValueError(f"an image without alt text: {source}")
                source = str(child.attrGet("src"))
                if source.startswith(FIGURE):
                    child.attrSet("src", f"figures/{source[len(FIGURE):]}.svg")
    body = md.renderer.render(tokens, md.options, {})
    notes = md.render(slide.notes) if slide.notes else ""
    aside = f'\n<aside class="notes">\n{notes}</aside>' if notes else ""
    opening = '<section class="title">' if slide.origin == "plan:title" else "<section>"
    return f"{opening}\n{body}{aside}\n</section>"


PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="stylesheet" href="lib/reveal/reset.css">
<link rel="stylesheet" href="lib/reveal/reveal.css">
<link rel="stylesheet" href="lib/reveal/theme/white.css">
<link rel="stylesheet" href="lib/reveal/plugin/highlight/monokai.css">
<link rel="stylesheet" href="lib/katex/katex.min.css">
<link rel="stylesheet" href="slides.css">
</head>
<body>
<div class="reveal">
<div class="slides">
{sections}
</div>
</div>
<script src="lib/katex/katex.min.js"></script>
<script src="lib/reveal/reveal.js"></script>
<script src="lib/reveal/plugin/highlight/highlight.js"></script>
<script src="lib/reveal/plugin/notes/notes.js"></script>
<script src="slides.js"></script>
</body>
</html>
"""

INDEX = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Relative positions, taught and tested: the slides</title>
<link rel="stylesheet" href="index.css">
</head>
<body>
<main>
<h1>Relative positions, taught and tested: the slides</h1>
<p>One deck per 90-minute session. Keys while presenting: arrows move,
<kbd>S</kbd> opens the speaker notes, <kbd>F</kbd> full screen, <kbd>Esc</kbd> the
overview. To print a deck to PDF, open it with <code>?print-pdf</code> after the file
name and print from the browser (add <code>&amp;showNotes=separate-page</code> for the
notes).</p>
<ul>
{items}
</ul>
</main>
</body>
</html>
"""


def chapter_list(chapters: tuple[int, ...]) -> str:
    if len(chapters) == 2:
        return f"chapters {chapters[0]} and {chapters[1]}"
    return f"chapters {chapters[0]}-{chapters[-1]}"


def ensure_node_modules(folder: Path = SOURCES) -> None:
    """Run `npm ci` in folder unless node_modules holds exactly what the lock pins."""
    if installed_matches_lock(folder):
        return
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit(
            "npm not found: install Node.js and npm "
            "(Debian: apt-get install nodejs npm) to build the slides"
        )
    command = [npm, "ci", "--prefix", str(folder), "--no-audit", "--no-fund"]
    subprocess.run(command, check=True)
    if not installed_matches_lock(folder):
        raise SystemExit(f"npm ci left {folder / 'node_modules'} unlike the lock")


def installed_matches_lock(folder: Path) -> bool:
    """Whether folder/node_modules holds every package at the version the lock pins."""
    lock = json.loads((folder / "package-lock.json").read_text())
    for where, pinned in lock.get("packages", {}).items():
        if not where:
            continue
        manifest = folder / where / "package.json"
        if not manifest.exists():
            return False
        if json.loads(manifest.read_text()).get("version") != pinned.get("version"):
            return False
    return True


def copy_assets(out: Path) -> None:
    """The reveal.js and KaTeX files (out/lib) and the decks' own CSS and script."""
    shutil.rmtree(out / "lib", ignore_errors=True)
    for source, target in ASSETS.items():
        origin, destination = NODE_MODULES / source, out / "lib" / target
        destination.parent.mkdir(parents=True, exist_ok=True)
        if origin.is_dir():
            shutil.copytree(origin, destination, dirs_exist_ok=True)
        else:
            shutil.copy2(origin, destination)
    for name in ("slides.css", "slides.js", "index.css"):
        shutil.copy2(SOURCES / name, out / name)


def draw_figures(names: set[str], out: Path) -> None:
    """Draw every named recipe once into out/figures/NAME.svg."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "relpos"  # the same SVG on every build
    recipes = load_figures().FIGURES
    unknown = sorted(names - set(recipes))
    if unknown:
        raise ValueError(f"unknown figure names {unknown}; known: {sorted(recipes)}")
    shutil.rmtree(out / "figures", ignore_errors=True)
    (out / "figures").mkdir(parents=True)
    for name in sorted(names):
        figure = recipes[name]()
        figure.savefig(
            out / "figures" / f"{name}.svg",
            bbox_inches="tight",
            metadata={"Date": None},
        )
        plt.close(figure)


def build(out: Path = DEFAULT_OUT, *, install: bool = True) -> list[Deck]:
    """Build every deck and the index into out; returns the decks."""
    if install:
        ensure_node_modules()
    decks = [parse_deck(source) for source in deck_sources()]
    sessions = [deck.session for deck in decks]
    if sessions != sorted(SESSION_CHAPTERS):
        raise ValueError(
            f"expected one deck per session {list(SESSION_CHAPTERS)}, got {sessions}"
        )
    out.mkdir(parents=True, exist_ok=True)
    copy_assets(out)
    names = {name for deck in decks for slide in deck.slides for name in slide.figures}
    draw_figures(names, out)
    md = markdown()
    items = []
    for deck in decks:
        sections = "\n".join(render_slide(slide, md) for slide in deck.slides)
        page = PAGE.format(title=html.escape(deck.title), sections=sections)
        (out / f"{deck.name}.html").write_text(page, encoding="utf-8")
        items.append(
            f'<li><a href="{deck.name}.html">Session {deck.session}: '
            f"{html.escape(deck.title)}</a> ({chapter_list(deck.chapters)}, "
            f"{len(deck.slides)} slides)</li>"
        )
    index = INDEX.format(items="\n".join(items))
    (out / "index.html").write_text(index, encoding="utf-8")
    return decks


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--no-install",
        action="store_true",
        help="do not run npm ci (use node_modules as is)",
    )
    args = parser.parse_args(argv)
    decks = build(args.out, install=not args.no_install)
    slides = sum(len(deck.slides) for deck in decks)
    print(f"{len(decks)} decks, {slides} slides: {args.out / 'index.html'}")


if __name__ == "__main__":
    sys.exit(main())
