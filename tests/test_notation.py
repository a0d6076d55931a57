r"""One notation: the introduction's table, and the math of every page held to it.

book/intro.md's "Notation and shapes" table lists the symbols the book uses. These
tests read that table and the math (``$...$`` and ``$$...$$``) of every page of
_toc.yml, and check four families of symbols against the table:

- delta: a pair's row is written with the pair, as the table writes it,
  ``\delta(i, j)``; never of one expression (``\delta(i - j)``, ``\delta(r)``).
- the table and its projections: P, Q and K carry a subscript only where the
  table lists one (``P_q``, ``P_k``) or where it names a row (``Q_i``, ``K_2``),
  and a superscript only as a transpose; the paper's ``K^r``, ``Q^c`` and the
  ``P^k`` of older pages are drift.
- the span: the table's span is ``k``, and ``K`` is the content keys, never a
  count (``2K``, ``K - 1``, ``K = 256``).
- the distance: ``r`` is a distance, never the axis of the table's rows
  (``(h, r, d)``, ``0 \le r < 2k``, "row $r$").
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
INTRO = ROOT / "book" / "intro.md"
MATH = re.compile(r"\$\$(.+?)\$\$|\$([^$\n]+?)\$", re.DOTALL)
# A decorated P, Q or K: its letter, ^ or _, and what follows (a group, a command,
# or one character).
DECORATED = re.compile(
    r"(?<![A-Za-z\\^_])([PQK])\s*([\^_])\s*(\{[^{}]*\}|\\[A-Za-z]+|[A-Za-z0-9])"
)
TRANSPOSE = {r"\top", "{\\top}", "T", "{T}"}
# K used as a number: 2K, K - 1, K/2, K = 256, -K, \pm K, \lfloor K.
K_AS_COUNT = re.compile(
    r"\d\s*K(?![A-Za-z_^])"
    r"|(?<![A-Za-z\\])K\s*(?:[-+/]|=)\s*\d"
    r"|(?:^|[(\[,=])\s*-\s*K(?![A-Za-z_^])"
    r"|(?:\\pm|\\lfloor)\s*K(?![A-Za-z_^])"
)
# A tuple of shape letters or sizes, as in (h, r, d) or [a, r].
TUPLE = re.compile(r"[(\[]\s*((?:[a-z]|2k|\d+)(?:\s*,\s*(?:[a-z]|2k|\d+))+)\s*[)\]]")
AXES = {"b", "h", "i", "j", "d", "n", "a", "c"}
ROW_RANGE = re.compile(r"\br\s*<\s*2\s*k\b")
ROW_R_IN_PROSE = re.compile(r"\brows?\s+\$r\$")


def notation() -> dict[str, str]:
    """The introduction's table: each symbol (math or code) -> its meaning."""
    text = INTRO.read_text()
    section = text[text.index("(notation)=") :]
    section = section[: section.index("\n## ", section.index("## ") + 3)]
    table = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or cells[0] in ("symbol", "---"):
            continue
        for symbol in re.findall(r"\$([^$]+)\$|`([^`]+)`", cells[0]):
            table[(symbol[0] or symbol[1]).strip()] = cells[1]
    return table


def delta_arity(symbol: str) -> int:
    """The number of arguments of ``\\delta(...)`` as ``symbol`` writes it."""
    inside = symbol[symbol.index("(") + 1 : symbol.rindex(")")]
    return inside.count(",") + 1


def _arguments(span: str, opening: int) -> str:
    """The text between the parenthesis at ``opening`` and its match."""
    depth = 0
    for at in range(opening, len(span)):
        depth += {"(": 1, ")": -1}.get(span[at], 0)
        if depth == 0:
            return span[opening + 1 : at]
    return span[opening + 1 :]


def _top_level_commas(text: str) -> int:
    depth, commas = 0, 0
    for char in text:
        depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(char, 0)
        commas += char == "," and depth == 0
    return commas


