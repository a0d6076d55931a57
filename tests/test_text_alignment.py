"""The loss at closing brackets by their opener's distance (``text.alignment``).

Hand-made byte strings check the stack; a tiny untrained model checks that a
closer's loss is the loss at the last position of the window ending at it.
"""

from __future__ import annotations

import pytest
import torch

from relpos.book.text import TextConfig, encode
from relpos.book.text.alignment import (
    DISTANCE_BINS,
    alignment_record,
    chosen_closers,
    closer_losses,
    distance_bin,
    opener_distances,
)
from relpos.book.text.lm import IGNORE, MASK, token_losses
from relpos.book.text.train import initial_model

TINY = dict(
    train_length=8,
    eval_lengths=(8, 32),
    eval_bytes=64,
    steps=1,
    batch_size=2,
    hidden_size=16,
    num_heads=2,
    num_layers=1,
    max_relative_positions=4,
    position_buckets=4,
    bucket_max_position=16,
    t5_max_distance=16,
)


def distances_of(text: str) -> list[int]:
    return opener_distances(encode(text)).tolist()


def test_nested_brackets_and_quotes_get_their_openers_distance():
    text = 'a(b[c]d)"x"'
    found = distances_of(text)
    assert found[text.index("]")] == 2
    assert found[text.index(")")] == 6
    assert found[len(text) - 1] == 2  # the closing quote
    assert found[text.index('"')] == 0  # an opener has no distance
    assert sum(d > 0 for d in found) == 3


def test_unmatched_and_crossed_closers():
    assert distances_of("1) x") == [0, 0, 0, 0]  # nothing open: skipped
    crossed = distances_of("([x)]")  # ")" pops "[" above "(": "]" then unmatched
    assert crossed == [0, 0, 0, 3, 0]
    assert distances_of("(a\0b)") == [0] * 5  # the stack empties at a document end
    assert distances_of("'a'") == [0, 0, 0]  # single quotes are apostrophes


def test_distance_bins_have_inclusive_lower_edges():
    assert distance_bin(1) == 0
    assert distance_bin(8) == 0 and distance_bin(9) == 1
    assert distance_bin(64) == 3 and distance_bin(65) == 4
    assert distance_bin(5000) == len(DISTANCE_BINS) - 1
    with pytest.raises(ValueError, match="d must be an int >= 1"):
        distance_bin(0)


def test_chosen_closers_keep_every_far_one_and_space_the_near_ones():
    distances = torch.zeros(100, dtype=torch.long)
    distances[[3, 20, 40, 60, 80]] = torch.tensor([70, 2, 3, 90, 4])
    chosen = chosen_closers(distances, far=65, near_count=1, longest=10)
    assert chosen.tolist() == [20, 60]  # 3 is too early for a window of 10
    everything = chosen_closers(distances, far=65, near_count=9, longest=1)
    assert everything.tolist() == [3, 20, 40, 60, 80]


def test_bad_stream_is_refused():
    with pytest.raises(TypeError, match="stream must be a 1-d tensor"):
        opener_distances(torch.zeros(2, 3))


@pytest.mark.parametrize("setting", ["causal", "masked"])
def test_a_closer_is_read_at_the_last_position_of_its_window(setting):
    config = TextConfig(setting=setting, scheme="alibi", **TINY)
    model = initial_model(config)
    text = "x" * 12 + "(abcdefghij)" + " (ab) "
    stream = encode(text).to(torch.uint8)
    distances = opener_distances(stream)
    closers = chosen_closers(distances, far=9, near_count=5, longest=8)
    assert closers.tolist() == [23, 28]
    found = closer_losses(model, config, stream, closers, distances, 8)
    assert found["count"][distance_bin(11)] == 1 and found["count"][0] == 1
    assert found["sighted"][distance_bin(11)] == 0  # the "(" 11 back is out of sight
    assert found["sighted"][0] == 1
    # by hand: the window that ends at ")" (index 23)
    if setting == "causal":  # the 8 bytes before it predict it
        inputs = stream[15:23].long()[None]
    else:
        inputs = stream[16:24].long()[None].clone()
        inputs[0, -1] = MASK
    targets = torch.full((1, 8), IGNORE)
    targets[0, -1] = ord(")")
    with torch.no_grad():
        expected = token_losses(model, inputs, targets)[0, -1].item()
    assert found["loss"][distance_bin(11)] == pytest.approx(expected, rel=1e-5)
    with pytest.raises(ValueError, match="closers must have 31 bytes"):
        closer_losses(model, config, stream, closers, distances, 32)


def test_the_record_reads_at_L_and_the_longest_length():
    config = TextConfig(setting="causal", scheme="alibi", **TINY)
    model = initial_model(config)
    text = "y" * 40 + "(" + "z" * 20 + ")" + " (a) (b) [c]" * 3
    record = alignment_record(model, config, encode(text).to(torch.uint8))
    assert record["far"] == 9
    assert set(record["lengths"]) == {"8", "32"}
    far_bin = distance_bin(21)
    assert record["lengths"]["8"]["sighted"][far_bin] == 0
    assert record["lengths"]["32"]["sighted"][far_bin] == 1
    assert sum(record["lengths"]["32"]["count"]) == 1 + 9  # every closer after 31
