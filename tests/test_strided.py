"""The strided view of distance terms (``relpos.backends.strided``).

Which calls take it (the schemes whose terms are the distance's alone, at
inference on the CPU, positions one progression, no mask but the causal rule),
that they give the general path's output (bit for bit for every content-free
bias; to rounding for Transformer-XL, whose product is cut another way), on an encoder,
a decoder and a decoder with a cache, and that the mask it hands to torch's
attention is a view of ``h (i + j - 1)`` or ``b h i m`` numbers, not ``b h i j``.

Shape legend:
    b  batch      n  sequence length      hidden  model width (16)
"""

from __future__ import annotations

from functools import partial

import pytest
import torch

import relpos
from relpos.backends import strided

import _shortcuts
from _every import MODULES, build

#: The schemes whose terms depend on the distance alone and are read one per
#: distance: T5 (a bias per bucket), ALiBi and KERPLE (``distance_only``) and
#: Transformer-XL (key rows for every distance). The others read what the view
#: cannot hold: DeBERTa's projected table and Shaw's rows clip at ``k`` (rows
#: shared by many distances), Shaw adds relative values, FIRE and TUPE read the
#: query's position, rotary and ``none`` add nothing to the logits.
DISTANCE_SCHEMES = ("t5", "alibi", "kerple", "transformer_xl")


#: The shortcut turned off, watched, or both ways (tests/_shortcuts.py).
general_path = partial(_shortcuts.general_path, "strided_applies")
recorded = partial(_shortcuts.recorded, "strided_applies")
outputs = partial(_shortcuts.outputs, "strided_applies")


@pytest.mark.parametrize("causal", [False, True], ids=["encoder", "causal"])
@pytest.mark.parametrize("name", list(MODULES))
def test_which_schemes_take_the_view(name, causal):
    """The view serves exactly the distance schemes (the others' output is the
    general path's own)."""
    module = build(name, "gather", causal=causal, dtype=torch.float32)
    x = torch.randn(2, 9, 16)
    fast, general, answers = outputs(module, x)
    assert any(answers) == (name in DISTANCE_SCHEMES)
    torch.testing.assert_close(fast, general, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("causal", [False, True], ids=["encoder", "causal"])
@pytest.mark.parametrize("name", DISTANCE_SCHEMES)
def test_same_output_as_the_general_path(name, causal, dtype):
    """Bit for bit for the content-free biases; Transformer-XL's rows are scored
    in another order and cut in blocks: equal to rounding."""
    module = build(name, "gather", causal=causal, dtype=dtype)
    x = torch.randn(3, 11, 16, dtype=dtype)
    for positions in (None, torch.arange(5, 16)):
        fast, general, answers = outputs(module, x, positions=positions)
        assert all(answers) and answers
        if name == "transformer_xl":
            close = 1e-12 if dtype == torch.float64 else 1e-6
            torch.testing.assert_close(fast, general, atol=close, rtol=close)
        else:
            assert torch.equal(fast, general)


@pytest.mark.parametrize("name", DISTANCE_SCHEMES)
def test_decoding_with_a_cache(name):
    """A prompt, then one token at a time: every step takes the view (queries
    ``t, ..., t + n - 1`` against keys ``0, ..., t + n - 1``) and gives what the
    whole sequence gives at once."""
    module = build(name, "gather", causal=True, dtype=torch.float64)
    x = torch.randn(2, 8, 16, dtype=torch.float64)
    with torch.no_grad(), general_path():
        whole = module(x)
    cache = relpos.KVCache()
    steps = []
    with torch.no_grad(), recorded() as answers:
        steps.append(module(x[:, :5], cache=cache))
        for t in range(5, 8):
            steps.append(module(x[:, t : t + 1], cache=cache))
    assert answers == [True] * 4
    torch.testing.assert_close(torch.cat(steps, 1), whole, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("name", DISTANCE_SCHEMES)
def test_falls_back_where_the_view_cannot_hold_the_call(name):
    """Padding, positions that are not one progression, and training take the
    general path, with the same answer."""
    module = build(name, "gather", dtype=torch.float64)
    x = torch.randn(2, 7, 16, dtype=torch.float64)
    padding = torch.ones(2, 7)
    padding[1, 5:] = 0
    shuffled = torch.tensor([[0, 2, 1, 3, 4, 5, 6], [0, 1, 2, 3, 4, 5, 6]])
    for kwargs in ({"attention_mask": padding}, {"positions": shuffled}):
        with torch.no_grad(), recorded() as answers:
            module(x, **kwargs)
        assert answers == [False]
    with recorded() as answers:
        module(x).sum().backward()
    assert answers == [False]


def test_the_mask_is_a_view_of_one_vector_per_head():
    """T5 at n = 64: torch's attention is handed an ``(1, h, 64, 64)`` view of
    ``h * 127`` numbers; Transformer-XL's of its ``(b, h, 64, 127)`` scores."""
    seen = []
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def spy(query, key, value, attn_mask=None, **kwargs):
        seen.append(attn_mask)
        return sdpa(query, key, value, attn_mask=attn_mask, **kwargs)

    x = torch.randn(2, 64, 16)
    for name in ("t5", "transformer_xl"):
        module = build(name, "gather", dtype=torch.float32)
        strided.F.scaled_dot_product_attention = spy
        try:
            with torch.no_grad():
                module(x)
        finally:
            strided.F.scaled_dot_product_attention = sdpa
    t5, txl = seen
    assert t5.shape == (1, 2, 64, 64) and t5.stride()[-2:] == (1, 1)
    assert t5.untyped_storage().nbytes() == 2 * 127 * 4
    assert txl.shape == (2, 2, 64, 64) and txl.stride()[-2:] == (128, 1)
    assert txl.untyped_storage().nbytes() == 2 * 2 * 64 * 127 * 4


def test_progression_start():
    """``p`` for ``[[p, p + 1, ...]]``; None for a batch of them, a gap or a
    repeat."""
    assert strided.progression_start(torch.arange(3, 9)[None]) == 3
    assert strided.progression_start(torch.arange(6)[None].expand(2, 6)) is None
    assert strided.progression_start(torch.tensor([[0, 1, 3]])) is None
    assert strided.progression_start(torch.tensor([[4, 4, 5]])) is None


@pytest.mark.parametrize("causal", [False, True], ids=["encoder", "causal"])
def test_transformer_xl_in_blocks(causal, monkeypatch):
    """Queries in blocks of 3 (11 queries: 3, 3, 3 and 2), each block against the
    rows of its own distances: the general path's output, to rounding (the
    products are cut another way)."""
    monkeypatch.setattr(strided, "BLOCK", 3)
    module = build("transformer_xl", "gather", causal=causal, dtype=torch.float32)
    x = torch.randn(2, 11, 16)
    fast, general, answers = outputs(module, x)
    assert answers == [True]
    torch.testing.assert_close(fast, general, atol=1e-6, rtol=1e-6)
