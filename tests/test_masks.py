"""Attention masks in every convention, read by ``relpos.masks.read_mask`` and by the
forward of every module on every kernel (``_every.GRID``).

- Additive masks as ``transformers`` writes them (0 for a token; -1e4, -1e9, the
  dtype's minimum or -inf for padding), 2-D and 4-D ``(b, 1, 1, n)``, give exactly
  the output of the equivalent bool mask, and not that of the inverted one.
- 0/1 integer and float masks read as bool; any other value is refused with an
  error naming the conventions; an all-zero float mask is additive ("no
  padding"), eager and compiled alike; an all-zero bool or integer one means
  "all padding".
- torch's conventions by name: ``key_padding_mask`` (True: padding) and
  ``attn_mask`` ``(n, n)`` or ``(b * h, n, n)`` (True: not allowed), bool or
  additive, give the output of the equivalent relpos mask, eager and compiled.
- Pair masks ``(b, n, n)`` and ``transformers``' ``(b, 1, n, n)`` give the masked
  softmax written out by hand from the unmasked logits (``return_scores``).
"""

from __future__ import annotations

import pytest
import torch

from _every import COMPILED, GRID, HIDDEN, build, call, tolerance
from relpos.backends.terms import pair_rows
from relpos.scores import value_term
from relpos.masks import read_mask

B, N = 2, 7


def key_mask() -> torch.Tensor:
    """Row 0 pads its last key, row 1 its first two.

    Shapes:
        output: ``(2, 7)`` bool
    """
    mask = torch.ones(B, N, dtype=torch.bool)
    mask[0, -1] = False
    mask[1, :2] = False
    return mask


