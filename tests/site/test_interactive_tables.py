"""Chapters 3 and 4 on the built site: the row similarities and the gather, moved
from the keyboard in a real browser, offline.

Chapter 3: choosing the span k draws a 2k x 2k matrix of distances -k .. k - 1;
the random table is near 0 off the diagonal, the sinusoidal one high between
neighbours, the trained one sets the row of distance 3 apart. Chapter 4: the
sliders for query i and key j outline, in both full matrices, table row
delta(i, j), and the text line prints the same pair; hovering a cell chooses it
too. (Without JavaScript: tests/site/test_interactive.py.)
"""

from __future__ import annotations

from _interactive import choose, drawn, open_offline, settle, slide_to, wait_live

import relpos

CH3, CH4 = "book/03_table.html", "book/04_disentangled_attention.html"
FIRST, SECOND = "distance i - j of the first row", "distance i - j of the second row"


def _cells(page) -> dict[tuple[int, int], float]:
    return {
        (int(c[FIRST]), int(c[SECOND])): c["cosine similarity"]
        for c in drawn(page, "table", "similarity_marks")
    }


def _mean_abs(cells: dict[tuple[int, int], float], gaps) -> float:
    values = [abs(v) for (a, b), v in cells.items() if abs(a - b) in gaps]
    return sum(values) / len(values)


def test_chapter_3_k_and_the_table_change_the_drawn_matrix(browser, server):
    page, refused, errors = open_offline(browser, server, CH3)
    wait_live(page, "table")
    cells = _cells(page)
    assert len(cells) == 32 * 32  # k = 16 at first, the random table
    assert set(cells) == {(a, b) for a in range(-16, 16) for b in range(-16, 16)}
    assert all(cells[(a, a)] == 1 for a in range(-16, 16))
    assert _mean_abs(cells, range(1, 32)) < 0.1

    for k in (2, 4, 8):
        choose(page, "table", "span k", str(k))
        cells = _cells(page)
        assert len(cells) == (2 * k) ** 2
        assert {a for a, _ in cells} == set(range(-k, k))

    choose(page, "table", "table", "sinusoidal")
    sinusoidal = _cells(page)
    assert len(sinusoidal) == 16 * 16
    assert _mean_abs(sinusoidal, {1}) > 0.9
    assert _mean_abs(sinusoidal, {1}) - _mean_abs(sinusoidal, range(8, 16)) > 0.2

    choose(page, "table", "table", "trained (relative task)")
    trained = _cells(page)
    assert trained != sinusoidal and len(trained) == 16 * 16
    assert all(v < 0 for (a, b), v in trained.items() if a == 3 and b != 3)

    # the keyboard path: two sliders choose a cell, clipped into the window of k = 8
    slide_to(page, "table", "first distance", 3)
    slide_to(page, "table", "second distance", -12)
    (cell,) = drawn(page, "table", "chosen_marks")
    assert (cell[FIRST], cell[SECOND]) == (3, relpos.delta(-12, 8) - 8)
    assert cell["cosine similarity"] == trained[(3, -8)] < 0
    (line,) = drawn(page, "table", "chosen_line_marks")
    assert line["chosen"].startswith("rows of distances 3 and -8, cosine similarity")
    assert refused == [] and errors == []
    page.context.close()


def _picks(page) -> dict[str, list[tuple[int, int, int]]]:
    return {
        panel: [
            (int(c["query i"]), int(c["key j"]), int(c["table row r"]))
            for c in drawn(page, "gather", f"{panel}_pick_marks")
        ]
        for panel in ("c2c", "c2p", "p2c", "qpk", "kpq")
    }


def test_chapter_4_the_pair_sliders_outline_row_delta(browser, server):
    page, refused, errors = open_offline(browser, server, CH4)
    wait_live(page, "gather")
    k = 2  # the pencil-and-paper example: n = 3, k = 2
    assert all(p == [(2, 0, 3)] for p in _picks(page).values())
    for i in range(3):
        slide_to(page, "gather", "query i", i)
        for j in range(3):
            slide_to(page, "gather", "key j", j)
            row = relpos.delta(i - j, k)
            assert all(p == [(i, j, row)] for p in _picks(page).values()), (i, j)
            lines = [c["gather"] for c in drawn(page, "gather", "gather_lines_marks")]
            assert lines[1].startswith(f"c2p[{i}, {j}] = (Q Pkᵀ)[{i}, {row}] = ")
            assert f"r = delta({i}, {j}) = {row}" in lines[1]

    # hovering a c2p cell chooses its pair over the sliders' (2, 2)
    cell = page.locator(
        "figure#figure-gather .relpos-live svg g.c2p_cells_marks"
        " [aria-label*='key j: 1;'][aria-label*='query i: 0;']"
    )
    cell.first.hover()
    settle(page, "gather")
    assert _picks(page)["qpk"] == [(0, 1, relpos.delta(-1, k))]
    assert refused == [] and errors == []
    page.context.close()
