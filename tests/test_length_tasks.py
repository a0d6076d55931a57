"""Tasks whose distance grows with the length: labels, chance levels, exact match,
training on mixed lengths, randomised positions, and the bounds a scheme cannot beat."""

from __future__ import annotations

import math

import pytest
import torch

from relpos.book.experiments import Config, TinyModel, run_one, run_sweep
from relpos.book.experiments.bounds import (
    addition_bound,
    far_window,
    permutation_bounds,
    window_bound,
)
from relpos.book.experiments.coverage import coverage
from relpos.book.experiments.equivariance import expected_max_share
from relpos.book.experiments.layouts import (
    IGNORE,
    LAYOUTS,
    answer_slots,
    farthest_source,
    layout_labels,
    needed_distances,
    sample_tokens,
    sum_digits,
)
from relpos.book.experiments.measure import exact_match, exact_share, predict
from relpos.book.experiments.randomised import draw_positions, evaluation_positions
from relpos.book.experiments.schemes import RANDOMISED_SCHEMES
from relpos.book.experiments.tasks import TASKS, Task, get_task
from relpos.book.experiments.train import train, training_set
from relpos.schemes.t5 import t5_bucket

from _tiny import TINY, one_thread  # noqa: F401  (one_thread: autouse fixture)

GROWING = ("copy", "reverse", "mqar", "addition")
I = IGNORE
#: A tiny run of a growing task (mqar needs n >= 3, addition n >= 5).
SMALL = {**TINY, "train_length": 12, "test_lengths": (12, 24)}


# -- labels on hand-made sequences -----------------------------------------------------


def _labels(name: str, tokens: list[int]) -> list[int]:
    return get_task(name).labels(torch.tensor([tokens]))[0].tolist()


def test_copy_and_reverse_label_the_slots_after_sep():
    pad, sep, blank = 16, 17, 18  # after the 16 symbols
    odd = [3, 5, 7, sep, blank, blank, blank]
    assert _labels("copy", odd) == [I] * 4 + [3, 5, 7]
    assert _labels("reverse", odd) == [I] * 4 + [7, 5, 3]
    even = [pad, *odd]  # one token more: a PAD in front, the same problem
    assert _labels("copy", even) == [I] * 5 + [3, 5, 7]
    assert _labels("reverse", even) == [I] * 5 + [7, 5, 3]


def test_mqar_labels_each_query_with_the_value_of_its_key():
    k = 16  # keys are 16 .. 111 (after the 16 values), PAD 112
    pairs = [k + 4, 1, k + 14, 2, k + 24, 3]
    assert _labels("mqar", [*pairs, k + 24, k + 4, k + 14]) == [I] * 6 + [3, 1, 2]
    # a query whose key is in no pair is not scored
    assert _labels("mqar", [*pairs, k + 34, k + 4, k + 14]) == [I] * 6 + [I, 1, 2]
    assert _labels("mqar", [112, 112, *pairs, k + 14, k + 4, k + 24])[-3:] == [2, 1, 3]


def test_addition_labels_the_sum_least_significant_digit_first():
    equals, blank = 11, 12
    # a = 495, b = 911: digits interleaved from the most significant
    tokens = [4, 9, 9, 1, 5, 1, equals, *[blank] * 4]
    assert _labels("addition", tokens) == [I] * 7 + [6, 0, 4, 1]  # 1406
    assert sum_digits(torch.tensor([[9, 9]]), torch.tensor([[1, 0]]), 10).tolist() == [
        [0, 0, 1]
    ]  # 99 + 1 = 100


def _by_python(name: str, tokens: list[int]) -> list[int]:
    """The labels of a sampled sequence, by plain Python arithmetic."""
    task = get_task(name)
    layout = LAYOUTS[task.kind]
    n, v = len(tokens), task.vocab_size
    m, pad = layout.size(n), layout.pad(n)
    body = tokens[pad:]
    if name in ("copy", "reverse"):
        data = body[:m]
        return [I] * (pad + m + 1) + (data if name == "copy" else data[::-1])
    if name == "mqar":
        value = dict(zip(body[0 : 2 * m : 2], body[1 : 2 * m : 2]))
        return [I] * (pad + 2 * m) + [value[q] for q in body[2 * m :]]
    a = int("".join(str(d) for d in body[0 : 2 * m : 2]))
    b = int("".join(str(d) for d in body[1 : 2 * m : 2]))
    digits = [int(d) for d in str(a + b).zfill(m + 1)][::-1]
    return [I] * (pad + 2 * m + 1) + digits


