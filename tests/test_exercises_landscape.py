"""Chapter 8's exercise checks pass right answers and fail typical wrong ones."""

from __future__ import annotations

import math

import pytest
import torch

from relpos import schemes
from relpos.book.exercises import ExerciseError, check

#: The book's number answers (12 heads; bucket 12 at max_distance 128; head 3 of 12
#: at query 9), passed with the functions.
LAST_SLOPE = 2**-3.5  # 12 heads: 8 geometric, then slopes 1, 3, 5, 7 of 16 heads
SHARED = list(range(32, 46))
SHIFT = 2 ** (-8 * 4 / 8) * 9  # head 3 of the 8 geometric heads: 2^(-8 * 4 / 8)

# -- ch8-ex1: ALiBi's slopes ---------------------------------------------------------


def paper_slopes(num_heads: int) -> list[float]:
    """Written from the paper and its code, independently of relpos."""

    def power_of_two(h: int) -> list[float]:
        return [2.0 ** (-8.0 * m / h) for m in range(1, h + 1)]

    closest = 2 ** math.floor(math.log2(num_heads))
    extra = power_of_two(2 * closest)[0::2][: num_heads - closest]
    return power_of_two(closest) + extra


def test_slopes_pass_the_reference_and_an_independent_answer(capsys) -> None:
    check("ch8-ex1", schemes.alibi_slopes, LAST_SLOPE)
    check("ch8-ex1", paper_slopes, LAST_SLOPE)
    def as_float32(h: int) -> torch.Tensor:
        return torch.tensor(paper_slopes(h), dtype=torch.float32)

    check("ch8-ex1", as_float32, LAST_SLOPE)
    assert capsys.readouterr().out.count("ch8-ex1: correct.") == 3


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (lambda h: [2.0 ** (-8.0 * m / h) for m in range(1, h + 1)],
         "3 is not a power of two"),
        (lambda h: [2.0 ** (-8.0 * m / h) for m in range(h)], "starts at 1"),
        (lambda h: paper_slopes(h)[::-1], "reverse order"),
        (lambda h: paper_slopes(h)[:-1], r"my_slopes\(1\) .* got shape \(0,\)"),
        (lambda h: [0.5] * h, r"my_slopes\(1\): head 0 has slope 0.5"),
        (lambda h: "slopes", "list or tensor of slopes"),
        (lambda h: 1 / 0, "ZeroDivisionError"),
        ([0.5, 0.25], "must be a function"),
    ],
    ids=["naive-rule", "m-from-0", "reversed", "one-short", "constant", "a-string",
         "raises", "not-callable"],
)
def test_slopes_fail_wrong_answers_with_a_hint(answer, message: str) -> None:
    with pytest.raises(ExerciseError, match="ch8-ex1: not yet. .*" + message):
        check("ch8-ex1", answer, LAST_SLOPE)


# -- ch8-ex2: T5's buckets -----------------------------------------------------------


def loop_bucket(rel: torch.Tensor, num_buckets: int = 32, max_distance: int = 128):
    """T5's two-sided bucket, one distance at a time, written out independently."""
    per_side = num_buckets // 2
    exact = per_side // 2
    out = []
    for r in rel.tolist():
        offset = per_side if r < 0 else 0  # keys ahead: T5's j - i > 0
        a = abs(r)
        if a < exact:
            bucket = a
        else:
            scaled = math.log(a / exact) / math.log(max_distance / exact)
            bucket = min(per_side - 1, exact + int(scaled * (per_side - exact)))
        out.append(offset + bucket)
    return torch.tensor(out)


def reference(rel, num_buckets=32, max_distance=128):
    return schemes.t5_bucket(rel, num_buckets=num_buckets, max_distance=max_distance)


def test_buckets_pass_the_reference_and_a_loop(capsys) -> None:
    check("ch8-ex2", reference, SHARED)
    check("ch8-ex2", loop_bucket, SHARED)
    assert capsys.readouterr().out.count("ch8-ex2: correct.") == 2


def _no_clamp(rel, num_buckets=32, max_distance=128):
    per_side, exact = num_buckets // 2, num_buckets // 4
    a = rel.abs()
    log = exact + (torch.log(a.clamp(min=exact).float() / exact)
                   / math.log(max_distance / exact) * (per_side - exact)).long()
    return (rel < 0).long() * per_side + torch.where(a < exact, a, log)


def _all_exact(rel, num_buckets=32, max_distance=128):
    per_side = num_buckets // 2
    return (rel < 0).long() * per_side + rel.abs().clamp(max=per_side - 1)