def additive_masks(mask: torch.Tensor, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """``mask`` (True: attend) in each additive form, 2-D and 4-D ``(b, 1, 1, n)``."""
    padding = ~mask
    forms = {
        "-1e4": padding.to(dtype) * -1e4,
        "-1e9": padding.to(dtype) * -1e9,
        "min": padding.to(dtype) * torch.finfo(dtype).min,
        "float32-min": padding.float() * torch.finfo(torch.float32).min,
        "-inf": torch.zeros(mask.shape, dtype=dtype).masked_fill(padding, -torch.inf),
    }
    both = {f"2d{k}": v for k, v in forms.items()}
    both.update({f"4d{k}": v[:, None, None, :] for k, v in forms.items()})
    return both


def x_of(dtype: torch.dtype = torch.float64, n: int = N) -> torch.Tensor:
    generator = torch.Generator().manual_seed(1)
    return torch.randn(B, n, HIDDEN, dtype=dtype, generator=generator)


CONVENTIONS = ("bool", "0/1", "additive", "attention_mask")


def refused_naming_conventions(error: pytest.ExceptionInfo) -> None:
    message = str(error.value)
    missing = [word for word in CONVENTIONS if word not in message]
    assert not missing, f"the error does not name {missing}: {message}"


# -- additive masks = bool masks, never the inverted mask ----------------------------


@pytest.mark.parametrize("name, backend", GRID)
@pytest.mark.parametrize("causal", [False, True], ids=["bidirectional", "causal"])
def test_additive_mask_is_the_bool_mask(name, backend, causal):
    module = build(name, backend, causal=causal)
    x, mask = x_of(), key_mask()
    expected = call(module, x, mask)
    inverted = call(module, x, ~mask)
    for form, additive in additive_masks(mask, x.dtype).items():
        got = call(module, x, additive)
        assert torch.equal(got, expected), form
        # The inverted reading would keep exactly the padding: the tokens' outputs
        # differ.
        assert not torch.allclose(got[mask], inverted[mask], atol=1e-3), form


@pytest.mark.parametrize("name, backend", GRID)
def test_zero_one_masks_are_the_bool_mask(name, backend):
    module = build(name, backend)
    x, mask = x_of(), key_mask()
    expected = call(module, x, mask)
    for dtype in (torch.int64, torch.int32, torch.uint8, torch.float64, torch.float32):
        assert torch.equal(call(module, x, mask.to(dtype)), expected), dtype
    extended_bool = mask[:, None, None, :]  # (b, 1, 1, n): torch's sdpa convention
    assert torch.equal(call(module, x, extended_bool), expected)


def test_read_mask_gives_the_keys_to_attend():
    mask = key_mask()
    for form, additive in additive_masks(mask, torch.float64).items():
        keys, pairs = read_mask(additive, B, N, N, torch.device("cpu"))
        assert pairs is None and torch.equal(keys, mask), form
    for dtype in (torch.int64, torch.float32, torch.bool):
        keys, pairs = read_mask(mask.to(dtype), B, N, N, torch.device("cpu"))
        assert pairs is None and torch.equal(keys, mask), dtype
    # No padding at all: nothing to mask.
    assert read_mask(torch.ones(B, N), B, N, N, torch.device("cpu")) == (None, None)
    assert read_mask(torch.zeros(B, 1, 1, N), B, N, N, torch.device("cpu")) == (
        None, None
    )


# -- values that no convention allows -------------------------------------------------


@pytest.mark.parametrize(
    "dtype, value",
    [
        (torch.int64, 2),
        (torch.int64, -3),
        (torch.float64, 2.0),
        (torch.float64, 0.5),
        (torch.float64, -3.0),
        (torch.float32, -1e3),
    ],
    ids=str,
)
@pytest.mark.parametrize("pairs", [False, True], ids=["keys", "pairs"])
def test_odd_values_are_refused_naming_the_conventions(dtype, value, pairs):
    mask = key_mask().to(dtype)
    if pairs:
        mask = mask[:, None, :].expand(B, N, N).clone()  # (b, i, j)
    mask.view(-1)[3] = value
    with pytest.raises(ValueError) as error:
        read_mask(mask, B, N, N, torch.device("cpu"))
    refused_naming_conventions(error)
    module = build("deberta", "gather")
    with pytest.raises(ValueError) as error:
        call(module, x_of(), mask)
    refused_naming_conventions(error)


@pytest.mark.parametrize("name, backend", GRID)
def test_all_zero_masks(name, backend):
    # A float mask of zeros alone is additive: no padding (what transformers'
    # additive mask is for a batch without any). Bool and integer zeros say
    # "all padding".
    module = build(name, backend)
    x = x_of()
    zeros = torch.zeros(B, N, dtype=x.dtype)
    unmasked = call(module, x)
    torch.testing.assert_close(call(module, x, zeros), unmasked, **tolerance(x.dtype))
    torch.testing.assert_close(
        call(module, x, zeros[:, None, :].expand(B, N, N)), unmasked,
        **tolerance(x.dtype),
    )
    none = torch.zeros(B, N, dtype=torch.bool)
    expected = call(module, x, none)
    assert expected.isfinite().all()
    for dtype in (torch.int64, torch.uint8):
        keys, _ = read_mask(none.to(dtype), B, N, N, torch.device("cpu"))
        assert not keys.any()
        assert torch.equal(call(module, x, none.to(dtype)), expected)


def test_four_dimensional_integer_masks_are_refused():
    # In 4-D, 0 means "attend" (transformers' additive masks); in 2-D, "padding".
    module = build("deberta", "gather")
    for shape in ((B, 1, 1, N), (B, 1, N, N)):
        mask = torch.ones(shape, dtype=torch.int64)
        with pytest.raises(TypeError, match="attention_mask of 4 dimensions"):
            read_mask(mask, B, N, N, torch.device("cpu"))
        with pytest.raises(TypeError, match="attention_mask of 4 dimensions"):
            call(module, x_of(), mask)


@pytest.mark.parametrize(
    "shape",
    [(B, N + 1), (B + 1, N), (N,), (B, 1, N), (B, N, N + 1), (B, 2, 1, N),
     (B, 1, 1, N - 1), (1, B, N), (B, N, 1, 1)],
    ids=str,
)
def test_wrong_shapes_are_refused_naming_attention_mask(shape):
    module = build("t5", "gather")
    with pytest.raises(ValueError, match=r"attention_mask must have shape"):
        call(module, x_of(), torch.ones(shape, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"attention_mask must have shape"):
        read_mask(torch.ones(shape), B, N, N, torch.device("cpu"))


def test_masks_that_are_not_tensors_are_refused():
    module = build("alibi", "naive")
    for mask in (key_mask().tolist(), 1, torch.ones(B, N, dtype=torch.complex64)):
        with pytest.raises(TypeError, match="attention_mask must be a tensor"):
            call(module, x_of(), mask)


# -- pair masks: the masked softmax, written out ---------------------------------------


def pair_mask(seed: int = 2) -> torch.Tensor:
    """Random allowed pairs; each query keeps at least itself.

    Shapes:
        output: ``(2, 7, 7)`` bool
    """
    drawn = torch.rand(B, N, N, generator=torch.Generator().manual_seed(seed)) > 0.5
    return drawn | torch.eye(N, dtype=torch.bool)


def pair_forms(pairs: torch.Tensor, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """``pairs`` in the 3-D and 4-D conventions."""
    additive = (~pairs).to(dtype) * torch.finfo(dtype).min
    return {
        "bool": pairs,
        "0/1": pairs.to(dtype),
        "int": pairs.long(),
        "-1e9": (~pairs).to(dtype) * -1e9,
        "4d-bool": pairs[:, None],
        "4d-min": additive[:, None],
        "4d--inf": additive.masked_fill(~pairs, -torch.inf)[:, None],
    }


def by_hand(module, x: torch.Tensor, pairs: torch.Tensor, heads: bool = False):
    """The context of ``softmax(logits masked to pairs) @ values`` (plus relative
    values), from the unmasked logits that ``return_scores`` gives.

    Shapes:
        x: ``(b, n, hidden)``; pairs: ``(b, i, j)``, with ``heads`` ``(b, h, i, j)``
        output: ``(b, n, hidden)`` and the probabilities ``(b, h, i, j)``
    """
    with torch.no_grad():
        _, scores = module(x, return_scores=True)
        allowed = pairs if heads else pairs[:, None]  # (b, h or 1, i, j)
        logits = scores.logits.masked_fill(~allowed, -torch.inf)
        probs = logits.softmax(-1)  # (b, h, i, j)
        values = module.split_heads(module.value_proj(x))  # (b, h, j, d)
        context = probs @ values  # (b, h, i, d)
        positions = torch.arange(x.shape[1])[None]  # (1, n)
        extra = {}
        if hasattr(module, "table_or"):
            extra["rel_embeddings"] = module.table_or(None)
        terms = module.position_terms(positions, positions, **extra)
        if terms is not None and terms.value_rows is not None:
            rows = pair_rows(terms)  # (1, i, j)
            context = context + value_term(probs, terms.value_rows, rows)
    return context.transpose(1, 2).flatten(-2), probs  # (b, n, hidden)


@pytest.mark.parametrize("name, backend", GRID)
def test_pair_masks_are_the_masked_softmax(name, backend):
    module = build(name, backend)
    x, pairs = x_of(), pair_mask()
    expected, probs = by_hand(module, x, pairs)
    for form, mask in pair_forms(pairs, x.dtype).items():
        torch.testing.assert_close(
            call(module, x, mask), expected, **tolerance(x.dtype), msg=form
        )
        _, scores = call(module, x, mask, return_scores=True)
        torch.testing.assert_close(scores.probs, probs, **tolerance(x.dtype), msg=form)
    # The mask matters: unmasked, the context differs.
    assert not torch.allclose(call(module, x), expected, atol=1e-3)


@pytest.mark.slow
@pytest.mark.parametrize("name", COMPILED[:1])
def test_masks_on_compiled_flex(name):
    # float32 on the CPU runs the compiled kernel: the same masks, the same output.
    # A mask reaches the kernel the same way for every scheme (relpos.masks, read in
    # the one score_mod), so one module checks what compiling does to masks; each
    # way positions reach the kernel is compiled, with a cache's masks, in
    # tests/test_cache.py and with documents in tests/test_packing.py, and every
    # module reads every mask on flex eagerly above. Each module here cost two
    # kernel compilations (about 25 s of CPU on a 2-core machine).
    module = build(name, "flex", dtype=torch.float32)
    reference = build(name, "naive", dtype=torch.float32)
    x, mask = x_of(torch.float32), key_mask()
    expected = call(reference, x, mask)
    torch.testing.assert_close(call(module, x, mask), expected, **tolerance(x.dtype))
    for form, additive in additive_masks(mask, x.dtype).items():
        torch.testing.assert_close(
            call(module, x, additive), expected, **tolerance(x.dtype), msg=form
        )
    pairs = pair_mask()
    expected, _ = by_hand(reference, x, pairs)
    for form, mask in pair_forms(pairs, x.dtype).items():
        torch.testing.assert_close(
            call(module, x, mask), expected, **tolerance(x.dtype), msg=form
        )