@pytest.mark.parametrize("name", GROWING)
@pytest.mark.parametrize("n", [8, 9, 10, 31])
def test_sampled_sequences_follow_the_layout(name, n):
    task = get_task(name)
    tokens, labels = task.sample(16, n, seed=4)
    assert tokens.shape == labels.shape == (16, n)
    assert 0 <= int(tokens.min()) and int(tokens.max()) < task.input_size
    for row, label in zip(tokens.tolist(), labels.tolist()):
        assert label == _by_python(name, row)
    assert torch.equal(task.sample(16, n, seed=4)[0], tokens)  # seeded
    assert not torch.equal(task.sample(16, n, seed=5)[0], tokens)
    if name == "mqar":  # distinct keys, each queried once
        m, pad = LAYOUTS["mqar"].size(n), LAYOUTS["mqar"].pad(n)
        keys = tokens[:, pad : pad + 2 * m : 2]
        assert all(len(set(r)) == m for r in keys.tolist())
        queries = tokens[:, pad + 2 * m :]
        assert torch.equal(queries.sort(-1).values, keys.sort(-1).values)



# -- the distances each answer slot needs ----------------------------------------------


def _observed_needs(kind: str, n: int, vocab: int, param: int) -> list[int]:
    """For each answer slot, the largest ``i - j`` of a symbol ``j`` whose change
    alone (to every other symbol, on sampled sequences) changed that slot's label."""
    generator = torch.Generator().manual_seed(11)
    tokens = sample_tokens(kind, 96, n, vocab, param, generator)  # (b, n)
    labels = layout_labels(kind, tokens, vocab, param)  # (b, n)
    slots = answer_slots(kind, n)  # (answers,)
    farthest = [0] * len(slots)
    for j in range(n):
        if not bool((tokens[:, j] < vocab).all()):
            continue  # not a label symbol in every sequence (PAD, SEP, a key)
        for step in range(1, vocab):
            changed = tokens.clone()
            changed[:, j] = (tokens[:, j] + step) % vocab
            moved = (layout_labels(kind, changed, vocab, param) != labels)[:, slots]
            for s, slot in enumerate(slots.tolist()):
                if bool(moved[:, s].any()):
                    farthest[s] = max(farthest[s], slot - j)
    return farthest


@pytest.mark.parametrize("kind", GROWING)
@pytest.mark.parametrize("n", [5, 6, 7, 9, 12, 14])
def test_needed_distances_are_what_changing_one_token_shows(kind, n):
    # a small vocabulary (base 2 for addition: long carries are common)
    vocab, param = (2, 0) if kind == "addition" else (3, 8)
    observed = _observed_needs(kind, n, vocab, param)
    assert needed_distances(kind, n).tolist() == observed
    assert farthest_source(kind, n) == max(observed)
    assert answer_slots(kind, n).tolist() == list(
        range(n - LAYOUTS[kind].answers(n), n)
    )


@pytest.mark.parametrize("n", [5, 9, 10, 31, 32, 64, 257])
def test_farthest_sources_follow_the_docstring(n):
    m = {kind: LAYOUTS[kind].size(n) for kind in GROWING}
    assert farthest_source("copy", n) == (n + 1) // 2 == m["copy"] + 1
    assert farthest_source("reverse", n) == 2 * m["reverse"]
    assert farthest_source("mqar", n) == 3 * m["mqar"] - 2 <= n - 2
    assert farthest_source("addition", n) == 3 * m["addition"] + 1
    k = torch.arange(m["reverse"])
    assert torch.equal(needed_distances("reverse", n), 2 * k + 2)