def _exact_edge_off_by_one(rel, num_buckets=32, max_distance=128):
    """``<=`` instead of ``<`` at the edge of the exact region."""
    bucket = reference(rel, num_buckets, max_distance)
    return torch.where(rel.abs() == num_buckets // 4, bucket + 1, bucket)


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (lambda rel, b, d: reference(-rel, b, d), "swapped"),
        (_no_clamp, "last bucket of their side"),
        (_all_exact, r"distances differ, e.g. r=-9: 25 \(expected 24\)"),
        (_exact_edge_off_by_one, "num_buckets // 4"),
        (lambda rel, b, d: reference(rel, b, d).float(), "must be integers"),
        (lambda rel, b, d: reference(rel, b, d)[1:], "rel's shape"),
        (lambda rel, b, d: reference(rel, b, d).tolist(), "returned list"),
        (lambda rel: rel, "TypeError"),
        ("t5_bucket", "must be a function"),
    ],
    ids=["j-minus-i", "no-clamp", "all-exact", "exact-edge", "float", "one-short",
         "a-list", "one-argument", "not-callable"],
)
def test_buckets_fail_wrong_answers_with_a_hint(answer, message: str) -> None:
    with pytest.raises(ExerciseError, match="ch8-ex2: not yet. .*" + message):
        check("ch8-ex2", answer, SHARED)


# -- ch8-ex3: BLOOM's form of the causal bias ----------------------------------------


def bloom(n: int, num_heads: int) -> torch.Tensor:
    slopes = schemes.alibi_slopes(num_heads, dtype=torch.float64)
    j = torch.arange(n, dtype=torch.float64)
    bias = (slopes[:, None, None] * j).expand(num_heads, n, n)  # (h, i, j)
    ahead = torch.ones(n, n, dtype=torch.bool).triu(1)  # (i, j): j > i
    return bias.masked_fill(ahead, float("-inf"))


def test_bloom_bias_passes_and_gives_alibi_probabilities(capsys) -> None:
    check("ch8-ex3", bloom, SHIFT)
    assert "ch8-ex3: correct." in capsys.readouterr().out
    # What the exercise shows: the same probabilities as ALiBi's own causal form.
    rel = schemes.relative_distances(torch.arange(7), torch.arange(7))
    slopes = schemes.alibi_slopes(4, dtype=torch.float64)
    logits = torch.randn(4, 7, 7, dtype=torch.float64)
    alibi = schemes.alibi_bias(rel, slopes, causal=True)
    torch.testing.assert_close((logits + bloom(7, 4)).softmax(-1),
                               (logits + alibi).softmax(-1))


def _alibi_causal(n, num_heads):
    rel = schemes.relative_distances(torch.arange(n), torch.arange(n))
    return schemes.alibi_bias(rel, schemes.alibi_slopes(num_heads), causal=True)


def negated(n, num_heads):
    ahead = torch.ones(n, n, dtype=torch.bool).triu(1)  # (i, j): j > i
    return -bloom(n, num_heads).masked_fill(ahead, float("inf"))


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (_alibi_causal, "ALiBi's own"),
        (lambda n, h: bloom(n, h).nan_to_num(neginf=0.0), "must be masked"),
        (lambda n, h: negated(n, h), "sign is flipped"),
        (lambda n, h: bloom(n, h)[0], r"shape \(h, n, n\)"),
        (lambda n, h: 2 * bloom(n, h), "should be slope_h \\* j"),
    ],
    ids=["alibi-form", "unmasked", "negated", "one-head", "doubled"],
)
def test_bloom_bias_fails_wrong_answers_with_a_hint(answer, message: str) -> None:
    with pytest.raises(ExerciseError, match="ch8-ex3: not yet. .*" + message):
        check("ch8-ex3", answer, SHIFT)


# -- the numbers asked at each student's own settings ---------------------------------


def test_the_asked_numbers_follow_the_settings(capsys) -> None:
    slopes = schemes.alibi_slopes(20, dtype=torch.float64)
    check("ch8-ex1", schemes.alibi_slopes, float(slopes[-1]), heads=20)
    assert math.isclose(float(slopes[-1]), 2 ** (-4 * 7 / 16))  # 16 + every other of 32
    check("ch8-ex2", reference, [11, 12, 13], bucket=9, max_distance=64)
    six = schemes.alibi_slopes(6, dtype=torch.float64)
    check("ch8-ex3", bloom, float(six[1]) * 20, heads=6, head=1, query=20)
    assert capsys.readouterr().out.count("correct.") == 3


@pytest.mark.parametrize(
    ("label", "answers", "message"),
    [
        ("ch8-ex1", (schemes.alibi_slopes, 2.0**-8), "geometric series of 12"),
        ("ch8-ex1", (schemes.alibi_slopes, 0.5), "evaluate your function"),
        ("ch8-ex2", (reference, [-x for x in SHARED]), "keys ahead"),
        ("ch8-ex2", (reference, SHARED[1:]), "keep those in the bucket"),
        ("ch8-ex3", (bloom, -SHIFT), "sign is flipped"),
        ("ch8-ex3", (bloom, SHIFT / 9), "subtract the two"),
    ],
)
def test_a_wrong_asked_number_fails(label, answers, message) -> None:
    with pytest.raises(ExerciseError, match=f"{label}: not yet. .*" + message):
        check(label, *answers)
    with pytest.raises(ExerciseError, match=f"{label}: not yet"):  # another's
        check(label, answers[0], {"ch8-ex1": LAST_SLOPE, "ch8-ex2": SHARED,
                                  "ch8-ex3": SHIFT}[label],
              **{"ch8-ex1": {"heads": 20}, "ch8-ex2": {"bucket": 9},
                 "ch8-ex3": {"query": 20}}[label])
