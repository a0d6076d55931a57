"""The session slides: built by `make slides`, shown offline in headless Chromium.

Builds the four decks once (tools/build_slides.py, into a temporary folder), then
opens each from disk with every request that is not file:// aborted and counted,
and checks that reveal.js started, the deck has its number of slides, every formula
was typeset by KaTeX, every figure loaded and has alt text, the console stayed
clean, and every slide fits reveal's 1280 x 720 frame (no code block scrolls
sideways, no slide taller than the frame).

Unit-level checks read the decks as the build assembles them, before any browser:
each names only the chapters of its session, and all of them; every slide has
speaker notes; and each deck states exactly what the course plan
(book/course/plan.yml) says of its session, read back from the slides: the title,
the outline's minutes, every demo's sections, the lab and the homework with its due
date, the discussion questions with their good answers in the notes, the final
project's points. The teaching slides, written by hand, state none of these: no
minutes, no lab, homework, demo or discussion of their own.

Without Chromium the browser checks skip with a message saying how to install it;
with RELPOS_REQUIRE_BROWSER=1 (set by .ci/run) that skip is a failure. Without
npm the build fails with a message saying how to install it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import build_slides  # noqa: E402
import plan_slides  # noqa: E402
from _browser import console_errors_of  # noqa: E402
from plan_slides import course_plan  # noqa: E402

DECKS = build_slides.deck_sources()
SESSIONS = {s["number"]: s for s in build_slides.PLAN["sessions"]}
SHOTS = ROOT / "_build" / "screenshots" / "slides"

# How a deck names a chapter: "chapter 4", "chapters 9 and 10", "chapters 1-3",
# a notebook's file name ("04_disentangled_attention.ipynb"), an exercise
# ("exercise 4.2", "4.2 The scale ...", "ch4-ex2").
CHAPTER_WORDS = re.compile(
    r"\b[Cc]hapters?\s+(\d+(?:\s*(?:,|and|-|to)\s*\d+)*)"
)
NOTEBOOK = re.compile(r"\b(\d\d)_[a-z0-9_]+\.ipynb")
EXERCISE = re.compile(r"\b(?:[Ee]xercises?\s+|ch)(\d+)(?:\.\d+|-ex\d+)")
LAB_ITEM = re.compile(r"^\s*-?\s*(\d+)\.\d+ [A-Z]", re.M)


def deck_text(deck: build_slides.Deck) -> str:
    """Every slide's Markdown and notes, as the build assembles the deck."""
    return "\n".join(f"{slide.body}\n{slide.notes}" for slide in deck.slides)


def chapters_named(text: str) -> set[int]:
    named: set[int] = set()
    for match in CHAPTER_WORDS.finditer(text):
        spans = re.split(r"\s*(?:,|and)\s*", match.group(1))
        for span in spans:
            ends = [int(n) for n in re.split(r"\s*(?:-|to)\s*", span)]
            named |= set(range(ends[0], ends[-1] + 1))
    for pattern in (NOTEBOOK, EXERCISE, LAB_ITEM):
        named |= {int(n) for n in pattern.findall(text)}
    return named


