"""Every number a self-check question quotes, recomputed with relpos.

Each question of ``book/selfcheck/chNN.yml`` that quotes a number (in its text, an
option or an explanation) has a checker here, registered under its chapter and id.
A checker recomputes the facts the question rests on with relpos (or reads them
from the stored results with ``relpos.book.results``), asserts that the correct
option says them and the wrong ones do not, and returns the numbers it accounts
for. The test fails on any number in the question's texts that its checker does not
account for, and on a checker without its question. A few questions without
numbers have a checker too, for a claim that can be computed.

Numbers are read as a reader sees them: ``3``, ``76.6``, ``0.02``; a digit that is
part of a word or a symbol (``2k``, ``8L``, ``c2p``, ``float32``, ``v3``) is not a
number here.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

import relpos
from relpos import schemes

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_ext"))

from self_check_questions import DATA, Question, load_questions  # noqa: E402

NUMBER = re.compile(r"(?<![\w.^])(\d+(?:\.\d+)?)(?![\w])|(?<=\^)(\d)")
FILES = sorted(DATA.glob("ch*.yml"))
QUESTIONS = {
    (path.stem, question.id): question
    for path in FILES
    for question in load_questions(path)
}
Checker = Callable[[Question], set[float]]
CHECKERS: dict[tuple[str, str], Checker] = {}


def checks(name: str, slug: str) -> Callable[[Checker], Checker]:
    def register(checker: Checker) -> Checker:
        CHECKERS[name, slug] = checker
        return checker

    return register


def numbers_in(text: str) -> set[float]:
    """The numbers a reader sees in ``text``, signs dropped."""
    return {float(a or b) for a, b in NUMBER.findall(text)}


def texts(question: Question) -> str:
    parts = [question.question]
    for option in question.options:
        parts += [option.answer, option.why]
    return "\n".join(parts)


def right(question: Question) -> str:
    """The correct option's answer and explanation."""
    option = question.options[question.correct]
    return f"{option.answer}\n{option.why}"


def wrong(question: Question) -> list[str]:
    """The wrong options' answers."""
    return [o.answer for i, o in enumerate(question.options) if i != question.correct]


def test_the_number_reader():
    text = "With $k = 3$, $2k - 1$ rows, 76.6%, 0.02, c2p, float32, v3, SHA-256, $n^2$."
    assert numbers_in(text) == {3, 1, 76.6, 0.02, 256, 2}
    assert numbers_in("$-3$ and (0, 7)") == {3, 0, 7}


@pytest.mark.parametrize("key", sorted(QUESTIONS), ids="-".join)
def test_every_quoted_number_is_recomputed(key):
    question = QUESTIONS[key]
    quoted = numbers_in(texts(question))
    checker = CHECKERS.get(key)
    if checker is None:
        assert not quoted, f"{key} quotes {sorted(quoted)} and has no checker"
        return
    accounted = checker(question)
    unchecked = {n for n in quoted if not any(math.isclose(n, a) for a in accounted)}
    assert not unchecked, f"{key}: numbers no checker recomputes: {sorted(unchecked)}"


def test_every_checker_has_its_question():
    assert set(CHECKERS) <= set(QUESTIONS), sorted(set(CHECKERS) - set(QUESTIONS))
    assert len(CHECKERS) >= 30


# -- chapter 1 ----------------------------------------------------------------------


@checks("ch01", "sign-of-a-pair")
def _(question):
    r = relpos.relative_positions(6)  # (i, j): i - j
    assert r[2, 5] == -3 and r[5, 2] == 3
    assert "$r = -3$" in right(question) and "ahead" in right(question)
    return {2, 5, 3}


@checks("ch01", "rows-a-short-batch-trains")
def _(question):
    table = torch.nn.Embedding(12, 16)
    rows = table(torch.arange(4))  # a length-4 sequence
    (grad,) = torch.autograd.grad(rows.pow(2).sum(), table.weight)
    assert (grad.abs().sum(-1) > 0).nonzero().flatten().tolist() == [0, 1, 2, 3]
    distances = relpos.relative_positions(4)
    assert (distances.min(), distances.max()) == (-3, 3)
    assert "Rows 0 to 3" in right(question)
    return {4, 0, 3}


@checks("ch01", "constant-diagonals")
def _(question):
    torch.manual_seed(0)
    x, table = torch.randn(16), torch.randn(32, 16)
    w_q, w_k = torch.randn(2, 16, 16)
    index = relpos.relative_position_index(12, max_relative_positions=16)  # (i, j)
    scores = (table @ w_k)[index] @ (x @ w_q)  # (i, j)
    assert torch.allclose(scores[1:, 1:], scores[:-1, :-1])  # constant diagonals
    assert not torch.allclose(scores[:, 1:], scores[:, :-1])  # rows vary
    assert "diagonal" in right(question)
    return set()


