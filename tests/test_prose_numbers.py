"""Numbers the chapters' prose states, checked against relpos and the stored results.

Each claim below once read wrong in the text (issue 27): chapter 3 said both edge
rows collect more pairs than their neighbours, chapter 5 called the benchmark's
GFLOP column the forward's work for every backend and gave the 16384-token run
"tens of seconds". The text now states what these computations give.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import torch

import relpos
from relpos.book import bench
from relpos.book import results as stored

ROOT = Path(__file__).resolve().parent.parent


def prose(name: str) -> str:
    notebook = nbformat.read(ROOT / "book" / name, as_version=4)
    text = "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    return " ".join(text.split())


def pairs_per_row(n: int, k: int) -> list[int]:
    index = relpos.relative_position_index(n, max_relative_positions=k)  # (i, j)
    return torch.bincount(index.flatten(), minlength=2 * k).tolist()


def test_chapter_3_edge_rows_of_a_six_token_sequence():
    counts = pairs_per_row(6, 4)
    assert counts == [3, 3, 4, 5, 6, 5, 4, 6]
    assert counts[0] == counts[1] and counts[7] > counts[6]  # row 0 ties row 1
    for n in range(7, 41):  # "From 7 tokens on, both edge rows outgrow [...]"
        counts = pairs_per_row(n, 4)
        assert counts[0] > counts[1] and counts[7] > counts[6], n
    text = prose("03_table.ipynb")
    assert "three pairs, no more than row 1" in text and "From 7 tokens on" in text


def test_chapter_5_gflop_column_is_the_gather_minimum():
    results = bench.load_results(stored.path("bench_cpu.json"))
    rows = [
        (row, roof)
        for row, roof in zip(results["results"], bench.roofline(results))
        if row["status"] == "ok"
    ]
    by_length: dict[int, set[float]] = {}
    for row, roof in rows:
        by_length.setdefault(row["n"], set()).add(roof["flops"])
    assert all(len(flops) == 1 for flops in by_length.values())  # one per length
    naive, roof = next(
        (r, f) for r, f in rows if r["backend"] == "naive" and r["n"] == 512
    )
    hidden = results["config"]["hidden"]
    per_pair = 4 * 512**2 * hidden**2  # two terms, n^2 rows projected by (H, H)
    assert round(per_pair / 1e9) == 618 and round(roof["flops"] / 1e9, 1) == 4.6
    speed = (per_pair + roof["flops"]) / naive["forward_s"]
    assert 0.6 < speed / results["machine"]["matmul"]["flop_per_s"] < 0.7  # two thirds
    text = prose("05_efficient_attention.ipynb")
    assert "about 618 GFLOP at $n = 512$" in text and "two thirds" in text
    assert "the same number in every backend's row" in text


def test_chapter_5_flex_at_16384_tokens():
    long = bench.load_results(stored.path("bench_cpu_16k.json"))
    flex = next(r for r in long["results"] if r["backend"] == "flex")
    assert (round(flex["compile_s"]), round(flex["forward_s"])) == (18, 15)
    gather = next(r for r in long["results"] if r["backend"] == "gather")
    assert round(gather["forward_s"]) == 9 and gather["compile_s"] is None
    assert gather["peak_bytes"] < flex["peak_bytes"]  # "each at a fraction"
    text = prose("05_efficient_attention.ipynb")
    assert "first call at this length took 18 s" in text and "after it 15 s" in text
    assert "with nothing to compile, 9 s" in text
    assert "18 seconds at 16384 tokens" in text and "tens of seconds" not in text
