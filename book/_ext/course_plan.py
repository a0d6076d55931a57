"""The course plan on the instructors' page, from ``book/course/plan.yml``.

``.. course-plan:: PART`` renders one part of the plan as plain docutils nodes
(sections, tables, lists, paragraphs), so the page builds for the site and for
Sphinx's LaTeX builder alike. The parts: ``overview`` (one table, a row per
session), ``prerequisites``, ``sessions`` (a section per session: reading, the
timed outline, the live demo, lab and homework, discussion, readings, slides),
``project`` (the final project, its milestones and its rubric),
``written-answers`` (the rubric for prose answers), ``grading`` (the points of the
graded assignments, exercise by exercise), ``variants`` (shorter formats) and
``assessment`` (due dates, the late penalty and the grade weights).

In the students' edition of the site (book/_ext/editions.py) the discussion
questions come without their good answers.

Chapters are named by number in the plan; their titles and reading times come
from the notebooks ``book/NN_*.ipynb``: the words of their Markdown cells at
:data:`WORDS_PER_MINUTE`. Text fields of the plan are MyST inline Markdown.

The functions above the directive read the plan for everything else that follows
it: the slide decks (tools/build_slides.py) and the graded assignments
(tools/assignments.py, which takes its points from :func:`exercise_points` and
:func:`written_points`).
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime, timedelta
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
    "grading",
    "variants",
    "assessment",
)
# The parts that pages other than the instructors' render: the students' syllabus
# (book/syllabus.md) and the map of learning objectives (book/objectives.md).
PAGE_PARTS = ("syllabus", "objectives")
OBJECTIVES = BOOK / "course" / "objectives.yml"
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


EXERCISE = re.compile(
    r"```\{exercise\}[ \t]*(?P<title>[^\n]*)\n:label: (?P<label>ch\d+-ex\d+)"
)


def exercise_titles(notebook: Path) -> dict[str, str]:
    """Each exercise of a chapter, by label, with the title its directive gives."""
    return {
        match["label"]: match["title"].strip()
        for cell in json.loads(Path(notebook).read_text())["cells"]
        if cell["cell_type"] == "markdown"
        for match in EXERCISE.finditer("".join(cell["source"]))
    }


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


def exercise_order(label: str) -> tuple[int, int]:
    """``ch10-ex2`` -> ``(10, 2)``: a key that sorts exercises as the book does."""
    chapter, number = exercise_number(label).split(".")
    return int(chapter), int(number)


def exercise_name(label: str) -> str:
    """``ch4-ex2`` -> ``Exercise 4.2``."""
    return f"Exercise {exercise_number(label)}"


def chapter_numbers(numbers: list[int]) -> str:
    """``[4]`` -> ``chapter 4``, ``[1, 2, 3]`` -> ``chapters 1, 2 and 3``."""
    if len(numbers) == 1:
        return f"chapter {numbers[0]}"
    first = ", ".join(str(n) for n in numbers[:-1])
    return f"chapters {first} and {numbers[-1]}"


def clock(minute: int) -> str:
    """Minutes into a session as ``h:mm``."""
    return f"{minute // 60}:{minute % 60:02d}"


NUMBER_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight")


def plural(count: int, unit: str) -> str:
    """``(1, "point")`` -> ``1 point``, ``(4, "point")`` -> ``4 points``."""
    return f"{count} {unit}" if count == 1 else f"{count} {unit}s"


def weeks(count: int) -> str:
    """``1`` -> ``one week``, ``3`` -> ``three weeks``."""
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ValueError(f"count must be a positive int of weeks, got {count!r}")
    word = NUMBER_WORDS[count] if count < len(NUMBER_WORDS) else str(count)
    return f"{word} week" if count == 1 else f"{word} weeks"


def session_demos(session: dict[str, Any]) -> list[dict[str, Any]]:
    """The demos of a session, block by block: each ``{chapter, section, run}``."""
    return [
        demo
        for block in session["blocks"]
        if block["kind"] == "demo"
        for demo in block["demos"]
    ]


def session_start_days(plan: dict[str, Any], number: int) -> int:
    """Days from the first session's start to session ``number``'s."""
    return (number - 1) * plan["assessment"]["session_interval_days"]


def problem_set_days(plan: dict[str, Any]) -> dict[int, int]:
    """When each chapter's problem set is due, in days after the first session's
    start, by the plan's one rule: ``homework_due_weeks`` after the start of the
    session that teaches it at the earliest, in the book's order, and at most
    ``problem_sets_per_week`` due in one week of the term (week ``w`` is days
    ``7w`` to ``7w + 6``); a set that would make one more moves a week later."""
    form = plan["format"]
    cap = form["problem_sets_per_week"]
    if not isinstance(cap, int) or isinstance(cap, bool) or cap < 1:
        raise ValueError(f"problem_sets_per_week must be an int >= 1, got {cap!r}")
    after = 7 * form["homework_due_weeks"]
    taught = sorted(
        (chapter, session["number"])
        for session in plan["sessions"]
        for chapter in session["chapters"]
    )
    due: dict[int, int] = {}
    for chapter, number in taught:
        day = session_start_days(plan, number) + after
        while sum(1 for d in due.values() if d // 7 == day // 7) >= cap:
            day += 7
        due[chapter] = day
    return due


def due_after(plan: dict[str, Any], number: int, day: int) -> str:
    """Day ``day`` of the term in words, counted from session ``number``'s start:
    ``one week after session 1, at the start of session 2``."""
    start = session_start_days(plan, number)
    if day <= start or (day - start) % 7:
        raise ValueError(f"day must fall whole weeks after session {number}'s start")
    text = f"{weeks((day - start) // 7)} after session {number}"
    starts = {session_start_days(plan, s["number"]): s for s in plan["sessions"]}
    if day in starts:
        text += f", at the start of session {starts[day]['number']}"
    return text


def homework_due(plan: dict[str, Any], number: int) -> str:
    """When session ``number``'s homework (its chapters' problem sets) is due, from
    :func:`problem_set_days`; chapter by chapter where they differ."""
    sessions = {session["number"]: session for session in plan["sessions"]}
    if number not in sessions:
        raise ValueError(f"number must be a session of the plan, got {number!r}")
    days = problem_set_days(plan)
    groups: dict[int, list[int]] = {}
    for chapter in sessions[number]["chapters"]:
        groups.setdefault(days[chapter], []).append(chapter)
    if len(groups) == 1:
        return due_after(plan, number, next(iter(groups)))
    return "; ".join(
        f"for {chapter_numbers(chapters)}, {due_after(plan, number, day)}"
        for day, chapters in sorted(groups.items())
    )


def milestone_days(plan: dict[str, Any]) -> dict[str, int]:
    """Each project milestone's due day, in days after the first session's start."""
    project = plan["project"]
    launch = session_start_days(plan, project["launched"])
    return {m["name"]: launch + m["days"] for m in project["milestones"]}


def marking_load(plan: dict[str, Any], number: int) -> tuple[int, int]:
    """Session ``number``'s hand-marked written answers for the whole class and the
    minutes they take: (answers x ``students``, that x ``minutes_each``)."""
    sessions = {session["number"]: session for session in plan["sessions"]}
    if number not in sessions:
        raise ValueError(f"number must be a session of the plan, got {number!r}")
    asks = written_asks(plan)
    count = sum(1 for e in sessions[number]["exercises"] if e["label"] in asks)
    answers = count * plan["format"]["students"]
    return answers, answers * plan["written_answers"]["minutes_each"]


def project_marking(plan: dict[str, Any]) -> tuple[int, int]:
    """The project's marking: (teams of two for the class, minutes for them all)."""
    teams = math.ceil(plan["format"]["students"] / 2)
    return teams, teams * plan["project"]["marking_minutes"]


