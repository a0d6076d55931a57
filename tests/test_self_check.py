"""The chapters' self-checks: their data, their place, and how they render.

- Every data file ``book/selfcheck/chNN.yml`` is valid: the schema, 3 to 5
  questions, exactly one correct option each, one sentence explaining every option.
  (tests/test_self_check_numbers.py recomputes the numbers they quote.)
- Every numbered chapter has one self-check cell, a section of its own that names
  its chapter's file, before the chapter's summary or exercises.
- Bad data is refused with an error that names the file, the question and the key.
- The ``self-check`` directive (book/_ext/self_check.py), in a tiny Sphinx project
  built in a temporary folder: on the site, native form controls (a fieldset and
  its legend, radio buttons with their labels, a Check button, a live region), the
  explanations hidden in the page and a classic script; in LaTeX, the questions
  with the correct option marked and every explanation.
- The student edition writes the questions out as Markdown, answers collapsed.

tests/site/test_self_check.py answers a question by keyboard on the built site.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest
from bs4 import BeautifulSoup

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
sys.path.insert(0, str(BOOK / "_ext"))

from self_check_questions import (  # noqa: E402
    DATA,
    as_markdown,
    data_file,
    letter,
    load_questions,
)

CHAPTERS = sorted(BOOK.glob("[0-9][0-9]_*.ipynb"))
FILES = sorted(DATA.glob("*.yml"))
DIRECTIVE = re.compile(r"```\{self-check\}[ \t]*(\S+)[ \t]*\n```")
SENTENCE_BREAK = re.compile(r"[.!?]\s+[A-Z]")
# The heading after a chapter's self-check where it is not "## Exercises".
CLOSING: dict[str, str] = {}


def prose(text: str) -> str:
    """Text without its math and code, where a full stop is not a sentence's end."""
    return re.sub(r"\$[^$]*\$|`[^`]*`", "x", text)


def test_every_chapter_has_a_data_file_and_no_file_is_left_over():
    names = {f"ch{path.name[:2]}" for path in CHAPTERS}
    assert {path.stem for path in FILES} == names
    assert len(names) == 14


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_data_file_is_valid(path):
    questions = load_questions(path)
    assert 3 <= len(questions) <= 5
    for question in questions:
        assert sum(option.correct for option in question.options) == 1, question.id
        assert question.question.endswith("?"), question.id
        for option in question.options:
            why = prose(option.why)
            assert why.endswith("."), (question.id, option.answer)
            assert not SENTENCE_BREAK.search(why), (question.id, "one sentence", why)
        for option in question.options:  # a label of math alone has no name
            words = re.sub(r"\$[^$]*\$", "", option.answer)
            assert re.search("[A-Za-z]", words), (question.id, option.answer)
        answers = [option.answer for option in question.options]
        assert len(set(answers)) == len(answers), question.id


def test_the_correct_answer_is_not_always_in_one_place():
    positions = [q.correct for path in FILES for q in load_questions(path)]
    counts = [positions.count(place) for place in range(4)]
    assert min(counts) >= len(positions) // 8, counts


def length_ranks(questions) -> list[int]:
    """For each question, the rank of its correct option by length: how many options
    are longer (0: the longest, a tie for the longest included)."""
    ranks = []
    for question in questions:
        lengths = [len(" ".join(option.answer.split())) for option in question.options]
        mine = lengths[question.correct]
        ranks.append(sum(1 for n in lengths if n > mine))
    return ranks


def test_length_ranks_are_read_as_a_student_would():
    from types import SimpleNamespace as Q

    def question(correct: int, *answers: str) -> Q:
        return Q(correct=correct, options=[Q(answer=a) for a in answers])

    cases = [
        question(0, "The long right one.", "Short.", "Tiny."),
        question(1, "The long wrong one.", "Short.", "Tiny."),
        question(0, "Equal.", "Equals", "No."),  # a tie counts as the longest
        question(2, "Middle one.", "The long wrong one.", "Tiny."),
    ]
    assert length_ranks(cases) == [0, 1, 0, 2]


