"""The self-check questions of the chapters, one YAML file per chapter.

``book/selfcheck/chNN.yml`` holds a few concept questions on chapter NN, each with
several options, exactly one of them correct, and a one-sentence explanation of
every option::

    chapter: 2
    questions:
      - id: row-of-plus-two            # a slug, unique in the file
        question: With $k = 3$, which table row does the distance $+2$ read?
        options:
          - answer: Row 5, the last row.
            correct: true
            why: One sentence on why this answer is right.
          - answer: Row 2.
            why: One sentence on what this answer gets wrong.

Texts are MyST inline Markdown (math in ``$...$``, code in backticks).
:func:`load_questions` reads and checks a file; ``self_check.py`` (the Sphinx
directive) renders it on the site and in print, and :func:`as_markdown` writes it
for Jupyter (the student edition). This module needs only PyYAML.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

BOOK = Path(__file__).resolve().parent.parent
DATA = BOOK / "selfcheck"
# A self-check's name: ``ch`` and the chapter's two digits, also its file's stem.
NAME = re.compile(r"^ch(?P<chapter>\d{2})$")
SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
QUESTIONS = (3, 5)  # the fewest and the most questions of a chapter
OPTIONS = (3, 5)  # the fewest and the most options of a question


@dataclass(frozen=True)
class Option:
    """One answer to a question: its text, whether it is right, and why."""

    answer: str
    why: str
    correct: bool


@dataclass(frozen=True)
class Question:
    """One question: its slug, its text and its options."""

    id: str
    question: str
    options: tuple[Option, ...]

    @property
    def correct(self) -> int:
        """The position of the correct option (0 for the first)."""
        return next(i for i, option in enumerate(self.options) if option.correct)


def data_file(name: str, directory: Path = DATA) -> Path:
    """The file of the self-check ``name`` (``"ch03"``) in ``directory``."""
    if not isinstance(name, str) or NAME.match(name) is None:
        raise ValueError(f"name must be 'ch' and two digits ('ch03'), got {name!r}")
    return Path(directory) / f"{name}.yml"


def _text(value: Any, where: str, key: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}: '{key}' must be a non-empty string, got {value!r}")
    return value.strip()


def _keys(entry: Any, where: str, required: set[str], allowed: set[str]) -> dict:
    if not isinstance(entry, dict):
        raise ValueError(f"{where} must be a mapping, got {type(entry).__name__}")
    missing = required - set(entry)
    unknown = set(entry) - allowed
    if missing or unknown:
        raise ValueError(
            f"{where}: keys {sorted(allowed)} accepted, {sorted(required)} required;"
            f" missing {sorted(missing)}, unknown {sorted(unknown)}"
        )
    return entry


def _option(entry: Any, where: str) -> Option:
    entry = _keys(entry, where, {"answer", "why"}, {"answer", "why", "correct"})
    correct = entry.get("correct", False)
    if not isinstance(correct, bool):
        raise ValueError(f"{where}: 'correct' must be true or false, got {correct!r}")
    return Option(
        answer=_text(entry["answer"], where, "answer"),
        why=_text(entry["why"], where, "why"),
        correct=correct,
    )


def _question(entry: Any, where: str) -> Question:
    keys = {"id", "question", "options"}
    entry = _keys(entry, where, keys, keys)
    slug = entry["id"]
    if not isinstance(slug, str) or SLUG.match(slug) is None:
        raise ValueError(f"{where}: 'id' must be a lowercase slug, got {slug!r}")
    where = f"{where} ({slug})"
    options = entry["options"]
    low, high = OPTIONS
    if not isinstance(options, list) or not low <= len(options) <= high:
        raise ValueError(f"{where}: 'options' must be a list of {low} to {high}")
    found = tuple(
        _option(option, f"{where}, option {number}")
        for number, option in enumerate(options, start=1)
    )
    right = sum(option.correct for option in found)
    if right != 1:
        raise ValueError(
            f"{where}: exactly one option must have 'correct: true', found {right}"
        )
    return Question(slug, _text(entry["question"], where, "question"), found)


def load_questions(path: Path) -> list[Question]:
    """The questions of one self-check file, checked against the schema above.

    Raises ``ValueError`` naming the file, the question and the key at fault.
    """
    path = Path(path)
    match = NAME.match(path.stem)
    if match is None:
        raise ValueError(f"{path.name}: a self-check file is named like 'ch03.yml'")
    data = _keys(
        yaml.safe_load(path.read_text(encoding="utf-8")),
        path.name,
        {"chapter", "questions"},
        {"chapter", "questions"},
    )
    if data["chapter"] != int(match["chapter"]):
        raise ValueError(
            f"{path.name}: 'chapter' must be {int(match['chapter'])}, the file's, "
            f"got {data['chapter']!r}"
        )
    entries = data["questions"]
    low, high = QUESTIONS
    if not isinstance(entries, list) or not low <= len(entries) <= high:
        raise ValueError(f"{path.name}: 'questions' must be a list of {low} to {high}")
    questions = [
        _question(entry, f"{path.name}, question {number}")
        for number, entry in enumerate(entries, start=1)
    ]
    slugs = [question.id for question in questions]
    if len(set(slugs)) != len(slugs):
        raise ValueError(f"{path.name}: question ids must be unique, got {slugs}")
    return questions


def letter(index: int) -> str:
    """The letter of an option: ``a`` for the first."""
    return "abcdefghijklmnopqrstuvwxyz"[index]


def as_markdown(questions: list[Question]) -> str:
    """The questions as Markdown for Jupyter: each with its lettered options, and
    the answers with their explanations in a collapsed ``<details>`` at the end."""
    lines = ["Answer each question, then open the answers below."]
    answers = []
    for number, question in enumerate(questions, start=1):
        lines += ["", f"{number}. {question.question}", ""]
        lines += [
            f"   - ({letter(i)}) {option.answer}"
            for i, option in enumerate(question.options)
        ]
        why = " ".join(
            f"({letter(i)}) {option.why}" for i, option in enumerate(question.options)
        )
        answers.append(f"{number}. **{letter(question.correct)}**. {why}")
    body = "\n".join(answers)
    lines += ["", "<details><summary>Answers</summary>", "", body, "", "</details>"]
    return "\n".join(lines)
