"""The course plan (book/course/plan.yml) adds up and agrees with the chapters.

- Every numbered chapter is taught exactly once, in order, and read before the
  session that teaches it; each session's blocks sum to its stated minutes.
- Every exercise of every chapter is planned exactly once, as a lab or as
  homework, in the session that teaches its chapter; the chapters it ``uses`` are
  taught in that session or earlier, and every chapter its cells point to (a link
  to ``NN_*.ipynb`` or the words "chapter N") is among them.
- Readings and citations are keys of book/references.bib, the slide decks the
  plan names exist, every demo block names real sections of its session's
  chapters, and the reading time is the chapters' Markdown words at 200 words a
  minute.
- The rules the plan states once read as they should: when homework is due (the
  graded problem sets' due dates by the same rule), the points of a written
  answer and of each kind of answer a check takes (tests/test_rubric.py holds the
  problem sets to them, tests/site/test_slides.py the decks).
"""

from __future__ import annotations

import re
import sys
from datetime import timedelta
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
sys.path.insert(0, str(BOOK / "_ext"))

import course_plan  # noqa: E402

PLAN = course_plan.load_plan(BOOK / "course" / "plan.yml")
SESSIONS = PLAN["sessions"]
CHAPTERS = course_plan.chapter_files(BOOK)
EXERCISE = re.compile(r"```\{exercise\}[^\n]*\n:label: (?P<label>ch\d+-ex\d+)")
SOLUTION_END = re.compile(r"```\{solution-end\}")
LINK = re.compile(r"\]\((?P<chapter>\d{2})_[\w-]+\.ipynb")
NAMED = re.compile(r"\b[Cc]hapter (?P<chapter>\d+)\b")
CITATION = re.compile(r"\{cite(?::[pt])?\}`([\w:.-]+(?:,\s*[\w:.-]+)*)`")


def exercise_cells(path: Path) -> dict[str, list]:
    """Each exercise of a chapter: its label and its cells (the question, the
    solution's start, its cells, and the solution's end)."""
    cells = nbformat.read(path, as_version=4).cells
    found = {}
    for index, cell in enumerate(cells):
        match = EXERCISE.search(cell.source) if cell.cell_type == "markdown" else None
        if match is None:
            continue
        end = next(
            (
                k
                for k in range(index, len(cells))
                if SOLUTION_END.search(cells[k].source)
            ),
            len(cells) - 1,
        )
        found[match["label"]] = cells[index : end + 1]
    return found


def chapter_exercises(path: Path) -> dict[str, str]:
    """Each exercise of a chapter: its label and the text of its cells."""
    return {
        label: "\n".join(cell.source for cell in cells)
        for label, cells in exercise_cells(path).items()
    }


EXERCISES = {number: chapter_exercises(path) for number, path in CHAPTERS.items()}
PLANNED = [
    (session["number"], exercise)
    for session in SESSIONS
    for exercise in session["exercises"]
]


def session_of_chapter() -> dict[int, int]:
    return {n: session["number"] for session in SESSIONS for n in session["chapters"]}