def test_the_correct_option_is_no_tell_by_its_length():
    # A student who picks the longest option, or the second longest, must not pass:
    # the correct one is the longest in at most a third of the questions, and at no
    # rank by length in more than half of them.
    ranks = [r for path in FILES for r in length_ranks(load_questions(path))]
    assert len(ranks) >= 58
    longest = ranks.count(0)
    assert longest <= len(ranks) / 3, f"the longest in {longest} of {len(ranks)}"
    for rank in set(ranks):
        assert ranks.count(rank) <= len(ranks) / 2, (rank, ranks.count(rank))


# Words of the tooling, not of the ideas: a self-check asks what a result means.
TOOLING = re.compile(r"sha-?256|\.json\b|--\w|\bmake \w|\bpip\b|relpos\.", re.I)


@pytest.mark.parametrize("path", FILES[8:], ids=lambda p: p.stem)
def test_chapters_9_to_13_ask_about_ideas_and_evidence(path):
    for question in load_questions(path):
        texts = [question.question] + [o.answer for o in question.options]
        found = [m.group() for text in texts for m in TOOLING.finditer(text)]
        assert not found, (path.stem, question.id, found)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_holds_its_self_check_before_its_end(path):
    cells = nbformat.read(path, as_version=4).cells
    found = [i for i, c in enumerate(cells) if DIRECTIVE.search(c.source)]
    assert len(found) == 1, f"{path.name}: {len(found)} self-check cells"
    at = found[0]
    cell = cells[at]
    name = f"ch{path.name[:2]}"
    assert cell.cell_type == "markdown"
    assert cell.source == f"## Self-check\n\n```{{self-check}} {name}\n```"
    assert data_file(name).exists()
    # a section of its own, right before the exercises (or before the heading CLOSING
    # names, where a chapter's exercises follow another section)
    following = cells[at + 1]
    assert following.cell_type == "markdown"
    expected = CLOSING.get(name, "## Exercises")
    assert following.source.startswith(expected), following.source[:80]


# -- bad data ---------------------------------------------------------------------

GOOD_OPTION = "    - answer: A.\n      why: Because.\n"
RIGHT_OPTION = "    - answer: B.\n      correct: true\n      why: Because.\n"


def question(slug: str, options: str = GOOD_OPTION + RIGHT_OPTION + GOOD_OPTION) -> str:
    return f"- id: {slug}\n  question: Which?\n  options:\n{options}"


def planted(tmp_path: Path, body: str, name: str = "ch02", chapter: int = 2) -> Path:
    path = tmp_path / f"{name}.yml"
    path.write_text(f"chapter: {chapter}\nquestions:\n{body}")
    return path


TWO_MORE = question("b") + question("c")
THREE = question("a") + TWO_MORE


@pytest.mark.parametrize(
    ("body", "chapter", "message"),
    [
        (THREE, 3, r"ch02.yml: 'chapter' must be 2"),
        (question("a") + question("b"), 2, r"'questions' must be a list of 3 to 5"),
        (
            question("a", GOOD_OPTION * 3) + TWO_MORE,
            2,
            r"question 1 \(a\): exactly one option must have 'correct: true', found 0",
        ),
        (
            question("a", RIGHT_OPTION * 2 + GOOD_OPTION) + TWO_MORE,
            2,
            r"question 1 \(a\): exactly one option .* found 2",
        ),
        (
            question("a", "    - answer: A.\n" + RIGHT_OPTION * 2) + TWO_MORE,
            2,
            r"option 1: keys .* missing \['why'\]",
        ),
        (
            question("a", GOOD_OPTION.replace("A.", "A.\n      correct: 1") * 3)
            + TWO_MORE,
            2,
            r"'correct' must be true or false, got 1",
        ),
        (question("Bad Slug") + TWO_MORE, 2, r"lowercase slug"),
        (question("a") + question("a") + question("c"), 2, r"ids must be unique"),
    ],
)
def test_bad_data_is_refused_by_name(tmp_path, body, chapter, message):
    with pytest.raises(ValueError, match=message):
        load_questions(planted(tmp_path, body, chapter=chapter))


def test_a_good_file_loads(tmp_path):
    questions = load_questions(planted(tmp_path, THREE))
    assert [q.id for q in questions] == ["a", "b", "c"]
    assert [q.correct for q in questions] == [1, 1, 1]


