"""flex at lengths below, at and 8 past a multiple of 16, against gather.

torch 2.13's compiled CPU FlexAttention kernel returns wrong numbers when the
length is 8 more than a multiple of 16 (n = 8, 24, 40 ...), even with no
``score_mod``. The flex backend pads the sequence to a multiple of 16 on the CPU,
with the padded keys masked out; these tests fail without that padding (and
with a padding whose keys are not masked).
"""

from __future__ import annotations

import pytest
import torch

import relpos


def _pair(n_heads: int = 4, hidden: int = 32, **settings) -> tuple:
    gather = relpos.DisentangledSelfAttention(hidden, n_heads, **settings).eval()
    flex = relpos.DisentangledSelfAttention(
        hidden, n_heads, backend="flex", **settings
    ).eval()
    flex.load_state_dict(gather.state_dict())
    return gather, flex


# 5, 8 and 16 pad to one kernel of 16, 24 to 32 (a residue of 8, across two blocks
# of 16): each new padded length compiles a kernel (seconds on the CPU).
@pytest.mark.parametrize("n", [5, 8, 16, 24])
def test_flex_equals_gather_at_every_length_residue(n):
    gather, flex = _pair(max_relative_positions=8)
    x = torch.randn(2, n, 32)
    table = torch.randn(16, 32)
    mask = torch.ones(2, n, dtype=torch.long)
    mask[1, -2:] = 0  # padding in the second sequence
    with torch.no_grad():
        for attention_mask in (None, mask):
            want = gather(x, attention_mask, rel_embeddings=table)
            got = flex(x, attention_mask, rel_embeddings=table)
            real = slice(None) if attention_mask is None else (0, slice(None))
            torch.testing.assert_close(got[real], want[real], atol=1e-5, rtol=1e-5)
            if attention_mask is not None:  # the real tokens of the padded sequence
                keep = mask[1].bool()
                torch.testing.assert_close(
                    got[1, keep], want[1, keep], atol=1e-5, rtol=1e-5
                )


def test_flex_with_log_buckets_at_a_length_of_24():
    gather, flex = _pair(max_relative_positions=64, position_buckets=8)
    x = torch.randn(1, 24, 32)
    table = torch.randn(16, 32)
    with torch.no_grad():
        want, got = gather(x, rel_embeddings=table), flex(x, rel_embeddings=table)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