def test_bad_kinds_and_lengths_of_the_needed_distance_are_refused():
    with pytest.raises(ValueError, match="kind must be one of copy"):
        farthest_source("shift", 9)
    with pytest.raises(TypeError, match="kind must be a str"):
        needed_distances(3, 9)
    with pytest.raises(ValueError, match="n must be >= 5 for a addition task"):
        farthest_source("addition", 4)
    with pytest.raises(TypeError, match="n must be an int"):
        answer_slots("copy", 9.0)

# -- chance levels, scored positions, lengths ------------------------------------------


def test_chance_levels_and_scored_positions():
    assert [TASKS[n].chance for n in GROWING] == [1 / 16, 1 / 16, 1 / 16, 1 / 10]
    # scored: copy 4 slots at n = 9, mqar 3 queries at 9, addition 4 digits at 14
    assert TASKS["copy"].exact_chance(9) == pytest.approx(16.0**-4)
    assert TASKS["reverse"].exact_chance(10) == pytest.approx(16.0**-4)
    assert TASKS["mqar"].exact_chance(9) == pytest.approx(16.0**-3)
    assert TASKS["addition"].exact_chance(14) == pytest.approx(10.0**-5)
    assert TASKS["copy"].scored_at(9).tolist() == [False] * 5 + [True] * 4
    assert TASKS["relative"].exact_chance(8) == pytest.approx(16.0**-5)
    assert [TASKS[n].num_classes for n in GROWING] == [16, 16, 16, 10]
    assert [TASKS[n].input_size for n in GROWING] == [19, 19, 113, 13]


def test_bad_tasks_and_lengths_are_refused():
    with pytest.raises(ValueError, match="param must be 0"):
        Task("c", "copy", 3)
    with pytest.raises(ValueError, match="param must be an int >= 1"):
        Task("q", "mqar", 0)
    with pytest.raises(ValueError, match="length must be >= 3"):
        get_task("copy").sample(2, 2, seed=0)
    with pytest.raises(ValueError, match="length must be <= 290"):
        get_task("mqar").sample(2, 291, seed=0)
    with pytest.raises(ValueError, match="test_lengths must suit task 'addition'"):
        Config(task="addition", test_lengths=(4, 32))
    with pytest.raises(ValueError, match="min_train_length must suit task 'copy'"):
        Config(task="copy", min_train_length=2)
    with pytest.raises(ValueError, match="min_train_length must be <= train_length"):
        Config(min_train_length=33)


# -- exact match -----------------------------------------------------------------------


def test_exact_match_on_hand_made_predictions():
    labels = torch.tensor([[I, 1, 2], [I, 1, 2], [I, 1, 2], [I, I, I]])
    predicted = torch.tensor([[0, 1, 2], [5, 1, 3], [9, 1, 2], [0, 0, 0]])
    scored = labels != I
    # right, wrong at a scored slot, wrong only where unscored; the last has no slot
    assert exact_share(predicted, labels, scored) == pytest.approx(2 / 3)
    assert exact_share(predicted[3:], labels[3:], scored[3:]) == 0.0


def test_exact_match_of_a_model_is_every_slot_of_its_predictions():
    config = Config(task="copy", scheme="absolute", **SMALL)
    model = TinyModel(config).eval()
    task = get_task("copy")
    tokens, labels = task.sample(8, 12, seed=1)
    predicted = predict(model, tokens)
    right = ((predicted == labels) | (labels == I)).all(-1).float().mean()
    assert exact_match(model, task, tokens, labels) == pytest.approx(float(right))
    record = run_one(config)
    assert set(record["exact_match"]) == set(record["accuracy"]) == {"12", "24"}
    for n, share in record["exact_match"].items():
        assert 0 <= share <= record["accuracy"][n] + 1e-12


def test_a_sweep_summarises_exact_match_as_it_does_accuracy():
    base = Config(task="copy", **SMALL)
    result = run_sweep(
        base, tasks=["copy"], schemes=["none"], train_sizes=[8], seeds=[0, 1],
        progress=False,
    )
    assert [(r["length"], r["n"]) for r in result["exact"]] == [(12, 2), (24, 2)]
    for row in result["exact"]:
        assert row["values"] == [r["exact_match"][str(row["length"])]
                                 for r in result["runs"]]


# -- training on mixed lengths ---------------------------------------------------------