def test_names_are_checked():
    with pytest.raises(ValueError, match="'ch' and two digits"):
        data_file("ch3")
    assert data_file("ch03", Path("x")) == Path("x") / "ch03.yml"


# -- the directive, in a tiny Sphinx project ----------------------------------------

CONF = """\
import sys
sys.path.insert(0, {ext!r})
extensions = ["myst_parser", "self_check"]
myst_enable_extensions = ["dollarmath"]
self_check_dir = {data!r}
"""


NAMES = [path.stem for path in FILES]


def build(
    tmp_path: Path, builder: str, names: list[str] = NAMES
) -> tuple[int, Path, str]:
    """Build a project with a page per self-check of ``names`` (``ch02.md`` holds
    ``ch02``'s) with ``builder``; warnings are errors."""
    from sphinx.cmd.build import build_main

    source = tmp_path / "source"
    source.mkdir(exist_ok=True)
    (source / "conf.py").write_text(CONF.format(ext=str(BOOK / "_ext"), data=str(DATA)))
    toctree = "\n".join(names)
    (source / "index.md").write_text(f"# Chapters\n\n```{{toctree}}\n{toctree}\n```\n")
    for name in names:
        page = f"# Chapter {name}\n\n## Self-check\n\n```{{self-check}} {name}\n```\n"
        (source / f"{name}.md").write_text(page)
    out, warnings = tmp_path / builder, tmp_path / f"{builder}.log"
    options = ["-q", "-W", "--keep-going", "-b", builder, "-w", str(warnings)]
    status = build_main([*options, str(source), str(out)])
    return status, out, warnings.read_text()


def plain(myst: str) -> str:
    """MyST inline text as the HTML writer prints it: math in \\( \\), no backticks."""
    text = re.sub(r"\$([^$]*)\$", r"\\(\1\\)", myst)
    return text.replace("`", "")


def squeeze(text: str) -> str:
    text = text.replace("\u2019", "'").replace("\u201c", '"').replace("\u201d", '"')
    return re.sub(r"\s+", " ", text).strip()


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    status, out, warnings = build(tmp_path_factory.mktemp("self-check"), "html")
    assert status == 0, warnings
    return out


@pytest.mark.parametrize("name", NAMES)
def test_html_is_native_form_controls(site, name):
    questions = load_questions(data_file(name))
    soup = BeautifulSoup((site / f"{name}.html").read_text(), "html.parser")
    root = soup.select("div.relpos-self-check")
    assert len(root) == 1 and root[0]["data-chapter"] == name
    rendered = root[0].select("div.relpos-self-check-question")
    assert len(rendered) == len(questions)
    for number, (question, div) in enumerate(zip(questions, rendered), start=1):
        assert div["data-correct"] == str(question.correct)
        legend = div.select_one("fieldset > legend")
        shown = f"{number}. {plain(question.question)}"
        assert squeeze(legend.get_text()) == squeeze(shown)
        radios = div.select("fieldset input[type=radio]")
        assert len(radios) == len(question.options)
        assert {radio["name"] for radio in radios} == {div["id"]}
        assert [radio["value"] for radio in radios] == [
            str(i) for i in range(len(radios))
        ]
        for index, (radio, option) in enumerate(zip(radios, question.options)):
            assert radio["id"] == f"{div['id']}-{letter(index)}"
            label = div.select_one(f"label[for='{radio['id']}']")
            assert squeeze(label.get_text()) == squeeze(plain(option.answer))
            why = div.select_one(f"[id='{radio['data-why']}']")
            assert why.has_attr("hidden")  # shown only when checked
            assert squeeze(why.get_text()) == squeeze(plain(option.why))
        button = div.select_one("button.relpos-self-check-button")
        assert button["type"] == "button" and button.get_text() == "Check"
        assert button.has_attr("hidden")  # until the script runs
        feedback = div.select_one(".relpos-self-check-feedback")
        assert feedback["role"] == "status" and feedback["aria-live"] == "polite"
        assert feedback.get_text() == ""


