"""One attention layer cannot tell apart keys that read one position entry: the bound.

The bound of ``shared_entries`` rests on one fact: in one layer whose position
term reads an entry of ``i - j`` (a clipped row, a bucket, nothing), swapping the
tokens of two keys that read the same entry leaves the prediction at ``i``
unchanged. It is checked on the book's own models (before training, where
nothing hides a difference), and the bound against exact hand cases.
"""

from __future__ import annotations

import pytest
import torch

import relpos
from relpos.book.experiments import (
    Config,
    entry_functions,
    expected_max_share,
    expected_max_shares,
    initial_model,
    shared_distances,
    shared_entry_bound,
)


def swapped_change(config: Config, query: int, a: int, b: int) -> float:
    """Largest change of the logits at ``query`` when tokens ``a`` and ``b`` swap."""
    model = initial_model(config)
    tokens = torch.randint(16, (4, 32), generator=torch.Generator().manual_seed(0))
    swapped = tokens.clone()  # (b, n)
    swapped[:, [a, b]] = tokens[:, [b, a]]
    with torch.no_grad():
        before, after = model(tokens), model(swapped)  # (b, n, classes)
    return float((before[:, query] - after[:, query]).abs().max())


@pytest.mark.parametrize(
    "scheme, setting, same, other",
    [
        ("t5", "causal", (12, 13), (12, 14)),  # 12 and 13 share a causal bucket
        ("deberta", "encoder", (9, 10), (3, 4)),  # both beyond k = 8: the edge row
        ("shaw", "encoder", (8, 11), (2, 5)),
        ("none", "causal", (3, 17), None),  # every earlier key: one (empty) entry
    ],
)
def test_a_swap_within_an_entry_leaves_the_query_unchanged(
    scheme, setting, same, other
):
    config = Config(scheme=scheme, setting=setting, task="far")
    query = 20
    assert swapped_change(config, query, query - same[0], query - same[1]) < 1e-6
    if other is not None:  # two entries: the query tells them apart
        assert swapped_change(config, query, query - other[0], query - other[1]) > 1e-4
    entry_of = entry_functions(Config().to_dict() | {"t5_max_distance": 32},
                               causal=setting == "causal").get(scheme)
    if entry_of is not None:
        assert set(same) <= set(shared_distances(entry_of, same[0], 32,
                                                 causal=setting == "causal"))


def test_the_bound_on_hand_cases():
    # an encoder with no positions: every other key shares the entry, the bound is
    # the permutation bound E[max_t c_t] / (n - 1)
    everything = [d for d in range(-31, 32) if d]
    assert shared_entry_bound("relative", 32, everything) == pytest.approx(
        expected_max_share(31, 16), abs=1e-12
    )
    # a causal model with no positions: query i confuses the i tokens before it
    earlier = shared_distances(torch.zeros_like, 3, 8, causal=True)
    assert earlier == [1, 2, 3, 4, 5, 6, 7]
    by_hand = sum(expected_max_share(i, 16) for i in range(3, 8)) / 5
    assert shared_entry_bound("relative", 8, earlier) == pytest.approx(by_hand)
    # two distances in one bucket: a coin toss between two tokens, 17/32, except at
    # the first scored position, where only one of them exists
    assert shared_entry_bound("far", 32, [12, 13]) == pytest.approx(
        (1 + 19 * 17 / 32) / 20
    )
    # the target alone: nothing to confuse
    assert shared_entry_bound("far", 32, [12]) == 1.0


def test_expected_max_shares_is_expected_max_share_for_every_count():
    for vocab in (3, 16):
        shares = expected_max_shares(40, vocab)
        assert float(shares[0]) == 0.0
        for draws in (1, 2, 5, 17, 40):
            assert float(shares[draws]) == pytest.approx(
                expected_max_share(draws, vocab), abs=1e-12
            )


def test_the_entries_of_the_book_sweeps():
    config = {"max_relative_positions": 8, "position_buckets": 8,
              "bucket_max_position": 64, "t5_max_distance": 32}
    reads = entry_functions(config)
    assert shared_distances(reads["deberta"], 12, 32)[:2] == [7, 8]
    assert shared_distances(reads["shaw"], 12, 32)[:2] == [8, 9]
    assert shared_distances(reads["t5"], 12, 32) == list(range(12, 20))
    causal = entry_functions(config, causal=True)["t5"]
    assert shared_distances(causal, 12, 64, causal=True) == [12, 13]
    behind = torch.arange(0, 32)
    assert torch.equal(reads["deberta"](behind),
                       relpos.position_index(behind, max_relative_positions=8))


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: shared_entry_bound("far", 32, [13, 14]), "must hold the task's"),
        (lambda: shared_entry_bound("far", 32, [0, 12]), "and not 0"),
        (lambda: shared_entry_bound("absolute", 32, [1]), "must be a shift task"),
        (lambda: shared_entry_bound(3, 32, [3]), "task must be a Task"),
        (lambda: shared_distances(torch.zeros_like, 0, 32), "0 < |target| < n"),
        (lambda: shared_distances(lambda d: d[:1], 3, 32), "must map a"),
        (lambda: shared_distances(torch.zeros_like, 3, 32, causal=1), "causal"),
    ],
)
def test_bad_input_is_refused(call, message):
    with pytest.raises((ValueError, TypeError), match=message.replace("|", "\\|")):
        call()
