"""Chapter 2's live figure: the browser's i - j and delta equal relpos's, at every n, k.

The chart's own expressions are evaluated by Vega (vl-convert) over the whole
grid of slider settings and compared with ``relpos.relative_positions`` and
``relpos.delta``; the spec is deterministic, small, and refuses bad settings.
"""

from __future__ import annotations

import json
import re

import pytest
import torch

pytest.importorskip("vl_convert")

import relpos  # noqa: E402
from relpos.book.interactive import delta as live  # noqa: E402
from relpos.book.interactive import evaluate  # noqa: E402


def _matrix(rows, field: str, n: int) -> torch.Tensor:
    out = torch.full((n, n), -999, dtype=torch.long)
    for row in rows:
        out[int(row["i"]), int(row["j"])] = int(row[field])
    return out


@pytest.fixture(scope="module")
def chart():
    return live.delta_chart()


# Every n at a small, the chapter's and the largest k; every k at a short, a
# middling and the longest n.
GRID = sorted(
    {(n, k) for n in range(2, 17) for k in (1, 3, 8)}
    | {(n, k) for n in (2, 7, 16) for k in range(1, 9)}
)


def test_distance_and_delta_equal_relpos_over_the_slider_grid(chart) -> None:
    for n, k in GRID:
        drawn = evaluate(chart, n=n, k=k)
        expected_r = relpos.relative_positions(n)
        expected_delta = relpos.delta(expected_r, k)
        for mark in ("distance_marks", "delta_marks"):
            rows = drawn[mark]
            assert len(rows) == n * n, (mark, n, k)
            assert torch.equal(_matrix(rows, "i - j", n), expected_r), (n, k)
            assert torch.equal(_matrix(rows, "delta(i, j)", n), expected_delta)
        colour = _matrix(drawn["delta_marks"], "table row", n)
        assert torch.equal(colour, expected_delta), (n, k)


@pytest.mark.parametrize("n, k", [(2, 1), (2, 5), (5, 2), (8, 3), (8, 8), (16, 3)])
def test_distinct_delta_values_drawn(chart, n: int, k: int) -> None:
    rows = evaluate(chart, n=n, k=k)["delta_marks"]
    assert len({row["delta(i, j)"] for row in rows}) == min(2 * k, 2 * n - 1)


def test_the_chosen_cell_prints_its_values_and_stays_in_the_matrix(chart) -> None:
    for n, k, qi, kj in [(8, 3, 3, 1), (8, 3, 0, 7), (4, 2, 15, 9), (16, 8, 15, 0)]:
        drawn = evaluate(chart, n=n, k=k, qi=qi, kj=kj)
        i, j = min(qi, n - 1), min(kj, n - 1)
        (line,) = drawn["chosen_marks"]
        assert (line["i"], line["j"], line["i - j"]) == (i, j, i - j)
        assert line["delta(i, j)"] == relpos.delta(i - j, k)
        assert f"table row delta(i, j) = {relpos.delta(i - j, k)}" in line["text"]
        for mark in ("distance_marks", "delta_marks"):
            outlined = [row for row in drawn[mark] if row["chosen"] == 1]
            assert [(r["i"], r["j"]) for r in outlined] == [(i, j)]


def test_the_json_is_deterministic_and_small() -> None:
    first = live.delta_chart().to_dict()
    text = json.dumps(first, sort_keys=True)
    assert first == live.delta_chart().to_dict()
    assert not re.search(r"\b(param|view)_\d+", text), "an unnamed param or view"
    assert len(text) < 20_000
    figure = live.delta_figure()
    assert len(figure.html()) < 100_000
    names = {param["name"] for param in first["params"]}
    assert names == {"hover", "n", "k", "qi", "kj"}


def test_the_still_is_the_chapter_heatmap() -> None:
    figure = live.delta_figure(8, 3)
    assert figure.name == "delta" and "k = 3" in figure.alt
    # the window [-3, 2]: the edge rows start 3 ahead and 2 behind, not symmetrically
    assert "key 3 or more tokens ahead reads row 0" in figure.alt
    assert "key 2 or more tokens behind reads row 5" in figure.alt
    assert figure.png.startswith(b"\x89PNG")


@pytest.mark.parametrize(
    "kwargs, error, word",
    [
        ({"n": 1}, ValueError, "n"),
        ({"n": 17}, ValueError, "max_n"),
        ({"k": 0}, ValueError, "k"),
        ({"k": 9}, ValueError, "max_k"),
        ({"n": 2.5}, TypeError, "n"),
        ({"max_n": 40, "n": 8}, ValueError, "max_n"),
        ({"k": "3"}, TypeError, "k"),
    ],
)
def test_bad_input_names_the_argument(kwargs, error, word) -> None:
    with pytest.raises(error, match=word):
        live.delta_chart(**kwargs)
