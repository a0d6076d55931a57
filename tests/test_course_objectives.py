"""The pages a syllabus needs: the students' syllabus, the map of learning objectives
and the accessibility statement (book/syllabus.md, book/objectives.md,
book/accessibility.md).

- Every learning objective of every chapter (the list in its notebook) is mapped, in
  order, by book/course/objectives.yml, and assessed at least once; most by a graded
  exercise, and every graded exercise assesses one. A reworded objective, an unknown
  exercise or question, or a missing entry is refused with its chapter named.
- The syllabus's dates are the plan's: the sessions a week apart from the first
  session, each problem set's due date the one tools/course_config.py writes into
  nbgrader, the milestones apart from them; its late rule is tools/grades.py's.
- The three pages are in the table of contents and render in a tiny Sphinx project.
- The accessibility statement names only checks that exist in the tests it cites.
"""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
sys.path.insert(0, str(BOOK / "_ext"))
sys.path.insert(0, str(ROOT / "tools"))

import course_config  # noqa: E402
import course_plan  # noqa: E402

PLAN = course_plan.load_plan()
CHAPTERS = course_plan.chapter_files()
OBJECTIVES = course_plan.load_objectives()
ROWS = course_plan.objective_map(PLAN, OBJECTIVES, CHAPTERS)


def test_every_chapter_states_its_objectives_and_the_map_follows_them():
    assert sorted(OBJECTIVES) == sorted(CHAPTERS)
    for chapter, path in CHAPTERS.items():
        texts = course_plan.learning_objectives(path)
        assert 3 <= len(texts) <= 7, (chapter, len(texts))
        assert [r["text"] for r in ROWS if r["chapter"] == chapter] == texts


def test_every_learning_objective_is_assessed_at_least_once():
    unassessed = [
        f"{r['chapter']}.{r['number']}"
        for r in ROWS
        if not any(r[kind] for kind in course_plan.ASSESSMENTS)
    ]
    assert not unassessed, unassessed
    graded = [r for r in ROWS if r["exercises"]]
    assert len(graded) >= 2 * len(ROWS) / 3, (len(graded), len(ROWS))


def test_every_graded_exercise_assesses_an_objective():
    labels = {e["label"] for s in PLAN["sessions"] for e in s["exercises"]}
    used = {label for r in ROWS for label in r["exercises"]}
    assert labels == used, sorted(labels - used)


def test_the_map_refuses_what_does_not_match(tmp_path):
    def broken(chapter: int, change) -> dict:
        objectives = {
            n: [dict(item) for item in items] for n, items in OBJECTIVES.items()
        }
        change(objectives[chapter])
        return objectives

    cases = [
        (lambda items: items.pop(), "chapter 2 has 4 objectives, the map 3"),
        (lambda items: items[0].update(starts="Something else"), "objective 1: starts"),
        (lambda items: items[0].update(exercises=["ch2-ex9"]), "ch2-ex9"),
        (lambda items: items[0].update(selfcheck=["no-such-question"]), "no-such"),
        (lambda items: items[0].update(discussion=[[1, 9]]), "discussion 1.9"),
    ]
    for change, message in cases:
        with pytest.raises(ValueError, match=re.escape(message)):
            course_plan.objective_map(PLAN, broken(2, change), CHAPTERS)
    path = tmp_path / "objectives.yml"
    path.write_text("- not a mapping\n")
    with pytest.raises(ValueError, match="chapters"):
        course_plan.load_objectives(path)


def test_learning_objectives_are_read_from_the_notebook(tmp_path):
    import nbformat

    notebook = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell(
                "# Title\n\nText.\n\n**Learning objectives**\n\n- Say one\n  thing.\n"
                "- Do `another`.\n"
            ),
            nbformat.v4.new_markdown_cell("- not an objective"),
        ]
    )
    path = tmp_path / "01_tiny.ipynb"
    nbformat.write(notebook, path)
    assert course_plan.learning_objectives(path) == ["Say one thing.", "Do `another`."]