@checks("ch01", "one-pair-one-row")
def _(question):
    k = 16
    assert relpos.delta(2 - 5, k) == -3 + 16 == 13 and relpos.delta(3, k) == 19
    index = relpos.relative_position_index(12, max_relative_positions=k)
    sharing = {tuple(p) for p in (index == 13).nonzero().tolist()}
    assert {(0, 3), (1, 4), (2, 5), (7, 10)} <= sharing
    assert "Row 13" in right(question)
    return {16, 2, 5, 13, 3, 0, 1, 4, 7, 10, 19}


@checks("ch01", "clipped-far-keys")
def _(question):
    index = relpos.relative_position_index(100, max_relative_positions=16)
    assert index[0, 20] == index[0, 90] == relpos.delta(-16, 16) == 0
    assert index.max() + 1 == 2 * 16 == 32
    assert "row 0" in right(question)
    return {16, 0, 100, 20, 90, 32}


# -- chapter 2 ----------------------------------------------------------------------


@checks("ch02", "row-of-plus-two")
def _(question):
    k = 3
    assert relpos.delta(2, k) == min(max(2, -3), 2) + 3 == 5 == 2 * k - 1
    assert relpos.delta(-2, k) == 1 and relpos.delta(-k, k) == 0
    assert relpos.delta(0, k) == k and 2 * k == 6
    assert "Row 5" in right(question) and "Row 5" not in " ".join(wrong(question))
    return {3, 2, 5, 1, 0, 6}


@checks("ch02", "mirror-rows")
def _(question):
    k = 4
    assert relpos.delta(-4, k) == 0 and relpos.delta(4, k) == 7 == relpos.delta(3, k)
    assert relpos.delta(4, k) + relpos.delta(-4, k) == 7 == 2 * k - 1
    assert relpos.delta(2, k) + relpos.delta(-2, k) == 2 * k == 8
    assert right(question).startswith("7,")
    return {4, 7, 0, 1, 3, 8, 9}


@checks("ch02", "lopsided-corners")
def _(question):
    index = relpos.relative_position_index(8, max_relative_positions=3)  # (i, j)
    r = relpos.relative_positions(8)
    assert (index == 0).sum() == 15 and (index == 5).sum() == 21
    assert r[index == 5].unique().tolist() == [2, 3, 4, 5, 6, 7]
    assert r[index == 0].unique().tolist() == [-7, -6, -5, -4, -3]
    assert relpos.delta(2, 3) == 5 and relpos.delta(-2, 3) != 0
    assert index[0, 7] == 0 and index[7, 0] == 5
    assert right(question).startswith("15 and 21")
    return {8, 3, 0, 5, 15, 21, 2, 7, 1}


@checks("ch02", "direction")
def _(question):
    r = relpos.relative_positions(7)
    assert torch.equal(r, -r.T)
    assert all(relpos.delta(d, 3) == 3 + d for d in range(-2, 3))
    return set()


# -- chapter 3 ----------------------------------------------------------------------


@checks("ch03", "why-2k-rows")
def _(question):
    distances = torch.arange(-1000, 1001)
    for k in (1, 3, 8, 512):
        assert relpos.delta(distances, k).unique().numel() == 2 * k
        assert relpos.delta(0, k) == k and relpos.delta(k, k) == relpos.delta(k - 1, k)
    assert schemes.shaw_index(distances, 3).unique().numel() == 2 * 3 + 1
    return {0, 1}


@checks("ch03", "row-zero-unread")
def _(question):
    k = 4
    read = relpos.relative_position_index(4, max_relative_positions=k).unique()
    assert read.tolist() == list(range(1, 8)) and 2 * 4 - 1 == 7 and 2 * k == 8
    five = relpos.relative_position_index(5, max_relative_positions=k).unique()
    assert 0 in five.tolist() and 5 == k + 1
    assert relpos.delta(-4, k) == 0 and relpos.delta(-3, k) == 1
    assert relpos.delta(0, k) == 4
    distances = relpos.relative_positions(4)
    assert (distances.min(), distances.max()) == (-3, 3)
    assert right(question).startswith("No")
    return {4, 0, 3, 5, 1, 7, 8, 2}


@checks("ch03", "per-pair-memory")
def _(question):
    mib = 2**20
    pairs = relpos.per_pair_memory_bytes(512, 768)
    table = relpos.table_memory_bytes(512, 768)
    assert (pairs / mib, table / mib) == (768, 3)
    assert pairs // table == 512**2 // 1024 == 256 and 512**2 == 262144
    assert "256 times" in right(question) and "768 MiB against 3 MiB" in right(question)
    return {768, 512, 256, 3, 2, 1024, 262144}