def test_mixed_lengths_share_the_training_set_out_and_are_seeded():
    config = Config(task="copy", **{**SMALL, "train_size": 10}, min_train_length=9)
    groups = training_set(config)
    assert [t.shape for t, _ in groups] == [(3, 9), (3, 10), (2, 11), (2, 12)]
    again = training_set(config)
    assert all(torch.equal(a[0], b[0]) for a, b in zip(groups, again))
    plain = Config(task="copy", **SMALL)
    assert [t.shape for t, _ in training_set(plain)] == [(8, 12)]
    assert "min_train_length" not in plain.to_dict()
    assert config.to_dict()["min_train_length"] == 9
    first, second = train(config), train(config)
    assert first.losses == second.losses
    assert first.losses != train(plain).losses


def test_optional_fields_leave_the_record_of_every_other_run_unchanged():
    keys = set(Config().to_dict())
    assert not keys & {"min_train_length", "random_positions"}
    assert set(Config(random_positions=300).to_dict()) == keys | {"random_positions"}


# -- randomised positions --------------------------------------------------------------


def test_drawn_positions_are_ordered_distinct_in_range_and_seeded():
    def draw(seed):
        return draw_positions(64, 12, 40, torch.Generator().manual_seed(seed))

    positions = draw(0)
    assert positions.shape == (64, 12)
    assert bool((positions[:, 1:] > positions[:, :-1]).all())
    assert 0 <= int(positions.min()) and int(positions.max()) < 40
    assert torch.equal(positions, draw(0)) and not torch.equal(positions, draw(1))
    assert int(positions.max()) > 30  # the whole range is used, not 0 .. 11
    with pytest.raises(ValueError, match="n must be <= position_range=40"):
        draw_positions(1, 41, 40, torch.Generator())


def test_randomised_runs_draw_their_positions_deterministically():
    config = Config(task="copy", scheme="rotary-randomised", **SMALL)
    assert config.position_range == 256 and config.table_length == 256
    assert Config(scheme="rotary").position_range is None
    assert torch.equal(
        evaluation_positions(config, 4, 24), evaluation_positions(config, 4, 24)
    )
    assert evaluation_positions(Config(task="copy", scheme="rotary", **SMALL), 4, 24) \
        is None
    first, second = train(config), train(config)
    assert first.losses == second.losses
    plain = train(Config(task="copy", scheme="rotary", **SMALL))
    assert first.losses != plain.losses
    absolute = TinyModel(Config(task="copy", scheme="absolute-randomised", **SMALL))
    assert absolute.input_positions.weight.shape[0] == 256


@pytest.mark.parametrize(
    "scheme, relative",
    [("absolute", False), ("sinusoidal", False), ("rotary", True), ("t5", True),
     ("alibi", True), ("deberta", True)],
)
def test_positions_reach_the_scheme(scheme, relative):
    config = Config(task="copy", scheme=scheme, **SMALL, random_positions=64)
    torch.manual_seed(0)
    model = TinyModel(config).eval()
    tokens, _ = get_task("copy").sample(3, 11, seed=2)
    plain = model(tokens)
    with torch.no_grad():
        counted = model(tokens, positions=torch.arange(11).expand(3, 11))
        shifted = model(tokens, positions=torch.arange(11).expand(3, 11) + 20)
        spread = model(tokens, positions=torch.arange(11).expand(3, 11) * 3)
    assert torch.allclose(counted, plain, atol=1e-5)  # 0 .. n - 1: the default
    assert torch.allclose(shifted, plain, atol=1e-4) == relative  # only i - j
    assert not torch.allclose(spread, plain, atol=1e-4)


def test_schemes_without_positions_to_randomise_are_refused():
    for scheme in ("none", "deberta-emd"):
        with pytest.raises(ValueError, match=f"scheme '{scheme}'"):
            TinyModel(Config(scheme=scheme, **TINY, random_positions=64))
    with pytest.raises(ValueError, match="random_positions must be >= the longest"):
        Config(random_positions=100)  # the test lengths reach 256
    assert set(RANDOMISED_SCHEMES) == {"absolute-randomised", "rotary-randomised"}


