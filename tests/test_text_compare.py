"""Schemes side by side (relpos.book.text.compare) on synthetic runs.

Each synthetic run keeps per-module loss sums as the length probe and the
far-keys intervention store them; the numbers are made so that the answer is
known: a scheme lower by a fixed amount everywhere is resolved and best alone,
two schemes equal up to noise share "best".
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from relpos.book.text.compare import compare, resolved, scheme_difference, scheme_mean

COUNTS = [100.0, 300.0, 50.0, 250.0, 80.0, 120.0]  # bytes scored per module
WIDTHS = ("64", "128")


def make_run(scheme: str, seed: int, per_byte: list[float], layout: str) -> dict:
    """A run whose module ``m`` averages ``per_byte[m]`` nats at every width."""
    sums = [c * x for c, x in zip(COUNTS, per_byte)]
    loss = sum(sums) / sum(COUNTS)
    by_width = {w: list(sums) for w in WIDTHS}
    run = {"scheme": scheme, "seed": seed}
    if layout == "length":
        run["module_sums"] = {"nonoverlapping": by_width}
        run["module_counts"] = {"nonoverlapping": {w: COUNTS for w in WIDTHS}}
        run["nonoverlapping"] = {w: {"loss": loss} for w in WIDTHS}
    else:
        run["module_sums"] = {"full": by_width}
        run["module_counts"] = {w: COUNTS for w in WIDTHS}
        run["full"] = {w: {"loss": loss} for w in WIDTHS}
    return run


def family(scheme: str, shift: float, layout: str, noise: float = 0.02) -> list[dict]:
    """Ten seeds of one scheme: a shared module difficulty, seed noise, ``shift``."""
    difficulty = np.linspace(1.0, 2.0, len(COUNTS))
    runs = []
    for seed in range(10):
        rng = np.random.default_rng(seed)  # the same draw for every scheme's seed
        jitter = rng.normal(0, noise, len(COUNTS))
        runs.append(make_run(scheme, seed, list(difficulty + jitter + shift), layout))
    return runs


@pytest.mark.parametrize("layout", ["length", "far_keys"])
def test_a_scheme_lower_everywhere_is_resolved_and_best_alone(layout):
    runs = family("deberta", 0.0, layout) + family("alibi", 0.1, layout)
    rows = compare(runs, "deberta", layout)
    assert [r["length"] for r in rows] == [64, 128]
    for row in rows:
        assert row["lowest"] == "deberta" and row["best"] == ["deberta"]
        diff = row["minus_reference"]["alibi"]
        assert diff["mean"] == pytest.approx(0.1 / math.log(2))  # bits per byte
        low, high = diff["interval"]
        assert low == pytest.approx(high) == pytest.approx(0.1 / math.log(2))
        assert resolved(diff) and diff["p_value"] < 0.05


def test_schemes_equal_up_to_seed_noise_share_best():
    first = family("deberta", 0.0, "length")
    second = family("shaw", 0.0, "length")
    for run in second:  # the other scheme's seeds draw their own noise
        sums = run["module_sums"]["nonoverlapping"]
        rng = np.random.default_rng(100 + run["seed"])
        for w in WIDTHS:
            sums[w] = [x + c * rng.normal(0, 0.02) for x, c in zip(sums[w], COUNTS)]
            run["nonoverlapping"][w]["loss"] = sum(sums[w]) / sum(COUNTS)
    row = compare(first + second, "deberta")[0]
    assert sorted(row["best"]) == ["deberta", "shaw"]
    assert not resolved(row["minus_reference"]["shaw"])


def test_a_scheme_mean_is_in_bits_with_an_interval_over_modules():
    runs = family("deberta", 0.0, "length")
    found = scheme_mean(runs, 64)
    expected = np.mean([r["nonoverlapping"]["64"]["loss"] for r in runs])
    assert found["mean"] == pytest.approx(expected / math.log(2))
    low, high = found["interval"]
    assert low < found["mean"] < high  # the modules differ by a whole nat


def test_bad_input_is_refused_with_its_name():
    runs = family("deberta", 0.0, "length")
    with pytest.raises(ValueError, match="layout"):
        compare(runs, "deberta", "sliding")
    with pytest.raises(ValueError, match="reference"):
        compare(runs, "rotary")
    with pytest.raises(ValueError, match="same seeds"):
        scheme_difference(runs[:5], runs[5:], 64)
    stripped = [{k: v for k, v in r.items() if k != "module_sums"} for r in runs]
    with pytest.raises(ValueError, match="module_sums"):
        compare(stripped)


def test_the_table_marks_best_and_orders_by_the_last_mean():
    from relpos.book.text.compare import table

    runs = (family("deberta", 0.0, "length") + family("alibi", 0.1, "length")
            + family("t5", 0.05, "length"))
    text = table(compare(runs, "deberta"))
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["scheme", "W", "="]
    assert [line.split()[0] for line in lines[1:]] == ["deberta", "t5", "alibi"]
    assert lines[1].count("*") == 2 and "*" not in lines[2] + lines[3]
    assert f"{0.1 / math.log(2):+.3f}" in lines[3]
    assert max(map(len, lines)) <= 88
    with pytest.raises(ValueError, match="lengths"):
        table(compare(runs, "deberta"), [256])