def hours(minutes: int) -> str:
    """``150`` -> ``2 h 30 min``; ``45`` -> ``45 min``."""
    if minutes < 60:
        return f"{minutes} min"
    whole, rest = divmod(minutes, 60)
    return f"{whole} h" + (f" {rest:02d} min" if rest else "")


def answer_points(plan: dict[str, Any]) -> dict[str, int]:
    """The points of each kind of answer a check takes (``grading`` in the plan)."""
    return {answer["kind"]: answer["points"] for answer in plan["grading"]["answers"]}


def written_points(plan: dict[str, Any]) -> int:
    """The points of a written answer: the top level of the plan's rubric."""
    return max(level["points"] for level in plan["written_answers"]["levels"])


def written_asks(plan: dict[str, Any]) -> dict[str, str]:
    """The exercises with a written answer, each with what the answer explains."""
    return {
        item["label"]: item["asks"] for item in plan["written_answers"]["applies_to"]
    }


def exercise_points(plan: dict[str, Any], label: str) -> int:
    """The points of exercise ``label``'s check: the plan's points of each answer it
    takes (relpos.book.exercises.grading says which kinds), the written answer not
    included."""
    from relpos.book.exercises.grading import grading

    points = answer_points(plan)
    kinds = grading(label).answers
    unpriced = sorted(set(kinds) - set(points))
    if unpriced:
        raise ValueError(f"plan.yml's grading gives no points for {unpriced}")
    return sum(points[kind] for kind in kinds)