def test_chapter_references_are_read():
    """The reader of chapter names finds each form a deck uses (and no other)."""
    text = (
        "chapters 1-3; chapter 5, chapters 9 and 10; 06_long_sequences.ipynb; "
        "exercise 7.1 and ch8-ex2\n- 4.2 The scale\nk = 3.5 Hz, 2k rows"
    )
    assert chapters_named(text) == {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
    assert chapters_named("2k rows, 1/sqrt(3d), 512 tokens") == set()


@pytest.mark.parametrize("source", DECKS, ids=lambda p: p.stem)
def test_deck_names_only_its_session_chapters(source):
    deck = build_slides.parse_deck(source)
    expected = set(build_slides.SESSION_CHAPTERS[deck.session])
    named = chapters_named(deck_text(deck))
    assert named <= expected, (
        f"{source.name} (session {deck.session}) names chapters "
        f"{sorted(named - expected)} of another session"
    )
    assert named == expected, f"{source.name} never names {sorted(expected - named)}"


def test_npm_ci_runs_when_node_modules_is_unlike_the_lock(tmp_path):
    lock = {"packages": {"": {}, "node_modules/reveal.js": {"version": "5.2.1"}}}
    (tmp_path / "package-lock.json").write_text(json.dumps(lock))
    assert not build_slides.installed_matches_lock(tmp_path)  # missing
    installed = tmp_path / "node_modules" / "reveal.js"
    installed.mkdir(parents=True)
    (installed / "package.json").write_text(json.dumps({"version": "4.6.0"}))
    assert not build_slides.installed_matches_lock(tmp_path)  # stale
    (installed / "package.json").write_text(json.dumps({"version": "5.2.1"}))
    assert build_slides.installed_matches_lock(tmp_path)


def deck_source(session: int, teaching: list[str], skip: str = "") -> str:
    """A deck of ``teaching`` slides (each with notes) and the plan's placeholders
    for ``session``, less one ``skip``."""
    parts = plan_slides.expected_parts(SESSIONS[session])
    if skip:
        parts.remove(skip)
    holders = [f"<!-- plan: {part} -->" for part in parts]
    slides = [f"{body}\n\nNote:\nWhat to say." for body in teaching]
    return f"---\nsession: {session}\n---\n" + "\n---\n".join(holders + slides)


def test_a_deck_that_does_not_fit_is_refused(tmp_path):
    source = tmp_path / "session-2.md"
    holders = len(plan_slides.expected_parts(SESSIONS[2]))
    enough = ["## A slide\n\nText."] * (build_slides.SLIDES_PER_DECK[0] - holders)
    wide = "```python\n" + "x" * (build_slides.MAX_CODE_COLUMNS + 1) + "\n```"
    source.write_text(deck_source(2, enough))
    deck = build_slides.parse_deck(source)
    assert len(deck.slides) == build_slides.SLIDES_PER_DECK[0]
    assert deck.title == SESSIONS[2]["title"] and deck.chapters == (4, 5)
    source.write_text(deck_source(2, enough + [wide]))
    with pytest.raises(ValueError, match="code line"):
        build_slides.parse_deck(source)
    source.write_text(deck_source(2, enough[:-1]))
    with pytest.raises(ValueError, match="slides, expected"):
        build_slides.parse_deck(source)
    no_alt = build_slides.Slide("![](figure:streams)", "")
    with pytest.raises(ValueError, match="alt text"):
        build_slides.render_slide(no_alt, build_slides.markdown())


def test_a_deck_must_hold_each_placeholder_of_its_plan_and_notes_everywhere(tmp_path):
    source = tmp_path / "session-1.md"
    teaching = ["## A slide\n\nText."] * 10
    source.write_text(deck_source(1, teaching, skip="lab"))
    with pytest.raises(ValueError, match="placeholders"):
        build_slides.parse_deck(source)
    source.write_text(deck_source(1, teaching + ["<!-- plan: lab -->"]))
    with pytest.raises(ValueError, match="placeholders"):  # the lab twice
        build_slides.parse_deck(source)
    source.write_text(deck_source(1, teaching + ["<!-- plan: quiz -->"]))
    with pytest.raises(ValueError, match="unknown placeholder 'quiz'"):
        build_slides.parse_deck(source)
    source.write_text(deck_source(1, teaching).replace("Note:\nWhat to say.", "", 1))
    with pytest.raises(ValueError, match="no speaker notes"):
        build_slides.parse_deck(source)
    typed = deck_source(1, teaching).replace("session: 1", "session: 1\ntitle: Mine")
    source.write_text(typed)
    with pytest.raises(ValueError, match="plan.yml"):
        build_slides.parse_deck(source)
    with pytest.raises(ValueError, match="role"):
        plan_slides.plain("read {cite:t}`he2021deberta`")
    with pytest.raises(ValueError, match="part"):
        plan_slides.SessionSlides(build_slides.PLAN, 1).slide("quiz")


def plan_slides_of(deck: build_slides.Deck, part: str) -> list[build_slides.Slide]:
    return [slide for slide in deck.slides if slide.origin == f"plan:{part}"]


def one_line(text: str) -> str:
    return " ".join(text.split())


def listed(body: str) -> list[str]:
    """The exercise numbers a slide lists, one per item: ``- 4.2 Title``."""
    return re.findall(r"^- (\d+\.\d+) ", body, flags=re.MULTILINE)


@pytest.mark.parametrize("source", DECKS, ids=lambda p: p.stem)
def test_a_deck_states_exactly_what_the_plan_says_of_its_session(source):
    deck = build_slides.parse_deck(source)
    session, plan = SESSIONS[deck.session], build_slides.PLAN
    blocks = session["blocks"]
    minutes = {kind: sum(b["minutes"] for b in blocks if b["kind"] == kind)
               for kind in course_plan.KINDS}
    planned = {
        kind: [course_plan.exercise_number(e["label"])
               for e in session["exercises"] if e["as"] == kind]
        for kind in ("lab", "homework")
    }

    (title,) = plan_slides_of(deck, "title")
    assert title.body.startswith(f"# {session['title']}\n")
    assert one_line(session["goal"]) in title.notes

    (agenda,) = plan_slides_of(deck, "agenda")
    rows = re.findall(
        r"^\| (\d:\d\d)\u2013(\d:\d\d) \| (\d+) \| ([\w ]+) \|", agenda.body, re.M
    )
    assert [(int(row[2]), row[3]) for row in rows] == [
        (block["minutes"], course_plan.KINDS[block["kind"]]) for block in blocks
    ]
    assert rows[-1][1] == course_plan.clock(plan["format"]["minutes"])

    demos = [block for block in blocks if block["kind"] == "demo"]
    shown = plan_slides_of(deck, "demo")
    assert len(shown) == len(demos)
    for slide, block in zip(shown, demos):
        assert slide.body.startswith(f"## Live demo: {block['minutes']} minutes\n")
        sections = re.findall(r"^- Chapter \d+, \*(.+)\*", slide.body, re.M)
        assert sections == [demo["section"] for demo in block["demos"]]
        for demo in block["demos"]:
            assert one_line(demo["run"]) in slide.notes

    (lab,) = plan_slides_of(deck, "lab")
    assert lab.body.startswith(f"## Lab: {minutes['lab']} minutes\n")
    assert listed(lab.body) == planned["lab"]

    homework = plan_slides_of(deck, "homework")
    assert [listed(slide.body) for slide in homework] == [planned["homework"]]
    due = course_plan.homework_due(plan, deck.session)
    assert f"Due {due}:" in homework[0].body

    (discussion,) = plan_slides_of(deck, "discussion")
    assert discussion.body.startswith(
        f"## Discussion: {minutes['discussion']} minutes\n"
    )
    questions = re.findall(r"^\d+\. (.+)$", discussion.body, re.M)
    assert questions == [one_line(item["question"]) for item in session["discussion"]]
    for item in session["discussion"]:
        assert one_line(item["good_answer"]) in discussion.notes

    projects = plan_slides_of(deck, "project")
    launched = plan["project"]["launched"] == deck.session
    assert len(projects) == launched == ("project" in [b["kind"] for b in blocks])
    if launched:
        criteria = plan["project"]["rubric"]["criteria"]
        points = re.findall(r"^\| [^|]+ \| (\d+) \|$", projects[0].body, re.M)
        assert [int(p) for p in points] == [c["points"][0] for c in criteria] + [
            sum(c["points"][0] for c in criteria)
        ]
        assert f"due {plan['project']['days']} days after" in (
            projects[0].body
        )


# What only the plan says of a session: a duration, a lab, homework, a demo, a
# discussion. A teaching slide that says one would go stale when the plan changes.
SESSION_WORDS = re.compile(
    r"\b(?:\d+\s*min(?:ute)?s?|lab|homework|demo|discussion|deadlines?)\b", re.I
)


@pytest.mark.parametrize("source", DECKS, ids=lambda p: p.stem)
def test_the_teaching_slides_leave_the_session_to_the_plan(source):
    deck = build_slides.parse_deck(source)
    assert all(slide.notes for slide in deck.slides), "a slide without notes"
    for number, slide in enumerate(deck.slides, 1):
        if not slide.origin:
            found = SESSION_WORDS.findall(f"{slide.body}\n{slide.notes}")
            assert not found, f"{source.name}, slide {number}: {found}"


def test_one_deck_per_session():
    sessions = [build_slides.parse_deck(source).session for source in DECKS]
    assert sessions == sorted(build_slides.SESSION_CHAPTERS)


@pytest.fixture(scope="session")
def built_slides(tmp_path_factory) -> Path:
    installed = build_slides.installed_matches_lock(build_slides.SOURCES)
    if shutil.which("npm") is None and not installed:
        pytest.fail("npm not found: install Node.js and npm (apt-get install npm)")
    out = tmp_path_factory.mktemp("slides")
    build_slides.build(out)
    return out


def test_build_writes_every_deck_and_the_index(built_slides):
    index = (built_slides / "index.html").read_text()
    for source in DECKS:
        assert (built_slides / f"{source.stem}.html").exists()
        assert f'href="{source.stem}.html"' in index
    for page in built_slides.glob("*.html"):
        text = page.read_text()
        for marker in ("src=\"http", "href=\"http", "//cdn."):
            assert marker not in text, f"{page.name} refers to another host: {marker}"


# What a deck may load: its own files (and what the browser makes in memory).
LOCAL = ("file://", "data:", "blob:", "about:")

FIT = """() => {
  const {width, height} = Reveal.getConfig();
  return Reveal.getSlides().map((slide, number) => {
    Reveal.slide(number);
    const wide = Array.from(slide.querySelectorAll("pre, pre code, .katex-display"))
      .filter((el) => el.scrollWidth > el.clientWidth + 1).length;
    return {number: number + 1, wide, tall: slide.scrollHeight > height,
            width: slide.scrollWidth > width};
  }).filter((s) => s.wide || s.tall || s.width);
}"""


@pytest.mark.parametrize("source", DECKS, ids=lambda p: p.stem)
def test_deck_in_browser(source, built_slides, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    console_errors = console_errors_of(page)
    foreign: list[str] = []

    def only_files(route):
        if route.request.url.startswith(LOCAL):
            route.continue_()
        else:
            foreign.append(route.request.url)
            route.abort()

    def record(request):
        if not request.url.startswith(LOCAL) and request.url not in foreign:
            foreign.append(request.url)

    page.route("**/*", only_files)
    page.on("request", record)
    page.goto((built_slides / f"{source.stem}.html").as_uri(), wait_until="load")
    page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=30000)

    low, high = build_slides.SLIDES_PER_DECK
    total = page.evaluate("() => Reveal.getTotalSlides()")
    assert low <= total <= high, total
    assert total == len(build_slides.parse_deck(source).slides)

    # Math: every span typeset by KaTeX, without errors, and no raw TeX left.
    spans = page.locator(".reveal .slides section > :not(aside) .math").count()
    assert spans > 0, f"{source.stem} shows no math"
    unrendered = page.evaluate(
        "() => Array.from(document.querySelectorAll('.reveal .math'))"
        ".filter(el => !el.querySelector('.katex')).map(el => el.textContent)"
    )
    assert unrendered == [], unrendered
    assert page.locator(".katex-error").count() == 0
    raw = page.evaluate(
        """() => Array.from(document.querySelectorAll('.reveal .slides section'))
        .map(section => {
          const copy = section.cloneNode(true);
          copy.querySelectorAll('.katex, pre, code').forEach(el => el.remove());
          return copy.textContent;
        }).filter(text => /\\$|\\\\\\(|\\\\\\[/.test(text))"""
    )
    assert raw == [], f"raw TeX left on a slide: {raw}"

    # Figures: drawn, loaded, described.
    images = page.evaluate(
        "() => Array.from(document.images).map(i => ({src: i.src, alt: i.alt,"
        " ok: i.complete && i.naturalWidth > 0}))"
    )
    assert images, f"{source.stem} shows no figure"
    assert [i["src"] for i in images if not i["ok"]] == []
    assert [i["src"] for i in images if len(i["alt"].split()) < 4] == []

    # Code: highlighted by reveal's plugin.
    blocks = page.locator(".reveal pre code").count()
    assert page.locator(".reveal pre code.hljs").count() == blocks

    # Every slide fits reveal's frame.
    assert page.evaluate(FIT) == []

    if os.environ.get("RELPOS_SCREENSHOTS") == "1":  # for people to look at
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.evaluate("() => Reveal.slide(0)")
        page.screenshot(path=str(SHOTS / f"{source.stem}.png"))
    assert console_errors == [], console_errors
    assert foreign == [], foreign
    page.close()


def test_print_view_lays_out_every_slide(built_slides, browser):
    """reveal's ?print-pdf view (how a deck becomes a PDF) renders one page a slide."""
    source = DECKS[0]
    page = browser.new_page()
    page.route(
        "**/*",
        lambda route: route.continue_()
        if route.request.url.startswith(LOCAL)
        else route.abort(),
    )
    page.goto(
        (built_slides / f"{source.stem}.html").as_uri() + "?print-pdf",
        wait_until="load",
    )
    page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=30000)
    page.wait_for_selector(".pdf-page")
    pages = page.locator(".pdf-page").count()
    assert pages == len(build_slides.parse_deck(source).slides)
    page.close()
