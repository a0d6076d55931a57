"""A chapter's self-check answered by keyboard alone, on the built site opened from
file:// (no server, no kernel): what a reader who saved the site to disk gets.

From the top of chapter 1, Tab moves the focus until it reaches the first question's
options; the arrow keys choose a wrong answer, Tab reaches Check and Enter checks
it; the live region says "Not quite." and why. Shift+Tab goes back to the options,
the arrow keys choose the right answer (the verdict clears), and Check says
"Correct." and why, its math typeset. The page logs no error. (Chapter 1 holds no
interactive figure: their Vega bundle is a module script, which a browser refuses to
load from file://.)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))

from _browser import console_errors_of  # noqa: E402 (tests/site: conftest.py)
from self_check_questions import data_file, load_questions  # noqa: E402

NAME, PAGE = "ch01", "book/01_absolute_to_relative.html"
# Enough Tab presses to cross the navigation and the chapter to its self-check.
MOST_TABS = 800
FOCUSED_OPTION = """() => {
  const active = document.activeElement;
  const question = document.querySelector('.relpos-self-check-question');
  return active && active.type === 'radio' && question.contains(active)
    ? Number(active.value) : null;
}"""


def plain_part(why: str) -> str:
    """The longest stretch of an explanation without math or code: the words the
    page shows as they are written."""
    parts = re.split(r"\$[^$]*\$|`[^`]*`", why)
    return max((p.strip(" ,.:") for p in parts), key=len)


def shown(text: str) -> str:
    """Text as the page shows it, with straight quotes (Sphinx curls them)."""
    return text.replace("\u2019", "'").replace("\u201c", '"').replace("\u201d", '"')


def choose(page, now: int | None, target: int) -> int:
    """Check option ``target`` from the keyboard; ``now`` is the checked one (None
    when none is and the focus is on the first)."""
    if now is None and target == 0:
        page.keyboard.press("Space")
    else:
        start = 0 if now is None else now
        key = "ArrowDown" if target > start else "ArrowUp"
        for _ in range(abs(target - start)):
            page.keyboard.press(key)
    return target


def test_a_question_answered_by_keyboard_from_file(built_site, browser):
    question = load_questions(data_file(NAME))[0]
    wrong = next(i for i in range(len(question.options)) if i != question.correct)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors = console_errors_of(page)
    url = (built_site / PAGE).resolve().as_uri()
    assert url.startswith("file://")
    page.goto(url, wait_until="load")
    page.wait_for_function(
        "() => window.MathJax && MathJax.startup && MathJax.startup.promise"
    )
    page.evaluate("() => MathJax.startup.promise")
    block = page.locator(".relpos-self-check-question").first
    button = block.locator("button.relpos-self-check-button")
    feedback = block.locator(".relpos-self-check-feedback")
    assert button.is_visible(), "the script did not run from file://"
    assert feedback.get_attribute("role") == "status"

    for _ in range(MOST_TABS):
        page.keyboard.press("Tab")
        if page.evaluate(FOCUSED_OPTION) is not None:
            break
    else:
        raise AssertionError(f"{MOST_TABS} Tab presses never reached the options")
    assert page.evaluate(FOCUSED_OPTION) == 0  # the group is entered at its first

    checked = choose(page, None, wrong)
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.textContent") == "Check"
    page.keyboard.press("Enter")
    said = shown(feedback.inner_text())
    assert said.startswith("Not quite."), said
    assert plain_part(question.options[wrong].why) in said
    assert block.get_attribute("data-verdict") == "wrong"

    page.keyboard.press("Shift+Tab")
    assert page.evaluate(FOCUSED_OPTION) == wrong
    choose(page, checked, question.correct)
    assert feedback.inner_text() == ""  # a new choice clears the old verdict
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    said = shown(feedback.inner_text())
    assert said.startswith("Correct."), said
    right = question.options[question.correct].why
    assert plain_part(right) in said
    if "$" in right:  # the explanation's math arrives typeset
        assert feedback.locator("mjx-container").count() >= 1
    assert block.get_attribute("data-verdict") == "correct"
    assert errors == [], errors
    page.close()