def learning_objectives(notebook: Path) -> list[str]:
    """A chapter's learning objectives: the list after ``**Learning objectives**``
    in its notebook, each item as one line of Markdown."""
    for cell in json.loads(Path(notebook).read_text())["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] != "markdown" or "**Learning objectives**" not in text:
            continue
        block = text.split("**Learning objectives**", 1)[1]
        items = re.findall(r"^- (.*(?:\n  .*)*)", block, flags=re.MULTILINE)
        return [" ".join(item.split()) for item in items]
    return []


def load_objectives(path: Path = OBJECTIVES) -> dict[int, list[dict[str, Any]]]:
    """What assesses each objective, by chapter (book/course/objectives.yml)."""
    data = yaml.safe_load(Path(path).read_text())
    if not isinstance(data, dict) or not isinstance(data.get("chapters"), dict):
        raise ValueError(f"{path} holds no objectives (a mapping with 'chapters')")
    return {int(n): items for n, items in data["chapters"].items()}


ASSESSMENTS = ("exercises", "selfcheck", "discussion")


def objective_map(
    plan: dict[str, Any],
    objectives: dict[int, list[dict[str, Any]]],
    chapters: dict[int, Path],
) -> list[dict[str, Any]]:
    """Every learning objective of every chapter with what assesses it: a row
    ``{chapter, number, text, exercises, selfcheck, discussion}`` per objective.

    Raises:
        ValueError: a chapter's objectives and the map disagree (count or first
            words), or the map names an exercise, a self-check question or a
            discussion question that does not exist.
    """
    labels = {e["label"] for s in plan["sessions"] for e in s["exercises"]}
    questions = {s["number"]: len(s["discussion"]) for s in plan["sessions"]}
    rows = []
    for chapter, path in sorted(chapters.items()):
        texts, mapped = learning_objectives(path), objectives.get(chapter, [])
        if len(texts) != len(mapped):
            raise ValueError(
                f"chapter {chapter} has {len(texts)} objectives, the map {len(mapped)}"
            )
        data = BOOK / "selfcheck" / f"ch{chapter:02d}.yml"
        ids = {q["id"] for q in yaml.safe_load(data.read_text())["questions"]}
        for number, (text, item) in enumerate(zip(texts, mapped), start=1):
            if not text.startswith(item["starts"]):
                raise ValueError(
                    f"chapter {chapter}, objective {number}: starts "
                    f"{text[:40]!r}, not {item['starts']!r}"
                )
            unknown = sorted(set(item.get("exercises", [])) - labels)
            unknown += sorted(set(item.get("selfcheck", [])) - ids)
            unknown += [
                f"discussion {s}.{q}"
                for s, q in item.get("discussion", [])
                if not 1 <= q <= questions.get(s, 0)
            ]
            if unknown:
                raise ValueError(f"chapter {chapter}, objective {number}: {unknown}")
            rows.append(
                {
                    "chapter": chapter,
                    "number": number,
                    "text": text,
                    **{kind: list(item.get(kind, [])) for kind in ASSESSMENTS},
                }
            )
    return rows


def first_session(plan: dict[str, Any]) -> datetime:
    """The term's first session (the syllabus's ``first_session``), with its offset."""
    text = str(plan["syllabus"]["first_session"])
    start = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if start.tzinfo is None:
        raise ValueError(f"first_session must carry its UTC offset, got {text!r}")
    return start


def day_of_term(plan: dict[str, Any], day: int) -> str:
    """Day ``day`` of the term (0: the first session's start) as a date and time in
    the first session's time zone: ``Mon 18 Jan 2027, 10:00``."""
    when = first_session(plan) + timedelta(days=day)
    return f"{when:%a %d %b %Y, %H:%M}"


def term_calendar(plan: dict[str, Any]) -> list[tuple[int, str]]:
    """Everything dated in the term, in order: ``(day, what)`` for each session,
    each problem set's due date and each project milestone."""
    found = [
        (session_start_days(plan, s["number"]), f"session {s['number']}")
        for s in plan["sessions"]
    ]
    found += [
        (day, f"problem set {chapter} due")
        for chapter, day in problem_set_days(plan).items()
    ]
    found += [
        (day, f"project milestone due: {name}")
        for name, day in milestone_days(plan).items()
    ]
    return sorted(found, key=lambda item: (item[0], item[1].startswith("session")))


class CoursePlan(SphinxDirective):
    """``.. course-plan:: PART``: one part of ``book/course/plan.yml``."""

    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        part = self.arguments[0]
        if part not in PARTS + PAGE_PARTS:
            raise self.error(
                f"course-plan: PART must be one of {PARTS + PAGE_PARTS}, got {part!r}"
            )
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

    def block_topic(self, block: dict[str, Any]) -> str:
        """A block's topic; a demo's is the sections it runs."""
        if block["kind"] != "demo" or "demos" not in block:
            return block["topic"]
        runs = "; ".join(
            f"chapter {demo['chapter']}, *{demo['section']}*" for demo in block["demos"]
        )
        return runs[0].upper() + runs[1:]

    def chapter_numbers(self, numbers: list[int]) -> str:
        return chapter_numbers(numbers)

    # -- the parts ----------------------------------------------------------------

    def render_overview(self) -> list[nodes.Node]:
        rows = []
        for session in self.plan["sessions"]:
            chapters = self.bullets([self.chapter_link(n) for n in session["chapters"]])
            minutes = sum(self.chapter_minutes(n) for n in session["reading"])
            lab = [e["label"] for e in session["exercises"] if e["as"] == "lab"]
            home = [e["label"] for e in session["exercises"] if e["as"] == "homework"]
            answers, marking = marking_load(self.plan, session["number"])
            rows.append(
                [
                    f"{session['number']}. {session['title']}",
                    chapters,
                    f"{minutes} min",
                    ", ".join(exercise_number(label) for label in lab),
                    ", ".join(exercise_number(label) for label in home),
                    f"{answers} answers, {hours(marking)}",
                ]
            )
        form, project = self.plan["format"], self.plan["project"]
        rule = (
            "Homework, the exercises of a session not done in its lab, is due "
            f"{weeks(form['homework_due_weeks'])} after the session that sets it at "
            f"the earliest, and never more than {form['problem_sets_per_week']} "
            f"problem sets in one week; the final project is launched in session "
            f"{project['launched']} and due {project['days']} days later."
        )
        return [
            self.para(f"{form['audience']} {rule}"),
            self.table(
                [
                    "session",
                    "chapters",
                    "reading before",
                    "lab",
                    "homework",
                    "marking",
                ],
                rows,
            ),
            self.para(
                "Reading times are computed from each chapter's text at "
                f"{WORDS_PER_MINUTE} words a minute (code and outputs not counted). "
                "Marking is the session's written answers, marked by hand, for "
                f"{form['students']} students at "
                f"{self.plan['written_answers']['minutes_each']} minutes each "
                "(*Marking written answers* below). "
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
                    self.block_topic(block),
                ]
            )
            start = end
        section += self.table(["time", "min", "block", "what"], rows, [13, 6, 13, 68])

        section += self.rubric("Live demo")
        section += self.bullets(
            [
                f"{self.chapter_link(demo['chapter'])}, *{demo['section']}*: "
                f"{demo['run']}"
                for demo in session_demos(session)
            ]
        )

        for kind, title in (
            ("lab", "Lab"),
            ("homework", f"Homework (due {homework_due(self.plan, number)})"),
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

        answers, marking = marking_load(self.plan, number)
        section += self.rubric("Marking")
        section += self.para(
            f"{answers} written answers to mark by hand "
            f"({answers // self.plan['format']['students']} per student, "
            f"{self.plan['format']['students']} students, "
            f"{self.plan['written_answers']['minutes_each']} minutes each): about "
            f"{hours(marking)}."
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
                f"due {project['days']} days later; {project['team']}. "
                f"{project['summary']}"
            ),
            self.rubric("What to hand in"),
            self.bullets(project["deliverables"]),
            self.rubric("Milestones"),
            self.table(
                ["due", "milestone", "what to hand in"],
                [
                    [f"day {m['days']}", m["name"], m["hand_in"]]
                    for m in project["milestones"]
                ],
                [14, 14, 72],
            ),
            self.para(
                f"The days count from the start of session {project['launched']}: "
                "each milestone falls mid-week, apart from the problem sets' "
                "deadlines, which fall at a session's start. Every milestone "
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
        top = written_points(self.plan)
        return [
            self.para(
                f"{written['summary']} A written answer is worth "
                f"{plural(top, 'point')}:"
            ),
            self.table(["points", "the written answer is"], levels, [12, 88]),
            self.rubric("The exercises it applies to"),
            self.bullets(applies),
            self.rubric("The marking load"),
            *self.marking_table(),
        ]

    def marking_table(self) -> list[nodes.Node]:
        """Per session: its written answers, for the class, and the hours."""
        form, each = self.plan["format"], self.plan["written_answers"]["minutes_each"]
        rows, total = [], 0
        for session in self.plan["sessions"]:
            answers, minutes = marking_load(self.plan, session["number"])
            total += minutes
            rows.append(
                [
                    f"session {session['number']}",
                    str(answers // form["students"]),
                    str(answers),
                    hours(minutes),
                ]
            )
        teams, project = project_marking(self.plan)
        header = ["session", "per student", f"{form['students']} students", "marking"]
        return [
            self.table(header, rows, [25, 25, 25, 25]),
            self.para(
                f"At {each} minutes an answer, {hours(total)} of written answers over "
                f"the term; the project adds {hours(project)} ({teams} teams of two, "
                f"{self.plan['project']['marking_minutes']} minutes each, the three "
                "milestones marked together)."
            ),
        ]

    def render_grading(self) -> list[nodes.Node]:
        from relpos.book.exercises.grading import GRADING

        points = answer_points(self.plan)
        top = written_points(self.plan)
        rule = [
            f"**{plural(points[a['kind']], 'point')}** for each answer that is "
            f"{a['means']};"
            for a in self.plan["grading"]["answers"]
        ]
        rule.append(
            f"**{plural(top, 'point')}** for each written answer, graded by hand with "
            "the rubric under *Marking written answers*."
        )
        asks = written_asks(self.plan)
        rows = [
            [
                exercise_number(label),
                GRADING[label].described,
                str(exercise_points(self.plan, label)),
                "hidden" if GRADING[label].hidden else "visible",
                str(top) if label in asks else "none",
            ]
            for label in self.planned_labels()
        ]
        header = ["exercise", "the check takes", "points", "test", "written answer"]
        return [
            self.para("One rule for every exercise, per answer its check takes:"),
            self.bullets(rule),
            self.table(header, rows, [12, 40, 12, 14, 22]),
        ]

    def planned_labels(self) -> list[str]:
        """Every planned exercise, in the book's order."""
        labels = [e["label"] for s in self.plan["sessions"] for e in s["exercises"]]
        return sorted(labels, key=exercise_order)

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

    def render_syllabus(self) -> list[nodes.Node]:
        """The students' syllabus: the sessions' dates, what falls due when, the
        grading weights and the policies."""
        self.env.note_dependency(str(OBJECTIVES))
        plan, form = self.plan, self.plan["format"]
        sessions = []
        for s in plan["sessions"]:
            minutes = sum(self.chapter_minutes(n) for n in s["reading"])
            chapters = self.bullets([self.chapter_link(n) for n in s["chapters"]])
            when = day_of_term(plan, session_start_days(plan, s["number"]))
            sessions.append([f"{s['number']}. {s['title']}", when, chapters, minutes])
        due = [
            [day_of_term(plan, day), what[0].upper() + what[1:]]
            for day, what in term_calendar(plan)
            if not what.startswith("session")
        ]
        assessment = plan["assessment"]
        sets, project = assessment["problem_sets"], assessment["project"]
        found: list[nodes.Node] = [
            self.para(
                f"{len(plan['sessions'])} sessions of {form['minutes']} minutes, one a "
                f"week, from {day_of_term(plan, 0)} (times in the first session's time "
                "zone). Read a session's chapters before it: each session is a "
                "lecture with a live demo, a lab in pairs and a discussion."
            ),
            self.table(
                ["session", "date", "chapters", "reading before (min)"],
                [[a, b, c, str(d)] for a, b, c, d in sessions],
                [34, 22, 32, 12],
            ),
            self.rubric("What falls due, and when"),
            self.para(
                "Each chapter has a graded problem set: its lab and homework "
                "exercises. No week has more than "
                f"{form['problem_sets_per_week']} due, and the project's milestones "
                "fall between them."
            ),
            self.table(["due", "what"], due, [34, 66]),
            self.rubric("Grading"),
            self.table(
                ["part", "weight", "how it is scored"],
                [
                    [
                        "problem sets",
                        f"{sets['weight']}%",
                        "each counts equally: its score after any late penalty, as a "
                        "percentage of its points; checks are graded automatically, "
                        "written answers by hand with a rubric of "
                        f"{plural(written_points(plan), 'point')}",
                    ],
                    [
                        "final project",
                        f"{project['weight']}%",
                        f"{project_title(plan)}: the rubric's 100 points, less the "
                        "penalties of late milestones",
                    ],
                ],
                [18, 10, 72],
            ),
            self.rubric("Late work"),
            self.para(
                late_rule(plan, "problem set or milestone", "its maximum points")
                .removeprefix("**Late work.** ")
                + " The penalty is taken once the written answers are marked, from "
                "the final score, and never exceeds it: handed in 26 hours late (two "
                f"days, the second begun), a problem set loses {two_days(plan)}% of "
                "its maximum points, or all it scored if that is less. A problem set "
                "not handed in counts 0."
            ),
        ]
        for policy in plan["syllabus"]["policies"]:
            found.append(self.rubric(policy["name"]))
            found.append(self.para(policy["text"]))
        return found

    def render_objectives(self) -> list[nodes.Node]:
        """Each chapter's learning objectives and what assesses them."""
        self.env.note_dependency(str(OBJECTIVES))
        rows = objective_map(self.plan, load_objectives(), self.chapters)
        found: list[nodes.Node] = []
        for chapter in sorted({row["chapter"] for row in rows}):
            found.append(self.rubric(self.chapter_link(chapter).split("](")[0][1:]))
            table = []
            for row in (r for r in rows if r["chapter"] == chapter):
                table.append(
                    [
                        f"{chapter}.{row['number']} {row['text']}",
                        ", ".join(self.exercise(e) for e in row["exercises"]) or "none",
                        ", ".join(row["selfcheck"]) or "none",
                        ", ".join(f"session {s}, question {q}"
                                  for s, q in row["discussion"]) or "none",
                    ]
                )
            found.append(
                self.table(
                    ["objective", "graded exercises", "self-check", "discussion"],
                    table,
                    [46, 18, 18, 18],
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
        due = weeks(self.plan["format"]["homework_due_weeks"])  # the one due rule
        return [
            self.table(["part", "weight", "how it is scored"], weights, [18, 10, 72]),
            self.para(
                "**Due dates.** A chapter's problem set, its lab and homework "
                f"exercises, is due {due} after the start of the session that "
                "teaches it at the earliest, as the homework above (the first "
                "session's date and time are given when the course is built): the "
                f"homework of session {last} too, although no session follows it. "
                "Problem sets fall due in the book's order, at most "
                f"{self.plan['format']['problem_sets_per_week']} in one week: one "
                "that would make more moves a week later. "
                + late_rule(self.plan, "problem set", "its points")
            ),
            self.table(["day", "week", "due"], self.calendar(), [15, 15, 70]),
        ]

    def calendar(self) -> list[list[str]]:
        """What falls due, day by day of the term (day 0: session 1's start)."""
        due: dict[int, list[str]] = {}
        for chapter, day in problem_set_days(self.plan).items():
            due.setdefault(day, []).append(f"problem set {chapter}")
        for name, day in milestone_days(self.plan).items():
            due.setdefault(day, []).append(f"project milestone: {name}")
        return [
            [str(day), str(day // 7 + 1), ", ".join(items)]
            for day, items in sorted(due.items())
        ]


def two_days(plan: dict[str, Any]) -> int:
    """The late penalty, in percent of the maximum, of work two days late."""
    late = plan["assessment"]["late"]
    return min(2 * late["percent_per_day"], late["max_percent"])


def project_title(plan: dict[str, Any]) -> str:
    """The final project's title."""
    return plan["project"]["title"]


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
