"""The site as readers get it: built offline, no warnings, read in headless Chromium.

Run by `make site` (part of `make test`). It builds the book into _build/html,
serves it on 127.0.0.1, opens every page listed in _toc.yml, and checks that
math is typeset by the site's own MathJax, images load, the console is clean,
nothing is fetched from another host, each notebook's Colab link points at that
notebook in the repository, and hidden exercise solutions open on click.
Those checks read the audit's one load of each page (the ``audits`` fixture,
below), whose toggles are clicked once its audit is done: a page is loaded once in
all. It also checks the bibliography page and a citation link, and the API
reference: every public name of the core in the site's objects.inv, the Shapes
sections rendered, a link from the introduction resolved.

Every built page (a glob of _build/html, not a list) is also read in light and in
dark mode: loaded once in light mode, then switched to dark as the reader's
preference changes (the theme follows it on the open page; a test checks that every
element then has the colours a page loaded in dark mode has). In each mode the theme
shown follows the preference, axe-core's WCAG 2.1 A/AA audit finds nothing serious
or critical (moderate and minor findings are printed; in dark mode only its colour
rules run, the only ones a theme of colours can change; the colour rules read each
text style and each link style once, on the first page that shows it,
tests/site/_contrast.py and tests/site/_links.py say why that is the same
verdict), every code block and output fits its column at 1280 px, and at 390 px
nothing makes the page wider than the screen (long lines and equations scroll in
their own block).
With RELPOS_SCREENSHOTS=1 (the book workflow sets it) screenshots land in
_build/screenshots/ for people to look at (dark ones with "dark_" in front); a
whole-page picture of every page costs more than the checks themselves, so
``make test`` takes none unless asked.

Without Chromium the browser checks skip with a message saying how to install
it; with RELPOS_REQUIRE_BROWSER=1 (set by .ci/run) that skip is a failure.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from sphinx.util.inventory import InventoryFile

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
#: Whether to keep a picture of each page (for people, not for an assertion).
KEEP_SHOTS = os.environ.get("RELPOS_SCREENSHOTS") == "1"
sys.path.insert(0, str(ROOT / "tools"))

import set_repo_url  # noqa: E402
from _browser import console_errors_of  # noqa: E402 (tests/site: conftest.py)
from _contrast import contrast_audit, load_axe  # noqa: E402
from _links import link_audit  # noqa: E402

# axe-core's rules for WCAG 2.1 levels A and AA; a finding of these impacts fails.
WCAG_21_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
FAILING_IMPACTS = ("serious", "critical")
WIDE, PHONE = 1280, 390


def pages() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]] + [chapter["file"] for chapter in toc.get("chapters", [])]
    for part in toc.get("parts", []):
        files += [chapter["file"] for chapter in part["chapters"]]
    return files


EXERCISE = re.compile(r"```\{exercise\}")
CITATION = re.compile(r"\{cite(?::[pt])?\}`([\w:.-]+(?:,\s*[\w:.-]+)*)`")


def source_of(page: str) -> Path:
    for suffix in (".ipynb", ".md"):
        if (ROOT / f"{page}{suffix}").exists():
            return ROOT / f"{page}{suffix}"
    return ROOT / page


CHAPTERS_WITH_MATH = [
    p for p in pages() if p.startswith("book/0") or p.endswith("intro")
]


def test_site_is_self_contained(built_site):
    """No page refers a browser to another host for scripts, styles or fonts."""
    for page in built_site.rglob("*.html"):
        text = page.read_text(errors="replace")
        for marker in ('src="https://', "src='https://", 'href="https://cdn', "//cdn."):
            assert marker not in text, (
                f"{page.relative_to(built_site)} loads from another host: {marker}"
            )
    assert (built_site / "_static" / "mathjax" / "tex-chtml.js").exists()


def test_readers_see_no_solution_markers_and_whole_outputs(built_site):
    """nbgrader's markers stay in the notebooks, out of the pages (book/_ext/
    solution_markers.py); exercises are numbered by chapter; a cell's printed
    lines share one output box (_config.yml's nb_merge_streams), even where the
    kernel sent them as several streams (chapters 6 and 7)."""
    for page in sorted((built_site / "book").glob("[01][0-9]_*.html")):
        text = page.read_text(errors="replace")
        assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text, page.name
        chapter = int(page.name[:2])
        numbers = set(re.findall(r"Exercise (\d+(?:\.\d+)+)", text))
        assert numbers, page.name
        assert all(re.fullmatch(rf"{chapter}\.\d", n) for n in numbers), numbers
    blocks = {
        name: re.findall(
            r"<pre>(.*?)</pre>", (built_site / "book" / name).read_text(), re.S
        )
        for name in ("06_long_sequences.html", "07_deberta_in_practice.html")
    }
    whole = [  # the first and the last line a cell prints, never in its code
        ("06_long_sequences.html", "last row from  row 0 from", "(c) plain k=512"),
        ("07_deberta_in_practice.html", "the fallback: 512", "query_proj: Linear"),
    ]
    for name, first, last in whole:
        box = [b for b in blocks[name] if first in b]
        assert len(box) == 1 and last in box[0], (name, first, last)


@pytest.mark.parametrize("source", pages())
def test_page_in_browser(source, audits):
    """A page of _toc.yml as a reader gets it at 1280 px in light mode, read on the
    audit's one load of it (``audits``, ``read_as_reader``; its toggles clicked
    once its audit is done): math typeset by the site's own MathJax, every
    interactive figure drawn, images loaded with text alternatives, a notebook's
    Colab link, its setup cell collapsed and its solutions hidden until clicked,
    a clean console and nothing fetched from another host."""
    stem = Path(source).with_suffix("").as_posix()
    reading = audits["reader"].get(f"{stem}.html")
    assert reading is not None, f"{stem}.html is not among the pages read"

    # Math: every formula typeset by the site's own MathJax. Every chapter has math;
    # a page without any (the instructors' page) loads no MathJax at all.
    raw_math = reading["math"]
    if source in CHAPTERS_WITH_MATH:
        assert raw_math > 0, f"{stem} shows no math at all"
    if raw_math:
        assert reading["typeset"] >= raw_math, f"{stem}: some math was not typeset"
        assert reading["math errors"] == 0, f"{stem} has a MathJax error"

    # Images: every one loaded with a real size.
    assert reading["broken images"] == [], reading["broken images"]

    # A text alternative for every figure: a sentence that says what it shows,
    # never its file name (myst-nb's default alt text is the image's path).
    file_name = re.compile(r"\.(png|svg|jpe?g)\b")
    alts = reading["alts"]
    poor = [a for a in alts if len(a.split()) < 5 or file_name.search(a)]
    assert poor == [], f"{stem}: figures without a text alternative: {poor}"

    source_path = ROOT / source
    if not source_path.exists() and (ROOT / f"{source}.ipynb").exists():
        source_path = ROOT / f"{source}.ipynb"
    if source_path.suffix == ".ipynb" or (ROOT / f"{stem}.ipynb").exists():
        check_notebook_page(stem, source_path, reading)
    errors, foreign = reading["console errors"], reading["foreign"]
    assert errors == [], errors
    assert foreign == [], foreign


def check_notebook_page(stem: str, source_path: Path, reading: dict) -> None:
    """A notebook's page: its Colab link, its setup cell collapsed and opening on
    click, its exercises numbered, each solution hidden until its toggle."""
    repo = urlparse(set_repo_url.configured_url()).path.strip("/")
    expected = f"https://colab.research.google.com/github/{repo}/blob/main/{stem}.ipynb"
    assert expected in reading["colab links"], (expected, reading["colab links"])

    # The setup cell: collapsed, open on click.
    assert reading["setup cells"] >= 1, f"{stem}: the setup cell is not collapsed"
    was_open, opened, code_shown = reading["setup cell"]
    assert was_open is False
    assert opened is True
    assert code_shown, f"{stem}: the setup cell's code is not shown once open"

    # Exercises: numbered, each with a solution that is hidden until its toggle.
    exercises = len(EXERCISE.findall(source_path.read_text()))
    assert reading["exercises"] == exercises, stem
    solutions = reading["solutions"]
    assert solutions == exercises, f"{stem}: {solutions} solutions"
    if exercises:
        shown_before, shown, text = reading["solution"]
        assert not shown_before, f"{stem}: a solution shows before its toggle"
        assert shown, f"{stem}: a solution stays hidden after its toggle"
        assert "correct." in text, f"{stem}: no check output shown"


def test_bibliography_lists_every_cited_work(server, browser):
    cited = set()
    for source in pages():
        for keys in CITATION.findall(source_of(source).read_text()):
            cited |= {key.strip() for key in keys.split(",")}
    page = browser.new_page()
    page.goto(f"{server}/book/bibliography.html", wait_until="load")
    entries = page.locator("div.citation")
    assert entries.count() == len(cited), (entries.count(), sorted(cited))
    text = page.locator("article").inner_text()
    for name in ("Vaswani", "Devlin", "He, Xiaodong Liu", "Dong", "Wolf", "Microsoft"):
        assert name in text, name

    # A citation in a chapter links to its entry on the bibliography page.
    page.goto(f"{server}/book/02_delta.html", wait_until="load")
    link = page.locator("span.bibtex-citation a").first
    assert "He" in link.inner_text()
    link.click()
    page.wait_for_load_state("load")
    assert page.url.split("#")[0].endswith("/book/bibliography.html")
    anchor = page.url.split("#", 1)[1]
    assert page.locator(f"[id='{anchor}']").count() == 1
    page.close()


def inventory(built_site: Path) -> dict[str, dict[str, tuple]]:
    with (built_site / "objects.inv").open("rb") as stream:
        return InventoryFile.load(stream, "", lambda base, uri: uri)


def test_inventory_holds_every_public_name_of_the_core(built_site):
    """Other projects can link to any public name of relpos and relpos.schemes."""
    import inspect

    import relpos
    import relpos.schemes

    found = inventory(built_site)
    entry = found["py:class"]["relpos.DisentangledSelfAttention"]
    assert entry[2].split("#") == ["book/api.html", "relpos.DisentangledSelfAttention"]
    for module in (relpos, relpos.schemes):
        for name in module.__all__:
            value = getattr(module, name)
            role = (
                "py:class"
                if inspect.isclass(value)
                else "py:function"
                if callable(value)
                else "py:data"
            )
            full = f"{module.__name__}.{name}"
            assert full in found.get(role, {}), f"{full} is not a {role} of objects.inv"
            assert found[role][full][2].startswith("book/api.html#"), full


def test_api_page_shows_shapes_and_chapters_link_to_it(server, browser):
    page = browser.new_page()
    page.goto(f"{server}/book/api.html", wait_until="load")
    entry = page.locator("dl.py.class").filter(
        has=page.locator("dt[id='relpos.DisentangledSelfAttention']")
    )
    assert entry.count() == 1
    # The class's own field list (not its methods'): Parameters, then Shapes.
    fields = entry.locator(":scope > dd > dl.field-list > dt")
    names = [text.replace(":", "").strip() for text in fields.all_inner_texts()]
    assert names[0] == "Parameters" and "Shapes" in names, names
    shapes = entry.locator(":scope > dd > dl.field-list > dd")
    shapes = shapes.nth(names.index("Shapes")).inner_text()
    assert "hidden_states" in shapes and "(b, n, hidden)" in shapes, shapes
    # Every Shapes section is rendered as a field, none left as a plain paragraph.
    assert page.locator("dl.field-list > dt", has_text="Shapes").count() > 40
    unread = page.locator("article p", has_text=re.compile(r"^Shapes:"))
    assert unread.count() == 0, unread.all_inner_texts()

    # The introduction links relpos.delta to its entry on this page.
    page.goto(f"{server}/book/intro.html", wait_until="load")
    link = page.locator("article a[href*='api.html#relpos.delta']").first
    assert link.inner_text() == "relpos.delta()"
    link.click()
    page.wait_for_load_state("load")
    assert page.url.endswith("/book/api.html#relpos.delta"), page.url
    target = page.locator("[id='relpos.delta']")
    assert target.count() == 1 and target.is_visible()
    assert "clamp(r, -k, k - 1) + k" in target.locator("xpath=..").inner_text()
    page.close()


# Accessibility and widths, every built page in both modes -------------------------

BLOCKS_WIDER_THAN_THEIR_COLUMN = """() => Array.from(
    document.querySelectorAll(
      'article pre, article .cell_output, article div.math, article .relpos-live'))
  .filter(block => block.offsetParent !== null
                   && block.scrollWidth > block.clientWidth + 1)
  .map(block => `${block.tagName.toLowerCase()}`
                + ` ${block.scrollWidth - block.clientWidth} px too wide:`
                + ` ${block.textContent.replace(/\\s+/g, ' ').trim().slice(0, 60)}`)"""

PAGE_WIDTH = "() => [document.scrollingElement.scrollWidth, window.innerWidth]"


REDIRECT = re.compile(
    r'\s*<meta http-equiv="Refresh" content="0; url=([^"]+)"\s*/?>\s*', re.IGNORECASE
)


def redirect_of(page: Path) -> str | None:
    """Where a redirect stub (a page that is only a meta refresh) sends the reader."""
    match = REDIRECT.fullmatch(page.read_text())
    return match.group(1) if match else None


def built_pages(built_site: Path) -> list[str]:
    """Every HTML page of the built site, by its path (none under _static).

    Redirect stubs are left out: the browser leaves them as soon as they load, so
    they have nothing to audit (test_redirects_land_on_audited_pages checks them).
    """
    return sorted(
        path.relative_to(built_site).as_posix()
        for path in built_site.rglob("*.html")
        if not any(part.startswith("_") for part in path.relative_to(built_site).parts)
        and redirect_of(path) is None
    )


def test_redirects_land_on_audited_pages(built_site):
    """The site's root is a redirect stub to the book's first page, and every stub
    leads to a page the audit reads."""
    audited = set(built_pages(built_site))
    stubs = {
        path.relative_to(built_site).as_posix(): redirect_of(path)
        for path in built_site.rglob("*.html")
        if redirect_of(path) is not None
    }
    root = Path(pages()[0]).with_suffix(".html").as_posix()
    assert stubs.get("index.html") == root, stubs
    for stub, target in stubs.items():
        landing = ((built_site / stub).parent / target).resolve()
        assert landing.relative_to(built_site.resolve()).as_posix() in audited, (
            f"{stub} redirects to {target}, which the audit does not read"
        )


def wait_for_math(page) -> None:
    if page.locator("div.math, span.math").count():
        page.wait_for_function(
            "() => window.MathJax && MathJax.startup && MathJax.startup.promise",
            timeout=30000,
        )
        page.evaluate("() => MathJax.startup.promise")


def wait_for_figures(page) -> None:
    """Wait until every interactive figure of the page is drawn (its chart, not its
    still), so the audit and the width checks read what a reader sees."""
    if page.locator("figure.relpos-interactive").count():
        page.wait_for_function(
            "() => Array.from(document.querySelectorAll('figure.relpos-interactive'))"
            ".every(f => f.dataset.live)",
            timeout=30000,
        )


def findings(result: dict, impacts: tuple[str, ...]) -> list[str]:
    """One line per node of every violation of the given impacts: rule, node, why."""
    lines = []
    for violation in result["violations"]:
        if violation["impact"] not in impacts:
            continue
        for node in violation["nodes"]:
            where = ", ".join(str(target) for target in node["target"])
            lines.append(
                f"{violation['id']} ({violation['impact']}) at {where}:"
                f" {node['html'][:160]} -- {node.get('failureSummary', '')[:200]}"
            )
    return lines


# The WCAG 2.1 A/AA rules whose verdict depends on the colours: the dark theme
# changes colours only (the same page, the same markup), so the dark audit runs
# these and the light audit runs every rule. test_the_colour_rules_are_the_wcag_ones
# keeps the list in step with axe-core.
COLOUR_RULES = ("color-contrast", "link-in-text-block")
# What axe runs on the whole page in light mode: every rule but the colour rules.
# These run in both modes on one element per style signature not audited before in
# that mode (tests/site/_contrast.py and tests/site/_links.py say why that is the
# same verdict): nine tenths of axe's time went to color-contrast, on thousands of
# texts of a few dozen styles, and most of the rest to link-in-text-block, on
# hundreds of links of a dozen.
AXE_OPTIONS = {
    "runOnly": {"type": "tag", "values": WCAG_21_AA},
    "rules": {rule: {"enabled": False} for rule in COLOUR_RULES},
    "resultTypes": ["violations"],
}
MODES = ("light", "dark")
# Runs in the page: axe's audit of the whole page with ``options`` (what
# axe_playwright_python's Axe.run does, without loading axe again).
WHOLE_PAGE = "options => axe.run(document, options)"


def new_seen() -> dict[str, set[str]]:
    """The signatures audited so far in one mode: texts' contrast, links'."""
    return {"contrast": set(), "links": set()}


def audit_page(page, axe: Axe, mode: str, seen: dict[str, set[str]]) -> dict:
    """axe's WCAG 2.1 A/AA audit of the page in ``mode``: in light mode the whole
    page for every rule but the colour rules; in both modes the colour rules on
    the elements of the signatures ``seen`` lacks (added to it). Returns axe's
    violations."""
    violations = []
    load_axe(page, axe.axe_script)  # once per load: both modes' runs share it
    if mode == "light":
        violations += page.evaluate(WHOLE_PAGE, AXE_OPTIONS)["violations"]
    for audit, kind in ((contrast_audit, "contrast"), (link_audit, "links")):
        violations += audit(page, axe.axe_script, seen[kind])["violations"]
    return {"violations": violations}


# Switching the reader's preference on an open page: the theme's own transitions
# (colours over 0.15 to 0.3 s) are held off while it restyles, so the page reads
# at once as a page loaded in that mode does
# (test_a_change_of_preference_restyles_the_page_as_a_load_does).
NO_TRANSITIONS = "*, *::before, *::after {transition: none !important}"
# The theme follows the preference on its media query's change event, dispatched
# after emulate_media returns: restyled once it shows ``mode``, every element read.
RESTYLED = """mode => document.documentElement.dataset.theme === mode
  && Array.from(document.querySelectorAll('*'), el => getComputedStyle(el).color)"""


def switch_to(page, mode: str) -> None:
    """Show the open page in ``mode``, as the reader's preference changed."""
    held = page.add_style_tag(content=NO_TRANSITIONS)
    page.emulate_media(color_scheme=mode)
    page.wait_for_function(RESTYLED, arg=mode, timeout=10000)
    held.evaluate("el => el.remove()")