@checks("ch03", "where-the-band-comes-from")
def _(question):
    torch.manual_seed(0)
    weight = relpos.RelativePositionEmbedding(512, 768, init="normal").weight.detach()
    assert abs(weight.std().item() - 0.02) < 0.001
    near = relpos.row_cosine_similarity(weight, 512, range(-16, 16))
    off = near[~torch.eye(32, dtype=torch.bool)]
    assert off.abs().max() < 0.2  # nearly orthogonal rows: no band
    sines = relpos.RelativePositionEmbedding(512, 768, init="sinusoidal").weight
    band = relpos.row_cosine_similarity(sines.detach(), 512, range(-16, 16))
    assert band.diagonal(1).mean() > 0.9  # the sinusoidal filling does make one
    return {0.02, 768, 0}


# -- chapter 4 ----------------------------------------------------------------------


@checks("ch04", "what-c2p-reads")
def _(question):
    torch.manual_seed(0)
    q, pos_key = torch.randn(5, 4, dtype=torch.float64), torch.randn(6, 4).double()
    index = relpos.relative_position_index(5, max_relative_positions=3)
    c2p = relpos.content_to_position(q[None, None], pos_key[None], index)[0, 0]
    by_pair = torch.einsum("id,ijd->ij", q, pos_key[index])
    torch.testing.assert_close(c2p, by_pair)
    return set()


@checks("ch04", "scale-with-one-term")
def _(question):
    def module(terms):
        return relpos.DisentangledSelfAttention(
            64, 1, max_relative_positions=8, pos_att_type=terms, own_table=False
        )

    assert math.isclose(module(("c2p",)).scale, 1 / math.sqrt(2 * 64))
    assert math.isclose(1 / math.sqrt(2 * 64), 1 / math.sqrt(128))
    assert math.isclose(module(("c2p", "p2c")).scale, 1 / math.sqrt(3 * 64))
    assert "128" in right(question)
    return {1, 2, 64, 128, 3}


@checks("ch04", "two-sides-of-a-pair")
def _(question):
    index = relpos.relative_position_index(5, max_relative_positions=3)
    assert (index[1, 3], index[3, 1]) == (1, 5) == (-2 + 3, 2 + 3)
    assert relpos.delta(0, 3) == 3
    assert right(question).startswith("Rows 1 and 5")
    return {3, 1, 5, 2, 0}


@checks("ch04", "p2c-index")
def _(question):
    torch.manual_seed(0)
    key, pos_query = torch.randn(5, 4, dtype=torch.float64), torch.randn(6, 4).double()
    index = relpos.relative_position_index(5, max_relative_positions=3)  # delta(i, j)
    p2c = relpos.position_to_content(key[None, None], pos_query[None], index)[0, 0]
    by_pair = torch.empty(5, 5, dtype=torch.float64)
    for i in range(5):
        for j in range(5):
            by_pair[i, j] = key[j] @ pos_query[index[i, j]]  # K_j . P^q[delta(i, j)]
    torch.testing.assert_close(p2c, by_pair)
    assert right(question).startswith(r"$\delta(i, j)$")
    return set()


@checks("ch04", "who-trains-the-table")
def _(question):
    from relpos.book.gradients import gradient_map

    torch.manual_seed(3)
    shared = relpos.DisentangledSelfAttention(
        16, 2, max_relative_positions=16, share_att_key=True, own_table=False
    )
    table = torch.randn(32, 16, requires_grad=True)
    states = torch.randn(1, 8, 16, requires_grad=True)
    c2c = gradient_map(shared, table, states)["c2c"]
    assert c2c["query_proj"] and c2c["key_proj"] and c2c["states"]
    assert not c2c["table"]
    return set()


# -- chapter 5 ----------------------------------------------------------------------


@checks("ch05", "what-gather-stores")
def _(question):
    torch.manual_seed(0)
    query = torch.randn(1, 2, 6, 4, dtype=torch.float64)  # (b, h, i, d)
    pos_key = torch.randn(2, 6, 4, dtype=torch.float64)  # (h, 2k, d)
    index = relpos.relative_position_index(6, max_relative_positions=3)
    pairs = pos_key[:, index].permute(1, 2, 0, 3)  # (i, j, h, d): one key per pair
    rows = torch.einsum("bhid,hrd->bhir", query, pos_key)  # (b, h, i, 2k)
    picked = rows.gather(-1, index.expand(1, 2, 6, 6))  # (b, h, i, j)
    torch.testing.assert_close(relpos.content_to_position_naive(query, pairs), picked)
    return {2}


