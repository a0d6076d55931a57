"""The windows and the far rectangles (``relpos.backends.banded``).

Which calls take them (a projected table or key rows, nothing else on the logits,
at inference on the CPU, positions one progression, no mask but the causal rule,
keys more than ``WIDTHS`` bands), that they give the general path's output to
rounding on an encoder, a decoder and a decoder with a cache, at lengths and
blocks where the band, both far fields, blocks at both ends of the sequence
(no far-behind keys, no far-ahead keys) and a last block of padding all occur, and
that torch's kernel is never handed an ``n x n`` mask.

Shape legend:
    b  batch      n  sequence length      hidden  model width (16)
"""

from __future__ import annotations

from functools import partial

import pytest
import torch

import relpos
from relpos.backends import banded
from relpos.schemes.registry import resolve

import _shortcuts
from _every import HEADS, HIDDEN, MODULES, SPAN, build, spread, tolerance

#: The registry's schemes and variants the band serves: DeBERTa's table (clipped,
#: log buckets, one position term, its own position projections) and Shaw's key
#: rows (with and without relative values). Their reach ``L`` at ``SPAN``: 5
#: (DeBERTa), 9 (log buckets), 4 (Shaw).
BAND_SCHEMES = (
    "deberta", "deberta-buckets", "deberta-c2p", "deberta-p2c",
    "deberta-separate-keys", "shaw", "shaw-keys",
)
#: Long enough for a band of ``2L - 1 = 17`` keys (log buckets), both far fields and
#: the rows at each end where the band leaves the sequence: ``n >= 3L + a few``.
LENGTH = 40


def module(name: str, causal: bool = False) -> relpos.SelfAttention:
    """``name`` on ``gather`` at the span ``SPAN``, float64, parameters spread out.

    Shapes:
        the module maps ``(b, n, 16)`` to ``(b, n, 16)``
    """
    registration, variant = resolve(name)
    sizes = dict(registration.variants[variant]) if variant else {}
    sizes.update(registration.sized[registration.name](SPAN))
    torch.manual_seed(0)
    made = registration.attention(
        HIDDEN, HEADS, backend="gather", causal=causal, **sizes
    )
    spread(made)
    return made.double().eval()


#: The shortcut turned off, watched, or both ways (tests/_shortcuts.py).
general_path = partial(_shortcuts.general_path, "banded_applies")
recorded = partial(_shortcuts.recorded, "banded_applies")
outputs = partial(_shortcuts.outputs, "banded_applies")


@pytest.mark.parametrize("causal", [False, True], ids=["encoder", "causal"])
@pytest.mark.parametrize("name", list(MODULES))
def test_which_schemes_take_the_band(name, causal):
    """The band serves exactly DeBERTa's and Shaw's modules (the others' output is
    the general path's own)."""
    made = build(name, "gather", causal=causal)
    x = torch.randn(2, LENGTH, HIDDEN, dtype=torch.float64)
    fast, general, answers = outputs(made, x)
    assert any(answers) == (name in BAND_SCHEMES)
    torch.testing.assert_close(fast, general, **tolerance(torch.float64))