# A link told from its text by a slightly different colour only (1.66:1, under 3:1).
HIDDEN_LINK = "<a href='#' style='color:#333;text-decoration:none'>{}</a>"


# An image without alt text, faint text, a link told from its text by colour alone.
KNOWN_VIOLATIONS = (
    "<html lang='en'><head><title>probe</title></head><body><main>"
    "<img src='data:image/gif;base64,R0lGODlhAQABAAAAACw='>"
    "<p style='color:#bbb;background:#fff'>faint text</p>"
    f"<p style='color:#000'>text, {HIDDEN_LINK.format('a link')}, text</p>"
    "</main></body></html>"
)


def test_the_audit_finds_a_known_violation(browser):
    """An image without alt text, faint text and a link told from its text by colour
    alone are found: critical and serious."""
    page = browser.new_page()
    found = {}
    for mode in ("light", "dark"):
        page.set_content(KNOWN_VIOLATIONS)
        result = audit_page(page, Axe(), mode, new_seen())
        found[mode] = findings(result, FAILING_IMPACTS)
    page.close()
    light, dark = found["light"], found["dark"]
    assert any(line.startswith("image-alt (critical)") for line in light), light
    for mode, lines in found.items():  # the colour rules, in both modes
        for rule in COLOUR_RULES:
            assert any(line.startswith(f"{rule} (serious)") for line in lines), mode
    # the dark audit's rules find the faint text and the link, and only those
    assert all(line.startswith(COLOUR_RULES) for line in dark), dark