def strings(value: object) -> list[str]:
    """Every text of the plan (its comments are not read)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return [text for item in value for text in strings(item)]
    return []


def bib_keys() -> set[str]:
    text = (BOOK / "references.bib").read_text()
    return set(re.findall(r"^@\w+\{([^,\s]+),", text, flags=re.MULTILINE))


def test_the_plan_has_six_sessions_numbered_in_order():
    assert PLAN["format"]["sessions"] == len(SESSIONS) == 6
    assert [session["number"] for session in SESSIONS] == [1, 2, 3, 4, 5, 6]


def test_no_session_reads_more_than_its_share():
    # the term fits: no session with more than three chapters or 40 minutes of reading
    for session in SESSIONS:
        minutes = sum(
            course_plan.reading_minutes(course_plan.markdown_words(CHAPTERS[n]))
            for n in session["reading"]
        )
        assert len(session["chapters"]) <= 3 and minutes <= 40, (
            session["number"],
            minutes,
        )


def test_every_chapter_is_in_exactly_one_session_with_a_deck_and_a_lecture():
    counted = [n for session in SESSIONS for n in session["chapters"]]
    assert sorted(counted) == sorted(CHAPTERS) and len(set(counted)) == len(counted)
    for session in SESSIONS:
        assert (ROOT / session["slides"]).is_file(), session["slides"]
        lectured = {
            int(n)
            for block in session["blocks"]
            if block["kind"] == "lecture"
            for n in re.findall(r"chapters? (\d+)", block["topic"])
        }
        assert set(session["chapters"]) <= lectured, (session["number"], lectured)


def test_every_chapter_is_taught_exactly_once_and_in_order():
    taught = [n for session in SESSIONS for n in session["chapters"]]
    assert taught == sorted(CHAPTERS), (taught, sorted(CHAPTERS))
    assert len(CHAPTERS) == 14, sorted(CHAPTERS)


def test_each_chapter_is_read_before_the_session_that_teaches_it():
    for session in SESSIONS:
        assert session["reading"] == session["chapters"], session["number"]


@pytest.mark.parametrize("session", SESSIONS, ids=lambda s: f"session-{s['number']}")
def test_the_blocks_sum_to_the_sessions_minutes(session):
    minutes = [block["minutes"] for block in session["blocks"]]
    assert all(isinstance(m, int) and m > 0 for m in minutes), minutes
    assert sum(minutes) == PLAN["format"]["minutes"] == 90, minutes
    kinds = [block["kind"] for block in session["blocks"]]
    assert set(kinds) <= set(course_plan.KINDS), kinds
    assert {"lecture", "demo", "lab", "discussion"} <= set(kinds), kinds


def test_every_exercise_is_planned_exactly_once_as_lab_or_homework():
    labels = [exercise["label"] for _, exercise in PLANNED]
    assert len(labels) == len(set(labels)), sorted(
        label for label in labels if labels.count(label) > 1
    )
    existing = {label for found in EXERCISES.values() for label in found}
    assert set(labels) == existing, (
        f"planned but not in a chapter: {sorted(set(labels) - existing)}; "
        f"in a chapter but not planned: {sorted(existing - set(labels))}"
    )
    assert {exercise["as"] for _, exercise in PLANNED} <= {"lab", "homework"}
    for session in SESSIONS:
        assert any(e["as"] == "lab" for e in session["exercises"]), session["number"]


def test_an_exercise_is_set_in_the_session_of_its_chapter():
    teaches = session_of_chapter()
    for number, exercise in PLANNED:
        chapter = int(re.match(r"ch(\d+)-", exercise["label"])[1])
        assert teaches.get(chapter) == number, (exercise["label"], number)


def test_what_an_exercise_uses_is_taught_no_later():
    teaches = session_of_chapter()
    for number, exercise in PLANNED:
        label, uses = exercise["label"], exercise["uses"]
        chapter = int(re.match(r"ch(\d+)-", label)[1])
        assert chapter in uses, f"{label}: uses must name its own chapter"
        for used in uses:
            assert used in teaches, f"{label} uses chapter {used}, which is not taught"
            assert teaches[used] <= number, (
                f"{label} (session {number}) uses chapter {used}, taught in session "
                f"{teaches[used]}"
            )


def test_every_chapter_an_exercise_points_to_is_in_its_uses():
    uses = {exercise["label"]: set(exercise["uses"]) for _, exercise in PLANNED}
    for found in EXERCISES.values():
        for label, text in found.items():
            pointed = {int(m["chapter"]) for m in LINK.finditer(text)}
            pointed |= {int(m["chapter"]) for m in NAMED.finditer(text)}
            missing = pointed - uses.get(label, set())
            assert not missing, f"{label} points to chapters {sorted(missing)}"


def test_readings_and_citations_are_keys_of_the_bibliography():
    keys = bib_keys()
    for session in SESSIONS:
        assert 2 <= len(session["readings"]), session["number"]
        for key in session["readings"]:
            assert key in keys, f"session {session['number']} reads unknown {key!r}"
    for cited in CITATION.findall(" ".join(strings(PLAN))):
        for key in cited.split(","):
            assert key.strip() in keys, f"plan.yml cites unknown {key!r}"
    # the pointer for the training basics chapters 9 and 10 need
    training = " ".join(need["pointer"] for need in PLAN["prerequisites"])
    assert "zhang2023d2l" in training and "loshchilov2019adamw" in training


def test_every_work_the_plan_cites_is_cited_in_a_page_too():
    # The bibliography lists every cited work, and its browser test counts the
    # works cited in the pages' sources; a work cited only in the plan would be
    # listed without being counted there.
    sources = sorted(BOOK.glob("*.md")) + sorted(BOOK.glob("*.ipynb"))
    cited = {
        key.strip()
        for path in sources
        for keys in CITATION.findall(path.read_text())
        for key in keys.split(",")
    }
    in_plan = {
        key.strip()
        for keys in CITATION.findall(" ".join(strings(PLAN)))
        for key in keys.split(",")
    }
    in_plan |= {key for session in SESSIONS for key in session["readings"]}
    assert in_plan <= cited, sorted(in_plan - cited)


def test_discussion_questions_say_what_a_good_answer_contains():
    for session in SESSIONS:
        assert 3 <= len(session["discussion"]) <= 4, session["number"]
        for item in session["discussion"]:
            assert item["question"].strip().endswith("?"), item["question"]
            assert len(item["good_answer"].split()) >= 15, item["question"]


def test_each_demo_names_a_section_of_a_chapter_of_its_session():
    def plain(text: str) -> str:
        return re.sub(r"[$`]", "", text).strip()

    for session in SESSIONS:
        assert "demo" not in session, "a session's demos belong to its demo blocks"
        for block in session["blocks"]:
            if block["kind"] == "demo":
                assert block["demos"], (session["number"], block)
        assert course_plan.session_demos(session), session["number"]
        for demo in course_plan.session_demos(session):
            assert len(demo["run"].split()) >= 15, demo
            assert demo["chapter"] in session["chapters"], demo
            notebook = nbformat.read(CHAPTERS[demo["chapter"]], as_version=4)
            headings = {
                plain(line.lstrip("#"))
                for cell in notebook.cells
                if cell.cell_type == "markdown"
                for line in cell.source.splitlines()
                if line.startswith("#")
            }
            assert plain(demo["section"]) in headings, (
                demo["chapter"],
                demo["section"],
            )


def test_the_slide_decks_the_plan_names_exist():
    for session in SESSIONS:
        deck = session["slides"]
        assert deck == f"book/slides/session-{session['number']}.md", deck
        assert (ROOT / deck).is_file(), f"{deck} is missing"


def test_the_written_answers_rubric_is_planned_and_adds_up():
    # tests/test_rubric.py: the problem sets grade exactly these written answers
    listed = [item["label"] for item in PLAN["written_answers"]["applies_to"]]
    assert len(listed) == len(set(listed))
    planned = {exercise["label"] for _, exercise in PLANNED}
    assert set(listed) <= planned, sorted(set(listed) - planned)
    assert listed == sorted(listed, key=course_plan.exercise_order)
    points = [level["points"] for level in PLAN["written_answers"]["levels"]]
    assert points == sorted(points, reverse=True) and points[-1] == 0, points
    assert course_plan.written_points(PLAN) == points[0] > 0
    assert "point" not in PLAN["written_answers"]["summary"], "stated by the levels"


def test_the_points_of_an_answer_are_the_plans():
    from relpos.book.exercises.grading import GRADING, KINDS

    points = course_plan.answer_points(PLAN)
    assert set(points) == set(KINDS), points
    assert all(isinstance(p, int) and p > 0 for p in points.values()), points
    for label, grading in GRADING.items():
        expected = sum(points[kind] for kind in grading.answers)
        assert course_plan.exercise_points(PLAN, label) == expected, label
    cheaper = {**PLAN, "grading": {"answers": [{"kind": "code", "points": 5}]}}
    assert course_plan.exercise_points(cheaper, "ch10-ex2") == 10  # two answers of code
    with pytest.raises(ValueError, match="number"):
        course_plan.exercise_points(cheaper, "ch2-ex1")
    with pytest.raises(ValueError, match="label"):
        course_plan.exercise_points(PLAN, "ch99-ex1")


def test_homework_is_due_by_one_rule():
    assert PLAN["format"]["homework_due_weeks"] == 1
    assert PLAN["format"]["problem_sets_per_week"] == 2
    assert course_plan.homework_due(PLAN, 1) == (
        "for chapters 1 and 2, one week after session 1, at the start of session 2; "
        "for chapter 3, two weeks after session 1, at the start of session 3"
    )
    assert course_plan.homework_due(PLAN, 4) == (
        "two weeks after session 4, at the start of session 6"
    )
    assert course_plan.homework_due(PLAN, 6) == "two weeks after session 6"
    # one a week at most: every set a week later than the one before it
    one = {**PLAN, "format": {**PLAN["format"], "problem_sets_per_week": 1}}
    assert list(course_plan.problem_set_days(one).values()) == [
        7 * w for w in range(1, 15)
    ]
    # no cap to speak of: due one week after the session that teaches it
    many = {**PLAN, "format": {**PLAN["format"], "problem_sets_per_week": 9}}
    teaches = session_of_chapter()
    assert course_plan.problem_set_days(many) == {
        n: 7 * teaches[n] for n in CHAPTERS
    }
    for bad in (0, 1.5, True):
        broken = {**PLAN, "format": {**PLAN["format"], "problem_sets_per_week": bad}}
        with pytest.raises(ValueError, match="problem_sets_per_week"):
            course_plan.problem_set_days(broken)
    with pytest.raises(ValueError, match="number"):
        course_plan.homework_due(PLAN, 7)
    assert course_plan.weeks(3) == "three weeks" and course_plan.weeks(12) == "12 weeks"
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="count"):
            course_plan.weeks(bad)
    assert course_plan.plural(1, "point") == "1 point"
    assert course_plan.plural(4, "point") == "4 points"


def test_the_project_rubric_adds_up():
    rubric = PLAN["project"]["rubric"]
    levels = rubric["levels"]
    for criterion in rubric["criteria"]:
        assert len(criterion["points"]) == len(criterion["levels"]) == len(levels)
        assert criterion["points"] == sorted(criterion["points"], reverse=True)
    assert sum(criterion["points"][0] for criterion in rubric["criteria"]) == 100
    assert PLAN["project"]["launched"] in [session["number"] for session in SESSIONS]
    text = " ".join(PLAN["project"]["deliverables"])
    assert "python -m relpos.book.experiments" in text and "register_attention" in text


def test_the_variants_are_a_one_and_a_two_session_plan_that_add_up():
    uses = {exercise["label"]: exercise["uses"] for _, exercise in PLANNED}
    variants = PLAN["variants"]
    assert [len(variant["sessions"]) for variant in variants] == [1, 2]
    for variant in variants:
        known: set[int] = set()
        for session in variant["sessions"]:
            minutes = sum(block["minutes"] for block in session["blocks"])
            assert minutes == PLAN["format"]["minutes"], (variant["name"], minutes)
            assert {block["kind"] for block in session["blocks"]} <= set(
                course_plan.KINDS
            )
            known |= set(session["reading"]) | set(session["chapters"])
            assert known <= set(CHAPTERS), sorted(known - set(CHAPTERS))
            for label in session["lab"]:
                missing = set(uses[label]) - known
                assert not missing, (variant["name"], label, sorted(missing))


def test_the_instructors_page_renders_every_part_once():
    page = (BOOK / "instructors.md").read_text()
    for part in course_plan.PARTS:
        assert page.count(f"```{{course-plan}} {part}\n") == 1, part
    for heading in ("## Graded assignments", "## Slides", "## The print edition"):
        assert page.count(f"\n{heading}\n") == 1, heading
    # the plan is the one source: no hand-typed session table on the page
    assert not re.search(r"^\| \d+ \(\d+ min\)", page, flags=re.MULTILINE)

NUMBERS = {"four": 4, "five": 5, "six": 6, "seven": 7}


def test_the_instructors_page_agrees_with_the_plan():
    page = (BOOK / "instructors.md").read_text()
    count = len(SESSIONS)
    # every count of sessions the page states is the plan's
    stated = re.findall(
        r"\b(four|five|six|seven) (?:90-minute )?(?:sessions|decks)\b", page
    )
    assert stated and {NUMBERS[word] for word in stated} == {count}, stated
    assert f"session-{count}.html" in page
    # no session's chapters typed by hand: the plan's directive states them
    typed = re.findall(
        r"session[- ]\d+(?:\.md)?`?\s+(?:covers\s+)?chapters?\s+\d", page
    )
    assert not typed, typed
    assert "in session 4" not in page.replace("launched in session", "")


def test_reading_minutes_are_words_at_200_a_minute(tmp_path):
    assert course_plan.WORDS_PER_MINUTE == 200
    assert course_plan.reading_minutes(0) == 0
    assert course_plan.reading_minutes(200) == 1
    assert course_plan.reading_minutes(201) == 2
    assert course_plan.reading_minutes(1000, words_per_minute=250) == 4
    with pytest.raises(ValueError, match="words"):
        course_plan.reading_minutes(-1)
    notebook = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("# A title\n\nThree more words."),
            nbformat.v4.new_code_cell("these code words are not read " * 100),
            nbformat.v4.new_markdown_cell("one two\nthree"),
        ]
    )
    path = tmp_path / "01_tiny.ipynb"
    nbformat.write(notebook, path)
    assert course_plan.markdown_words(path) == 8
    assert course_plan.reading_minutes(course_plan.markdown_words(path)) == 1
    assert course_plan.chapter_title(path) == "A title"
    assert course_plan.chapter_files(tmp_path) == {1: path}
    assert course_plan.exercise_name("ch10-ex3") == "Exercise 10.3"
    labels = ["ch10-ex1", "ch2-ex3", "ch2-ex1"]
    in_order = ["ch2-ex1", "ch2-ex3", "ch10-ex1"]
    assert sorted(labels, key=course_plan.exercise_order) == in_order
    with pytest.raises(ValueError, match="label"):
        course_plan.exercise_name("ch10.3")


def test_a_variant_session_teaches_only_what_was_read():
    for variant in PLAN["variants"]:
        read: set[int] = set()
        for session in variant["sessions"]:
            read |= set(session["reading"])
            unread = sorted(set(session["chapters"]) - read)
            assert not unread, (variant["name"], session["title"], unread)


def test_homework_is_due_when_the_plan_says_and_never_at_a_missing_session():
    last = SESSIONS[-1]["number"]
    assert PLAN["assessment"]["session_interval_days"] == 7
    days = course_plan.problem_set_days(PLAN)
    for session in SESSIONS:
        start = 7 * (session["number"] - 1)
        for chapter in session["chapters"]:
            assert days[chapter] >= start + 7, chapter  # a week to do it at least
            assert days[chapter] % 7 == 0, chapter  # at a session's start
        due = course_plan.homework_due(PLAN, session["number"])
        later = re.findall(r"at the start of session (\d+)", due)
        assert all(int(n) <= last for n in later), due
    assert "session 7" not in course_plan.homework_due(PLAN, last)
    assert "next session" not in " ".join(strings(SESSIONS[-1]))
    # sessions a fortnight apart: homework due in a week is not due at the next one
    apart = {**PLAN, "assessment": {**PLAN["assessment"], "session_interval_days": 14}}
    assert course_plan.homework_due(apart, 1).startswith(
        "for chapters 1 and 2, one week after session 1; "
    )


def test_one_due_rule_for_homework_and_the_graded_problem_sets():
    # the plan states it once; the assessment states no second one
    assert "due_days" not in PLAN["assessment"]["problem_sets"]
    assert not re.search(r"\bdue\b", PLAN["format"]["audience"])
    sys.path.insert(0, str(ROOT / "tools"))
    import course_config

    first = course_config.parse_first_session("2026-09-14T10:00+02:00")
    fortnightly = {**PLAN, "format": {**PLAN["format"], "homework_due_weeks": 2}}
    for plan, weeks in ((PLAN, 1), (fortnightly, 2)):
        dates = course_config.due_dates(first, plan)
        assert dates["ch01"] - first == timedelta(weeks=weeks)
        assert course_plan.homework_due(plan, 1).startswith(
            f"for chapters 1 and 2, {course_plan.weeks(weeks)} after session 1"
        )
        days = course_plan.problem_set_days(plan)
        for chapter, day in days.items():
            assert dates[f"ch{chapter:02d}"] - first == timedelta(days=day)


def test_no_week_of_the_term_carries_more_than_two_problem_sets():
    days = course_plan.problem_set_days(PLAN)
    assert sorted(days) == sorted(CHAPTERS)
    assert list(days.values()) == sorted(days.values()), "in the book's order"
    # any seven days of the term, not only the weeks counted from session 1
    for start in range(0, max(days.values()) + 1):
        within = [c for c, d in days.items() if start <= d < start + 7]
        assert len(within) <= PLAN["format"]["problem_sets_per_week"] == 2, within


def test_the_project_milestones_fall_apart_from_the_problem_sets():
    days = course_plan.problem_set_days(PLAN)
    milestones = course_plan.milestone_days(PLAN)
    assert list(milestones) == ["Prediction", "Sweep", "Write-up"]
    for name, day in milestones.items():
        nearest = min(abs(day - d) for d in days.values())
        assert nearest >= 3, (name, day, nearest)
    # launched in session 4 (day 21): each milestone mid-week
    assert milestones == {"Prediction": 31, "Sweep": 45, "Write-up": 59}


def test_the_marking_load_is_counted_from_the_written_answers():
    students = PLAN["format"]["students"]
    each = PLAN["written_answers"]["minutes_each"]
    assert students == 40 and each > 0
    asks = course_plan.written_asks(PLAN)
    total = 0
    for session in SESSIONS:
        written = [e for e in session["exercises"] if e["label"] in asks]
        answers, minutes = course_plan.marking_load(PLAN, session["number"])
        assert answers == len(written) * students and minutes == answers * each
        total += answers
    assert total == len(asks) * students == 1000  # 25 written answers, 40 students
    assert course_plan.marking_load(PLAN, 1) == (240, 720)
    assert course_plan.hours(720) == "12 h" and course_plan.hours(45) == "45 min"
    assert course_plan.hours(150) == "2 h 30 min"
    assert course_plan.project_marking(PLAN) == (20, 800)
    with pytest.raises(ValueError, match="number"):
        course_plan.marking_load(PLAN, 9)


def test_the_project_has_three_milestones_and_a_template():
    project = PLAN["project"]
    milestones = project["milestones"]
    assert [m["name"] for m in milestones] == ["Prediction", "Sweep", "Write-up"]
    days = [m["days"] for m in milestones]
    assert days == sorted(set(days)) and days[-1] == project["days"], days
    assert "before any sweep runs" in milestones[0]["hand_in"]
    template = (ROOT / project["template"]).read_text()
    parts = re.findall(r"^## Part (\d): .*\(milestone (\d)", template, re.MULTILINE)
    assert parts == [("1", "1"), ("2", "2"), ("3", "3")], parts
    # what the rubric grades is asked for: a prediction first, every seed, a command
    rubric = " ".join(strings(project["rubric"]))
    assert "a prediction written before the sweep" in rubric
    for asked in ("prediction", "Every seed", "one command", "i - j"):
        assert asked.lower() in template.lower(), asked
    page = (BOOK / "instructors.md").read_text()
    assert "```{literalinclude} course/project_template.md" in page


def test_the_grade_weights_and_the_late_policy_add_up():
    assessment = PLAN["assessment"]
    weights = [assessment["problem_sets"]["weight"], assessment["project"]["weight"]]
    assert sum(weights) == 100 and min(weights) > 0, weights
    late = assessment["late"]
    assert 0 < late["percent_per_day"] <= late["max_percent"] <= 100, late
    assert PLAN["format"]["homework_due_weeks"] > 0
    rule = course_plan.late_rule(PLAN, "problem set", "its points")
    assert f"{late['percent_per_day']}% of its points per day" in rule
    assert f"at most {late['max_percent']}%" in rule
