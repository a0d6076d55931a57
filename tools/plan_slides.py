"""The slides a deck takes from the course plan (book/course/plan.yml).

A deck's source (book/slides/session-N.md) holds its teaching slides, written by
hand, and one placeholder slide for each part of the session the plan states: a
slide whose only line is ``<!-- plan: PART -->``. tools/build_slides.py puts in its
place the slide this module writes from the plan, with its speaker notes:

- ``title``: the session's title, its number and its chapters; notes: the goal
  and the reading before it, in minutes;
- ``agenda``: the timed outline, block by block; notes: each block's topic;
- ``demo``: one per demo block, in order: the sections it runs and its minutes;
  notes: what to run and what to ask;
- ``lab``: the lab exercises with their titles and the lab's minutes; notes: the
  chapters each uses;
- ``homework``: the other exercises and when they are due; notes: the next
  session and its reading;
- ``discussion``: the questions and their minutes; notes: each question's good
  answer;
- ``project``: in the session that launches it, the final project, when it is due
  and its rubric's points; notes: what to hand in.

Nothing here is typed twice: titles, reading minutes and exercise names come from
the notebooks as on the instructors' page (book/_ext/course_plan.py), the rest from
the plan, so a deck cannot state a lab, a minute or a question the plan does not.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import course_plan  # noqa: E402

PLACEHOLDER = re.compile(r"^<!--\s*plan:\s*(?P<part>[\w-]+)\s*-->$")
PARTS = ("title", "agenda", "demo", "lab", "homework", "discussion", "project")
# A role of MyST (``{cite:t}`key```) has no meaning on a slide.
ROLE = re.compile(r"\{[\w:-]+\}`")
CHAPTER = re.compile(r"\bchapters? (\d+)")

Slide = tuple[str, str]  # (Markdown, speaker notes)


def expected_parts(session: dict[str, Any]) -> list[str]:
    """The placeholders a session's deck holds, each as often as the plan needs it."""
    kinds = [block["kind"] for block in session["blocks"]]
    parts = ["title", "agenda"] + ["demo"] * kinds.count("demo") + ["lab"]
    if any(e["as"] == "homework" for e in session["exercises"]):
        parts.append("homework")
    parts.append("discussion")
    if "project" in kinds:
        parts.append("project")
    return parts


def plain(text: str) -> str:
    """A text of the plan as one line of slide Markdown (refused if it has a role)."""
    text = " ".join(str(text).split())
    if ROLE.search(text):
        raise ValueError(f"a MyST role cannot go on a slide: {text[:80]!r}")
    return text


