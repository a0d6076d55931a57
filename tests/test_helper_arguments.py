"""Every low-level public helper, called with one argument wrong at a time.

For each helper a valid call is written out; then each argument in turn is
replaced by each value of ``WRONG`` (wrong types, shapes, dtypes, signs, a device
torch does not know). The call must either succeed (some of those values are
valid for some arguments: a zero length, a negative distance) or raise a
``ValueError``/``TypeError`` whose message names the argument: never an
``AttributeError``, ``IndexError`` or a bare error from inside torch. Where a wrong
value could give a number (the memory counts), the number itself is checked.
"""

from __future__ import annotations

import pytest
import torch

import relpos
from relpos import schemes

REL = relpos.relative_positions(5)  # (i, j)

#: name -> (helper, a valid call's keyword arguments)
CALLS = {
    "attention_span": (relpos.attention_span,
                       dict(max_relative_positions=8, position_buckets=4)),
    "delta": (relpos.delta, dict(rel=REL, max_relative_positions=4)),
    "distance_lookup": (relpos.distance_lookup,
                        dict(seq_len=6, max_relative_positions=4, device="cpu")),
    "exact_bucket_limit": (relpos.exact_bucket_limit, dict(bucket_size=4)),
    "index_from_lookup": (
        relpos.index_from_lookup,
        dict(lookup=relpos.distance_lookup(6, max_relative_positions=4)),
    ),
    "log_bucket_position": (relpos.log_bucket_position,
                            dict(rel=REL, bucket_size=4, max_position=16)),
    "per_pair_memory_bytes": (relpos.per_pair_memory_bytes,
                              dict(seq_len=6, hidden_size=8, element_size=4)),
    "position_index": (relpos.position_index,
                       dict(rel=REL, max_relative_positions=4, position_buckets=-1)),
    "relative_position_index": (relpos.relative_position_index,
                                dict(query_len=5, key_len=6, max_relative_positions=4)),
    "relative_positions": (relpos.relative_positions,
                           dict(query_len=5, key_len=6, device="cpu")),
    "row_cosine_similarity": (relpos.row_cosine_similarity,
                              dict(weight=torch.randn(8, 6), max_relative_positions=4,
                                   distances=[-2, 0, 1])),
    "sinusoidal_table": (relpos.sinusoidal_table,
                         dict(max_relative_positions=4, hidden_size=8)),
    "table_memory_bytes": (
        relpos.table_memory_bytes,
        dict(max_relative_positions=4, hidden_size=8, element_size=4),
    ),
    "alibi_bias": (schemes.alibi_bias, dict(rel=REL, slopes=schemes.alibi_slopes(2))),
    "alibi_slopes": (schemes.alibi_slopes, dict(num_heads=4, dtype=torch.float32)),
    "fire_input": (schemes.fire_input,
                   dict(rel=REL, query_position=torch.arange(5).unsqueeze(-1))),
    "kerple_log_bias": (schemes.kerple_log_bias,
                        dict(rel=REL, r1=torch.ones(2), r2=torch.ones(2))),
    "kerple_power_bias": (schemes.kerple_power_bias,
                          dict(rel=REL, r1=torch.ones(2), r2=torch.ones(2))),
    "relative_distances": (schemes.relative_distances,
                           dict(query_positions=torch.arange(5),
                                key_positions=torch.arange(6))),
    "rotary_angles": (schemes.rotary_angles,
                      dict(positions=torch.arange(5), head_size=8, base=10000.0)),
    "rotary_frequencies": (schemes.rotary_frequencies, dict(head_size=8, base=10000.0)),
    "rotate": (schemes.rotate, dict(x=torch.randn(1, 2, 5, 8),
                                    angles=schemes.rotary_angles(torch.arange(5), 8))),
    "rotate_half": (schemes.rotate_half, dict(x=torch.randn(1, 2, 5, 8))),
    "shaw_index": (schemes.shaw_index, dict(rel=REL, max_relative_positions=2)),
    "sinusoidal_encoding": (schemes.sinusoidal_encoding,
                            dict(rel=REL, hidden_size=8, dtype=torch.float32)),
    "t5_bucket": (schemes.t5_bucket,
                  dict(rel=REL, num_buckets=8, max_distance=16, bidirectional=True)),
    "t5_exact_limit": (schemes.t5_exact_limit, dict(num_buckets=8, bidirectional=True)),
}

#: Values that are wrong for most arguments (a few are right for a few).
WRONG = [
    None, "x", "cuda:banana", [1, 2], object(), -3, 0, 2.5, True, float("nan"),
    torch.zeros(()), torch.zeros(3), torch.zeros(2, 3),
    torch.zeros(3, dtype=torch.long), torch.zeros(2, 2, 2, dtype=torch.long),
    torch.float16, torch.int64,
]


@pytest.mark.parametrize(
    "helper, argument",
    [(name, argument) for name, (_, valid) in CALLS.items() for argument in valid],
)
def test_a_wrong_argument_is_named_or_accepted(helper: str, argument: str) -> None:
    call, valid = CALLS[helper]
    call(**valid)
    for wrong in WRONG:
        arguments = {**valid, argument: wrong}
        try:
            call(**arguments)
        except (TypeError, ValueError) as error:
            assert argument in str(error), (helper, argument, wrong, error)


@pytest.mark.parametrize(
    "call", [relpos.per_pair_memory_bytes, relpos.table_memory_bytes]
)
@pytest.mark.parametrize("wrong", [-3, 2.5, True, float("nan"), "x"])
def test_memory_counts_refuse_what_is_not_a_size(call, wrong) -> None:
    for position in range(3):
        arguments = [6, 8, 4]
        arguments[position] = wrong
        with pytest.raises((TypeError, ValueError)):
            call(*arguments)


def test_memory_counts_by_hand() -> None:
    assert relpos.per_pair_memory_bytes(6, 8, 2) == 6 * 6 * 8 * 2
    assert relpos.table_memory_bytes(4, 8) == 2 * 4 * 8 * 4


@pytest.mark.parametrize("dtype", [torch.int64, torch.bool])
def test_dtype_arguments_take_floating_dtypes_only(dtype) -> None:
    with pytest.raises(TypeError, match="dtype"):
        schemes.alibi_slopes(4, dtype=dtype)
    with pytest.raises(TypeError, match="dtype"):
        schemes.sinusoidal_encoding(REL, 8, dtype=dtype)