FAINT = "<p style='color:{};background:#fff'>{}</p>"


def probe(page, *paragraphs: str) -> None:
    """A page of plain text, then ``paragraphs`` two (transparent) levels down."""
    body = "".join(paragraphs)
    page.set_content(
        "<html lang='en'><head><title>probe</title></head><body><main>"
        f"<p>plain text</p><div><div>{body}</div></div></main></body></html>"
    )


def test_the_contrast_audit_reads_each_new_style_once(browser):
    """A style signature is audited once, on the first page that shows it: faint
    text of a new style is found on a later page, faint text of a style found
    before is not audited again (nor the plain text), and two faint paragraphs
    of one style on one page cost one audit. Without the signatures every text
    here would be audited on every page (six, not three)."""
    page = browser.new_page()
    seen: set[str] = set()
    probe(page, FAINT.format("#bbb", "faint text"), FAINT.format("#bbb", "again"))
    first = contrast_audit(page, Axe().axe_script, seen)
    lines = findings(first, FAILING_IMPACTS)
    assert first["audited"] == 2, first  # the plain style, the faint one
    assert len(lines) == 1 and "faint text" in lines[0], lines
    probe(page, FAINT.format("#bbb", "faint, seen"), FAINT.format("#aaa", "new"))
    second = contrast_audit(page, Axe().axe_script, seen)
    lines = findings(second, FAILING_IMPACTS)
    page.close()
    assert second["audited"] == 1, second
    assert len(lines) == 1 and ">new</p>" in lines[0], lines
    assert lines[0].startswith("color-contrast (serious)"), lines


