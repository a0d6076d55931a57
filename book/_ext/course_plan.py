"""The course plan on the instructors' page, from ``book/course/plan.yml``.

``.. course-plan:: PART`` renders one part of the plan as plain docutils nodes
(sections, tables, lists, paragraphs), so the page builds for the site and for
Sphinx's LaTeX builder alike. The parts: ``overview`` (one table, a row per
session), ``prerequisites``, ``sessions`` (a section per session: reading, the
timed outline, the live demo, lab and homework, discussion, readings, slides),
``project`` (the final project, its milestones and its rubric),
``written-answers`` (the rubric for prose answers), ``variants`` (shorter formats)
and ``assessment`` (due dates, the late penalty and the grade weights).

In the students' edition of the site (book/_ext/editions.py) the discussion
questions come without their good answers.

Chapters are named by number in the plan; their titles and reading times come
from the notebooks ``book/NN_*.ipynb``: the words of their Markdown cells at
:data:`WORDS_PER_MINUTE`. Text fields of the plan are MyST inline Markdown.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import yaml
from docutils import nodes
from sphinx.util.docutils import SphinxDirective

from editions import students

WORDS_PER_MINUTE = 200
BOOK = Path(__file__).resolve().parent.parent
PLAN = BOOK / "course" / "plan.yml"
PARTS = (
    "overview",
    "prerequisites",
    "sessions",
    "project",
    "written-answers",
    "variants",
    "assessment",
)
KINDS = {
    "lecture": "Lecture",
    "demo": "Live demo",
    "lab": "Lab",
    "discussion": "Discussion",
    "project": "Final project",
}
WORD = re.compile(r"\S*\w\S*")
LABEL = re.compile(r"^ch(?P<chapter>\d+)-ex(?P<number>\d+)$")


def reading_minutes(words: int, words_per_minute: int = WORDS_PER_MINUTE) -> int:
    """Minutes to read ``words`` words at ``words_per_minute``, rounded up."""
    if not isinstance(words, int) or isinstance(words, bool) or words < 0:
        raise ValueError(f"words must be a non-negative int, got {words!r}")
    if not isinstance(words_per_minute, int) or words_per_minute <= 0:
        raise ValueError(
            f"words_per_minute must be a positive int, got {words_per_minute!r}"
        )
    return math.ceil(words / words_per_minute)


def markdown_words(notebook: Path) -> int:
    """The number of words in a notebook's Markdown cells: the whitespace-separated
    pieces with a letter or a digit in them (a bare ``#`` or ``-`` is no word)."""
    cells = json.loads(Path(notebook).read_text())["cells"]
    return sum(
        len(WORD.findall("".join(cell["source"])))
        for cell in cells
        if cell["cell_type"] == "markdown"
    )


def chapter_files(book: Path = BOOK) -> dict[int, Path]:
    """Each numbered chapter's notebook, by chapter number (``book/NN_slug.ipynb``)."""
    found: dict[int, Path] = {}
    for path in sorted(Path(book).glob("[0-9][0-9]_*.ipynb")):
        number = int(path.name[:2])
        if number in found:
            raise ValueError(f"two notebooks for chapter {number}: {path.name}")
        found[number] = path
    return found


def chapter_title(notebook: Path) -> str:
    """The chapter's title: the first level-one heading of its notebook."""
    for cell in json.loads(Path(notebook).read_text())["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        for line in "".join(cell["source"]).splitlines():
            if line.startswith("# "):
                return line[2:].strip()
    raise ValueError(f"{Path(notebook).name} has no level-one heading")


def load_plan(path: Path = PLAN) -> dict[str, Any]:
    """The plan as read from its YAML file."""
    plan = yaml.safe_load(Path(path).read_text())
    if not isinstance(plan, dict) or "sessions" not in plan:
        raise ValueError(f"{path} holds no course plan (a mapping with 'sessions')")
    return plan


def exercise_number(label: str) -> str:
    """``ch4-ex2`` -> ``4.2``, as the book numbers its exercises."""
    match = LABEL.match(label)
    if match is None:
        raise ValueError(f"label must look like 'chN-exM', got {label!r}")
    return f"{match['chapter']}.{match['number']}"


def exercise_name(label: str) -> str:
    """``ch4-ex2`` -> ``Exercise 4.2``."""
    return f"Exercise {exercise_number(label)}"


def clock(minute: int) -> str:
    """Minutes into a session as ``h:mm``."""
    return f"{minute // 60}:{minute % 60:02d}"


class CoursePlan(SphinxDirective):
    """``.. course-plan:: PART``: one part of ``book/course/plan.yml``."""

    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        part = self.arguments[0]
        if part not in PARTS:
            raise self.error(f"course-plan: PART must be one of {PARTS}, got {part!r}")
        self.env.note_dependency(str(PLAN))
        self.plan = load_plan()
        self.chapters = chapter_files()
        for path in self.chapters.values():
            self.env.note_dependency(str(path))
        render = getattr(self, "render_" + part.replace("-", "_"))
        return render()

    # -- building blocks ----------------------------------------------------------

    def inline(self, text: str) -> list[nodes.Node]:
        children, messages = self.state.inline_text(str(text).strip(), self.lineno)
        return children + messages

    def para(self, text: str) -> nodes.paragraph:
        paragraph = nodes.paragraph()
        paragraph += self.inline(text)
        return paragraph

    def bullets(self, items: list[Any]) -> nodes.bullet_list:
        found = nodes.bullet_list()
        for item in items:
            entry = nodes.list_item()
            entry += item if isinstance(item, nodes.Node) else self.para(item)
            found += entry
        return found

    def table(
        self,
        header: list[str],
        rows: list[list[Any]],
        widths: list[int] | None = None,
    ) -> nodes.table:
        table = nodes.table()
        if widths is not None:
            # proportional column widths, honoured by the HTML and LaTeX writers
            table["classes"].append("colwidths-given")
        group = nodes.tgroup(cols=len(header))
        table += group
        for width in widths or [1] * len(header):
            group += nodes.colspec(colwidth=width)
        head, body = nodes.thead(), nodes.tbody()
        group += head
        group += body
        for cells, into in [(header, head)] + [(row, body) for row in rows]:
            row = nodes.row()
            for cell in cells:
                entry = nodes.entry()
                entry += cell if isinstance(cell, nodes.Node) else self.para(str(cell))
                row += entry
            into += row
        return table

    def section(self, title: str, slug: str) -> nodes.section:
        section = nodes.section(
            ids=[nodes.make_id(slug)], names=[nodes.fully_normalize_name(title)]
        )
        heading = nodes.title()
        heading += self.inline(title)
        section += heading
        self.state.document.note_implicit_target(section, section)
        return section

    def rubric(self, title: str) -> nodes.rubric:
        return nodes.rubric(text=title)

    def chapter_link(self, number: int) -> str:
        if number not in self.chapters:
            raise self.error(f"course-plan: no notebook for chapter {number}")
        path = self.chapters[number]
        return f"[{number}. {chapter_title(path)}]({path.name})"

    def chapter_minutes(self, number: int) -> int:
        return reading_minutes(markdown_words(self.chapters[number]))

    def exercise(self, label: str) -> str:
        return f"{{ref}}`{exercise_name(label)} <{label}>`"

    def chapter_numbers(self, numbers: list[int]) -> str:
        if len(numbers) == 1:
            return f"chapter {numbers[0]}"
        first = ", ".join(str(n) for n in numbers[:-1])
        return f"chapters {first} and {numbers[-1]}"

    # -- the parts ----------------------------------------------------------------

    def render_overview(self) -> list[nodes.Node]:
        rows = []
        for session in self.plan["sessions"]:
            chapters = self.bullets([self.chapter_link(n) for n in session["chapters"]])
            minutes = sum(self.chapter_minutes(n) for n in session["reading"])
            lab = [e["label"] for e in session["exercises"] if e["as"] == "lab"]
            home = [e["label"] for e in session["exercises"] if e["as"] == "homework"]
            rows.append(
                [
                    f"{session['number']}. {session['title']}",
                    chapters,
                    f"{minutes} min",
                    ", ".join(exercise_number(label) for label in lab),
                    ", ".join(exercise_number(label) for label in home),
                ]
            )
        form = self.plan["format"]
        return [
            self.para(form["audience"]),
            self.table(
                ["session", "chapters", "reading before", "lab", "homework"], rows
            ),
            self.para(
                "Reading times are computed from each chapter's text at "
                f"{WORDS_PER_MINUTE} words a minute (code and outputs not counted). "
                + form["setup"]
            ),
        ]

    def render_prerequisites(self) -> list[nodes.Node]:
        items = []
        for need in self.plan["prerequisites"]:
            item = nodes.container()
            item += self.para(f"**{need['topic']}**: {need['level']}.")
            item += self.para(f"Where to learn it: {need['pointer']}")
            items.append(item)
        return [self.bullets(items)]

    def render_sessions(self) -> list[nodes.Node]:
        return [self.session(session) for session in self.plan["sessions"]]

    def session(self, session: dict[str, Any]) -> nodes.section:
        number = session["number"]
        title = f"Session {number}: {session['title']}"
        section = self.section(title, f"session-{number}")
        chapters = ", ".join(self.chapter_link(n) for n in session["chapters"])
        section += self.para(f"**Chapters**: {chapters}.")
        section += self.para(f"**Goal**: {session['goal']}")

        reading = [
            f"{self.chapter_link(n)}: {self.chapter_minutes(n)} min"
            for n in session["reading"]
        ]
        total = sum(self.chapter_minutes(n) for n in session["reading"])
        section += self.rubric(f"Before the session: reading (about {total} min)")
        section += self.bullets(reading)

        minutes = sum(block["minutes"] for block in session["blocks"])
        section += self.rubric(f"Outline ({minutes} min)")
        rows, start = [], 0
        for block in session["blocks"]:
            end = start + block["minutes"]
            rows.append(
                [
                    f"{clock(start)}\u2013{clock(end)}",
                    str(block["minutes"]),
                    KINDS[block["kind"]],
                    block["topic"],
                ]
            )
            start = end
        section += self.table(["time", "min", "block", "what"], rows, [13, 6, 13, 68])

        section += self.rubric("Live demo")
        section += self.bullets(
            [
                f"{self.chapter_link(demo['chapter'])}, *{demo['section']}*: "
                f"{demo['run']}"
                for demo in session["demo"]
            ]
        )

        for kind, title in (
            ("lab", "Lab"),
            ("homework", f"Homework ({homework_due(self.plan, number)})"),
        ):
            planned = [e for e in session["exercises"] if e["as"] == kind]
            if not planned:
                continue
            section += self.rubric(title)
            section += self.bullets(
                [
                    f"{self.exercise(e['label'])} (uses "
                    f"{self.chapter_numbers(e['uses'])})"
                    for e in planned
                ]
            )

        section += self.rubric("Discussion")
        questions = nodes.enumerated_list()
        for item in session["discussion"]:
            entry = nodes.list_item()
            entry += self.para(item["question"])
            if not students():
                entry += self.para(f"*A good answer*: {item['good_answer']}")
            questions += entry
        section += questions

        section += self.rubric("Readings")
        section += self.bullets([f"{{cite:t}}`{key}`" for key in session["readings"]])
        section += self.para(f"**Slides**: `{session['slides']}`.")
        return section

    def render_project(self) -> list[nodes.Node]:
        project = self.plan["project"]
        found: list[nodes.Node] = [
            self.para(
                f"**{project['title']}**, launched in session {project['launched']}, "
                f"due {project['weeks']} weeks later; {project['team']}. "
                f"{project['summary']}"
            ),
            self.rubric("What to hand in"),
            self.bullets(project["deliverables"]),
            self.rubric("Milestones"),
            self.table(
                ["due", "milestone", "what to hand in"],
                [
                    [f"week {m['week']}", m["name"], m["hand_in"]]
                    for m in project["milestones"]
                ],
                [14, 14, 72],
            ),
            self.para(
                f"The weeks count from session {project['launched']}. Every milestone "
                f"starts from the template, `{project['template']}` (below). "
                f"{project['prediction_rule']} "
                + late_rule(self.plan, "milestone", "the project's 100 points")
            ),
        ]
        rubric = project["rubric"]
        total = sum(criterion["points"][0] for criterion in rubric["criteria"])
        rows = [
            [criterion["criterion"]]
            + [
                f"({points} points) {text}"
                for points, text in zip(criterion["points"], criterion["levels"])
            ]
            for criterion in rubric["criteria"]
        ]
        found.append(self.rubric(f"Rubric ({total} points)"))
        widths = [16] + [28] * len(rubric["levels"])
        found.append(self.table(["criterion"] + rubric["levels"], rows, widths))
        return found

    def render_written_answers(self) -> list[nodes.Node]:
        written = self.plan["written_answers"]
        levels = [
            [str(level["points"]), level["description"]] for level in written["levels"]
        ]
        applies = [
            f"{self.exercise(e['label'])}: {e['asks']}" for e in written["applies_to"]
        ]
        return [
            self.para(written["summary"]),
            self.table(["points", "the written answer is"], levels, [12, 88]),
            self.rubric("The exercises it applies to"),
            self.bullets(applies),
        ]

    def render_variants(self) -> list[nodes.Node]:
        found: list[nodes.Node] = []
        for variant in self.plan["variants"]:
            found.append(self.para(f"**{variant['name']}**. {variant['summary']}"))
            rows = []
            for number, session in enumerate(variant["sessions"], start=1):
                minutes = sum(self.chapter_minutes(n) for n in session["reading"])
                reading = self.chapter_numbers(session["reading"])
                outline = "; ".join(
                    f"{KINDS[block['kind']].lower()} {block['minutes']} min "
                    f"({block['topic']})"
                    for block in session["blocks"]
                )
                total = sum(block["minutes"] for block in session["blocks"])
                lab = ", ".join(self.exercise(label) for label in session["lab"])
                rows.append(
                    [
                        f"{number}. {session['title']}",
                        f"{reading} (about {minutes} min)",
                        f"{outline}: {total} min",
                        lab,
                    ]
                )
            found.append(
                self.table(
                    ["session", "reading before", "outline", "lab"],
                    rows,
                    [18, 18, 46, 18],
                )
            )
        return found

    def render_assessment(self) -> list[nodes.Node]:
        assessment = self.plan["assessment"]
        sets, project = assessment["problem_sets"], assessment["project"]
        weights = [
            [
                "problem sets",
                f"{sets['weight']}%",
                "one per chapter, each counting equally: its score (after any late "
                "penalty) as a percentage of its points",
            ],
            [
                "final project",
                f"{project['weight']}%",
                "the rubric's 100 points, less the penalties of late milestones",
            ],
        ]
        last = max(session["number"] for session in self.plan["sessions"])
        return [
            self.table(["part", "weight", "how it is scored"], weights, [18, 10, 72]),
            self.para(
                f"**Due dates.** A chapter's problem set is due {sets['due_days']} "
                "days after the start of the session that teaches it (the first "
                "session's date and time are given when the course is built): the "
                f"homework of session {last} too, although no session follows it. "
                + late_rule(self.plan, "problem set", "its points")
            ),
        ]


def homework_due(plan: dict[str, Any], session: int) -> str:
    """When a session's homework is due, in words."""
    assessment = plan["assessment"]
    days = assessment["problem_sets"]["due_days"]
    last = max(s["number"] for s in plan["sessions"])
    if session < last and days == assessment["session_interval_days"]:
        return f"due at the start of session {session + 1}"
    return f"due {days} days after this session"


def late_rule(plan: dict[str, Any], what: str, points: str) -> str:
    """The late penalty in words: ``what`` loses a share of ``points``."""
    late = plan["assessment"]["late"]
    return (
        f"**Late work.** A {what} handed in late loses {late['percent_per_day']}% of "
        f"{points} per day late or part of a day, at most {late['max_percent']}%."
    )


def setup(app):
    app.add_directive("course-plan", CoursePlan)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
