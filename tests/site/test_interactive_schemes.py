"""The scheme figures on the built site: chapter 8's landscape, chapter 9's explorer.

Each page is opened with every request elsewhere refused; every control is moved
from the keyboard, and what the figure then draws (its items' aria-labels) is
compared with the data: the landscape's own JSON on the page, and the committed
sweep JSON for the explorer. (Without JavaScript: tests/site/test_interactive.py.)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _interactive import (  # noqa: E402
    choose,
    drawn,
    open_offline,
    slide_to,
    toggle,
    wait_live,
)

from relpos.book import results  # noqa: E402
from relpos.book.interactive._evaluate import objects  # noqa: E402

LANDSCAPE_PAGE = "book/08_where_deberta_sits.html"
RESULTS_PAGE = "book/09_relative_positions_at_work.html"
SWEEPS = [results.load("protocol/sweep.json"),
          results.load("protocol/sweep_causal.json")]
CELLS = {
    (r["setting"], r["task"], r["scheme"], r["train_size"], r["length"]): r
    for sweep in SWEEPS
    for r in sweep["summary"]
}
LENGTHS = SWEEPS[0]["config"]["test_lengths"]


def _spec_rows(page, name: str) -> list[dict]:
    text = page.eval_on_selector(
        f"figure#figure-{name} script.relpos-spec", "e => e.textContent"
    )
    spec = json.loads(text)
    found = [
        node["values"]
        for node in objects(spec)
        if isinstance(node.get("values"), list)
        and node["values"]
        and isinstance(node["values"][0], dict)
        and "v" in node["values"][0]
    ]
    assert len(found) == 1, "the landscape's data holds one table"
    return found[0]


def _points(page) -> dict[tuple[str, int, int], float]:
    return {
        (row["scheme"], int(row["head"]), int(row["i - j"])): row["value"]
        for row in drawn(page, "landscape", "points_marks")
    }


def test_landscape_toggles_schemes_heads_and_the_picked_distance(server, browser):
    page, refused, errors = open_offline(browser, server, LANDSCAPE_PAGE)
    wait_live(page, "landscape")
    rows = _spec_rows(page, "landscape")
    expected = {
        (row["scheme"], row["head"], r): v
        for row in rows
        for r, v in zip(row["r"], row["v"])
    }
    schemes = list(dict.fromkeys(row["scheme"] for row in rows))
    assert len(schemes) == 7 and "ALiBi" in schemes
    assert _points(page) == expected  # the drawn points are the page's data

    toggle(page, "landscape", "ALiBi")
    without = _points(page)
    assert {s for s, _, _ in without} == set(schemes) - {"ALiBi"}
    assert without == {k: v for k, v in expected.items() if k[0] != "ALiBi"}
    toggle(page, "landscape", "ALiBi")
    assert _points(page) == expected

    choose(page, "landscape", "heads", "head 2")
    assert {h for _, h, _ in _points(page)} == {2}
    choose(page, "landscape", "heads", "all heads")

    slide_to(page, "landscape", "values at i - j", 5)
    picked = drawn(page, "landscape", "picked_marks")
    assert {int(row["i - j"]) for row in picked} == {5} and len(picked) == 7 * 4
    texts = drawn(page, "landscape", "values_marks")
    assert len(texts) == 7
    assert all(
        str(row["at the picked distance"]).startswith("i - j = 5,") for row in texts
    )
    assert refused == [] and errors == []
    page.context.close()


def _explorer(page) -> tuple[dict[tuple[str, int], dict], list[str]]:
    means = {
        (row["scheme"], int(row["test length"])): row
        for row in drawn(page, "results", "means_0_marks")
    }
    notes = [str(row["not run"]) for row in drawn(page, "results", "notes_marks")]
    return means, notes


def _expect(page, setting: str, task: str, size: int, ticked: list[str]) -> None:
    means, notes = _explorer(page)
    expected = {
        (s, n): CELLS[setting, task, s, size, n]
        for s in ticked
        for n in LENGTHS
        if (setting, task, s, size, n) in CELLS
    }
    assert sorted(means) == sorted(expected), (setting, task, size, ticked)
    for key, cell in expected.items():
        row = means[key]
        assert row["mean"] == round(cell["mean"], 4), key
        assert row["lowest seed"] == round(cell["min"], 4), key
        assert row["highest seed"] == round(cell["max"], 4), key
    shown = {s for s, _ in expected}
    lines = page.locator("figure#figure-results svg g.lines_0_marks path").count()
    assert lines == len(shown)
    missing = set(ticked) - shown
    assert len(notes) == len(missing) and all(
        any(note.startswith(s + " ") for note in notes) for s in missing
    ), notes


def test_results_explorer_follows_every_control(server, browser):
    page, refused, errors = open_offline(browser, server, RESULTS_PAGE)
    wait_live(page, "results")
    ticked = ["absolute", "t5", "deberta"]
    _expect(page, "encoder", "relative", 512, ticked)
    choose(page, "results", "task", "far")
    _expect(page, "encoder", "far", 512, ticked)
    toggle(page, "results", "sinusoidal")
    ticked.append("sinusoidal")
    _expect(page, "encoder", "far", 512, ticked)
    choose(page, "results", "setting", "causal decoder")
    _expect(page, "causal", "far", 512, ticked)  # sinusoidal: not run
    inside = page.evaluate(
        """() => {
          const svg = document.querySelector('figure#figure-results svg');
          const box = svg.getBoundingClientRect();
          return Array.from(svg.querySelectorAll('g.notes_marks text')).map(
            t => t.getBoundingClientRect().bottom <= box.bottom + 0.5);
        }"""
    )
    assert inside == [True], "the note is drawn inside the figure, not cut off"
    choose(page, "results", "training sequences", "32")
    _expect(page, "causal", "far", 32, ticked)  # nothing run: four notes
    choose(page, "results", "setting", "encoder")
    _expect(page, "encoder", "far", 32, ticked)
    toggle(page, "results", "deberta")
    ticked.remove("deberta")
    _expect(page, "encoder", "far", 32, ticked)
    choose(page, "results", "values at test length", "64")
    readout = [str(row["values"]) for row in drawn(page, "results", "readout_marks")]
    assert len(readout) == len(ticked)
    for line, scheme in zip(readout, ["absolute", "sinusoidal", "t5"]):
        mean = round(CELLS["encoder", "far", scheme, 32, 64]["mean"], 4)
        assert line.startswith(f"{scheme} at n = 64, mean {100 * mean:.1f}%"), line
    assert refused == [] and errors == []
    page.context.close()
