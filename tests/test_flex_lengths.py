"""flex at lengths below, at and 8 past a multiple of 16, against gather.

torch 2.13's compiled CPU FlexAttention kernel returns wrong numbers when the
length is 8 more than a multiple of 16 (n = 8, 24, 40 ...), even with no
``score_mod``. The flex backend pads the sequence to a multiple of 16 on the CPU,
with the padded keys masked out; these tests fail without that padding (and
with a padding whose keys are not masked: row 0 of the batch has no padding, so
only the kernel's own ``j <= last_key`` masks the added keys).

Each new kernel costs seconds of compiling on the CPU, so the modules, batch and
masks are those of ``test_attention_reference.py`` (3 sequences, hidden 32, 4
heads, ``_deberta.padding_mask``) and ``test_query_states.py``: the padded
kernels at 16 (n = 5, 8, 16), 32 (n = 24, clip8) and 48 (n = 40, log buckets)
are compiled there already, and only the call without a mask adds one.
"""

from __future__ import annotations

import pytest
import torch
from _deberta import padding_mask

import relpos

HIDDEN, HEADS = 32, 4
# (max_relative_positions, position_buckets) of test_attention_reference's SPANS.
SPANS = {"clip8": (8, -1), "buckets64/16": (64, 16)}


def _pair(span: str) -> tuple:
    max_rel, buckets = SPANS[span]
    settings = dict(max_relative_positions=max_rel, position_buckets=buckets)
    gather = relpos.DisentangledSelfAttention(HIDDEN, HEADS, **settings).eval()
    flex = relpos.DisentangledSelfAttention(
        HIDDEN, HEADS, backend="flex", **settings
    ).eval()
    flex.load_state_dict(gather.state_dict())
    return gather, flex


def _check(gather, flex, n: int, masked: bool) -> None:
    """flex equals gather on every real token of a batch of 3 (float32: compiled)."""
    x = torch.randn(3, n, HIDDEN)
    table = torch.randn(2 * gather.span, HIDDEN)
    mask = padding_mask(n) if masked else None
    with torch.no_grad():
        want = gather(x, mask, rel_embeddings=table)
        got = flex(x, mask, rel_embeddings=table)
    keep = torch.ones(3, n, dtype=torch.bool) if mask is None else mask.bool()
    torch.testing.assert_close(got[keep], want[keep], atol=1e-5, rtol=1e-5)


# 5, 8 and 16 pad to one kernel of 16, 24 to 32 (a residue of 8, across two blocks
# of 16), 40 to 48 (a residue of 8 across three blocks, with DeBERTa-v3's log
# buckets: distances past 8 read bucketed rows at a length the kernel got wrong).
# With padding (right and left) at every length; without a mask at 24 only: the
# unpadded row 0 of the masked batch already needs the added keys masked at every
# length, and the call without a mask (another score_mod, one more compile) is
# checked at the residue the kernel fails on.
@pytest.mark.parametrize(
    "n, span, unmasked",
    [(5, "clip8", False), (8, "clip8", False), (16, "clip8", False),
     (24, "clip8", True), (40, "buckets64/16", False)],
)
def test_flex_equals_gather_at_every_length_residue(n, span, unmasked):
    gather, flex = _pair(span)
    _check(gather, flex, n, masked=True)
    if unmasked:
        _check(gather, flex, n, masked=False)