def test_a_style_counts_as_audited_only_once_axe_measured_it(browser):
    """A style stays new until axe measures a ratio for one of its elements: not
    for text off the screen or one character (axe leaves the first out and
    calls the second incomplete), nor for emoji (incomplete). When the element
    first audited gets no ratio, the style's other elements on the page are
    audited: the faint text after the emoji, on the page after the others, is
    found."""
    page = browser.new_page()
    seen: set[str] = set()
    short, away = FAINT.format("#bbb", "x"), FAINT.format("#bbb", "off screen")
    probe(page, away.replace("<p ", "<p class='away' "), short)
    page.add_style_tag(content=".away {position: absolute; left: -9999px}")
    first = contrast_audit(page, Axe().axe_script, seen)
    assert findings(first, FAILING_IMPACTS) == [] and first["audited"] == 3, first
    emoji = FAINT.format("#bbb", "\U0001F642\U0001F642")
    probe(page, emoji, FAINT.format("#bbb", "faint text"))
    second = contrast_audit(page, Axe().axe_script, seen)
    page.close()
    lines = findings(second, FAILING_IMPACTS)
    assert len(lines) == 1 and ">faint text</p>" in lines[0], lines
    assert second["audited"] == 2, second  # the emoji, then the text


def links(page, *paragraphs: str) -> None:
    """A page of ``paragraphs`` of black text, two (transparent) levels down; each
    but a lone link gets more words around it than its links hold (else axe's rule
    does not apply to them)."""
    words = "some words of text, more words of text, and yet more"
    body = "".join(
        f"<p style='color:#000'>{text}"
        f"{'' if text.startswith('<a') else ' ' + words}</p>"
        for text in paragraphs
    )
    page.set_content(
        "<html lang='en'><head><title>probe</title></head><body><main>"
        f"<div><div>{body}</div></div></main></body></html>"
    )


