"""How the browser tests read and move an interactive figure on a built page.

An interactive figure (relpos.book.interactive.Interactive) is a
``<figure class="relpos-interactive" id="figure-NAME">``; once drawn it has
``data-live`` and Vega's SVG, whose drawn items carry ``aria-label`` texts
("i: 3; j: 1; delta: 6") in a group named after their mark ("delta_marks").
Controls are moved from the keyboard, as a reader without a mouse would.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from relpos.book.interactive import parse_description  # noqa: E402


def open_offline(browser, server: str, page_path: str, *, javascript: bool = True):
    """A page of the site with every request to another host refused.

    ``server`` is the site's root: ``http://127.0.0.1:PORT``, or the built folder's
    ``file://`` address to open the page from disk, as the README says to read it.
    Returns ``(page, refused, errors)``: the page, the URLs it tried to fetch from
    elsewhere, and its console errors.
    """
    context = browser.new_context(
        viewport={"width": 1280, "height": 900}, java_script_enabled=javascript
    )
    refused: list[str] = []
    local = urlparse(server).netloc

    def route(request_route):
        if urlparse(request_route.request.url).netloc in (local, ""):
            request_route.continue_()
        else:
            refused.append(request_route.request.url)
            request_route.abort()

    context.route("**/*", route)
    page = context.new_page()
    errors: list[str] = []
    page.on(
        "console", lambda msg: errors.append(msg.text) if msg.type == "error" else None
    )
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{server}/{page_path}", wait_until="load")
    return page, refused, errors


def wait_live(page, name: str, timeout: float = 30000) -> None:
    """Wait until figure ``name`` is drawn."""
    page.wait_for_selector(f"figure#figure-{name}[data-live]", timeout=timeout)
    settle(page, name)


def settle(page, name: str) -> None:
    """Wait for the figure's Vega view to finish its dataflow and redraw."""
    page.evaluate(f"async () => {{ await window.relposViews[{name!r}].runAsync(); }}")


def control(page, name: str, label: str):
    """The input of figure ``name`` whose label reads ``label``."""
    found = page.locator(
        f"figure#figure-{name} .vega-bind label",
        has=page.locator(".vega-bind-name", has_text=label),
    )
    assert found.count() >= 1, f"figure {name} has no control labelled {label!r}"
    return found.first.locator("input, select").first


def slide_to(page, name: str, label: str, value: float) -> None:
    """Move a range input to ``value`` with the keyboard (Home, then arrow keys)."""
    box = control(page, name, label)
    lo, step = float(box.get_attribute("min")), float(box.get_attribute("step") or 1)
    box.focus()
    box.press("Home")
    for _ in range(round((value - lo) / step)):
        box.press("ArrowRight")
    assert float(box.input_value()) == value, (label, box.input_value(), value)
    settle(page, name)


def choose(page, name: str, label: str, option: str) -> None:
    """Pick ``option`` (its visible text) in a select input, from the keyboard."""
    box = control(page, name, label)
    box.focus()
    box.select_option(label=option)
    settle(page, name)


def toggle(page, name: str, label: str) -> None:
    """Tick or untick a checkbox with the space bar."""
    box = control(page, name, label)
    box.focus()
    box.press("Space")
    settle(page, name)


def nudge(page, name: str, box) -> Callable[[], None]:
    """Move control ``box`` of figure ``name`` one step from the keyboard.

    A range input steps right (left at its maximum), a select input takes the next
    option (the first after the last), a checkbox flips. Returns what moves it back.
    """
    kind = box.evaluate("el => el.tagName === 'SELECT' ? 'select' : el.type")
    if kind not in ("range", "select", "checkbox"):
        raise AssertionError(f"figure {name}: no way to move a {kind!r} input")
    keys, first = ("ArrowRight", "ArrowLeft"), 0
    box.focus()
    if kind == "range":
        if float(box.input_value()) >= float(box.get_attribute("max")):
            keys = keys[::-1]
        box.press(keys[0])
    elif kind == "select":
        first = box.evaluate("el => el.selectedIndex")
        box.select_option(index=(first + 1) % box.locator("option").count())
    else:
        box.press("Space")
    settle(page, name)

    def move_back() -> None:
        box.focus()
        if kind == "range":
            box.press(keys[1])
        elif kind == "select":
            box.select_option(index=first)
        else:
            box.press("Space")
        settle(page, name)

    return move_back


def drawn(page, name: str, mark: str) -> list[dict[str, float | str]]:
    """What mark ``mark`` of figure ``name`` draws now: one parsed label per item."""
    labels = page.eval_on_selector_all(
        f"figure#figure-{name} .relpos-live svg g.{mark} [aria-label]",
        "els => els.map(e => e.getAttribute('aria-label'))",
    )
    return [parse_description(text) for text in labels]
