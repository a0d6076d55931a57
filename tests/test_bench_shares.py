"""Where a cell's time goes (relpos.book.bench.shares), on tiny shapes.

The shares are checked for what they must be whatever the machine: they come
from the profiler's own events, add up to one, are listed largest first, and
plain attention's include torch's fused kernel. No time is asserted.
"""

from __future__ import annotations

import json

import pytest

from relpos.book.bench import cli
from relpos.book.bench.costs import CostsConfig
from relpos.book.bench.shares import parse_cells, run_shares, shares_table

TINY = CostsConfig(hidden=32, heads=4, span=8, repeats=2, threads=1)


@pytest.fixture(scope="module")
def data():
    cells = parse_cells("plain,deberta:gather,t5:gather")
    return run_shares(cells, 64, config=TINY, top=3)


def test_shares_add_up_to_one_largest_first(data):
    assert [(r["scheme"], r["backend"]) for r in data["cells"]] == [
        ("plain", "sdpa"), ("deberta", "gather"), ("t5", "gather")]
    for row in data["cells"]:
        shares = [k["share"] for k in row["kernels"]]
        assert len(shares) == 3 and shares == sorted(shares, reverse=True)
        assert all(0 < s <= 1 for s in shares) and row["other"] >= -1e-12
        assert sum(shares) + row["other"] == pytest.approx(1.0)
        assert all(k["calls"] > 0 for k in row["kernels"])
        assert row["time_ratio"] == pytest.approx(row["forward_s"] / row["plain_s"])
    plain = {k["name"] for k in data["cells"][0]["kernels"]}
    assert any("scaled_dot_product" in name for name in plain), plain


def test_the_table_names_every_cell(data):
    table = shares_table(data, top=2)
    assert table.count("\n") == len(data["cells"])
    assert "deberta (gather)" in table and "%" in table


def test_bad_cells_are_refused_by_name():
    with pytest.raises(ValueError, match="cells"):
        parse_cells("deberta")
    with pytest.raises(ValueError, match="cells"):
        parse_cells(" ")
    with pytest.raises(ValueError, match="device"):
        run_shares([("plain", "sdpa")], 8, config=CostsConfig(device="cuda"))


def test_the_command_writes_its_json(tmp_path, capsys):
    path = tmp_path / "shares.json"
    cli.main(["shares", "--n", "32", "--cells", "plain,alibi:gather", "--hidden",
              "32", "--heads", "4", "--span", "8", "--repeats", "1", "--threads", "1",
              "--output", str(path)])
    written = json.loads(path.read_text())
    assert written["kind"] == "kernel shares" and written["config"]["n"] == 32
    assert "shares" in written["command"]
    assert "alibi (gather)" in capsys.readouterr().out


def test_the_appendix_shows_the_committed_profile():
    from pathlib import Path

    from relpos.book import results

    data = results.load("profile_shares.json")
    text = (Path(__file__).resolve().parents[1] / "book" / "appendix_benchmark.md"
            ).read_text()
    assert shares_table(data, top=3) in text
    cells = {(r["scheme"], r["backend"]): r for r in data["cells"]}

    def fused(cell):  # the fused kernel's time, as a multiple of plain attention
        row = cells[cell]
        share = sum(k["share"] for k in row["kernels"] if "scaled_dot" in k["name"])
        return share * row["time_ratio"]

    ratio = fused(("deberta", "gather")) / fused(("plain", "sdpa"))
    flat = " ".join(text.split())
    assert f"its fused calls take {ratio:.2f} times the time" in flat
    graph = cells["fire", "flex"]["kernels"][0]
    assert graph["name"].startswith("## Call CompiledFxGraph")
    assert f"32 hidden units for every score, {graph['share']:.0%} of its" in flat
    assert data["config"]["n"] == 2048 and data["config"]["threads"] == 2