def test_bad_positions_are_refused():
    config = Config(task="copy", scheme="absolute", **SMALL, random_positions=64)
    model = TinyModel(config)
    tokens = torch.zeros(2, 5, dtype=torch.long)
    cases = [
        (torch.zeros(2, 5), TypeError, "integer tensor"),
        (torch.arange(4).expand(2, 4), ValueError, r"shape \(b, 5\)"),
        (torch.arange(60, 65).expand(2, 5), ValueError, r"rows in \[0, 64\)"),
    ]
    for positions, error, message in cases:
        with pytest.raises(error, match=message):
            model(tokens, positions=positions)
    with pytest.raises(ValueError, match="positions must be >= 0"):
        TinyModel(Config(scheme="sinusoidal", **TINY, random_positions=64))(
            tokens, positions=torch.arange(-1, 4).expand(2, 5)
        )


def test_randomised_training_leaves_no_entry_unseen():
    plain = coverage(Config(task="copy", scheme="absolute", **SMALL), 24)
    assert plain.kinds["query row"].unseen == tuple(range(12, 24))
    config = Config(task="copy", scheme="absolute-randomised", **SMALL)
    randomised = coverage(config, 24)
    assert all(not c.unseen for c in randomised.kinds.values())
    assert randomised.kinds["query row"].trained == tuple(range(256))


# -- the bounds ------------------------------------------------------------------------

SAMPLES = 4000


def _counts(tokens: torch.Tensor, vocab: int) -> torch.Tensor:
    counts = torch.zeros(tokens.shape[0], vocab, dtype=torch.long)
    return counts.scatter_add_(1, tokens, torch.ones_like(tokens))  # (b, vocab)


def _close(measured: torch.Tensor, bound: float) -> None:
    error = float(measured.std()) / math.sqrt(measured.numel()) + 1e-9
    assert abs(float(measured.mean()) - bound) < 4.5 * error, (measured.mean(), bound)


@pytest.mark.parametrize("name, n", [("copy", 11), ("reverse", 12), ("mqar", 15)])
def test_the_permutation_bound_is_what_the_best_bag_rule_scores(name, n):
    """The best rule that sees only the bag: every slot answers the commonest
    symbol (copy, reverse) or value (mqar) of the sequence."""
    task = Task(name, name, 16 if name == "mqar" else 0, vocab_size=4)
    per_token, exact = permutation_bounds(task, n)
    tokens, labels = task.sample(SAMPLES, n, seed=1)
    answers = labels[labels != I].reshape(SAMPLES, -1)  # (s, m): a permutation of data
    best = _counts(answers, 4).argmax(-1, keepdim=True)  # (s, 1)
    _close((answers == best).double().mean(-1), per_token.value)
    m = answers.shape[1]
    if name == "mqar":  # the likeliest arrangement: prod c! / m!, averaged
        counts = _counts(answers, 4).double()
        chance = torch.exp(torch.lgamma(counts + 1).sum(-1) - math.lgamma(m + 1))
        _close(chance, exact.value)
        assert exact.value == pytest.approx(math.comb(m + 3, m) / 4**m)
    else:  # all data equal
        _close((answers == answers[:, :1]).all(-1).double(), exact.value)
        assert exact.value == pytest.approx(4.0 ** (1 - m))