@pytest.mark.parametrize("causal", [False, True], ids=["encoder", "causal"])
@pytest.mark.parametrize("name", BAND_SCHEMES)
def test_same_output_as_the_general_path(name, causal):
    """To 1e-10 in float64, from position 0 and from position 5, a batch of 3."""
    made = module(name, causal)
    x = torch.randn(3, LENGTH, HIDDEN, dtype=torch.float64)
    for positions in (None, torch.arange(5, 5 + LENGTH)):
        fast, general, answers = outputs(made, x, positions=positions)
        assert answers == [True]
        torch.testing.assert_close(fast, general, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("causal", [False, True], ids=["encoder", "causal"])
@pytest.mark.parametrize("name", ["deberta", "deberta-p2c", "shaw"])
def test_blocks_and_chunks(name, causal, monkeypatch):
    """Blocks of 3 queries, chunks of 2 blocks (40 queries: 6 chunks and a last
    block of 1), and 41 queries against a band reaching past both ends: the
    general path's output."""
    monkeypatch.setattr(banded, "BLOCK", 3)
    monkeypatch.setattr(banded, "CHUNK", 7)
    made = module(name, causal)
    for length in (LENGTH, LENGTH + 1):
        x = torch.randn(2, length, HIDDEN, dtype=torch.float64)
        fast, general, answers = outputs(made, x)
        assert answers == [True]
        torch.testing.assert_close(fast, general, atol=1e-10, rtol=1e-10)


def decodes_as_the_whole(name: str) -> None:
    """A prompt of 30, then one token at a time, each step on the band: the whole
    sequence's output, computed at once on the general path, to 1e-10."""
    made = module(name, causal=True)
    x = torch.randn(2, LENGTH, HIDDEN, dtype=torch.float64)
    with torch.no_grad(), general_path():
        whole = made(x)
    cache = relpos.KVCache()
    steps = []
    with torch.no_grad(), recorded() as answers:
        steps.append(made(x[:, :30], cache=cache))
        for t in range(30, LENGTH):
            steps.append(made(x[:, t : t + 1], cache=cache))
    assert answers == [True] * (1 + LENGTH - 30)
    torch.testing.assert_close(torch.cat(steps, 1), whole, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("name", BAND_SCHEMES)
def test_decoding_with_a_cache(name):
    """A prompt of 30, then one token at a time: every step takes the band (queries
    ``t, ...`` against keys ``0, ..., t``: a far-behind rectangle beside its
    triangle) and gives what the whole sequence gives at once."""
    decodes_as_the_whole(name)


@pytest.mark.parametrize("name", ["deberta", "shaw"])
def test_falls_back_where_the_band_does_not_hold_the_call(name):
    """Padding, positions that are not one progression, training and a sequence
    not longer than ``WIDTHS`` bands take the general path, with the same answer."""
    made = module(name)
    x = torch.randn(2, LENGTH, HIDDEN, dtype=torch.float64)
    padding = torch.ones(2, LENGTH)
    padding[1, 30:] = 0
    shuffled = torch.arange(LENGTH).repeat(2, 1)
    shuffled[0, [3, 4]] = shuffled[0, [4, 3]]
    for kwargs in ({"attention_mask": padding}, {"positions": shuffled}):
        with torch.no_grad(), recorded() as answers:
            made(x, **kwargs)
        assert answers == [False]
    reach = made.lookup.shape[0] // 2
    short = x[:, : int(banded.WIDTHS * (2 * reach - 1))]
    fast, general, answers = outputs(made, short)
    assert answers == [False] and torch.equal(fast, general)
    with recorded() as answers:
        made(x).sum().backward()
    assert answers == [False]


@pytest.mark.parametrize("causal", [False, True], ids=["encoder", "causal"])
@pytest.mark.parametrize("name", BAND_SCHEMES)
@pytest.mark.parametrize("block", [4, 8])
def test_windows_and_far_rectangles(name, causal, block, monkeypatch):
    """Blocks of 4 and 8 queries: the first block's window starts before key 0 (no
    far-behind keys), the last one's ends after the last key (no far ahead), the
    blocks between are one call; p2c 3 band rows a matmul (the last group short);
    40, 41 and 43 queries (a last block of padding), from position 0 and 5: the
    general path's output to 1e-10 in float64."""
    monkeypatch.setattr(banded, "BLOCK", block)
    monkeypatch.setattr(banded, "GROUP", 3)
    made = module(name, causal)
    for length in (LENGTH, LENGTH + 1, LENGTH + 3):
        x = torch.randn(2, length, HIDDEN, dtype=torch.float64)
        for positions in (None, torch.arange(5, 5 + length)):
            fast, general, answers = outputs(made, x, positions=positions)
            assert answers == [True]
            torch.testing.assert_close(fast, general, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("name", ["deberta", "deberta-buckets", "shaw"])
def test_decoding_with_a_cache_in_blocks(name, monkeypatch):
    """Blocks of 4: the prompt of 30 in blocks with far-behind keys beside their
    windows, then one token at a time: the whole sequence's output."""
    monkeypatch.setattr(banded, "BLOCK", 4)
    decodes_as_the_whole(name)


def _calls(name: str, causal: bool = False) -> list[tuple]:
    """The fused kernel's calls for ``name`` at n = 40, batch 2: the shapes of
    query, key and mask (None: no mask) and the causal flag.
    """
    seen = []
    flash = banded._flash

    def spy(query, key, value, **kwargs):
        mask = kwargs.get("attn_mask")
        seen.append((tuple(query.shape), tuple(key.shape),
                     None if mask is None else tuple(mask.shape),
                     kwargs.get("is_causal", False)))
        return flash(query, key, value, **kwargs)

    made = module(name, causal)
    x = torch.randn(2, LENGTH, HIDDEN, dtype=torch.float64)
    banded._flash = spy
    try:
        with torch.no_grad():
            made(x)
    finally:
        banded._flash = flash
    return seen


def test_no_mask_is_n_by_n(monkeypatch):
    """DeBERTa at n = 40 (``L = 5``, ``F = 9``), blocks of 8 (``W = 16``), batch 2
    and 2 heads as 4: the five windows one call with a ``(4, 5, 8, 16)`` mask; far
    rectangles without a mask or the causal rule, of width ``d + 3`` rounded up to
    ``STEP``: block 0 against its 28 keys after the window, blocks 1 to 3 one call
    of 24 keys each (4 + 20, 12 + 12, 20 + 4), block 4 against its 28 before."""
    monkeypatch.setattr(banded, "BLOCK", 8)
    d = HIDDEN // HEADS
    wide = -(-(d + 3) // banded.STEP) * banded.STEP
    assert _calls("deberta") == [
        ((4, 5, 8, d), (4, 5, 16, d), (4, 5, 8, 16), False),
        ((4, 1, 8, wide), (4, 1, 28, wide), None, False),
        ((4, 3, 8, wide), (4, 3, 24, wide), None, False),
        ((4, 1, 8, wide), (4, 1, 28, wide), None, False),
    ]


def test_causal_far_behind_alone(monkeypatch):
    """The causal rule at n = 40, blocks of 8: the windows cut to ``F = L = 5``
    columns (``W = 12``), far-behind keys alone, block ``t`` against ``8 t - 4``
    of them (none for block 0), one call a block."""
    monkeypatch.setattr(banded, "BLOCK", 8)
    d = HIDDEN // HEADS
    wide = -(-(d + 3) // banded.STEP) * banded.STEP
    assert _calls("deberta", causal=True) == [
        ((4, 5, 8, d), (4, 5, 12, d), (4, 5, 8, 12), False),
        *(((4, 1, 8, wide), (4, 1, 8 * t - 4, wide), None, False) for t in range(1, 5)),
    ]


def test_far_sides_without_p2c(monkeypatch):
    """Shaw at n = 40 (``L = 4``, ``F = 7``), blocks of 8 (``W = 14``): no p2c, so
    the far keys keep their width ``d`` and each block meets its far-behind and
    its far-ahead keys in two calls (c2p on their log-sum-exps): block ``t``
    against ``8 t - 3`` keys behind and ``29 - 8 t`` ahead, none where that is 0."""
    monkeypatch.setattr(banded, "BLOCK", 8)
    d = HIDDEN // HEADS
    far = []
    for t in range(5):
        far += [((4, 1, 8, d), (4, 1, keys, d), None, False)
                for keys in (8 * t - 3, 29 - 8 * t) if keys > 0]
    assert _calls("shaw") == [((4, 5, 8, d), (4, 5, 14, d), (4, 5, 8, 14), False), *far]