@checks("ch05", "per-pair-against-scores")
def _(question):
    for n in (100, 512, 4096):
        score_matrix = 1 * 12 * n * n * 4  # (b, h, n, n), float32
        assert relpos.per_pair_memory_bytes(n, 768) == 64 * score_matrix
    assert 768 // 12 == 64 and right(question).startswith("64 times")
    return {768, 12, 64, 1, 2}


@checks("ch05", "row-scores-against-a-score-matrix")
def _(question):
    span = relpos.attention_span(512, 256)  # v3: 256 buckets a side, 512 rows
    assert span == 256 and 2 * span == 512 and 4 * span == 1024

    def row_scores(n: int) -> int:
        return 2 * 1 * 12 * n * 2 * span * 4  # 2 x (b, h, n, 2k), float32

    def score_matrix(n: int) -> int:
        return 1 * 12 * n * n * 4

    assert row_scores(1024) == score_matrix(1024)
    assert row_scores(1025) < score_matrix(1025)
    assert row_scores(1023) > score_matrix(1023)
    assert (row_scores(512) / 2**20, score_matrix(512) / 2**20) == (24, 12)
    assert "1024" in right(question)
    return {2, 512, 4, 1024, 24, 12, 768, 256}


@checks("ch05", "score-mod")
def _(question):
    from relpos.backends.flex import make_score_mod

    torch.manual_seed(0)
    n, k = 6, 3
    query, key = torch.randn(2, 1, 2, n, 4, dtype=torch.float64)
    pos_key, pos_query = torch.randn(2, 2, 2 * k, 4, dtype=torch.float64)
    index = relpos.relative_position_index(n, max_relative_positions=k)
    c2p_table = torch.einsum("bhid,hrd->bhir", query, pos_key)
    p2c_table = torch.einsum("bhjd,hrd->bhjr", key, pos_query)
    lookup = relpos.position_index(torch.arange(-(n - 1), n), max_relative_positions=k)
    score_mod = make_score_mod(c2p_table, p2c_table, lookup, None)
    zero = torch.zeros((), dtype=torch.float64)
    i, j, h = torch.tensor(4), torch.tensor(1), 1
    row = index[4, 1]
    expected = c2p_table[0, h, 4, row] + p2c_table[0, h, 1, row]
    torch.testing.assert_close(score_mod(zero, 0, h, i, j), expected)
    return set()


# -- chapter 6 ----------------------------------------------------------------------


@checks("ch06", "share-on-edge-rows")
def _(question):
    n, k = 4096, 512
    edge = (n - k) * (n - k + 1) // 2 + (n - k + 1) * (n - k + 2) // 2
    assert round(100 * edge / n**2, 1) == 76.6 and n == 8 * k
    distances = 2 * n - 1
    assert round(100 * (distances - 2 * k) / distances, 1) == 87.5
    index = relpos.relative_position_index(n, max_relative_positions=k)
    assert int(((index == 0) | (index == 2 * k - 1)).sum()) == edge
    assert 2 * k == 1024 and "76.6%" in right(question)
    return {4096, 512, 76.6, 1, 87.5, 1024}


@checks("ch06", "beyond-the-window")
def _(question):
    k, i = 8, 100
    assert (i - k, i - 3 * k) == (92, 76)
    rows = relpos.position_index(torch.tensor([k, 3 * k]), max_relative_positions=k)
    assert rows.tolist() == [15, 15] == [2 * k - 1] * 2
    attention = relpos.DisentangledSelfAttention(
        32, 4, max_relative_positions=k, own_table=False
    ).double()
    x, table = torch.randn(1, 120, 32).double(), torch.randn(2 * k, 32).double()
    with torch.no_grad():
        _, scores = attention(x, rel_embeddings=table, return_scores=True)
    assert torch.equal(scores.c2p[0, :, i, 92], scores.c2p[0, :, i, 76])
    assert right(question).startswith("They are equal")
    return {8, 100, 92, 76, 1, 15}


@checks("ch06", "exact-region")
def _(question):
    assert relpos.exact_bucket_limit(256) == 128 == 256 // 2
    r = torch.arange(-2000, 2001)
    bucket = relpos.log_bucket_position(r, 256, 512)
    exact = r.abs() <= 128
    assert torch.equal(bucket[exact], r[exact]) and int(exact.sum()) == 257
    assert 2 * 128 + 1 == 257 and bucket[r == 511].item() == 255 and 512 - 1 == 511
    assert "257 distances" in right(question)
    return {256, 512, 128, 257, 2, 1, 511}