UNDERLINED = "<a href='#'>{}</a>"


def test_the_link_audit_reads_each_new_link_style_once(browser):
    """A link style is audited once, on the first page where a link of it is in a
    block of text: an indistinguishable link of a new style is found on a later
    page, one of a style audited before is not audited again (nor the underlined
    links), two of one style on one page cost one audit. A link that is its block's
    whole text is not one the rule applies to: the link of its style in a
    paragraph is audited instead. Without the signatures every link the rule
    applies to here would be audited (six, not three)."""
    page = browser.new_page()
    seen: set[str] = set()
    links(
        page,
        HIDDEN_LINK.format("alone"),
        f"text {HIDDEN_LINK.format('hidden')} and {HIDDEN_LINK.format('again')}",
        f"text {UNDERLINED.format('underlined')} text",
    )
    first = link_audit(page, Axe().axe_script, seen)
    lines = findings(first, FAILING_IMPACTS)
    assert first["audited"] == 2, first  # the hidden style, the underlined one
    assert len(lines) == 1 and ">hidden</a>" in lines[0], lines
    new = HIDDEN_LINK.replace("#333", "#444")
    links(
        page,
        f"text {HIDDEN_LINK.format('hidden, seen')} text",
        f"text {new.format('new')} and {UNDERLINED.format('underlined')} text",
    )
    second = link_audit(page, Axe().axe_script, seen)
    lines = findings(second, FAILING_IMPACTS)
    page.close()
    assert second["audited"] == 1, second
    assert len(lines) == 1 and ">new</a>" in lines[0], lines
    assert lines[0].startswith("link-in-text-block (serious)"), lines