def test_the_addition_bound_matches_enumeration():
    for m in (1, 2):
        a, b = torch.cartesian_prod(torch.arange(10**m), torch.arange(10**m)).T
        digits = torch.stack([(a // 10**j) % 10 for j in range(m)], -1)
        others = torch.stack([(b // 10**j) % 10 for j in range(m)], -1)
        s = sum_digits(digits, others, 10)  # (100^m, m + 1)
        top = _counts(s, 10).max(-1).values.double()
        per_token, exact = addition_bound(m, 10, samples=40000, seed=2)
        assert abs(per_token.value - float((top / (m + 1)).mean())) < 4.5 * (
            per_token.stderr
        )
        assert abs(exact.value - float((top == m + 1).double().mean())) < 4.5 * (
            exact.stderr + 1e-4
        )
    assert permutation_bounds("addition", 11)[0].value == pytest.approx(
        addition_bound(3, 10)[0].value
    )


@pytest.mark.parametrize("name, n, window", [("copy", 17, 5), ("reverse", 17, 5),
                                             ("reverse", 16, 9), ("mqar", 24, 4)])
def test_the_window_bound_is_what_the_best_far_bag_rule_scores(name, n, window):
    """The best rule that sees the tokens ``window`` or more back only as a bag:
    the commonest far symbol (copy, reverse) or far value (mqar), else the answer."""
    task = Task(name, name, 16 if name == "mqar" else 0, vocab_size=4)
    layout = LAYOUTS[name]
    m, pad = layout.size(n), layout.pad(n)
    tokens, labels = task.sample(SAMPLES, n, seed=3)
    slots = torch.nonzero(labels[0] != I).flatten().tolist()
    scores = []
    for i in slots:
        answer = labels[:, i]
        if name == "mqar":
            values = tokens[:, pad + 1 : pad + 2 * m : 2]  # (s, m)
            far = values if i - (pad + 2 * m - 1) >= window else None
        else:
            last = i - window  # data tokens at positions <= last are in the bag
            far = tokens[:, pad : min(pad + m, last + 1)]
            source = {"copy": i - (m + 1), "reverse": 2 * (pad + m) - i}[name]
            far = far if i - source >= window else None
        if far is None:
            scores.append(torch.ones(SAMPLES, dtype=torch.float64))
            continue
        best = _counts(far, 4).argmax(-1)
        scores.append((best == answer).double())
    _close(torch.stack(scores, -1).mean(-1), window_bound(task, n, window))


def test_window_bounds_fall_to_the_bag_share_far_beyond_the_window():
    assert window_bound("copy", 9, window=7) == 1.0  # every answer 5 back: in view
    # m = 40, every answer 41 back; slot k sees data 0 .. 34 + k as a bag
    far = [min(40, 35 + k) for k in range(40)]
    assert window_bound("copy", 81, window=7) == pytest.approx(
        sum(expected_max_share(f, 16) for f in far) / 40
    )
    assert window_bound("mqar", 80, window=7) == pytest.approx(
        (6 + 20 * expected_max_share(26, 16)) / 26
    )
    with pytest.raises(ValueError, match="task must be of kind"):
        window_bound("addition", 20, 7)
    with pytest.raises(ValueError, match="window must be an int >= 1"):
        window_bound("copy", 20, 0)


def test_far_window_reads_the_scheme():
    def window(scheme, setting="encoder"):
        return far_window(Config(scheme=scheme, setting=setting), up_to=256)

    assert window("deberta") == 7  # k = 8: 7 and beyond share a row
    assert window("deberta", "causal") == 7
    rel = torch.arange(256)
    buckets = t5_bucket(rel, bidirectional=True, num_buckets=16, max_distance=32)
    assert window("t5") == int(torch.nonzero(buckets != buckets[-1]).max()) + 1
    assert window("t5") < 32
    for scheme in ("absolute", "rotary", "alibi", "none"):
        assert window(scheme) is None


def test_one_layer_with_a_window_sees_far_tokens_only_as_a_bag():
    """The premise of ``window_bound``: permuting the data tokens 7 or more back
    from a copy slot leaves that slot's output unchanged (deberta, k = 8)."""
    config = Config(task="copy", scheme="deberta", **SMALL, num_layers=1)
    torch.manual_seed(0)
    model = TinyModel(config).eval()
    tokens, _ = get_task("copy").sample(4, 25, seed=6)  # m = 12: answers 13 back
    slot = 25 - 12  # the first slot; data 0 .. 6 are 7 or more back
    moved = tokens.clone()
    moved[:, :7] = tokens[:, torch.tensor([3, 6, 0, 5, 1, 4, 2])]
    with torch.no_grad():
        assert torch.allclose(model(tokens)[:, slot], model(moved)[:, slot], atol=1e-5)
        near = tokens.clone()
        near[:, [7, 11]] = tokens[:, [11, 7]]  # 6 and 2 back: in view
        assert not torch.allclose(model(tokens)[:, slot], model(near)[:, slot],
                                  atol=1e-4)
        two = TinyModel(config.replace(num_layers=2)).eval()
        assert not torch.allclose(two(tokens)[:, slot], two(moved)[:, slot], atol=1e-4)
