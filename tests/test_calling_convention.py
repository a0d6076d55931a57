"""One call for every attention: ``attn(hidden_states, attention_mask=None, *, ...)``.

- Every registered scheme and DeBERTa take the same call, positionally and by
  keyword, in an ``EncoderLayer`` too.
- DeBERTa owns its table by default (the right size for its span and buckets);
  an external one is passed as ``rel_embeddings=`` (a tensor or the
  ``RelativePositionEmbedding`` itself); a module without a table says what to
  pass.
- relpos 0.2's ``attn(x, table, mask)`` was removed in 0.4: a ``TypeError``
  that names the new call; the second positional argument is always the mask,
  even when it has the table's shape and dtype.
- Errors name the public argument, never an internal method.
"""

from __future__ import annotations

import warnings

import pytest
import torch

import relpos
from relpos.schemes import ATTENTIONS

HIDDEN, HEADS = 16, 2


def _inputs(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 6, HIDDEN, generator=g, dtype=torch.float64)
    mask = torch.ones(2, 6, dtype=torch.long)
    mask[1, 4:] = 0
    return x, mask


def _every_attention():
    yield from ATTENTIONS.items()  # DeBERTa's and none's among them


@pytest.mark.parametrize("name, cls", list(_every_attention()))
def test_every_attention_takes_one_call(name, cls):
    torch.manual_seed(0)
    attention = cls(HIDDEN, HEADS).double().eval()
    x, mask = _inputs()
    with torch.no_grad():
        positional = attention(x, mask)
        keyword = attention(x, attention_mask=mask)
        positions = attention(x, mask, positions=torch.arange(6))
        layer = relpos.EncoderLayer(attention, HIDDEN, 32).double().eval()
        stacked = layer(x, mask, positions=torch.arange(6))
    torch.testing.assert_close(positional, keyword, rtol=0, atol=0)
    torch.testing.assert_close(positional, positions, rtol=0, atol=0)
    assert stacked.shape == x.shape


def test_deberta_owns_a_table_of_the_right_size():
    for settings, rows in (({"max_relative_positions": 512}, 1024),
                           ({"max_relative_positions": 64, "position_buckets": 8}, 16)):
        attention = relpos.DisentangledSelfAttention(HIDDEN, HEADS, **settings)
        assert tuple(attention.table.weight.shape) == (rows, HIDDEN)
    torch.manual_seed(0)
    attention = relpos.DisentangledSelfAttention(HIDDEN, HEADS, max_relative_positions=4)
    attention = attention.double().eval()
    x, mask = _inputs()
    with torch.no_grad():
        own = attention(x, mask)
        given = attention(x, mask, rel_embeddings=attention.table.weight)
        module = attention(x, mask, rel_embeddings=attention.table)
        other = attention(x, mask, rel_embeddings=torch.randn_like(attention.table.weight))
    torch.testing.assert_close(own, given, rtol=0, atol=0)
    torch.testing.assert_close(own, module, rtol=0, atol=0)
    assert (own - other).abs().max() > 1e-3  # the table is read


def test_the_old_call_is_a_type_error_that_names_the_new_call():
    torch.manual_seed(0)
    attention = relpos.DisentangledSelfAttention(
        HIDDEN, HEADS, max_relative_positions=4, own_table=False
    ).double().eval()
    layer = relpos.DisentangledEncoderLayer(
        HIDDEN, HEADS, 32, max_relative_positions=4, own_table=False
    ).double().eval()
    x, mask = _inputs()
    table = torch.randn(8, HIDDEN, dtype=torch.float64)
    new_call = r"removed in 0\.4; write module\(hidden_states, attention_mask, " \
        r"rel_embeddings=table\)"
    for module in (attention, layer):
        with pytest.raises(TypeError, match=new_call):
            module(x, table, mask)
        with pytest.raises(TypeError, match=new_call):
            module(x, mask, table)
        with pytest.raises(TypeError, match=new_call):
            module(x, table, None)