@checks("ch06", "last-row-from")
def _(question):
    r = torch.arange(0, 5000)
    rows = relpos.position_index(r, max_relative_positions=512, position_buckets=256)
    assert int(r[rows == 511].min()) == 506 and bool((rows[506:] == 511).all())
    bucket = relpos.log_bucket_position(r, 256, 512)
    assert bucket[506:512].unique().tolist() == [255] and bucket[512] == 256
    assert bucket[256] == 192
    assert right(question).startswith("From 506")
    return {256, 512, 511, 506, 255, 1, 192}


# -- chapter 7 ----------------------------------------------------------------------


@checks("ch07", "rows-of-v3")
def _(question):
    transformers = pytest.importorskip("transformers")
    config = transformers.DebertaV2Config()
    assert config.max_relative_positions == -1 and config.max_position_embeddings == 512
    assert relpos.attention_span(512, 256) == 256
    r = torch.arange(-5000, 5000)
    buckets = relpos.position_index(r, max_relative_positions=512, position_buckets=256)
    plain = relpos.position_index(r, max_relative_positions=512)
    assert buckets.unique().numel() == 512 and plain.unique().numel() == 1024
    assert right(question).startswith("512")
    return {1, 256, 512, 1024}


@checks("ch07", "v1-key-bias")
def _(question):
    transformers = pytest.importorskip("transformers")
    from transformers.models.deberta import modeling_deberta

    config = transformers.DebertaConfig(
        hidden_size=32,
        num_attention_heads=4,
        relative_attention=True,
        max_relative_positions=8,
        pos_att_type=["c2p", "p2c"],
    )
    v1 = modeling_deberta.DisentangledSelfAttention(config)
    assert not hasattr(v1, "k_bias") and v1.in_proj.bias is None
    converted = relpos.DisentangledSelfAttention.from_transformers(v1)
    assert not converted.key_proj.bias.any()
    return set()


@checks("ch07", "unequal-lengths")
def _(question):
    torch.manual_seed(0)
    index = relpos.relative_position_index(3, 7, max_relative_positions=8)  # (3, 7)
    key = torch.randn(1, 2, 7, 4, dtype=torch.float64)
    pos_query = torch.randn(2, 16, 4, dtype=torch.float64)
    got = relpos.position_to_content(key, pos_query, index)  # (b, h, 3, 7)
    loop = torch.empty(2, 3, 7, dtype=torch.float64)
    for h in range(2):
        for i in range(3):
            for j in range(7):
                loop[h, i, j] = key[0, h, j] @ pos_query[h, index[i, j]]
    torch.testing.assert_close(got[0], loop)
    return {3, 7}


# -- chapter 8 ----------------------------------------------------------------------


@checks("ch08", "t5-sign")
def _(question):
    pytest.importorskip("transformers")
    from transformers.models.t5.modeling_t5 import T5Attention

    r = torch.arange(-300, 301)
    ours = schemes.t5_bucket(r, num_buckets=32, max_distance=128)
    settings = dict(bidirectional=True, num_buckets=32, max_distance=128)
    assert torch.equal(ours, T5Attention._relative_position_bucket(-r, **settings))
    assert not torch.equal(ours, T5Attention._relative_position_bucket(r, **settings))
    return set()


@checks("ch08", "shaw-against-delta")
def _(question):
    k = 3
    shaw = schemes.shaw_index(torch.arange(-6, 7), k).tolist()  # distances -6 .. 6
    delta = relpos.delta(torch.arange(-6, 7), k).tolist()

    def at(rows, r):
        return rows[r + 6]

    assert at(shaw, 3) == 6 and at(shaw, 2) == 5 and at(delta, 3) == at(delta, 2) == 5
    assert at(shaw, -3) == at(delta, -3) == 0 and at(shaw, -4) == 0
    assert at(shaw, 0) == at(delta, 0) == 3
    assert at(shaw, 4) == at(shaw, 3) and at(delta, 4) == at(delta, 3)
    assert len(set(shaw)) == 2 * k + 1 and len(set(delta)) == 2 * k
    assert right(question).startswith("$+3$")
    return {1, 3, 6, 5, 2, 0, 4}


@checks("ch08", "alibi-bias")
def _(question):
    slopes = schemes.alibi_slopes(8, dtype=torch.float64)
    assert slopes[0] == 1 / 2
    rel = torch.tensor([-3, 3])
    assert schemes.alibi_bias(rel, slopes[:1])[0].tolist() == [-1.5, -1.5]
    causal = schemes.alibi_bias(rel, slopes[:1], causal=True)[0]
    assert causal[0] == -math.inf
    assert right(question).startswith("A bias of $-1.5$")
    return {8, 0, 1, 2, 1.5, 3}