# Every element's colours and the cues the colour rules read, in document order.
# Rendered elements only (the body's, without style, script and the like): a theme
# or a script may add its <style> elements in another order from one load to the
# next, which changes no colour.
COLOURS = """() => Array.from(document.body.querySelectorAll(
    '*:not(style):not(script):not(link):not(meta):not(noscript):not(template)'), el => {
  const s = getComputedStyle(el);
  return [el.tagName, s.color, s.backgroundColor, s.backgroundImage, s.opacity,
          s.filter, s.textDecoration, s.borderBottomColor, s.outlineColor,
          s.webkitTextFillColor, s.textShadow].join(' | ');
})"""


# Runs in the page: the two colour rules as loaded, every property a run reads.
COLOUR_RULES_AS_LOADED = """ids => axe._audit.rules.filter(r => ids.includes(r.id))
  .map(r => [r.id, String(r.selector), String(r.matches), r.enabled])"""


def test_the_colour_audits_leave_axe_as_they_found_it(browser):
    """The audits of one page load share one axe (``load_axe``): the colour audits
    put back the rules they narrow, so each later run (the next mode's, or the
    whole-page audit) runs axe's rules as loaded. A second audit of the same page
    finds what the first found."""
    page = browser.new_page()
    page.set_content(KNOWN_VIOLATIONS)
    axe = Axe()
    load_axe(page, axe.axe_script)
    loaded = page.evaluate(COLOUR_RULES_AS_LOADED, list(COLOUR_RULES))
    found = [audit_page(page, axe, "light", new_seen()) for _ in range(2)]
    after = page.evaluate(COLOUR_RULES_AS_LOADED, list(COLOUR_RULES))
    page.close()
    assert len(loaded) == 2 and after == loaded, (loaded, after)
    # rule, impact, where (the nodes' HTML holds the first audit's marks)
    first, second = (
        [line.split(": ", 1)[0] for line in findings(result, FAILING_IMPACTS)]
        for result in found
    )
    for rule in ("image-alt", *COLOUR_RULES):
        assert any(line.startswith(rule) for line in first), (rule, first)
    assert first == second, (first, second)