def drifts(markdown: str, table: dict[str, str]) -> list[str]:
    """Every use of a symbol in ``markdown`` that the notation table does not allow."""
    arity = delta_arity(next(s for s in table if s.startswith(r"\delta(")))
    listed = {re.sub(r"\s+", "", s) for s in table}
    found = []
    for match in MATH.finditer(markdown):
        span = match.group(1) or match.group(2)
        for call in re.finditer(r"\\delta'?\s*\(", span):
            inside = _arguments(span, call.end() - 1)
            if _top_level_commas(inside) + 1 != arity:
                found.append(f"delta of {arity} arguments, not \\delta({inside})")
        for letter, mark, what in DECORATED.findall(span):
            symbol = re.sub(r"\s+", "", f"{letter}{mark}{what}")
            plain = what.strip("{}")
            if mark == "^" and what in TRANSPOSE:
                continue
            row = plain in ("i", "j") or plain.isdigit()  # Q_i, K_2: a row
            if mark == "_" and (symbol in listed or row):
                continue
            found.append(f"{symbol} is not in the notation table")
        if K_AS_COUNT.search(span):
            found.append(f"K as a count (the span is k): {span.strip()[:80]}")
        for items in TUPLE.findall(span):
            letters = {item.strip() for item in items.split(",")}
            if "r" in letters and letters & AXES:
                found.append(f"r as the table's row axis: ({items})")
        if ROW_RANGE.search(span):
            found.append(f"r as a table row: {span.strip()[:80]}")
    rows = ROW_R_IN_PROSE.finditer(markdown)
    found += [f"r as a table row: {m.group(0)}" for m in rows]
    return found


def pages() -> list[Path]:
    """Every page of _toc.yml: the root, the chapters, the appendices."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    entries = [toc["root"]] + [
        chapter["file"] for part in toc["parts"] for chapter in part["chapters"]
    ]
    found = []
    for entry in entries:
        found += [p for s in (".ipynb", ".md") if (p := ROOT / f"{entry}{s}").exists()]
    return found


def markdown_of(path: Path) -> str:
    if path.suffix == ".md":
        return path.read_text()
    notebook = nbformat.read(path, as_version=4)
    return "\n\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")


def test_the_table_lists_each_family():
    table = notation()
    assert delta_arity(next(s for s in table if s.startswith(r"\delta("))) == 2
    assert {"P", "P_q", "P_k", "k", "r", "K"} <= set(table)
    assert table["r"].startswith("a distance")
    assert "span" in table["k"] and "content" in table["K"]


@pytest.mark.parametrize("path", pages(), ids=lambda p: p.stem)
def test_every_page_uses_the_table_notation(path):
    found = drifts(markdown_of(path), notation())
    assert not found, f"{path.name}:\n" + "\n".join(found)


# The drifts of issue 27, as they stood in the chapters, and each one put right.
DRIFTED = [
    r"the row $\delta(i - j)$",
    r"$\delta(r) = \operatorname{clamp}(r, -k, k - 1) + k$",
    r"$\delta(a - c) = \mathrm{clamp}(\text{rel} + k)$",
    r"$Q^c_i \cdot K^r_{\delta(i,j)} + K^c_j \cdot Q^r_{\delta(j,i)}$",
    r"$\text{c2p}[i, j] = Q_i \cdot P^k_{\delta(i, j)}$",
    r"$K {P^q}^\top$",
    r"the table has $2K$ rows",
    r"$\operatorname{clamp}(\operatorname{bucket}(r), -K, K - 1) + K$",
    r"$K = 256$ and $M = 512$",
    r"$|r| \le \lfloor K/2 \rfloor$",
    r"position keys $(h, r, d)$",
    r"whose entry $[a, r]$ is key $a$",
    r"a row of the table, $0 \le r < 2k$",
    r"each coordinate of row $r$ receives",
]
RIGHT = [
    r"the row $\delta(i, j)$",
    r"$\delta(i, j) = \operatorname{clamp}(i - j, -k, k - 1) + k$",
    r"$\delta(a, c)$, which is $\mathrm{clamp}(\text{rel}[a, c], -k, k - 1) + k$",
    r"$Q_i \cdot P_k[\delta(i, j)] + K_j \cdot P_q[\delta(j, i)]$",
    r"$\text{c2p}[i, j] = Q_i \cdot P_k[\delta(i, j)]$",
    r"$K P_q^\top$ and $Q K^\top$ and $Q_2 \cdot K_1$",
    r"the table has $2k$ rows",
    r"$\operatorname{clamp}(\operatorname{bucket}(r), -k, k - 1) + k$",
    r"$k = 256$ and $M = 512$, $K = H W_k$",
    r"$|r| \le \lfloor k/2 \rfloor$",
    r"position keys $(h, 2k, d)$ and the pair $(i, j)$",
    r"whose row $a$ holds key $a$, and $r(i, j) = i - j$",
    r"a row of the table, from $0$ to $2k - 1$; a distance $|r| < k$",
    r"each coordinate of a row receives",
]


@pytest.mark.parametrize("drifted, right", list(zip(DRIFTED, RIGHT)))
def test_the_check_catches_each_drift_of_the_issue(drifted, right):
    table = notation()
    assert drifts(drifted, table), drifted
    assert drifts(right, table) == [], right
