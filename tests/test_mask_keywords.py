"""torch's two mask conventions by name, and one reading of every mask, eager or
compiled.

A value cannot tell ``nn.MultiheadAttention``'s ``key_padding_mask`` (bool, True
for padding) from relpos's keep-mask (True to attend), nor ``nn.Transformer``'s
square ``attn_mask`` from a ``(b, n)`` key mask when ``b == n``; so each comes
under its own keyword. Here each gives the output of the equivalent relpos mask
on every module and kernel (``_every.GRID``), per head too; and every accepted
convention gives one output under ``torch.compile`` and in eager mode, including
the float mask of zeros alone, which both read as "no padding".
"""

from __future__ import annotations

import pytest
import torch

import relpos

from _every import GRID, HEADS, MODULES, build, call, tolerance
from test_masks import (
    B, N, additive_masks, by_hand, key_mask, pair_forms, pair_mask, x_of,
)



def torch_forms(keep: torch.Tensor, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """``keep`` (True: attend) in torch's conventions: bool True for masked, or
    additive float."""
    return {
        "bool": ~keep,
        "-inf": torch.zeros(keep.shape, dtype=dtype).masked_fill(~keep, -torch.inf),
        "min": (~keep).to(dtype) * torch.finfo(dtype).min,
    }


@pytest.mark.parametrize("name, backend", GRID)
def test_key_padding_mask_is_the_keep_mask_inverted(name, backend):
    module = build(name, backend)
    x, keep = x_of(), key_mask()
    expected = call(module, x, keep)
    for form, padding in torch_forms(keep, x.dtype).items():
        got = call(module, x, key_padding_mask=padding)
        torch.testing.assert_close(got, expected, **tolerance(x.dtype), msg=form)
    # Read as relpos's own bool mask instead, it would keep only the padding.
    assert not torch.allclose(call(module, x, ~keep), expected, atol=1e-3)
    # Both masks at once: what both allow.
    both = keep.clone()
    both[0, 0] = False
    got = call(module, x, keep, key_padding_mask=~both)
    torch.testing.assert_close(got, call(module, x, both), **tolerance(x.dtype))


@pytest.mark.parametrize("name, backend", GRID)
def test_attn_mask_is_the_pair_mask_for_every_sequence_and_head(name, backend):
    module = build(name, backend)
    x, pairs = x_of(), pair_mask()
    square = pairs[0]  # (n, n): one mask for every sequence
    expected = call(module, x, square.expand(B, N, N))
    for form, mask in torch_forms(square, x.dtype).items():
        got = call(module, x, attn_mask=mask)
        torch.testing.assert_close(got, expected, **tolerance(x.dtype), msg=form)
    # (b * h, n, n), torch's layout: a mask per sequence and head.
    per_head = torch.stack([pairs, pair_mask(seed=3)], dim=1)  # (b, h, n, n)
    assert per_head.shape[1] == HEADS
    got = call(module, x, attn_mask=~per_head.flatten(0, 1))
    hand, _ = by_hand(module, x, per_head, heads=True)
    torch.testing.assert_close(got, hand, **tolerance(x.dtype))
    same = pairs[:, None].expand(B, HEADS, N, N).flatten(0, 1)
    torch.testing.assert_close(
        call(module, x, attn_mask=~same), call(module, x, pairs), **tolerance(x.dtype)
    )


@pytest.mark.parametrize(
    "mask, error, match",
    [
        (torch.ones(B, N), TypeError, None),  # not a tensor of bool or float: below
        (torch.zeros(B, N + 1, dtype=torch.bool), ValueError, r"shape \(b, j\)"),
        (torch.full((B, N), 0.5), ValueError, "additive"),
        (torch.zeros(B, N, dtype=torch.long), TypeError, "bool"),
        ([[True] * N] * B, TypeError, "bool tensor"),
    ],
    ids=["float-ones", "length", "not-additive", "integer", "list"],
)
def test_bad_key_padding_masks_are_refused_by_name(mask, error, match):
    module = build("t5", "gather")
    if match is None:  # float ones are additive +1: not a mask
        error, match = ValueError, "additive"
    with pytest.raises(error, match=match) as caught:
        call(module, x_of(), key_padding_mask=mask)
    assert "key_padding_mask" in str(caught.value)


def test_bad_attn_masks_are_refused_by_name():
    module = build("alibi", "gather")
    for mask, match in [
        (torch.zeros(N, N + 1, dtype=torch.bool), r"\(i, j\)"),
        (torch.zeros(B, N, N, dtype=torch.bool), r"\(b \* h, i, j\)"),
        (torch.randn(N, N), "additive"),
    ]:
        with pytest.raises(ValueError, match=match) as caught:
            call(module, x_of(), attn_mask=mask)
        assert "attn_mask" in str(caught.value)


def test_torch_masks_with_a_cache():
    # A key_padding_mask over the new tokens or every key; an attn_mask over the
    # new queries and every key.
    module = build("rotary", "gather", causal=True)
    x = x_of()
    keep = key_mask()
    keep[:, -2:] = True  # the decoded tokens are real
    full = call(module, x, key_padding_mask=~keep)
    cache = relpos.KVCache()
    first = call(module, x[:, :5], key_padding_mask=~keep[:, :5], cache=cache)
    second = call(module, x[:, 5:], key_padding_mask=~keep, cache=cache)
    got = torch.cat([first, second], dim=1)
    torch.testing.assert_close(got[keep], full[keep], **tolerance(x.dtype))
    cache = relpos.KVCache()
    call(module, x[:, :5], cache=cache)
    allowed = torch.ones(2, N, dtype=torch.bool)
    allowed[:, 0] = False  # the new queries may not read the first token
    got = call(module, x[:, 5:], attn_mask=~allowed, cache=cache)
    expected = call(module, x, attn_mask=~torch.cat(
        [torch.ones(5, N, dtype=torch.bool).tril(), allowed], dim=0
    ))[:, 5:]
    torch.testing.assert_close(got, expected, **tolerance(x.dtype))


# -- one reading, eager or compiled -----------------------------------------------------


def every_convention(dtype: torch.dtype) -> list[tuple[str, dict, torch.Tensor]]:
    """(label, the call's mask keywords, the equivalent relpos keep-mask) for every
    accepted convention; keep-masks are ``(b, n)`` or ``(b, n, n)`` bool."""
    keep, pairs = key_mask(), pair_mask()
    cases = [("bool", {"attention_mask": keep}, keep)]
    cases += [("int", {"attention_mask": keep.long()}, keep)]
    cases += [("0/1", {"attention_mask": keep.to(dtype)}, keep)]
    cases += [
        (form, {"attention_mask": mask}, keep)
        for form, mask in additive_masks(keep, dtype).items()
    ]
    cases += [
        (f"pairs-{form}", {"attention_mask": mask}, pairs)
        for form, mask in pair_forms(pairs, dtype).items()
    ]
    none = torch.ones(B, N, dtype=torch.bool)
    cases += [("zeros", {"attention_mask": torch.zeros(B, N, dtype=dtype)}, none)]
    cases += [
        (f"key_padding_mask-{form}", {"key_padding_mask": mask}, keep)
        for form, mask in torch_forms(keep, dtype).items()
    ]
    square = pairs[0]
    cases += [
        (f"attn_mask-{form}", {"attn_mask": mask}, square.expand(B, N, N))
        for form, mask in torch_forms(square, dtype).items()
    ]
    return cases


@pytest.mark.parametrize("name", list(MODULES))
def test_every_convention_reads_the_same_compiled_as_eager(name):
    # torch.compile skips the value checks (reading a value breaks the graph): the
    # reading itself must not depend on them. The "eager" compiler traces the
    # module as torch.compile does and runs the graph unchanged.
    torch._dynamo.reset()
    module = build(name, "gather", dtype=torch.float32)
    compiled = torch.compile(module, backend="eager", dynamic=False)
    x = x_of(torch.float32)
    for label, masks, keep in every_convention(x.dtype):
        eager = call(module, x, **masks)
        expected = call(module, x, keep)
        torch.testing.assert_close(eager, expected, **tolerance(x.dtype), msg=label)
        got = call(compiled, x, **masks)
        torch.testing.assert_close(got, eager, **tolerance(x.dtype), msg=label)





def _drawn_mask(draw, b: int, n: int, heads: int, dtype: torch.dtype):
    """A mask in a drawn convention, as (keyword, mask, equivalent keep-mask)."""
    from hypothesis import strategies as st

    convention = draw(st.sampled_from(
        ["bool", "int", "0/1", "additive", "zeros", "pairs", "key_padding", "attn",
         "attn_heads"]
    ))
    bits = draw(st.lists(st.booleans(), min_size=b * n * n * heads,
                         max_size=b * n * n * heads))
    grid = torch.tensor(bits, dtype=torch.bool).reshape(b, heads, n, n)
    grid |= torch.eye(n, dtype=torch.bool)  # every query keeps itself
    keys = grid[:, 0, 0] | torch.arange(n).eq(0)  # (b, n): key 0 kept
    if convention == "bool":
        return "attention_mask", keys, keys
    if convention == "int":
        return "attention_mask", keys.long(), keys
    if convention == "0/1":
        return "attention_mask", keys.to(dtype), keys
    if convention == "additive":
        return "attention_mask", (~keys).to(dtype) * -1e9, keys
    if convention == "zeros":
        return "attention_mask", torch.zeros(b, n, dtype=dtype), torch.ones_like(keys)
    if convention == "pairs":
        return "attention_mask", grid[:, 0], grid[:, 0]
    if convention == "key_padding":
        return "key_padding_mask", ~keys, keys
    if convention == "attn":
        return "attn_mask", ~grid[0, 0], grid[0, 0].expand(b, n, n)
    return "attn_mask", ~grid.flatten(0, 1), None  # per head: compared eager only


def test_generated_masks_read_the_same_compiled_as_eager():
    # Random shapes, conventions and bits: compiled (the value checks skipped) and
    # eager give one output, and it is the equivalent keep-mask's.
    from hypothesis import given, settings
    from hypothesis import strategies as st

    torch._dynamo.reset()
    module = build("t5", "gather", dtype=torch.float32)
    compiled = torch.compile(module, backend="eager", dynamic=True)

    @settings(max_examples=30, deadline=None)
    @given(data=st.data(), b=st.integers(1, 3), n=st.integers(1, 6))
    def check(data, b, n):
        keyword, mask, keep = _drawn_mask(data.draw, b, n, HEADS, torch.float32)
        seed = data.draw(st.integers(0, 2**16))
        x = torch.randn(b, n, 16, generator=torch.Generator().manual_seed(seed))
        eager = call(module, x, **{keyword: mask})
        torch.testing.assert_close(call(compiled, x, **{keyword: mask}), eager)
        if keep is not None:
            torch.testing.assert_close(call(module, x, keep), eager)

    check()