class SessionSlides:
    """The plan's slides of one session; ``slide(part, index)`` writes one."""

    def __init__(self, plan: dict[str, Any], number: int, book: Path | None = None):
        sessions = {session["number"]: session for session in plan["sessions"]}
        if number not in sessions:
            raise ValueError(f"number must be a session of the plan, got {number!r}")
        self.plan, self.number, self.session = plan, number, sessions[number]
        self.chapters = course_plan.chapter_files(book or course_plan.BOOK)
        self.titles: dict[str, str] = {}
        for path in self.chapters.values():
            self.titles.update(course_plan.exercise_titles(path))

    def slide(self, part: str, index: int = 0) -> Slide:
        """Placeholder ``part`` (its ``index``-th use, for the demos) as a slide."""
        if part not in PARTS:
            raise ValueError(f"part must be one of {PARTS}, got {part!r}")
        if part == "demo":
            return self.demo(index)
        return getattr(self, part)()

    # -- what the parts share -----------------------------------------------------

    def minutes(self, kind: str) -> int:
        return sum(b["minutes"] for b in self.session["blocks"] if b["kind"] == kind)

    def exercises(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.session["exercises"] if e["as"] == kind]

    def exercise_line(self, label: str) -> str:
        return f"- {course_plan.exercise_number(label)} {plain(self.titles[label])}"

    def reading(self, session: dict[str, Any]) -> str:
        numbers = session["reading"]
        minutes = sum(
            course_plan.reading_minutes(course_plan.markdown_words(self.chapters[n]))
            for n in numbers
        )
        return f"{course_plan.chapter_numbers(numbers)}, about {minutes} min"

    # -- the parts ----------------------------------------------------------------

    def title(self) -> Slide:
        session = self.session
        total = self.plan["format"]["sessions"]
        chapters = " · ".join(
            f"{n}. {course_plan.chapter_title(self.chapters[n])}"
            for n in session["chapters"]
        )
        body = (
            f"# {plain(session['title'])}\n\n"
            f"Session {self.number} of {total}: {chapters}"
        )
        notes = (
            f"Goal: {plain(session['goal'])}\n\n"
            f"Read before this session: {self.reading(session)}."
        )
        return body, notes

    def agenda(self) -> Slide:
        rows, notes, start = [], [], 0
        for block in self.session["blocks"]:
            end = start + block["minutes"]
            when = f"{course_plan.clock(start)}\u2013{course_plan.clock(end)}"
            kind = course_plan.KINDS[block["kind"]]
            what = self.what(block)
            rows.append(f"| {when} | {block['minutes']} | {kind} | {what} |")
            notes.append(f"- {when}, {kind.lower()}: {plain(self.topic(block))}")
            start = end
        body = "\n".join(
            [
                f"## Today: {start} minutes",
                "",
                "| time | min | block | what |",
                "| --- | ---: | --- | --- |",
                *rows,
                "",
                f"Read before it: {self.reading(self.session)}.",
            ]
        )
        return body, "\n".join(notes)

    def topic(self, block: dict[str, Any]) -> str:
        """What a block does, for the notes: a lecture's topic, a demo's sections,
        the exercises, questions or project of the rest."""
        if block["kind"] == "lecture":
            return block["topic"]
        if block["kind"] == "demo":
            return "; ".join(
                f"chapter {demo['chapter']}, {demo['section']}"
                for demo in block["demos"]
            )
        return self.what(block)

    def what(self, block: dict[str, Any]) -> str:
        """A block's line on the agenda: its chapters, exercises or questions."""
        kind = block["kind"]
        if kind == "lecture":
            named = [int(n) for n in CHAPTER.findall(block["topic"])]
            if not named:
                return plain(block["topic"])
            return course_plan.chapter_numbers(named)
        if kind == "demo":
            named = list(dict.fromkeys(demo["chapter"] for demo in block["demos"]))
            return course_plan.chapter_numbers(named)
        if kind == "lab":
            labels = [e["label"] for e in self.exercises("lab")]
            return "exercises " + ", ".join(map(course_plan.exercise_number, labels))
        if kind == "discussion":
            count = len(self.session["discussion"])
            return f"{course_plan.NUMBER_WORDS[count]} questions"
        return "the final project"

    def demo(self, index: int) -> Slide:
        blocks = [b for b in self.session["blocks"] if b["kind"] == "demo"]
        if not 0 <= index < len(blocks):
            raise ValueError(
                f"session {self.number} has {len(blocks)} demo blocks, not {index + 1}"
            )
        block = blocks[index]
        lines, notes = [], []
        for demo in block["demos"]:
            notebook = self.chapters[demo["chapter"]].name
            section = plain(demo["section"])
            lines.append(
                f"- Chapter {demo['chapter']}, *{section}*  \n  `{notebook}`"
            )
            notes.append(f"Chapter {demo['chapter']}, {section}: {plain(demo['run'])}")
        body = f"## Live demo: {block['minutes']} minutes\n\n" + "\n".join(lines)
        return body, "\n\n".join(notes)

    def lab(self) -> Slide:
        planned = self.exercises("lab")
        body = "\n".join(
            [
                f"## Lab: {self.minutes('lab')} minutes",
                "",
                *[self.exercise_line(e["label"]) for e in planned],
                "",
                "Each chapter's *Exercises* section runs on its own; `check(...)` says "
                "correct, or what to look at.",
            ]
        )
        uses = [
            f"- {course_plan.exercise_number(e['label'])} uses {self.uses(e['uses'])}"
            for e in planned
        ]
        return body, "\n".join(["What each exercise uses:", "", *uses])

    def uses(self, chapters: list[int]) -> str:
        """Chapters of this session by number, the others by their session (a deck
        names only its own chapters)."""
        teaches = {n: s["number"] for s in self.plan["sessions"] for n in s["chapters"]}
        own = [n for n in chapters if teaches[n] == self.number]
        earlier = sorted({teaches[n] for n in chapters} - {self.number})
        named = [course_plan.chapter_numbers(own)] if own else []
        named += [f"session {number}" for number in earlier]
        return " and ".join(named)

    def homework(self) -> Slide:
        due = course_plan.homework_due(self.plan, self.number)
        body = "\n".join(
            [
                "## Homework",
                "",
                f"Due {due}:",
                "",
                *[self.exercise_line(e["label"]) for e in self.exercises("homework")],
            ]
        )
        later = [s for s in self.plan["sessions"] if s["number"] == self.number + 1]
        if later:  # named by its session: a deck names only its own chapters
            notes = f"Next: session {later[0]['number']}, {plain(later[0]['title'])}."
        else:
            notes = "The last session: its homework and the project end the course."
        return body, notes

    def discussion(self) -> Slide:
        items = self.session["discussion"]
        body = f"## Discussion: {self.minutes('discussion')} minutes\n\n" + "\n".join(
            f"{n}. {plain(item['question'])}" for n, item in enumerate(items, 1)
        )
        notes = "\n\n".join(
            f"{n}. A good answer: {plain(item['good_answer'])}"
            for n, item in enumerate(items, 1)
        )
        return body, notes

    def project(self) -> Slide:
        project = self.plan["project"]
        if project["launched"] != self.number:
            raise ValueError(
                f"the project is launched in session {project['launched']}, "
                f"not {self.number}"
            )
        criteria = project["rubric"]["criteria"]
        rows = [f"| {plain(c['criterion'])} | {c['points'][0]} |" for c in criteria]
        total = sum(c["points"][0] for c in criteria)
        body = "\n".join(
            [
                f"## The final project: {self.minutes('project')} minutes",
                "",
                f"**{plain(project['title'])}**: {plain(project['team'])}, due "
                f"{project['days']} days after this session.",
                "",
                "| criterion | points |",
                "| --- | ---: |",
                *rows,
                f"| total | {total} |",
            ]
        )
        notes = "\n".join(
            [plain(project["summary"]), "", "What to hand in:", ""]
            + [f"- {plain(item)}" for item in project["deliverables"]]
        )
        return body, notes
