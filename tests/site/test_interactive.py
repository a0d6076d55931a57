"""Every interactive figure of the site, as readers with and without JavaScript get it.

Run by `make site`. The pages holding a figure are found in the built HTML (a
``<figure class="relpos-interactive">``), not listed. For each such page:

- the Vega script (``_static/relpos-vega.js``) is loaded there and on no other
  page, as a deferred classic script: Chromium refuses a module from ``file://``;
- opened from disk (``file://``, as the README says to read the site) with
  every request to another host refused, every figure draws: its chart replaces
  its still, nothing was refused and the console stays clean;
- there, every control of every figure, moved from the keyboard, changes what
  the figure draws;
- the chart's SVG carries the figure's text alternative, and every control has a
  label and takes the keyboard's focus;
- at 1280 px every chart fits its column;
- with JavaScript off the still picture shows, loaded, with its alt text.

What each figure draws, and how it follows its controls, is tested figure by
figure over http (test_interactive_*.py beside this file), so both ways of
reading the site are driven. A figure's weight (its chart's JSON and its still)
is held to a budget here; the Vega script is shared by the figures of a page and
cached between pages.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _interactive import nudge, open_offline, wait_live  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
BUNDLE = "relpos-vega.js"
FIGURE = re.compile(
    r'<figure class="relpos-interactive" id="figure-([a-z0-9-]+)".*?</figure>', re.S
)
SPEC = re.compile(r'<script type="application/json" class="relpos-spec">(.*?)</script>')
STILL = re.compile(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"')
# One figure's weight on its page: its chart's JSON, and its still picture (the
# chapter's matplotlib figure, which the page carried before as a PNG file), in base64.
SPEC_BUDGET, STILL_BUDGET = 150_000, 400_000


def figure_pages(built_site: Path) -> dict[str, list[str]]:
    """Built page -> the names of its interactive figures."""
    found = {}
    for page in sorted(built_site.rglob("*.html")):
        names = FIGURE.findall(page.read_text(errors="replace"))
        if names:
            found[page.relative_to(built_site).as_posix()] = names
    return found


@pytest.fixture(scope="module")
def pages(built_site) -> dict[str, list[str]]:
    found = figure_pages(built_site)
    assert sum(map(len, found.values())) >= 6, f"interactive figures: {found}"
    return found


def test_the_vega_script_is_served_and_loaded_only_where_a_figure_is(built_site, pages):
    bundle = built_site / "_static" / BUNDLE
    assert bundle.stat().st_size > 100_000, "the Vega bundle is missing or empty"
    for page in sorted(built_site.rglob("*.html")):
        path = page.relative_to(built_site).as_posix()
        if path.startswith("_"):
            continue
        loads = re.search(
            rf'<script[^>]+src="[./]*_static/{BUNDLE}[^"]*"', page.read_text()
        )
        assert bool(loads) == (path in pages), f"{path}: bundle loaded: {bool(loads)}"
        if loads:  # a classic script, deferred: it runs once the page is parsed
            tag = loads.group(0) + ">"
            assert 'type="module"' not in tag and re.search(r"\sdefer[\s=>]", tag), tag


def test_every_figure_stays_within_its_budget(built_site, pages):
    for path in pages:
        for block in FIGURE.finditer((built_site / path).read_text()):
            spec = SPEC.search(block.group(0)).group(1)
            still = STILL.search(block.group(0)).group(1)
            name = block.group(1)
            assert len(spec.encode()) < SPEC_BUDGET, (name, len(spec))
            assert len(still) < STILL_BUDGET, (name, len(still))
            sizes = (len(spec) // 1000, len(still) // 1000)
            print("{}: chart JSON {} kB, still {} kB".format(name, *sizes))


@pytest.fixture(scope="module")
def live_pages(pages, built_site, browser):
    """Each page with figures, opened from disk, offline, JavaScript on, drawn."""
    opened = {}
    for path, names in pages.items():
        page, refused, errors = open_offline(browser, built_site.as_uri(), path)
        assert page.url.startswith("file://"), page.url
        for name in names:
            try:
                wait_live(page, name)
            except PlaywrightTimeout:  # the console says why (a refused script)
                pytest.fail(f"{path}: figure {name} not drawn; console: {errors}")
        opened[path] = (page, refused, errors)
    yield opened
    for page, _, _ in opened.values():
        page.context.close()


def test_every_figure_draws_from_disk_with_a_clean_console(pages, live_pages):
    for path, names in pages.items():
        page, refused, errors = live_pages[path]
        assert refused == [], f"{path} asked another host for {refused}"
        assert errors == [], f"{path}: {errors}"
        for name in names:
            figure = page.locator(f"figure#figure-{name}")
            assert figure.locator(".relpos-live svg").count() == 1, name
            assert not figure.locator("img.relpos-still").is_visible(), name


def test_every_chart_carries_its_text_alternative(pages, live_pages):
    for path, names in pages.items():
        page = live_pages[path][0]
        for name in names:
            figure = page.locator(f"figure#figure-{name}")
            spec = json.loads(figure.locator("script.relpos-spec").text_content())
            alt = figure.locator("img.relpos-still").get_attribute("alt")
            assert spec["description"] == alt and len(alt.split()) >= 8, name
            # Vega names the chart's frame a graphics document, labelled with it
            frame = figure.locator(".relpos-live")
            assert frame.get_attribute("aria-label") == alt, name
            assert frame.get_attribute("role") == "graphics-document", name


def test_every_control_is_labelled_and_reached_by_the_keyboard(pages, live_pages):
    controls = 0
    for path, names in pages.items():
        page = live_pages[path][0]
        for name in names:
            inputs = page.locator(
                f"figure#figure-{name} .vega-bind input, "
                f"figure#figure-{name} .vega-bind select"
            )
            for index in range(inputs.count()):
                box = inputs.nth(index)
                label = box.evaluate(
                    "el => el.closest('label')?.querySelector('.vega-bind-name')"
                    "?.textContent.trim() || el.getAttribute('aria-label') || ''"
                )
                assert label, f"{name}: a control without a label"
                box.focus()
                assert box.evaluate("el => el === document.activeElement"), (
                    name,
                    label,
                )
                controls += 1
    assert controls >= 6, f"{controls} controls on the interactive figures"


def test_every_chart_fits_its_column_at_1280_px(pages, live_pages):
    for path, names in pages.items():
        page = live_pages[path][0]
        for name in names:
            frame = page.locator(f"figure#figure-{name} .relpos-live")
            wide = frame.evaluate("el => [el.scrollWidth, el.clientWidth]")
            assert wide[0] <= wide[1] + 1, f"{name} is {wide[0] - wide[1]} px too wide"


def test_every_control_moves_its_figure_from_disk(pages, live_pages):
    for path, names in pages.items():
        page, refused, errors = live_pages[path]
        for name in names:
            figure = page.locator(f"figure#figure-{name}")
            svg = figure.locator(".relpos-live svg").first
            inputs = figure.locator(".vega-bind input, .vega-bind select")
            assert inputs.count() >= 1, f"{name} has no control"
            for index in range(inputs.count()):  # each from the figure's first state
                before = svg.evaluate("el => el.outerHTML")
                move_back = nudge(page, name, inputs.nth(index))
                assert svg.evaluate("el => el.outerHTML") != before, (name, index)
                move_back()
        assert refused == [] and errors == [], (path, refused, errors)


def test_without_javascript_the_still_shows(pages, server, browser):
    for path, names in pages.items():
        page, refused, errors = open_offline(browser, server, path, javascript=False)
        for name in names:
            still = page.locator(f"figure#figure-{name} img.relpos-still")
            assert still.is_visible(), name
            assert still.evaluate("i => i.complete && i.naturalWidth > 0"), name
            assert page.locator(f"figure#figure-{name} .relpos-live").count() == 0
        assert refused == [] and errors == [], (path, refused, errors)
        page.context.close()