# -- chapters 9 and 10: the stored sweeps ------------------------------------------


def sweep_means(name: str):
    from relpos.book import results
    from relpos.book.experiments import summary_cells

    sweep = results.load(name)
    cells = summary_cells(sweep)

    def mean(setting, task, scheme, n, size=512, key="mean"):
        return cells[setting, task, scheme, size, n][key]

    return sweep, mean


@checks("ch09", "absolute-past-l")
def _(question):
    sweep, mean = sweep_means("protocol/sweep.json")
    length = sweep["config"]["train_length"]
    longest = max(sweep["config"]["test_lengths"])
    assert (length, longest) == (32, 256) == (32, 8 * 32)
    assert max(sweep["grid"]["train_size"]) == 512
    assert mean("encoder", "relative", "absolute", 32) >= 0.995  # 100%
    assert round(100 * mean("encoder", "relative", "absolute", 256)) == 16
    assert all(
        mean("encoder", "relative", "deberta", n) >= 0.995
        for n in sweep["config"]["test_lengths"]
    )
    assert 31 == length - 1
    return {32, 100, 16, 256, 31, 512}


@checks("ch09", "what-coverage-misses")
def _(question):
    from relpos.book.experiments import Config, coverage

    sweep, mean = sweep_means("protocol/sweep.json")
    def untrained(scheme: str) -> float:
        return coverage(Config(scheme=scheme, task="relative"), 64).untrained_touched

    assert untrained("t5") == 0 and untrained("absolute") > 0
    assert mean("encoder", "relative", "t5", 32) > 0.99
    assert mean("encoder", "relative", "t5", 256) < 0.05
    for scheme in ("deberta", "shaw"):
        assert all(
            mean("encoder", "relative", scheme, n) >= 0.995
            for n in sweep["config"]["test_lengths"]
        )
    assert right(question).startswith("T5")
    return {32, 256, 100}


@checks("ch09", "far-with-a-window")
def _(question):
    from relpos.book.experiments import TASKS

    sweep, mean = sweep_means("protocol/sweep.json")
    config = sweep["config"]
    assert TASKS["far"].param == 12 and config["max_relative_positions"] == 8
    far = [round(100 * mean("encoder", "far", s, 32)) for s in ("deberta", "shaw")]
    assert far == [18, 20]
    for scheme in ("sinusoidal", "transformer_xl"):  # schemes without a window
        assert mean("encoder", "far", scheme, 32) > 0.99, scheme
    behind = torch.arange(0, 40)
    rows = relpos.position_index(behind, max_relative_positions=8)
    assert int(behind[rows == rows[12]].min()) == 7
    shaw = schemes.shaw_index(behind, 8)
    assert int(behind[shaw == shaw[12]].min()) == 8
    assert max(sweep["grid"]["train_size"]) == 512 and config["train_length"] == 32
    return {12, 8, 18, 20, 7, 512, 32}


@checks("ch10", "alibi-symmetry")
def _(question):
    slopes = schemes.alibi_slopes(4, dtype=torch.float64)
    rel = relpos.relative_positions(9)
    bias = schemes.alibi_bias(rel, slopes)  # (h, i, j)
    reversed_ = schemes.alibi_bias(rel.flip(0).flip(1), slopes)
    assert torch.equal(bias, reversed_)  # unchanged when the sequence is reversed
    assert torch.equal(bias[:, 4, 1], bias[:, 4, 7])  # three back, three ahead
    return {3}


@checks("ch10", "what-carries-data-efficiency")
def _(question):
    from relpos.book import results

    sweep, mean = sweep_means("protocol/sweep_ablation.json")
    assert len(sweep["grid"]["seed"]) == 10

    def at8(scheme, key="mean"):
        return mean("encoder", "relative", scheme, 32, 8, key)

    p2c = at8("deberta-p2c", "values")
    assert sum(v >= 0.9 for v in p2c) == 9 and len(p2c) == 10  # nine seeds of ten
    assert round(100 * at8("deberta-p2c")) == 97
    assert round(100 * at8("deberta-c2p")) == 96
    assert round(100 * at8("deberta-no-norm")) == 94
    for scheme in ("deberta-c2p", "deberta-p2c", "deberta-no-norm"):
        assert sum(v >= 0.9 for v in at8(scheme, "values")) > 5, scheme  # most seeds
    assert round(100 * at8("shaw")) == round(100 * at8("deberta")) == 99
    chosen = {c["scheme"]: c for c in sweep["tuning"]["chosen"] if c["train_size"] == 8}
    assert all(c["bracketed"] for c in chosen.values())  # tuned inside the grid
    assert results.load("protocol/sweep_ablation.json")["grid"]["train_size"][0] == 8
    assert right(question).startswith("What the advantage does not need")
    return {8, 97, 94, 99, 96}


