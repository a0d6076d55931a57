"""The formula figures on the built site: chapter 2's delta, chapter 6's log buckets.

Each page is opened offline in headless Chromium; every control is moved from
the keyboard and what the figure draws (its marks' aria-labels) is compared with
relpos: the cells and distinct table rows of the delta matrices at each n and k,
the buckets at each bucket count and maximum position. (Without JavaScript:
tests/site/test_interactive.py, for every figure.)
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _interactive import (  # noqa: E402
    choose,
    drawn,
    open_offline,
    settle,
    slide_to,
    wait_live,
)

import relpos  # noqa: E402

DELTA_PAGE = "book/02_delta.html"
BUCKETS_PAGE = "book/06_long_sequences.html"


def _delta_matrix(rows, field: str, n: int) -> torch.Tensor:
    out = torch.full((n, n), -999, dtype=torch.long)
    for row in rows:
        out[int(row["i"]), int(row["j"])] = int(row[field])
    return out


def test_delta_figure_follows_n_and_k(server, browser) -> None:
    page, refused, errors = open_offline(browser, server, DELTA_PAGE)
    wait_live(page, "delta")
    assert len(drawn(page, "delta", "delta_marks")) == 8 * 8  # the chapter's n = 8
    for n, k in [(5, 2), (12, 6), (3, 8), (16, 1)]:
        slide_to(page, "delta", "sequence length n", n)
        slide_to(page, "delta", "span k", k)
        r = relpos.relative_positions(n)
        for mark in ("distance_marks", "delta_marks"):
            rows = drawn(page, "delta", mark)
            assert len(rows) == n * n, (mark, n, k)
            assert torch.equal(_delta_matrix(rows, "i - j", n), r)
            delta = _delta_matrix(rows, "delta(i, j)", n)
            assert torch.equal(delta, relpos.delta(r, k))
        distinct = {row["delta(i, j)"] for row in drawn(page, "delta", "delta_marks")}
        assert len(distinct) == min(2 * k, 2 * n - 1), (n, k)
        title = page.locator("figure#figure-delta svg").first.text_content()
        assert f"k = {k}" in title
    # The keyboard path to what hover shows: sliders choose the cell, text prints it.
    slide_to(page, "delta", "query i", 9)
    slide_to(page, "delta", "key j", 2)
    (line,) = drawn(page, "delta", "chosen_marks")
    assert (line["i"], line["j"], line["i - j"]) == (9, 2, 7)
    assert line["delta(i, j)"] == relpos.delta(7, 1)
    # Hover chooses a cell too.
    cell = page.locator(
        "figure#figure-delta svg g.delta_marks [aria-label^='key position j: 4; "
        "query position i: 11;']"
    )
    cell.hover()
    settle(page, "delta")
    (line,) = drawn(page, "delta", "chosen_marks")
    assert (line["i"], line["j"], line["i - j"]) == (11, 4, 7)
    assert not refused, refused
    assert not errors, errors


def test_buckets_figure_follows_the_bucket_count_and_maximum_position(
    server, browser
) -> None:
    page, refused, errors = open_offline(browser, server, BUCKETS_PAGE)
    wait_live(page, "buckets")
    seen = set()
    for size, top in [(256, 512), (128, 512), (128, 1024), (16, 64), (4, 8)]:
        choose(page, "buckets", "buckets K", str(size))
        choose(page, "buckets", "max position M", str(top))
        # Vega appends the items a new setting adds: order them by distance.
        rows = sorted(drawn(page, "buckets", "buckets_marks"), key=lambda x: x["i - j"])
        r = torch.tensor([int(row["i - j"]) for row in rows])
        assert torch.equal(r, torch.arange(-2 * top, 2 * top + 1)), (size, top)
        bucket = torch.tensor([int(row["bucket"]) for row in rows])
        expected = relpos.log_bucket_position(r, size, top)
        assert torch.equal(bucket, expected), (size, top)
        assert bucket.max().item() == expected.max().item()
        assert len(set(bucket.tolist())) == len(set(expected.tolist()))
        seen.add((bucket.max().item(), len(set(bucket.tolist()))))
        title = page.locator("figure#figure-buckets svg").first.text_content()
        assert f"K = {size}, M = {top}" in title
    assert len(seen) == 5
    slide_to(page, "buckets", "distance i - j", -2040)
    (line,) = drawn(page, "buckets", "chosen_marks")
    expected = relpos.log_bucket_position(torch.tensor([-2040]), 4, 8).item()
    assert (line["i - j"], line["bucket"]) == (-2040, expected)
    # Hover chooses the nearest point instead (the voronoi cells cover the plot).
    plot = page.locator("figure#figure-buckets svg g.buckets_voronoi").bounding_box()
    page.mouse.move(plot["x"] + 0.3 * plot["width"], plot["y"] + 0.5 * plot["height"])
    settle(page, "buckets")
    (line,) = drawn(page, "buckets", "chosen_marks")
    r0 = int(line["i - j"])
    assert -16 < r0 < 0, line
    expected = relpos.log_bucket_position(torch.tensor([r0]), 4, 8).item()
    assert line["bucket"] == expected
    page.mouse.move(0, 0)
    # A setting relpos refuses (more buckets than positions) draws no bucket.
    choose(page, "buckets", "buckets K", "512")
    choose(page, "buckets", "max position M", "256")
    assert drawn(page, "buckets", "buckets_marks") == []
    assert not refused, refused
    assert not errors, errors
