"""relpos.book.stats: the seeds' bootstrap interval and the paired sign-flip test."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from relpos.book.stats import bootstrap_interval, describe, excludes, paired_test

TEN = [0.99, 0.98, 1.0, 0.97, 0.44, 0.99, 0.96, 1.0, 0.98, 0.95]


def test_the_interval_holds_the_mean_and_narrows_with_more_seeds():
    low, high = bootstrap_interval(TEN)
    assert low <= np.mean(TEN) <= high
    assert high <= max(TEN) and low >= min(TEN)
    # the one bad seed (0.44) pulls the low end far below the other nine
    assert low < 0.9 < high
    wide = bootstrap_interval(TEN[:3] + [0.44])
    narrow = bootstrap_interval([v for v in TEN if v > 0.9] * 3)
    assert narrow[1] - narrow[0] < wide[1] - wide[0]


def test_the_interval_is_seeded_and_degenerates_on_equal_values():
    assert bootstrap_interval(TEN, seed=3) == bootstrap_interval(TEN, seed=3)
    assert bootstrap_interval([0.5] * 10) == [0.5, 0.5]


def test_the_percentile_interval_matches_a_resampling_by_hand():
    rng = np.random.default_rng(7)
    means = [rng.choice(TEN, size=len(TEN)).mean() for _ in range(20000)]
    by_hand = np.percentile(means, [2.5, 97.5])
    assert bootstrap_interval(TEN) == pytest.approx(by_hand, abs=0.01)


def test_the_paired_p_value_is_the_exact_sign_flip_count():
    a = np.array([0.9, 0.95, 1.0, 0.99, 0.5, 0.98, 0.97, 0.96])
    b = np.array([0.8, 0.9, 0.95, 0.99, 0.55, 0.9, 0.9, 0.9])
    result = paired_test(a, b)
    difference = a - b
    observed = abs(difference.mean())
    flips = [
        abs((difference * np.array(signs)).mean())
        for signs in itertools.product((1, -1), repeat=len(a))
    ]
    exact = np.mean([f >= observed - 1e-12 for f in flips])
    assert result["p_value"] == pytest.approx(exact)
    assert result["mean"] == pytest.approx(difference.mean())
    assert (result["n"], result["wins"], result["losses"]) == (8, 6, 1)
    assert result["interval"][0] <= result["mean"] <= result["interval"][1]


def test_equal_arms_give_no_evidence_and_a_clear_win_a_small_p():
    assert paired_test(TEN, TEN)["p_value"] == 1.0
    shifted = paired_test([v + 0.1 for v in TEN], TEN)
    assert shifted["p_value"] == pytest.approx(2 / 2**10)  # all ten flips agree
    assert excludes(shifted["interval"], 0.0)


def test_describe_gives_a_summary_row():
    row = describe(TEN)
    assert row["n"] == 10 and row["min"] == 0.44 and row["max"] == 1.0
    assert row["interval"] == bootstrap_interval(TEN)
    assert describe([0.3])["interval"] is None


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: bootstrap_interval([0.5]), ValueError, "at least 2"),
        (lambda: bootstrap_interval([[0.5, 0.6]]), ValueError, "1-D"),
        (lambda: bootstrap_interval([0.5, float("nan")]), ValueError, "finite"),
        (lambda: bootstrap_interval(["a", "b"]), TypeError, "values must be"),
        (lambda: bootstrap_interval(TEN, confidence=1.5), ValueError, "confidence"),
        (lambda: paired_test(TEN, TEN[:5]), ValueError, "one value per seed"),
        (lambda: excludes([1.0, 0.0], 0.5), ValueError, "low <= high"),
    ],
)
def test_bad_input_is_refused_by_name(call, error, match):
    with pytest.raises(error, match=match):
        call()
