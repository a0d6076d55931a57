"""Draw an exam from the question bank: the paper and its answer key.

Usage: .venv/bin/python tools/exam.py SEED [--output DIR]   (``make exam SEED=...``)

SEED names the variant: an int (``3``) or a term's name (``2026-autumn``). Each
numeric question of book/course/exam.yml draws its parameters from a generator
seeded with a SHA-256 hash of the seed and the question's id (so adding a
question leaves the others' numbers alone), redrawing until its ``where`` holds;
its answer is its ``answer`` expression, which calls relpos, evaluated on the
drawn numbers. No answer is typed by hand.

Two Markdown files are written to DIR (default ``_build/exam``, outside book/, so
no edition of the site holds them):

- ``exam-SEED.md``: the paper, the questions with the drawn numbers and points;
- ``exam-SEED-key.md``: the answer key, each numeric answer as computed, each
  written question's model answer and rubric.

The key is for the instructors: keep it out of the course's public copy.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import random
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import yaml

import relpos
import relpos.book.experiments.layouts  # noqa: F401 (named by answer expressions)
import relpos.book.experiments.tasks  # noqa: F401
import relpos.book.stats  # noqa: F401
import relpos.schemes  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
BANK = ROOT / "book" / "course" / "exam.yml"
OUTPUT = ROOT / "_build" / "exam"
KINDS = ("numeric", "written")
_TERM = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_FIELDS = {"id", "chapter", "objective", "points", "kind", "ask"}
# What an answer or a ``where`` expression may call besides relpos, torch, math.
_BUILTINS = {"abs": abs, "int": int, "float": float, "len": len, "max": max,
             "min": min, "range": range, "round": round, "sum": sum}
_TRIES = 1000


@dataclass(frozen=True)
class Drawn:
    """One question of a variant: its bank entry, the drawn numbers and, for a
    numeric question, the computed answer (``None`` for a written one)."""

    question: dict[str, Any]
    values: dict[str, Any]
    answer: int | float | None


def load_bank(path: Path = BANK) -> list[dict[str, Any]]:
    """The bank's questions, each checked for the fields its kind needs.

    Raises:
        ValueError: a question lacks a field, repeats an id, has an unknown kind,
            a rubric not of 2-3 points, or a {name} in ``ask`` it does not draw.
    """
    questions = yaml.safe_load(Path(path).read_text())["questions"]
    seen: set[str] = set()
    for q in questions:
        name = q.get("id", "?")
        missing = _FIELDS - set(q)
        if missing:
            raise ValueError(f"question {name}: missing {sorted(missing)}")
        if name in seen:
            raise ValueError(f"question {name}: id used twice")
        seen.add(name)
        if q["kind"] not in KINDS:
            raise ValueError(f"question {name}: kind must be one of {KINDS}")
        asked = set(re.findall(r"\{(\w+)\}", q["ask"]))
        if q["kind"] == "numeric":
            if not q.get("params") or "answer" not in q or "unit" not in q:
                raise ValueError(
                    f"question {name}: numeric needs params, answer and unit"
                )
            if asked - set(q["params"]):
                raise ValueError(f"question {name}: ask names {asked} not drawn")
        elif asked or "model_answer" not in q or not 2 <= len(q.get("rubric", [])) <= 3:
            raise ValueError(
                f"question {name}: written needs model_answer, a rubric of 2-3 "
                "points and no {parameter} in ask"
            )
    return questions


def seed_of(seed: int | str) -> int:
    """The integer seed of a variant: an int >= 0 as it is, a term's name (letters,
    digits and ``._-``) as a SHA-256 hash, a string of digits as its int.

    Raises:
        TypeError: ``seed`` is neither an int nor a str.
        ValueError: a negative int, or a name with other characters.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, str)):
        raise TypeError(f"seed must be an int or a term's name (str), got {seed!r}")
    if isinstance(seed, str) and seed.isdigit():
        seed = int(seed)
    if isinstance(seed, int):
        if seed < 0:
            raise ValueError(f"seed must be an int >= 0, got {seed}")
        return seed
    if not _TERM.fullmatch(seed):
        raise ValueError(
            "seed must be an int or a term's name of letters, digits and ._- "
            f"(such as 2026-autumn), got {seed!r}"
        )
    return int(hashlib.sha256(seed.encode()).hexdigest()[:16], 16)


def _evaluate(expression: str, values: dict[str, Any]) -> Any:
    space = {"__builtins__": _BUILTINS, "relpos": relpos, "torch": torch,
             "math": math, **values}
    return eval(expression, space)  # the bank is the course's own, committed file