@checks("ch10", "t5-causal")
def _(question):
    from relpos.book import results
    from relpos.book.experiments.verdicts.interventions import comparison

    encoder, mean = sweep_means("protocol/sweep.json")
    causal, causal_mean = sweep_means("protocol/sweep_causal.json")
    assert round(100 * mean("encoder", "relative", "t5", 256)) == 0
    assert round(100 * causal_mean("causal", "relative", "t5", 256)) == 83
    config = causal["config"]
    assert config["train_length"] == encoder["config"]["train_length"] == 32
    buckets = 2 * config["position_buckets"]
    behind = schemes.t5_bucket(
        torch.arange(0, 300), num_buckets=buckets, max_distance=32, bidirectional=False
    )
    assert buckets == 16 and behind.unique().numel() == 16
    found = results.load("protocol/interventions.json")

    def means(label):
        row = comparison(found, "causal_t5", f"{label}, n = 256")
        return [sum(row[k]) / len(row[k]) for k in ("b_values", "a_values")], row

    (encoder_gap, causal_gap), _ = means("gap of the reading head: causal - encoder")
    assert (round(causal_gap, 2), round(encoder_gap, 2)) == (2.73, 3.03)
    (intact, cut), row = means("encoder keys_behind - encoder")
    assert (round(100 * intact), round(100 * cut)) == (0, 31)
    assert row["wins"] == len(row["a_values"]) == 10  # in every seed
    assert "fewer keys" in right(question)
    return {0, 83, 16, 2.73, 3.03, 31, 3, 32}


# -- chapter 11: relpos and the stored text results ---------------------------------


@checks("ch11", "absolute-beyond-l-text")
def _(question):
    from relpos.book import results

    config = results.load("text_causal.json")["config"]
    length, k = config["train_length"], config["max_relative_positions"]
    assert (length, k) == (64, 32) and max(config["eval_lengths"]) == 16 * length
    trained = relpos.relative_position_index(length, max_relative_positions=k).unique()
    longest = relpos.relative_position_index(1024, max_relative_positions=k).unique()
    assert set(longest.tolist()) <= set(trained.tolist()) and len(trained) == 2 * k
    return {64, 32}


@checks("ch11", "far-opener-mechanism")
def _(question):
    k = 32
    assert relpos.delta(100, k) == relpos.delta(31, k) == 2 * k - 1 == 63
    assert relpos.delta(30, k) != 63 and 2 * k == 64
    return {32, 100, 31, 1, 63, 64}


@checks("ch11", "gradient-conflict")
def _(question):
    from relpos.book import results

    study = results.load("text_gradients.json")
    deberta = next(row for row in study["summary"] if row["scheme"] == "deberta")
    cosines = deberta["cosine"]["projections"]
    assert cosines and all(c != 0 for c in cosines)  # both objectives reach W_q, W_k
    return set()


# -- chapter 12: the protocol's rates, seeds and tests -------------------------------


@checks("ch12", "grid-edge")
def _(question):
    from relpos.book.experiments.rate_grid import grid_step, next_rate

    grid = [0.001, 0.00316, 0.01]
    curve = {0.001: 3.0, 0.00316: 2.0, 0.01: 1.0}
    assert next_rate(curve, grid_step(grid), 6, min(grid)) == 0.0316
    assert "0.0316" in right(question)
    return {0.001, 0.00316, 0.01, 0.0316, 6}


@checks("ch12", "tuned-at-l")
def _(question):
    from relpos.book import results

    sweep = results.load("protocol/sweep.json")
    assert max(sweep["config"]["test_lengths"]) == 8 * sweep["config"]["train_length"]
    return set()


@checks("ch12", "sign-flips")
def _(question):
    from relpos.book import results, stats

    assert results.load("protocol/sweep.json")["grid"]["seed"] == list(range(10))
    assert 2**10 == 1024 and stats.RESAMPLES == 9999
    assert "1024" in right(question)
    return {10, 1024, 100, 9999, 2}