def test_the_second_positional_argument_is_always_the_mask():
    # b = 2k and n = hidden: a (b, n) mask has the table's shape (2k, hidden).
    torch.manual_seed(0)
    attention = relpos.DisentangledSelfAttention(
        HIDDEN, HEADS, max_relative_positions=4
    ).double().eval()
    layer = relpos.DisentangledEncoderLayer(
        HIDDEN, HEADS, 32, max_relative_positions=4
    ).double().eval()
    x = torch.randn(8, HIDDEN, HIDDEN, dtype=torch.float64)
    table = torch.randn(8, HIDDEN, dtype=torch.float64)  # what 0.2's call passed
    for module in (attention, layer):
        with pytest.raises(ValueError, match="attention_mask must be"):
            module(x, table)  # read as a mask, and refused as one
    ones = torch.ones(8, HIDDEN, dtype=torch.float64)  # a table of ones: a 0/1 mask
    with torch.no_grad():
        for module in (attention, layer):
            torch.testing.assert_close(module(x, ones), module(x), rtol=0, atol=0)
    x, mask = _inputs()
    with pytest.raises(ValueError, match="attention_mask must have shape"):
        attention(x, table)  # not the batch's shape: a mask error, not a table one


def test_a_mask_shaped_like_the_table_is_a_mask_when_the_table_comes_by_keyword():
    # b = 2k and n = hidden: the mask (b, n) has the table's shape (2k, hidden).
    torch.manual_seed(0)
    attention = relpos.DisentangledSelfAttention(
        HIDDEN, HEADS, max_relative_positions=4
    ).double().eval()
    table = torch.randn(8, HIDDEN, dtype=torch.float64)
    x = torch.randn(8, HIDDEN, HIDDEN, dtype=torch.float64)
    keep = torch.rand(8, HIDDEN, generator=torch.Generator().manual_seed(1)) > 0.3
    keep[:, 0] = True
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error")  # the new call: no warning
        expected = attention(x, keep, rel_embeddings=table)
        for mask in (keep.double(), keep.long()):
            got = attention(x, mask, rel_embeddings=table)
            torch.testing.assert_close(got, expected, rtol=0, atol=0)
    assert not torch.allclose(expected, attention(x, rel_embeddings=table))


def test_errors_name_the_public_argument():
    x, mask = _inputs()
    bare = relpos.DisentangledSelfAttention(HIDDEN, HEADS, own_table=False).double()
    with pytest.raises(ValueError, match="rel_embeddings must be given"):
        bare(x, mask)
    layer = relpos.EncoderLayer(bare, HIDDEN, 32).double()
    with pytest.raises(ValueError, match="rel_embeddings"):
        layer(x, mask)
    with pytest.raises(TypeError, match="unexpected keyword arguments"):
        relpos.EncoderLayer(ATTENTIONS["t5"](HIDDEN, HEADS), HIDDEN, 32)(
            x.float(), mask, rel_embeddings=torch.randn(8, HIDDEN)
        )
    attention = relpos.DisentangledSelfAttention(HIDDEN, HEADS, max_relative_positions=4)
    with pytest.raises(ValueError, match=r"rel_embeddings must have shape"):
        attention(x.float(), mask, rel_embeddings=torch.randn(9, HIDDEN))
    with pytest.raises(TypeError, match="positionally, got 4"):
        attention(x.float(), mask, mask, mask)
    with pytest.raises(ValueError, match="cache is for causal attention"):
        attention(x.float(), cache=relpos.KVCache())


def test_an_encoder_shares_one_table_across_its_layers():
    encoder = relpos.DisentangledEncoder(3, HIDDEN, HEADS, 32, max_relative_positions=4)
    tables = [name for name, _ in encoder.named_parameters() if "table." in name]
    assert tables == ["table.weight"]  # the encoder's, and no layer's own
    assert all(layer.attention.table is None for layer in encoder.layers)
    assert [layer.attention.cache_index for layer in encoder.layers] == [0, 1, 2]


def test_relpos_deprecations_are_errors_in_this_suite():
    # pyproject.toml's filterwarnings: a test that makes an old call fails.
    from relpos.book import plot

    with pytest.raises(DeprecationWarning, match="terms_by_distance"):
        plot.score_by_distance(None)
    with pytest.raises(DeprecationWarning):
        warnings.warn("relpos: a call from an old release", DeprecationWarning)
    with pytest.warns(DeprecationWarning):  # a warning, not an error: not relpos's
        warnings.warn("torch: a call from an old release", DeprecationWarning)
