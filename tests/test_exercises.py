"""Each exercise check passes its reference and fails, with a hint, on a usual mistake.

For each label in ``relpos.book.exercises.labels()``, CASES holds a reference answer
and the typical wrong answers with a fragment of the hint each must produce. A
check without an entry here fails ``test_every_check_is_tested``; the notebooks
name only checks that exist (``test_every_notebook_check_exists``).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Callable

import nbformat
import pytest
import torch
from torch import nn

import relpos
from relpos.book.exercises import ExerciseError, check, labels

ROOT = Path(__file__).resolve().parent.parent

# -- reference answers and usual mistakes, chapter by chapter -------------------------


def distance_matrix(n: int) -> torch.Tensor:
    positions = torch.arange(n)
    return positions[:, None] - positions[None, :]  # (i, j)


def key_minus_query(n: int) -> torch.Tensor:
    positions = torch.arange(n)
    return positions[None, :] - positions[:, None]  # (i, j): j - i


def t5_rows(flip: bool) -> torch.Tensor:
    t = key_minus_query(7)
    return relpos.delta(-t if flip else t, 4)


def relative_scores() -> torch.Tensor:
    torch.manual_seed(0)
    index = relpos.relative_position_index(12, max_relative_positions=16)
    q, pos_key = torch.randn(16), torch.randn(32, 16)
    return torch.einsum("d,ijd->ij", q, pos_key[index])  # (i, j)


def pairs_on_row_zero(n: int, k: int) -> int:
    return (n - k) * (n - k + 1) // 2 if n > k else 0


def delta_symmetric(r: torch.Tensor, k: int) -> torch.Tensor:
    return r.clamp(-k, k) + k


def c2p_per_pair(
    Q: torch.Tensor, Pk: torch.Tensor, index: torch.Tensor
) -> torch.Tensor:
    return torch.einsum("id,ijd->ij", Q, Pk[index])


def p2c_by_gather(
    key: torch.Tensor, pos_query: torch.Tensor, index: torch.Tensor
) -> torch.Tensor:
    b, h, j, _ = key.shape
    rows = torch.einsum("hrd,bhjd->bhrj", pos_query, key)  # (b, h, r, j)
    return rows.gather(-2, index.expand(b, h, *index.shape))  # (b, h, i, j)


def p2c_wrong_dim(
    key: torch.Tensor, pos_query: torch.Tensor, index: torch.Tensor
) -> torch.Tensor:
    rows = torch.einsum("bhjd,hrd->bhjr", key, pos_query)  # (b, h, j, r)
    b, h = key.shape[:2]
    return rows.gather(-1, index.expand(b, h, *index.shape))  # key i, not key j


def score_mod_inputs() -> dict[str, torch.Tensor]:
    torch.manual_seed(1)
    return {
        "query": torch.randn(1, 1, 5, 3, dtype=torch.float64),
        "pos_key": torch.randn(1, 4, 3, dtype=torch.float64),
        "key_mask": torch.tensor([[True, True, True, False, False]]),
    }


def score_mod_scores(fill: float | None) -> torch.Tensor:
    given = score_mod_inputs()
    index = relpos.relative_position_index(5, max_relative_positions=2)
    c2p = relpos.content_to_position(given["query"], given["pos_key"], index)[0, 0]
    if fill is None:
        return c2p
    return c2p.masked_fill(~given["key_mask"][0], fill)


class PerPairEmbedding(nn.Module):
    def __init__(
        self, max_relative_positions: int = 512, hidden_size: int = 768
    ) -> None:
        super().__init__()
        self.k = max_relative_positions
        self.embeddings = nn.Embedding(2 * max_relative_positions, hidden_size)

    def rows(self, seq_len: int) -> torch.Tensor:
        positions = torch.arange(seq_len)
        return (positions[:, None] - positions[None, :]).clamp(
            -self.k, self.k - 1
        ) + self.k

    def forward(self, seq_len: int) -> torch.Tensor:
        return self.embeddings(self.rows(seq_len))  # (i, j, hidden)


class UnclippedPerPair(PerPairEmbedding):
    def rows(self, seq_len: int) -> torch.Tensor:
        positions = torch.arange(seq_len)
        return positions[:, None] - positions[None, :] + self.k


class ReversedPerPair(PerPairEmbedding):
    def rows(self, seq_len: int) -> torch.Tensor:
        return super().rows(seq_len).T


def log_bucket(
    r: torch.Tensor,
    bucket_size: int,
    max_position: int,
    *,
    rounding: Callable = torch.ceil,
    signed: bool = True,
    last: int = 1,
) -> torch.Tensor:
    mid = bucket_size // 2
    magnitude = r.abs().double()
    exact = magnitude <= mid
    steps = rounding(
        (mid - 1)
        * torch.log(magnitude.clamp(min=mid) / mid)
        / math.log((max_position - last) / mid)
    )
    far = (mid + steps) * (torch.sign(r) if signed else 1)
    return torch.where(exact, r.double(), far).long()


def gradient_targets(share: bool) -> set[str]:
    torch.manual_seed(4)
    module = relpos.DisentangledSelfAttention(
        16, 2, max_relative_positions=16, share_att_key=share
    )
    states = torch.randn(1, 8, 16)
    _, scores = module(states, return_scores=True, rel_embeddings=torch.randn(32, 16))
    weights = {
        n.removesuffix(".weight"): w
        for n, w in module.named_parameters()
        if n.endswith("proj.weight") and not n.startswith("value")
    }
    grads = torch.autograd.grad(
        scores.p2c.sum(), list(weights.values()), allow_unused=True
    )
    return {
        name for name, g in zip(weights, grads) if g is not None and g.abs().sum() > 0
    }


def small_deberta():
    from transformers import DebertaV2Config, DebertaV2Model

    torch.manual_seed(0)
    config = DebertaV2Config(
        vocab_size=50,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        relative_attention=True,
        max_relative_positions=16,
        position_buckets=8,
        pos_att_type=["p2c", "c2p"],
        share_att_key=True,
        norm_rel_ebd="layer_norm",
        position_biased_input=False,
    )
    model = DebertaV2Model(config).eval()
    with torch.no_grad():
        model.encoder.LayerNorm.weight.uniform_(0.5, 1.5)
    tokens = torch.randint(0, 50, (2, 30))
    mask = torch.ones(2, 30, dtype=torch.long)
    mask[1, 20:] = 0
    with torch.no_grad():
        hidden = model(
            tokens, attention_mask=mask, output_hidden_states=True
        ).hidden_states
    return model, tokens, mask, hidden


def second_layer(input_layer: int, normalised: bool) -> tuple[torch.Tensor, dict]:
    model, tokens, mask, hidden = small_deberta()
    layer = relpos.DisentangledSelfAttention.from_transformers(
        model.encoder.layer[1].attention.self
    )
    encoder = model.encoder
    table = encoder.get_rel_embedding() if normalised else encoder.rel_embeddings.weight
    with torch.no_grad():
        context = layer(hidden[input_layer], mask, rel_embeddings=table)
    return context, {"model": model, "tokens": tokens, "attention_mask": mask}


def separate_keys(share_in_copy: bool) -> tuple[nn.Module, dict]:
    from transformers import DebertaV2Config
    from transformers.models.deberta_v2.modeling_deberta_v2 import (
        DisentangledSelfAttention,
    )

    torch.manual_seed(0)
    config = DebertaV2Config(
        hidden_size=32,
        num_attention_heads=4,
        relative_attention=True,
        max_relative_positions=16,
        position_buckets=-1,
        pos_att_type=["c2p", "p2c"],
        share_att_key=False,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    theirs = DisentangledSelfAttention(config).eval()
    if share_in_copy:
        mine = relpos.DisentangledSelfAttention(32, 4, max_relative_positions=16)
    else:
        mine = relpos.DisentangledSelfAttention.from_transformers(theirs)
    return mine, {"reference": theirs}


Answer = Callable[[], tuple[tuple, dict]]


def given(*answers: Any, **context: Any) -> Answer:
    return lambda: (answers, context)


CASES: dict[str, tuple[Answer, list[tuple[Answer, str]]]] = {
    "ch1-ex1": (
        given(distance_matrix, 7),  # 10 tokens, 3 ahead: the diagonal i - j = -3
        [
            (given(key_minus_query, 7), "j - i"),
            (given(lambda n: distance_matrix(n).float(), 7), "integers"),
            (given(lambda n: distance_matrix(n + 1), 7), "shape"),
            (given(distance_matrix, 14), "equal to -3"),  # ahead and behind
            (given(distance_matrix, 7, n=12, m=3), "12 tokens"),  # another's numbers
        ],
    ),
    "ch1-ex2": (
        lambda: ((t5_rows(True),), {}),
        [
            (lambda: ((t5_rows(False),), {}), "flip the sign"),
        ],
    ),
    "ch1-ex3": (
        lambda: (
            (relative_scores().diagonal(-2), relpos.delta(2, 16)),
            {"scores": relative_scores()},
        ),
        [
            (
                lambda: (
                    (relative_scores().diagonal(2), 18),
                    {"scores": relative_scores()},
                ),
                "two tokens ahead",
            ),
            (
                lambda: (
                    (relative_scores().diagonal(-2), 14),
                    {"scores": relative_scores()},
                ),
                "distance -2",
            ),
        ],
    ),
    "ch2-ex1": (
        given([0, 0, 1, 512, 1023, 1023, 1023]),
        [
            (given([0, 0, 1, 512, 1023, 1024, 1024]), "2k - 1"),
            (given([-88, 0, 1, 512, 1023, 1023, 1023]), "clip it before shifting"),
            (given([0, 0, 1, 512]), "one row per distance"),
        ],
    ),
    "ch2-ex2": (
        given(pairs_on_row_zero, 2346),  # n = 100, k = 32: 68 * 69 / 2
        [
            (
                given(
                    lambda n, k: (n - k + 1) * (n - k + 2) // 2 if n > k else 0, 2346
                ),
                "row 2k - 1",
            ),
            (
                given(lambda n, k: (n - k) * (n - k + 1) // 2, 2346),
                "no pair reads row 0",
            ),
            (given(pairs_on_row_zero, 2415), "evaluate your function"),
            (given(pairs_on_row_zero, 2346, n=120, k=32), "120 tokens"),
        ],
    ),
    "ch2-ex3": (
        given(delta_symmetric, 9),
        [
            (given(lambda r, k: relpos.delta(r, k), 9), "DeBERTa's delta"),
            (given(delta_symmetric, 8), "2k is DeBERTa's"),
            (given(lambda r, k: r.clamp(-k, k) + k + 1, 9), "wrong row"),
        ],
    ),
    "ch3-ex1": (
        given(lambda n, k: min(2 * n - 1, 2 * k), 25),  # span 24: 25 tokens
        [
            (given(lambda n, k: 2 * n - 1, 25), "caps the rows"),
            (given(lambda n, k: min(2 * n, 2 * k), 25), "2n - 1 distinct"),
            (given(lambda n, k: min(2 * n - 1, 2 * k), 24), "one row is still unread"),
            (given(lambda n, k: min(2 * n - 1, 2 * k), 25, span=40), "reaches 2 * 40"),
        ],
    ),
    "ch3-ex2": (
        given(3344),
        [
            (given(2364), "float32"),
            (given(3345), "does not fit"),
            (given(3000), "look for the longest"),
        ],
    ),
    "ch3-ex3": (
        given(math.sqrt(384)),
        [
            (given(math.sqrt(768)), "384 such pairs"),
            (given(1.0), "not unit vectors"),
        ],
    ),
    "ch4-ex1": (
        given(c2p_per_pair),
        [
            (given(lambda Q, Pk, index: c2p_per_pair(Q, Pk, index.T)), "delta(j, i)"),
            (
                given(lambda Q, Pk, index: Q @ Pk[: index.shape[1]].T),
                "one dot product per pair",
            ),
        ],
    ),
    "ch4-ex2": (
        given(torch.eye(5, dtype=torch.bool)),
        [
            (given(torch.ones(5, 5, dtype=torch.bool)), "different rows"),
            (given(relpos.relative_positions(5).abs() < 3), "clamp(r) == clamp(-r)"),
        ],
    ),
    "ch4-ex3": (
        given(1 / math.sqrt(128)),  # 12 heads of 64: 1 / sqrt(2 * 64)
        [
            (given(1 / math.sqrt(192)), "both position terms"),
            (given(0.125), "BERT's scale"),
            (given(1 / math.sqrt(2 * 768)), "width of one head"),
            (given(1 / math.sqrt(128), head_size=48, heads=4), "4 heads"),  # another's
        ],
    ),
    "ch4-ex4": (
        lambda: ((gradient_targets(False),), {}),
        [
            (lambda: ((gradient_targets(True),), {}), "share_att_key=True"),
            (given({"key_proj", "pos_query_proj", "pos_key_proj"}), "only for c2p"),
        ],
    ),
    "ch5-ex1": (
        given(p2c_by_gather),
        [
            (
                given(lambda key, pq, index: p2c_by_gather(key, pq, index.T)),
                "delta(j, i)",
            ),
            (given(p2c_wrong_dim), "key i's content"),
        ],
    ),
    "ch5-ex2": (
        lambda: (
            (score_mod_scores(torch.finfo(torch.float64).min),),
            score_mod_inputs(),
        ),
        [
            (lambda: ((score_mod_scores(-math.inf),), score_mod_inputs()), "-inf"),
            (lambda: ((score_mod_scores(None),), score_mod_inputs()), "pass key_mask"),
        ],
    ),
    "ch5-ex3": (
        given(PerPairEmbedding),
        [
            (given(UnclippedPerPair), "clip i - j"),
            (given(ReversedPerPair), "the row of j - i"),
            (given(lambda k, hidden: PerPairEmbedding(k + 1, hidden)), "one parameter"),
        ],
    ),
    "ch6-ex1": (
        given(380_628, 381_501),
        [
            (given(381_501, 380_628), "swapped"),
            (given(380_628, 380_628), "also collects distance k - 1"),
        ],
    ),
    "ch6-ex2": (
        given(132),
        [
            (given(129), "still 129"),
            (given(128), "exact region"),
        ],
    ),
    "ch6-ex3": (
        given(0.5649),
        [
            (given(56.49), "percentage"),
            (given(0.8), "not the fraction"),
        ],
    ),
    "ch7-ex1": (
        given(log_bucket),
        [
            (
                given(lambda r, b, m: log_bucket(r, b, m, rounding=torch.floor)),
                "round up",
            ),
            (
                given(lambda r, b, m: log_bucket(r, b, m, signed=False)),
                "negative buckets",
            ),
            (given(lambda r, b, m: log_bucket(r, b, m, last=0)), "log ratio"),
        ],
    ),
    "ch7-ex2": (
        lambda: ((second_layer(1, True)[0],), second_layer(1, True)[1]),
        [
            (
                lambda: ((second_layer(0, True)[0],), second_layer(0, True)[1]),
                "hidden_states[0]",
            ),
            (
                lambda: ((second_layer(1, False)[0],), second_layer(1, False)[1]),
                "raw table",
            ),
        ],
    ),
    "ch7-ex3": (
        lambda: ((separate_keys(False)[0],), separate_keys(False)[1]),
        [
            (
                lambda: ((separate_keys(True)[0],), separate_keys(True)[1]),
                "share_att_key=True",
            ),
        ],
    ),
}


# Chapters 1 to 7 are tested here; a later chapter's checks are tested with it.
MINE = re.compile(r"ch[1-7]-ex\d+")


def test_every_check_is_tested():
    assert set(CASES) == {label for label in labels() if MINE.fullmatch(label)}


@pytest.mark.parametrize("label", sorted(CASES))
def test_reference_solution_passes(label, capsys):
    answers, context = CASES[label][0]()
    check(label, *answers, **context)
    assert capsys.readouterr().out.startswith(f"{label}: correct.")


WRONG = [(label, i) for label, (_, wrongs) in CASES.items() for i in range(len(wrongs))]


@pytest.mark.parametrize("label, number", WRONG)
def test_usual_mistake_fails_with_a_hint(label, number):
    make, hint = CASES[label][1][number]
    answers, context = make()
    with pytest.raises(ExerciseError) as error:
        check(label, *answers, **context)
    message = str(error.value)
    assert message.startswith(f"{label}: not yet.")
    assert hint in message, message


def test_unknown_label_and_wrong_answer_types():
    with pytest.raises(ValueError, match="label must be one of"):
        check("ch99-ex1", 1)
    with pytest.raises(ExerciseError, match="must be a function"):
        check("ch1-ex1", 5, 7)
    with pytest.raises(ExerciseError, match="must be a sequence length"):
        check("ch3-ex2", "3344")


def test_a_wrong_answer_fails_as_an_assertion():
    # A grader that counts AssertionErrors (nbgrader, a bare assert) sees it fail.
    with pytest.raises(AssertionError, match=r"^ch1-ex1: not yet\. .*j - i"):
        check("ch1-ex1", key_minus_query, 7)


CHECK_CALL = re.compile(r"""check\(\s*["'](ch\d+-ex\d+)["']""")


def notebook_checks() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "book").glob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        for cell in notebook.cells:
            if cell.cell_type == "code":
                for label in CHECK_CALL.findall(cell.source):
                    found.setdefault(label, []).append(path.name)
    return found


def test_every_notebook_check_exists():
    unknown = set(notebook_checks()) - set(labels())
    assert not unknown, unknown


def test_every_check_is_used_by_one_chapter():
    used = notebook_checks()
    for label in labels():
        assert len(used.get(label, [])) == 1, (label, used.get(label))


# -- malformed answers: never "correct", always an error that says why ----------------

BAD_ANSWERS = [
    float("nan"), float("inf"), -float("inf"), [], {}, torch.tensor(float("nan")),
    True, None,
]


def _answer_count(label: str) -> int:
    import inspect

    from relpos.book.exercises import _core

    parameters = inspect.signature(_core._CHECKS[label]).parameters.values()
    return sum(1 for p in parameters if p.kind is not p.KEYWORD_ONLY)


def _context(label: str) -> dict[str, Any]:
    """The keywords the check needs (this file's, or a default Config for a later
    chapter's ``config=``), so that the answer is what it reads."""
    if label in CASES:
        return CASES[label][0]()[1]
    import inspect

    from relpos.book.exercises import _core
    from relpos.book.experiments import Config

    parameters = inspect.signature(_core._CHECKS[label]).parameters.values()
    needed = [p.name for p in parameters if p.kind is p.KEYWORD_ONLY and
              p.default is p.empty]
    assert set(needed) <= {"config"}, (label, needed)
    return {name: Config() for name in needed}


@pytest.mark.parametrize("label", labels())
@pytest.mark.parametrize("bad", BAD_ANSWERS, ids=repr)
def test_malformed_answers_never_pass(label, bad, capsys):
    # Every answer replaced by the bad value (with the chapter's context where this
    # file has it): an error, and nothing printed as correct.
    context = _context(label)
    with pytest.raises((ExerciseError, TypeError, ValueError)) as error:
        check(label, *[bad] * _answer_count(label), **context)
    assert "correct" not in capsys.readouterr().out
    if bad is True or bad is None:  # a hint, or a TypeError that names the answer
        named = error.type is TypeError and "answer" in str(error.value)
        assert error.type is ExerciseError or named, (label, error.value)
    if isinstance(bad, float) or isinstance(bad, torch.Tensor):
        if label in CASES or _answer_count(label) == 1:
            assert error.type is ValueError, (label, error.value)
            assert "must be a finite number" in str(error.value)


@pytest.mark.parametrize("label", sorted(CASES))
def test_one_nan_among_right_answers_is_named(label):
    answers, context = CASES[label][0]()
    for position in range(len(answers)):
        spoiled = list(answers)
        spoiled[position] = float("nan")
        name = "answer" if len(answers) == 1 else f"answer {position + 1}"
        with pytest.raises(ValueError, match=f"{name} must be a finite number"):
            check(label, *spoiled, **context)


def test_numbers_are_finite_and_labels_strings():
    # ch6-ex3 compared abs(nan - expected) >= tolerance, False for NaN: it passed.
    with pytest.raises(ValueError, match="answer must be a finite number, got nan"):
        check("ch6-ex3", float("nan"))
    with pytest.raises(ExerciseError, match="must be a fraction"):
        check("ch6-ex3", True)
    with pytest.raises(TypeError, match="label must be an exercise label"):
        check(["ch6-ex3"], 0.5)
    with pytest.raises(TypeError, match="label must be an exercise label"):
        check({}, 0.5)
    with pytest.raises(TypeError, match=r"answers: ch6-ex1 takes 2 answers \(row_zero"):
        check("ch6-ex1", 1)
    with pytest.raises(TypeError, match="answers: ch3-ex2"):
        check("ch3-ex2", 1, nope=2)