@checks("ch12", "interval-of-a-mean")
def _(question):
    from relpos.book import results
    from relpos.book.experiments import summary_cells

    sweep = results.load("protocol/sweep.json")
    length = sweep["config"]["train_length"]
    row = summary_cells(sweep)["encoder", "far", "rotary", 512, length]
    values = sorted(round(100 * v) for v in row["values"])
    assert round(100 * row["mean"]) == 91 and len(values) == 10
    assert [round(100 * v) for v in row["interval"]] == [83, 100]
    assert values[:3] == [66, 74, 75] and sum(v > 0.99 for v in row["values"]) == 7
    return {91, 95, 83, 100, 0.95, 66, 75}


@checks("ch12", "change-one-cause")
def _(question):
    from relpos.book.experiments.interventions import row_zero
    from relpos.book.results.ledger import load_ledger

    from relpos.book.experiments.verdicts import RULES, chapter9

    assert row_zero.SOURCE == 0
    # chapter 9's rule, kept as the first pass's record (chapter 9 now cites the test)
    blamed = next(r for r in load_ledger() if r["id"] == "first-pass-buckets-row-0")
    assert chapter9.buckets_row_0 in RULES and chapter9.CHAPTER == 9
    assert "row 0" in blamed["claim"] and blamed["verdict"] == "untested"
    return {0, 9}


# -- chapter 13: distances that grow, exact match, randomised positions, two scales --


@checks("ch13", "fixed-offset")
def _(question):
    from relpos.book.experiments import Config
    from relpos.book.experiments.layouts import farthest_source
    from relpos.book.experiments.tasks import TASKS

    assert TASKS["far"].param == 12 and Config(task="far").train_length > 12
    # far's answer is 12 back at every length; copy's and reverse's grow with it
    assert farthest_source("copy", 64) > farthest_source("copy", 32) > 12
    assert farthest_source("reverse", 64) > farthest_source("reverse", 32)
    # a table clipped at k = 8 gives 12 the row of every farther distance
    assert relpos.delta(12, 8) == relpos.delta(100, 8) == 2 * 8 - 1
    return {12}


@checks("ch13", "per-token-and-exact-match")
def _(question):
    from relpos.book.experiments.layouts import LAYOUTS
    from relpos.book.experiments.tasks import TASKS

    n, slots, vocab = 32, LAYOUTS["copy"].answers(32), TASKS["copy"].vocab_size
    assert (slots, vocab) == (15, 16) and round(100 * 0.9**slots) == 21
    # 100 sequences, 150 wrong slots of 1500 (90% per token): spread, every
    # sequence has a wrong slot; crowded, ten sequences are wrong everywhere
    spread = torch.zeros(100, slots, dtype=torch.bool)
    spread[:, 0] = True
    spread[:50, 1] = True
    crowded = torch.zeros(100, slots, dtype=torch.bool)
    crowded[:10] = True
    for wrong_slots in (spread, crowded):
        assert float(1 - wrong_slots.float().mean()) == pytest.approx(0.9)
    assert float((~spread).all(-1).float().mean()) == 0
    assert float((~crowded).all(-1).float().mean()) == pytest.approx(0.9)
    assert "0% to 90%" in right(question)
    return {n, slots, vocab, 90, 21, 0.9, 0}


@checks("ch13", "randomised-range")
def _(question):
    from relpos.book.experiments.randomised import draw_positions

    generator = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="n must be <= position_range"):
        draw_positions(1, 65, 64, generator)  # no room for a longer sequence
    drawn = draw_positions(4000, 8, 64, generator)  # training at 8, P = 64
    assert set(drawn.flatten().tolist()) == set(range(64))  # every position visited
    distances = (drawn[:, :, None] - drawn[:, None, :]).flatten()
    assert set(distances.tolist()) == set(range(-63, 64))  # and every distance
    return set()


@checks("ch13", "two-layer-relay")
def _(question):
    from relpos.book.results.ledger import load_ledger

    hop = next(r for r in load_ledger() if r["id"] == "intervention-two-hop")
    assert hop["chapter"] == 12 and "two hops" in hop["claim"]
    return {12}


@checks("ch13", "second-scale")
def _(question):
    from relpos.book.experiments.verdicts import wide
    from relpos.book.results.ledger import load_ledger

    chapters = {r["id"]: r["chapter"] for r in load_ledger()}
    assert {chapters[twin] for twin in wide.TWINS.values()} == {9, 10}
    assert "width 128 with two layers" in wide.SCALE and wide.CHAPTER == 13
    make = (ROOT / "Makefile").read_text()
    wide_run = make.split("\nWIDE := ")[1].split("\nWIDE_RESULTS")[0]  # the command
    assert "--hidden-size 128" in wide_run and "--layers 2" in wide_run
    assert "--tune-seeds 100,101" in wide_run  # the protocol's tuning seeds
    assert "--max-rates" in wide_run  # and its grid, extended until interior
    return {9, 10, 128}
