"""Facts the chapters state about the reference implementations, pinned.

microsoft/DeBERTa clamps ``i - j`` to ``+-(max_position - 1)`` before log-bucketing
since commit c794b71 (2023); ``transformers`` (a port of the 2021 code) and relpos
do not. Chapter 6 shows where the two rules differ; these tests pin both rules,
so that a change on either side shows up here. The microsoft rule is written
with ``transformers``' own bucketing (the 2021 code both share), not relpos's.
"""

from __future__ import annotations

import pytest
import torch
from transformers.models.deberta_v2.modeling_deberta_v2 import (
    build_relative_position,
    make_log_bucket_position,
)

import relpos

SETTINGS = [(256, 512), (16, 64), (64, 4096)]


def row_after_microsoft_clamp(r: torch.Tensor, buckets: int, max_position: int):
    """The table row under microsoft/DeBERTa's rule since c794b71: clamp, bucket, row.

    The bucketing and the row (bucket + span, clamped into the 2-span table, as
    transformers' gather index) are transformers' code, so relpos is not used here.

    Shapes:
        r: ``(*)``; output: ``(*)``
    """
    clamped = r.clamp(-(max_position - 1), max_position - 1)
    bucket = make_log_bucket_position(clamped, buckets, max_position).long()
    return (bucket + buckets).clamp(0, 2 * buckets - 1)


@pytest.mark.parametrize("buckets, max_position", SETTINGS)
def test_relpos_puts_keys_max_position_ahead_on_row_zero(buckets, max_position):
    r = torch.arange(-3 * max_position, 3 * max_position + 1)
    rows = relpos.position_index(
        r, max_relative_positions=max_position, position_buckets=buckets
    )
    assert (rows[r <= -max_position] == 0).all()
    assert (rows[r > -max_position] > 0).all()
    assert (rows[r >= max_position - 1] == 2 * buckets - 1).all()


@pytest.mark.parametrize("buckets, max_position", SETTINGS[:2])
def test_transformers_agrees_with_relpos_beyond_max_position(buckets, max_position):
    n = max_position + 40
    states = torch.zeros(1, n, 1)
    rel = build_relative_position(
        states, states, bucket_size=buckets, max_position=max_position
    )  # (1, n, n)
    rows = (rel[0] + buckets).clamp(0, 2 * buckets - 1)  # transformers' gather index
    expected = relpos.relative_position_index(
        n, max_relative_positions=max_position, position_buckets=buckets
    )
    assert torch.equal(rows, expected)
    assert rows[0, max_position] == 0


@pytest.mark.parametrize("buckets, max_position", SETTINGS)
def test_microsoft_clamp_differs_exactly_for_keys_max_position_ahead(
    buckets, max_position
):
    r = torch.arange(-3 * max_position, 3 * max_position + 1)
    ours = relpos.position_index(
        r, max_relative_positions=max_position, position_buckets=buckets
    )
    theirs = row_after_microsoft_clamp(r, buckets, max_position)
    differ = ours != theirs
    assert torch.equal(differ, r <= -max_position)
    assert (theirs[differ] == 1).all() and (ours[differ] == 0).all()


def test_no_sequence_of_max_position_tokens_meets_the_difference():
    n, buckets, max_position = 512, 256, 512
    index = relpos.relative_position_index(
        n, max_relative_positions=max_position, position_buckets=buckets
    )
    microsoft = row_after_microsoft_clamp(
        relpos.relative_positions(n), buckets, max_position
    )
    assert torch.equal(index, microsoft)
    assert not (index == 0).any() and (index == 1).any()