def test_a_change_of_preference_restyles_the_page_as_a_load_does(server, browser):
    """The dark audit reads each page switched to dark after its light audit: the
    theme follows the reader's preference while the page is open (pydata-sphinx-
    theme listens to it). Every element of a chapter then has the colours it has
    when the page is loaded in dark mode (a dropdown menu, hidden, lacks a class
    the load adds: it changes none of its colours)."""
    shown = {}
    for first in MODES:
        context = browser.new_context(
            viewport={"width": WIDE, "height": 900}, color_scheme=first
        )
        page = context.new_page()
        page.goto(f"{server}/book/03_table.html", wait_until="load")
        wait_for_math(page)
        wait_for_figures(page)
        switch_to(page, "dark")
        theme = page.evaluate("() => document.documentElement.dataset.theme")
        shown[first] = (theme, page.evaluate(COLOURS))
        context.close()
    assert shown["light"][0] == shown["dark"][0] == "dark"
    switched, loaded = shown["light"][1], shown["dark"][1]
    assert len(switched) == len(loaded) > 1000
    differ = [(a, b) for a, b in zip(switched, loaded) if a != b]
    assert differ == [], differ[:5]


def test_the_colour_rules_are_the_wcag_ones(browser):
    """COLOUR_RULES are axe-core's WCAG 2.1 A/AA rules about colour (tag cat.color)."""
    page = browser.new_page()
    page.set_content("<html lang='en'><head><title>rules</title></head></html>")
    axe = Axe()
    page.evaluate(axe.axe_script)
    rules = page.evaluate(
        "tags => axe.getRules(tags).filter(r => r.tags.includes('cat.color'))"
        ".map(r => r.ruleId)",
        WCAG_21_AA,
    )
    page.close()
    assert sorted(rules) == sorted(COLOUR_RULES), rules


IMAGES_NOT_LOADED = """() => Array.from(document.images)
  .filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)"""


def read_as_reader(page) -> dict:
    """What test_page_in_browser asserts on, read on the page as loaded and drawn
    (math typeset, figures live): its math, images, figures' text alternatives,
    Colab links, exercises and solutions."""
    return {
        "math": page.locator("div.math, span.math").count(),
        "typeset": page.locator("mjx-container").count(),
        "math errors": page.locator("mjx-merror").count(),
        "broken images": page.evaluate(IMAGES_NOT_LOADED),
        "alts": page.eval_on_selector_all(
            "article img", "els => els.map(e => e.getAttribute('alt') || '')"
        ),
        "colab links": page.eval_on_selector_all(
            "a[href*='colab.research.google.com']", "els => els.map(e => e.href)"
        ),
        "exercises": page.locator("div.exercise").count(),
        "solutions": page.locator("div.solution.dropdown").count(),
    }


def open_toggles(page) -> dict:
    """Click the first collapsed setup cell and the first solution's toggle, as a
    reader does: for each, whether it was shut, whether it opened and what shows."""
    reading: dict = {}
    hidden = page.locator("details.hide.above-input")
    reading["setup cells"] = hidden.count()
    if reading["setup cells"]:
        first = hidden.first
        was_open = first.evaluate("el => el.open")
        first.locator("summary").click()
        opened = first.evaluate("el => el.open")
        code_shown = first.locator("pre").first.is_visible()
        reading["setup cell"] = (was_open, opened, code_shown)
    solutions = page.locator("div.solution.dropdown")
    if solutions.count():
        solution = solutions.first
        body = solution.locator("section").first
        shown_before = body.is_visible()
        solution.locator("button.toggle-button").click()
        try:
            body.wait_for(state="visible", timeout=5000)
        except PlaywrightTimeout:
            reading["solution"] = (shown_before, False, "")
        else:
            reading["solution"] = (shown_before, True, body.inner_text())
    return reading


def foreign_requests_of(page, server: str) -> list[str]:
    """The list that collects the URLs ``page`` requests from another host."""
    foreign: list[str] = []

    def record(request) -> None:
        host = urlparse(request.url)
        if host.scheme in ("http", "https") and host.netloc != urlparse(server).netloc:
            foreign.append(request.url)

    page.on("request", record)
    return foreign


def read_page(page, axe: Axe, mode: str, seen: dict[str, set[str]]) -> dict:
    """What the tests assert on for the open page in ``mode``, at 1280 px: the
    theme it shows, axe-core's findings, the blocks wider than their column."""
    result = audit_page(page, axe, mode, seen)
    return {
        "theme": page.evaluate("() => document.documentElement.dataset.theme"),
        "failing": findings(result, FAILING_IMPACTS),
        "other": findings(result, ("moderate", "minor")),
        "wide blocks": page.evaluate(BLOCKS_WIDER_THAN_THEIR_COLUMN),
    }