def test_the_syllabus_dates_are_the_plans_and_nbgraders():
    first = course_plan.first_session(PLAN)
    assert first.utcoffset() is not None
    calendar = course_plan.term_calendar(PLAN)
    sessions = [day for day, what in calendar if what.startswith("session")]
    assert sessions == [7 * n for n in range(len(PLAN["sessions"]))]
    # the dates the nbgrader course gets from the same first session
    nbgrader = course_config.due_dates(first, PLAN)
    for day, what in calendar:
        found = re.fullmatch(r"problem set (\d+) due", what)
        if found:
            assert nbgrader[f"ch{int(found[1]):02d}"] == first + timedelta(days=day)
    assert course_plan.day_of_term(PLAN, 0) == "Mon 11 Jan 2027, 10:00"
    assert course_plan.day_of_term(PLAN, 31) == "Thu 11 Feb 2027, 10:00"
    milestones = [what for _, what in calendar if "milestone" in what]
    assert len(milestones) == 3 and len(calendar) == 6 + 14 + 3


def test_the_syllabus_late_rule_is_the_one_grades_py_applies():
    late = PLAN["assessment"]["late"]
    share = course_config.late_fraction(
        26 * 3600, late["percent_per_day"], late["max_percent"]
    )
    assert course_plan.two_days(PLAN) == round(100 * share) == 20
    names = [policy["name"] for policy in PLAN["syllabus"]["policies"]]
    assert {"Collaboration", "AI assistants"} <= set(names)


def test_the_pages_are_in_the_table_of_contents_and_use_the_plan():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    course = next(p for p in toc["parts"] if p["caption"] == "The course")
    files = [entry["file"] for entry in course["chapters"]]
    assert files == ["book/syllabus", "book/objectives", "book/accessibility"]
    assert "```{course-plan} syllabus\n```" in (BOOK / "syllabus.md").read_text()
    assert "```{course-plan} objectives\n```" in (BOOK / "objectives.md").read_text()


def test_the_accessibility_statement_cites_checks_that_exist():
    page = (BOOK / "accessibility.md").read_text()
    cited = set(re.findall(r"`((?:tests|book)/[\w/]+\.py)`", page))
    assert cited >= {"tests/site/test_site.py", "book/_ext/accessible.py"}
    for path in cited:
        assert (ROOT / path).is_file(), path
    site = (ROOT / "tests/site/test_site.py").read_text()
    # the rules and sizes the page states are the audit's
    for rule in ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "color-contrast",
                 "link-in-text-block", "serious", "critical"):
        assert rule in page and rule in site, rule
    assert "WIDE, PHONE = 1280, 390" in site and "1280" in page and "390" in page
    assert "len(a.split()) < 5" in site and "at least five words" in page


@pytest.mark.slow
def test_the_syllabus_and_the_map_render(tmp_path):
    (tmp_path / "conf.py").write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(BOOK / '_ext')!r})\n"
        "extensions = ['myst_parser', 'course_plan']\n"
    )
    (tmp_path / "index.md").write_text(
        "# Pages\n\n```{course-plan} syllabus\n```\n\n"
        "```{course-plan} objectives\n```\n"
    )
    subprocess.run(
        [sys.executable, "-m", "sphinx", "-q", "-b", "html", str(tmp_path),
         str(tmp_path / "_out")],
        check=True, capture_output=True, text=True, cwd=ROOT,
    )
    html = (tmp_path / "_out" / "index.html").read_text()
    text = " ".join(re.sub(r"<[^>]+>", " ", html).split())
    assert "Mon 11 Jan 2027, 10:00" in text and "Thu 11 Mar 2027, 10:00" in text
    for policy in PLAN["syllabus"]["policies"]:
        assert policy["name"] in text
    assert f"{PLAN['assessment']['problem_sets']['weight']}%" in text
    assert "Exercise 13.2" in text and text.count("session 5, question") >= 3
