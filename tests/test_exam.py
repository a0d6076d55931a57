"""The exam's question bank (book/course/exam.yml) and tools/exam.py.

Every numeric answer the tool computes is recomputed here, by hand formulas or
relpos calls written apart from the bank's, for two variants; the numbers vary
between variants; every question names a learning objective that exists; the
paper holds no answer; and no page of the students' edition holds the bank or a
key (the key is written to _build/exam, outside the site's sources).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any, Callable

import nbformat
import pytest
import torch
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import editions  # noqa: E402
import exam  # noqa: E402

import relpos  # noqa: E402

SEEDS = (3, "2026-autumn")
BANK = exam.load_bank()
NUMERIC = [q for q in BANK if q["kind"] == "numeric"]


def _pairs_on_row_zero(v: dict[str, Any]) -> int:
    n, k = v["n"], v["k"]  # distance -m, m >= k, occurs n - m times
    return sum(n - m for m in range(k, n))


def _rows_read(v: dict[str, Any]) -> int:
    n, k = v["n"], v["k"]  # distances -(n - 1)..n - 1, clipped to rows 0..2k - 1
    return min(n - 1, k - 1) + min(n - 1, k) + 1


def _scale(v: dict[str, Any]) -> float:
    d = v["hidden"] // v["heads"]
    return 1 / math.sqrt(d * (1 + len(v["terms"].split("|"))))


def _needed(v: dict[str, Any]) -> int:
    slots = relpos.book.experiments.layouts.answer_slots(v["task"], v["n"])
    # x_0..x_{m-1}, SEP, then the m answer slots: slot s needs x_s (copy), at the
    # distance m + 1, or x_{m-1-s} (reverse), the last slot x_0, 2m back
    m = len(slots)
    return m + 1 if v["task"] == "copy" else 2 * m


def _exact_chance(v: dict[str, Any]) -> float:
    slots = relpos.book.experiments.layouts.answer_slots(v["task"], v["n"])
    return 16.0 ** -len(slots)


# question id -> the answer from the drawn numbers, computed apart from the bank
EXPECTED: dict[str, Callable[[dict[str, Any]], float]] = {
    "sign-of-a-pair": lambda v: v["i"] - v["j"],
    "pairs-sharing-a-distance": lambda v: max(v["n"] - v["m"], 0),
    "row-of-a-distance": lambda v: min(max(v["r"], -v["k"]), v["k"] - 1) + v["k"],
    "row-of-a-pair": lambda v: min(max(v["i"] - v["j"], -v["k"]), v["k"] - 1) + v["k"],
    "mirrored-pair": lambda v: 2 * v["k"] - (1 if v["r"] >= v["k"] else 0),
    "rows-read": _rows_read,
    "per-pair-memory": lambda v: v["n"] ** 2 * v["hidden"] * 4 / 2**20,
    "c2p-row": lambda v: min(max(v["i"] - v["j"], -v["k"]), v["k"] - 1) + v["k"],
    "scale": _scale,
    "gather-entries": lambda v: v["n"] * 2 * v["k"],
    "pairs-on-row-zero": _pairs_on_row_zero,
    "log-bucket": lambda v: int(
        relpos.log_bucket_position(torch.tensor([v["r"]]), v["b"], v["m"])[0]
    ),
    "table-rows": lambda v: 2 * (v["b"] if v["b"] > 0 else v["k"]),
    "alibi-bias": lambda v: -(2.0 ** (-8 * v["head"] / v["h"])) * abs(v["i"] - v["j"]),
    "t5-bucket": lambda v: int(relpos.schemes.t5_bucket(torch.tensor([v["r"]]))[0]),
    "sign-flip": lambda v: 2 / 2 ** v["n"],
    "exact-match-chance": _exact_chance,
    "needed-distance": _needed,
}


def _objectives() -> dict[int, list[str]]:
    data = yaml.safe_load((ROOT / "book" / "course" / "objectives.yml").read_text())
    return {ch: [o["starts"] for o in items] for ch, items in data["chapters"].items()}


def test_the_bank_spans_the_chapters_with_both_kinds():
    assert {q["chapter"] for q in BANK} == set(range(1, 15))
    assert 20 <= len(BANK) <= 35
    assert len(NUMERIC) >= 12 and len(BANK) - len(NUMERIC) >= 8


def test_every_question_names_an_objective_of_its_chapter():
    objectives = _objectives()
    for q in BANK:
        assert q["objective"] in objectives[q["chapter"]], q["id"]


def test_every_numeric_answer_calls_relpos_and_has_a_check_here():
    assert {q["id"] for q in NUMERIC} == set(EXPECTED)
    for q in NUMERIC:
        assert "relpos." in q["answer"], q["id"]


@pytest.mark.parametrize("seed", SEEDS)
def test_every_numeric_answer_is_recomputed(seed):
    for d in exam.variant(seed, BANK):
        if d.question["kind"] != "numeric":
            assert d.answer is None
            continue
        expected = EXPECTED[d.question["id"]](d.values)
        assert d.answer == pytest.approx(expected, rel=1e-6), (d.question, d.values)


def test_the_numbers_differ_between_variants():
    first, second = (exam.variant(seed, BANK) for seed in SEEDS)
    numeric = [(a, b) for a, b in zip(first, second) if a.question["kind"] == "numeric"]
    drawn = sum(a.values != b.values for a, b in numeric)
    answered = sum(a.answer != b.answer for a, b in numeric)
    assert drawn >= 0.8 * len(numeric)
    assert answered >= 2 / 3 * len(numeric)
    assert exam.variant(SEEDS[0], BANK) == first  # and a variant is reproducible


def test_a_draw_meets_its_condition():
    q = next(q for q in BANK if q["id"] == "table-rows")
    for seed in range(40):
        v = exam.draw(q, seed)
        assert v["b"] == -1 or (v["b"] <= v["k"] and v["k"] > v["b"] // 2 + 1)
    impossible = {**q, "where": "k < 0"}
    with pytest.raises(ValueError, match="table-rows"):
        exam.draw(impossible, 0)


def test_the_paper_holds_no_answer():
    sentinel = 987654.321
    drawn = [
        exam.Drawn(d.question, d.values, None if d.answer is None else sentinel)
        for d in exam.variant(SEEDS[0], BANK)
    ]
    paper = exam.paper_markdown(drawn, SEEDS[0])
    key = exam.key_markdown(drawn, SEEDS[0])
    assert exam.format_number(sentinel) in key
    assert exam.format_number(sentinel) not in paper
    assert "Answer" not in paper and "Rubric" not in paper
    for q in BANK:
        if q["kind"] == "written":
            assert " ".join(q["model_answer"].split())[:60] not in paper
            assert all(item not in paper for item in q["rubric"])
            assert " ".join(q["model_answer"].split()) in key


def test_write_exam_writes_outside_the_book(tmp_path):
    paper, key = exam.write_exam("2026-autumn", tmp_path)
    assert paper.read_text().startswith("# Exam")
    assert "instructors only" in key.read_text()
    with pytest.raises(ValueError, match="outside book"):
        exam.write_exam(1, ROOT / "book" / "course" / "keys")
    assert exam.OUTPUT.is_relative_to(ROOT / "_build")


def test_seeds():
    assert exam.seed_of(5) == exam.seed_of("5") == 5
    assert exam.seed_of("2026-autumn") == exam.seed_of("2026-autumn") != 0
    assert exam.seed_of("2026-autumn") != exam.seed_of("2027-autumn")
    with pytest.raises(ValueError, match="seed"):
        exam.seed_of("autumn term")
    with pytest.raises(ValueError, match="seed"):
        exam.seed_of(-1)
    with pytest.raises(TypeError, match="seed"):
        exam.seed_of(True)


def test_an_answer_is_one_plain_number():
    assert exam.as_number(torch.tensor([7])) == 7
    assert isinstance(exam.as_number(4.0), int)
    assert exam.format_number(2 / 3) == "0.6667"
    with pytest.raises(TypeError, match="one number"):
        exam.as_number(torch.tensor([1, 2]))
    with pytest.raises(TypeError, match="number"):
        exam.as_number("3")


def test_a_bad_bank_entry_is_refused(tmp_path):
    bad = {"id": "x", "chapter": 1, "objective": "o", "points": 1,
           "kind": "written", "ask": "Why?", "model_answer": "So.", "rubric": ["a"]}
    path = tmp_path / "bank.yml"
    path.write_text(yaml.safe_dump({"questions": [bad]}))
    with pytest.raises(ValueError, match="rubric"):
        exam.load_bank(path)
    numeric = {**bad, "kind": "numeric", "ask": "k = {k}?", "params": {"k": [1]},
               "answer": "relpos.delta(0, k)"}
    path.write_text(yaml.safe_dump({"questions": [numeric]}))
    with pytest.raises(ValueError, match="unit"):
        exam.load_bank(path)


def _toc_files(entries: list[dict[str, Any]]) -> list[str]:
    found = []
    for entry in entries:
        if "file" in entry:
            found.append(entry["file"])
        found += _toc_files(entry.get("chapters", []) + entry.get("sections", []))
    return found


def test_the_students_edition_never_holds_the_bank_or_a_key():
    toc = editions.students_toc(yaml.safe_load((ROOT / "_toc.yml").read_text()))
    pages = [toc["root"], *_toc_files(toc["parts"])]
    assert "book/instructors" not in pages
    for page in pages:
        path = next(ROOT.glob(f"{page}.*"))
        text = path.read_text()
        if path.suffix == ".ipynb":
            cells = nbformat.reads(text, as_version=4).cells
            text = "\n".join(c.source for c in cells)
        for word in ("exam.yml", "_build/exam", "tools/exam.py", "make exam"):
            assert word not in text, (page, word)
    # the instructors' page, left out of the students' edition, says how to build it
    assert "make exam" in (ROOT / "book" / "instructors.md").read_text()
    assert "book/instructors" in editions.INSTRUCTOR_PAGES
    # no extension renders the bank into a page; the key's folder is no source
    for extension in (ROOT / "book" / "_ext").glob("*.py"):
        assert "exam.yml" not in extension.read_text(), extension.name
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["only_build_toc_files"] is True
    assert "_build/*" in config["exclude_patterns"]