@pytest.fixture(scope="session")
def audits(built_site, server, browser) -> dict[str, dict]:
    """Every page loaded once and read in both modes, by one page object.

    Each page is loaded in light mode at 1280 px and read as a reader gets it
    (``read_as_reader``), then audited (``read_page``: every WCAG 2.1 A/AA
    rule), then the reader's preference turns dark on the open page (the theme
    follows it: ``switch_to``) and it is read again (the colour rules). Then at
    390 px: the page's width against the screen's, in both modes. Last, back in
    light mode at 1280 px, its first setup cell and solution are clicked open
    (``open_toggles``). "reader" holds, per page, what test_page_in_browser
    asserts on: the reader's reading, the clicks', the requests to another host
    over the whole visit and the console's errors but the audit's (axe fetches a
    stylesheet's @import relative to the page: a 404 no reader meets).
    """
    SHOTS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(
        viewport={"width": WIDE, "height": 900}, color_scheme="light"
    )
    page = context.new_page()
    errors, foreign = console_errors_of(page), foreign_requests_of(page, server)
    axe = Axe()
    seen = {mode: new_seen() for mode in MODES}  # per mode: signatures audited
    reports: dict = {mode: {"mode": mode, "pages": {}} for mode in MODES}
    reports["reader"] = {}
    for path in built_pages(built_site):
        errors.clear()
        foreign.clear()
        page.emulate_media(color_scheme=MODES[0])
        page.set_viewport_size({"width": WIDE, "height": 900})
        page.goto(f"{server}/{path}", wait_until="load")
        wait_for_math(page)
        wait_for_figures(page)
        reading = read_as_reader(page)
        read_before_audit = len(errors)
        audit_both_modes(page, axe, seen, reports, path)
        del errors[read_before_audit:]  # axe's own: it fetches @import-ed CSS
        page.set_viewport_size({"width": WIDE, "height": 900})
        reading.update(open_toggles(page))
        if KEEP_SHOTS:  # light mode, as a reader opened it
            name = path.removesuffix(".html").replace("/", "_")
            page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
        reading["console errors"], reading["foreign"] = list(errors), list(foreign)
        reports["reader"][path] = reading
    context.close()
    return reports


def audit_both_modes(page, axe: Axe, seen: dict, reports: dict, path: str) -> None:
    """The open page (light mode, 1280 px) read in both modes (``read_page``),
    then at 390 px; the page ends in light mode, at 390 px."""
    entries = {}
    for mode in MODES:
        if mode != MODES[0]:
            switch_to(page, mode)
        entries[mode] = read_page(page, axe, mode, seen[mode])
    if KEEP_SHOTS:  # the page is in dark mode
        name = "dark_" + path.removesuffix(".html").replace("/", "_")
        page.screenshot(path=str(SHOTS / f"{name}.png"))
    page.set_viewport_size({"width": PHONE, "height": 844})
    for mode in reversed(MODES):  # the page is in the last mode already
        if mode != MODES[-1]:
            switch_to(page, mode)
        entries[mode]["phone width"] = page.evaluate(PAGE_WIDTH)
        reports[mode]["pages"][path] = entries[mode]


@pytest.fixture(scope="session", params=MODES)
def audit(request, audits) -> dict:
    """The audit of every page in one mode (``audits``): what the tests assert on."""
    return audits[request.param]


def test_the_site_follows_the_readers_colour_preference(audit):
    themes = {path: entry["theme"] for path, entry in audit["pages"].items()}
    assert len(themes) >= len(pages()), sorted(themes)
    wrong = {path: theme for path, theme in themes.items() if theme != audit["mode"]}
    assert not wrong, f"pages not shown in {audit['mode']} mode: {wrong}"


def test_no_serious_or_critical_wcag_violation(audit):
    """axe-core, WCAG 2.1 A and AA, on every page; moderate findings are printed."""
    for path, entry in audit["pages"].items():
        for line in entry["other"]:
            print(f"{audit['mode']} {path}: {line}")
    failing = [
        f"{audit['mode']} {path}: {line}"
        for path, entry in audit["pages"].items()
        for line in entry["failing"]
    ]
    assert not failing, "\n".join(failing)


def test_code_blocks_fit_the_column_at_1280_px(audit):
    wide = [
        f"{path}: {block}"
        for path, entry in audit["pages"].items()
        for block in entry["wide blocks"]
    ]
    listed = "\n".join(wide)
    mode = audit["mode"]
    assert not wide, f"{mode}: {len(wide)} blocks wider than their column:\n{listed}"


def test_no_page_is_wider_than_a_phone(audit):
    wider = {
        path: entry["phone width"]
        for path, entry in audit["pages"].items()
        if entry["phone width"][0] > entry["phone width"][1]
    }
    assert not wider, f"page width against the {PHONE} px screen: {wider}"