def as_number(result: Any) -> int | float:
    """A computed answer as a plain number: a one-element tensor's item, an
    integral float as an int.

    Raises:
        TypeError: ``result`` is not a number or a one-element tensor.
    """
    if isinstance(result, torch.Tensor):
        if result.numel() != 1:
            shape = tuple(result.shape)
            raise TypeError(f"answer must be one number, got shape {shape}")
        result = result.item()
    if isinstance(result, bool) or not isinstance(result, (int, float)):
        raise TypeError(f"answer must be a number, got {result!r}")
    if isinstance(result, float) and result.is_integer() and abs(result) < 2**53:
        return int(result)
    return result


def draw(question: dict[str, Any], seed: int) -> dict[str, Any]:
    """The parameters of ``question`` in variant ``seed`` (``{}`` if none).

    Raises:
        ValueError: no draw meets the question's ``where`` in 1000 tries.
    """
    params = question.get("params") or {}
    if not params:
        return {}
    digest = hashlib.sha256(f"{seed}\0{question['id']}".encode()).hexdigest()
    rng = random.Random(digest)
    for _ in range(_TRIES):
        values = {name: rng.choice(choices) for name, choices in params.items()}
        if _evaluate(question.get("where", "True"), values):
            return values
    raise ValueError(f"question {question['id']}: no draw meets {question['where']!r}")


def variant(seed: int | str, bank: list[dict[str, Any]] | None = None) -> list[Drawn]:
    """Every question of the bank in variant ``seed``, answers computed."""
    number = seed_of(seed)
    drawn = []
    for q in load_bank() if bank is None else bank:
        values = draw(q, number)
        answer = None
        if q["kind"] == "numeric":
            answer = as_number(_evaluate(q["answer"], values))
        drawn.append(Drawn(q, values, answer))
    return drawn


def format_number(value: int | float) -> str:
    """``value`` as the key prints it: an int whole, a float to 4 significant digits."""
    return str(value) if isinstance(value, int) else f"{value:.4g}"


def _asked(d: Drawn) -> str:
    return " ".join(d.question["ask"].format(**d.values).split())


def _heading(d: Drawn, number: int) -> str:
    q, points = d.question, d.question["points"]
    unit = "point" if points == 1 else "points"
    return f"**{number}.** (chapter {q['chapter']}, {points} {unit})"


def paper_markdown(drawn: list[Drawn], seed: int | str) -> str:
    """The paper: each question with its drawn numbers and points, no answer."""
    total = sum(d.question["points"] for d in drawn)
    lines = [f"# Exam: relative positions, variant {seed}", "",
             f"{len(drawn)} questions, {total} points. Distances are i - j, query "
             "minus key. Give numbers exactly where you can.", ""]
    for number, d in enumerate(drawn, 1):
        lines += [f"{_heading(d, number)} {_asked(d)}", ""]
    return "\n".join(lines)


def key_markdown(drawn: list[Drawn], seed: int | str) -> str:
    """The answer key: each numeric answer as relpos computes it, with its unit,
    and each written question's model answer and rubric."""
    lines = [f"# Answer key: exam variant {seed} (instructors only)", "",
             "Numeric answers are computed by relpos from the drawn numbers "
             "(book/course/exam.yml, `answer`).", ""]
    for number, d in enumerate(drawn, 1):
        q = d.question
        lines += [f"{_heading(d, number)} {_asked(d)}", "",
                  f"Objective: {q['objective']} ... (`{q['id']}`)", ""]
        if q["kind"] == "numeric":
            lines += [f"Answer: **{format_number(d.answer)}** ({q['unit']})", ""]
        else:
            lines += [f"Model answer: {' '.join(q['model_answer'].split())}", "",
                      "Rubric:", *[f"- {item}" for item in q["rubric"]], ""]
    return "\n".join(lines)


def write_exam(seed: int | str, output: Path = OUTPUT) -> tuple[Path, Path]:
    """Write variant ``seed``'s paper and key into ``output``; return their paths.

    Raises:
        ValueError: ``output`` lies inside book/ (the site's sources).
    """
    output = Path(output).resolve()
    if output.is_relative_to(ROOT / "book"):
        raise ValueError(f"output must lie outside book/ (the site), got {output}")
    seed_of(seed)  # a bad seed stops before anything is written
    drawn = variant(seed)
    output.mkdir(parents=True, exist_ok=True)
    paper, key = output / f"exam-{seed}.md", output / f"exam-{seed}-key.md"
    paper.write_text(paper_markdown(drawn, seed))
    key.write_text(key_markdown(drawn, seed))
    return paper, key


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("seed", help="the variant: an int or a term's name")
    parser.add_argument("--output", type=Path, default=OUTPUT, help="folder")
    args = parser.parse_args(argv)
    try:
        paper, key = write_exam(args.seed, args.output)
    except (TypeError, ValueError) as error:
        parser.error(str(error))
    except OSError as error:  # --output names a file, or a folder it cannot make
        parser.error(f"argument --output: {error}")
    print(f"exam variant {args.seed}: {paper} and {key}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