def test_html_loads_a_classic_script_and_the_stylesheet(site):
    soup = BeautifulSoup((site / "ch02.html").read_text(), "html.parser")
    scripts = [s for s in soup.select("script[src]") if "self_check" in s["src"]]
    assert len(scripts) == 1
    assert scripts[0]["src"] == "_static/self_check.js"
    assert not scripts[0].has_attr("type")  # not a module: runs from file:// too
    assert scripts[0].has_attr("defer")
    assert soup.select("link[href='_static/self_check.css']")
    script = (site / "_static" / "self_check.js").read_text()
    assert "import " not in script and "export " not in script
    assert (site / "_static" / "self_check.css").exists()
    # a page without a self-check loads neither
    index = (site / "index.html").read_text()
    assert "self_check.js" not in index and "self_check.css" not in index


def test_latex_prints_the_answers(tmp_path):
    status, out, warnings = build(tmp_path, "latex")
    assert status == 0, warnings
    tex = next(out.glob("*.tex")).read_text()
    questions = [q for name in NAMES for q in load_questions(data_file(name))]
    assert tex.count("The answers, for instructors") == len(NAMES)
    blocks = tex.split(r"\sphinxsetlistlabels{\alph}")[1:]  # one per question
    assert len(blocks) == len(questions)
    for question, block in zip(questions, blocks):
        items = block.split(r"\end{enumerate}")[0].split(r"\item {}")[1:]
        assert len(items) == len(question.options)
        marked = [i for i, item in enumerate(items) if "(correct)" in item]
        assert marked == [question.correct], question.id
        for item, option in zip(items, question.options):
            words = re.findall(r"[A-Za-z]{3,}", re.sub(r"\$[^$]*\$", "", option.why))
            assert all(word in item for word in words[:6]), (question.id, words)
    assert "<input" not in tex and "Check" not in tex


def test_students_latex_prints_the_answers_after_the_questions(tmp_path, monkeypatch):
    monkeypatch.setenv("RELPOS_EDITION", "students")
    status, out, warnings = build(tmp_path, "latex", ["ch02"])
    assert status == 0, warnings
    tex = next(out.glob("*.tex")).read_text()
    questions = load_questions(data_file("ch02"))
    assert "for instructors" not in tex and "(correct)" not in tex
    assert tex.count("Answer each question, then read the answers") == 1
    asked, key = tex.split("Answers", 1)
    blocks = asked.split(r"\sphinxsetlistlabels{\alph}")[1:]  # one per question
    assert len(blocks) == len(questions)
    for question, block in zip(questions, blocks):
        items = block.split(r"\end{enumerate}")[0].split(r"\item {}")[1:]
        assert len(items) == len(question.options)
        first_why = re.findall(r"[A-Za-z]{4,}", question.options[0].why)[:3]
        assert not all(word in block for word in first_why), question.id
    entries = key.split(r"\end{enumerate}")[0].split(r"\item {}")[1:]
    assert len(entries) == len(questions)
    for question, entry in zip(questions, entries):
        opening = entry.replace(r"\sphinxAtStartPar", "").lstrip()
        correct = rf"\sphinxstylestrong{{{letter(question.correct)}}}"
        assert opening.startswith(correct), (question.id, entry[:80])
        for option in question.options:
            words = re.findall(r"[A-Za-z]{3,}", re.sub(r"\$[^$]*\$", "", option.why))
            assert all(word in entry for word in words[:6]), (question.id, words)


def test_an_unknown_self_check_fails_the_build(tmp_path):
    status, _, warnings = build(tmp_path, "html", ["ch99"])
    assert status != 0
    assert "self-check ch99" in warnings and "ch99.yml" in warnings


# -- the student edition ------------------------------------------------------------


def test_markdown_for_jupyter_holds_questions_and_collapsed_answers():
    questions = load_questions(data_file("ch03"))
    text = as_markdown(questions)
    for number, question in enumerate(questions, start=1):
        assert f"{number}. {question.question}" in text
        for index, option in enumerate(question.options):
            assert f"- ({letter(index)}) {option.answer}" in text
    answers = text.split("<details><summary>Answers</summary>")[1]
    assert answers.rstrip().endswith("</details>")
    for number, question in enumerate(questions, start=1):
        assert f"{number}. **{letter(question.correct)}**." in answers
        assert question.options[0].why in answers
    assert "{self-check}" not in text
