"""Bad input fails early and names the argument; edge cases give sensible results."""

from __future__ import annotations

import pytest
import torch

import relpos
from _deberta import make_module, padding_mask, random_inputs, reference_attention, with_backend

from relpos import (
    DisentangledSelfAttention,
    RelativePositionEmbedding,
    attention_span,
    delta,
    exact_bucket_limit,
    log_bucket_position,
    position_index,
    relative_position_index,
    relative_positions,
    sinusoidal_table,
)

BACKENDS = tuple(relpos.BACKENDS)


# -- positions ----------------------------------------------------------------------


@pytest.mark.parametrize("k", [0, -1, -512])
def test_non_positive_span_is_refused(k: int) -> None:
    with pytest.raises(ValueError, match="max_relative_positions"):
        delta(3, k)
    with pytest.raises(ValueError, match="max_relative_positions"):
        delta(torch.arange(3), k)
    with pytest.raises(ValueError, match="max_relative_positions"):
        relative_position_index(4, max_relative_positions=k)
    with pytest.raises(ValueError, match="max_relative_positions"):
        attention_span(k)
    with pytest.raises(ValueError, match="max_relative_positions"):
        RelativePositionEmbedding(max_relative_positions=k, hidden_size=8)
    with pytest.raises(ValueError, match="max_relative_positions"):
        sinusoidal_table(k, 8)
    with pytest.raises(ValueError, match="max_relative_positions"):
        DisentangledSelfAttention(32, 4, max_relative_positions=k)


@pytest.mark.parametrize("k", [2.0, 8.5, "8", None, True])
def test_non_int_span_is_refused(k: object) -> None:
    with pytest.raises(TypeError, match="max_relative_positions"):
        delta(3, k)
    with pytest.raises(TypeError, match="max_relative_positions"):
        DisentangledSelfAttention(32, 4, max_relative_positions=k)


@pytest.mark.parametrize("bucket_size", [0, -4, 1])
def test_bucket_size_too_small_is_refused(bucket_size: int) -> None:
    with pytest.raises(ValueError, match="bucket_size"):
        log_bucket_position(torch.arange(-5, 6), bucket_size, 16)
    with pytest.raises(ValueError, match="bucket_size"):
        exact_bucket_limit(bucket_size)


def test_bucket_size_above_max_position_is_refused() -> None:
    with pytest.raises(ValueError, match="bucket_size"):
        log_bucket_position(torch.arange(-5, 6), 32, 16)
    # max_position so small that the log scale is undefined.
    with pytest.raises(ValueError, match="max_position"):
        log_bucket_position(torch.arange(-5, 6), 4, 3)


@pytest.mark.parametrize("buckets, max_rel", [(32, 16), (1, 16), (1024, 512)])
def test_bad_position_buckets_error_names_position_buckets(buckets: int, max_rel: int) -> None:
    # At these entry points the user's argument is called position_buckets.
    with pytest.raises(ValueError, match="position_buckets"):
        relative_position_index(4, max_relative_positions=max_rel, position_buckets=buckets)
    with pytest.raises(ValueError, match="position_buckets"):
        position_index(torch.arange(4), max_relative_positions=max_rel, position_buckets=buckets)
    with pytest.raises(ValueError, match="position_buckets"):
        DisentangledSelfAttention(32, 4, max_relative_positions=max_rel, position_buckets=buckets)


@pytest.mark.parametrize("bad", [2.5, 3.0, "4", None])
def test_non_int_query_len_is_refused(bad: object) -> None:
    with pytest.raises(TypeError, match="query_len"):
        relative_positions(bad)
    with pytest.raises(TypeError, match="query_len"):
        relative_position_index(bad, max_relative_positions=4)


@pytest.mark.parametrize("bad", [2.5, 3.0, "4"])  # None means "same as query_len"
def test_non_int_key_len_is_refused(bad: object) -> None:
    with pytest.raises(TypeError, match="key_len"):
        relative_positions(3, bad)
    with pytest.raises(TypeError, match="key_len"):
        relative_position_index(3, bad, max_relative_positions=4)


@pytest.mark.parametrize("bad", [-1, -100])
def test_negative_lengths_are_refused(bad: int) -> None:
    with pytest.raises(ValueError, match="query_len"):
        relative_positions(bad)
    with pytest.raises(ValueError, match="key_len"):
        relative_positions(3, bad)
    with pytest.raises(ValueError, match="query_len"):
        relative_position_index(bad, max_relative_positions=4)


def test_embedding_forward_length_error_names_seq_len() -> None:
    emb = RelativePositionEmbedding(max_relative_positions=4, hidden_size=8)
    with pytest.raises(TypeError, match="seq_len"):
        emb(2.5)
    with pytest.raises(ValueError, match="seq_len"):
        emb(-1)


@pytest.mark.parametrize(
    "rel", [torch.tensor([0.0, 1.0]), torch.tensor([1.5]), torch.tensor([True, False]), 2.0, "3"]
)
def test_delta_refuses_non_integer_distances(rel: object) -> None:
    with pytest.raises(TypeError, match=r"\brel\b"):
        delta(rel, 4)


def test_log_bucket_refuses_float_tensor() -> None:
    with pytest.raises(TypeError, match=r"\brel\b"):
        log_bucket_position(torch.tensor([1.0, 2.0]), 4, 16)


# -- table ------------------------------------------------------------------------


@pytest.mark.parametrize("init", ["uniform", "Normal", "", None])
def test_unknown_init_is_refused(init: object) -> None:
    with pytest.raises(ValueError, match="init"):
        RelativePositionEmbedding(max_relative_positions=4, hidden_size=8, init=init)


@pytest.mark.parametrize("hidden", [0, -3])
def test_bad_hidden_size_for_table(hidden: int) -> None:
    with pytest.raises(ValueError, match="hidden_size"):
        RelativePositionEmbedding(max_relative_positions=4, hidden_size=hidden)


# -- attention: constructor ----------------------------------------------------------


@pytest.mark.parametrize("pos_att_type", [("c2p", "p2p"), ("c2c",), ["p2c", "C2P"], (None,)])
def test_unknown_pos_att_type_entry_is_refused(pos_att_type) -> None:
    with pytest.raises(ValueError, match="pos_att_type"):
        DisentangledSelfAttention(32, 4, pos_att_type=pos_att_type)


@pytest.mark.parametrize("pos_att_type", ["c2p", "c2p|p2c", None, 3])
def test_pos_att_type_must_be_a_sequence(pos_att_type) -> None:
    with pytest.raises(TypeError, match="pos_att_type"):
        DisentangledSelfAttention(32, 4, pos_att_type=pos_att_type)


@pytest.mark.parametrize("backend", ["sdpa", "Flex", "", None])
def test_unknown_backend_is_refused(backend: object) -> None:
    with pytest.raises(ValueError, match="backend"):
        DisentangledSelfAttention(32, 4, backend=backend)
    ref = reference_attention()
    with pytest.raises(ValueError, match="backend"):
        DisentangledSelfAttention.from_transformers(ref, backend=backend)


@pytest.mark.parametrize("hidden, heads", [(30, 4), (32, 3), (7, 2)])
def test_hidden_size_not_divisible_by_heads(hidden: int, heads: int) -> None:
    with pytest.raises(ValueError, match="hidden_size"):
        DisentangledSelfAttention(hidden, heads)


def test_bad_head_count_and_dropout() -> None:
    with pytest.raises(ValueError, match="num_heads"):
        DisentangledSelfAttention(32, 0)
    with pytest.raises(ValueError, match="dropout"):
        DisentangledSelfAttention(32, 4, dropout=1.0)
    with pytest.raises(ValueError, match="dropout"):
        DisentangledSelfAttention(32, 4, dropout=-0.1)
    with pytest.raises(TypeError, match="dropout must be a float"):
        DisentangledSelfAttention(32, 4, dropout="0.1")


def test_flex_refuses_dropout_in_training() -> None:
    module = DisentangledSelfAttention(32, 4, max_relative_positions=8, dropout=0.1, backend="flex").train()
    x, table = random_inputs(3, 5, 32, 8)
    with pytest.raises(ValueError, match="dropout"):
        module(x, rel_embeddings=table)


# -- attention: forward ------------------------------------------------------------


@pytest.fixture(scope="module")
def module() -> DisentangledSelfAttention:
    return make_module("gather")


@pytest.mark.parametrize("shape", [(5, 32), (32,), (1, 2, 5, 32), (2, 5, 31), (2, 5, 64)])
def test_hidden_states_shape_is_checked(module, shape) -> None:
    with pytest.raises(ValueError, match="hidden_states"):
        module(torch.randn(shape), torch.randn(16, 32))


def test_hidden_states_must_be_a_float_tensor(module) -> None:
    with pytest.raises(TypeError, match="hidden_states"):
        module(torch.ones(2, 5, 32, dtype=torch.long), torch.randn(16, 32))
    with pytest.raises(TypeError, match="hidden_states"):
        module([[0.0] * 32], torch.randn(16, 32))


@pytest.mark.parametrize("shape", [(15, 32), (8, 32), (32, 16), (16, 31), (16,), (1, 16, 32)])
def test_rel_embeddings_shape_is_checked(module, shape) -> None:
    with pytest.raises(ValueError, match="rel_embeddings"):
        module(torch.randn(2, 5, 32), rel_embeddings=torch.randn(shape))


def test_rel_embeddings_follow_the_bucket_span() -> None:
    # With buckets the table has 2 * position_buckets rows, not 2 * max_relative_positions.
    bucketed = make_module("gather", max_relative_positions=64, position_buckets=16)
    with pytest.raises(ValueError, match="rel_embeddings"):
        bucketed(torch.randn(2, 5, 32), rel_embeddings=torch.randn(128, 32))
    out = bucketed(torch.randn(2, 5, 32), rel_embeddings=torch.randn(32, 32))
    assert out.shape == (2, 5, 32)


@pytest.mark.parametrize("shape", [(2, 4), (1, 5), (5,), (2, 1, 5, 5), (2, 1, 1, 5), (5, 2)])
def test_attention_mask_shape_is_checked(module, shape) -> None:
    with pytest.raises(ValueError, match="attention_mask"):
        module(
            torch.randn(2, 5, 32), torch.ones(shape), rel_embeddings=torch.randn(16, 32)
        )


def test_from_transformers_rejects_other_modules() -> None:
    with pytest.raises(TypeError, match="module"):
        DisentangledSelfAttention.from_transformers(torch.nn.Linear(32, 32))
    with pytest.raises(TypeError, match="module"):
        DisentangledSelfAttention.from_transformers(make_module("gather"))


def test_from_transformers_rejects_absolute_attention() -> None:
    ref = reference_attention()
    ref.relative_attention = False
    with pytest.raises(ValueError, match="module"):
        DisentangledSelfAttention.from_transformers(ref)


# -- edge cases ------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("with_mask", [False, True])
def test_empty_sequence_gives_empty_output(backend: str, with_mask: bool) -> None:
    module = make_module(backend)
    x = torch.randn(2, 0, 32)
    mask = torch.ones(2, 0, dtype=torch.long) if with_mask else None
    table = torch.randn(16, 32)
    out = module(x, mask, rel_embeddings=table)  # grad enabled, as in a training step
    assert out.shape == (2, 0, 32)
    with torch.no_grad():
        assert module(x, mask, rel_embeddings=table).shape == (2, 0, 32)
    out, scores = module(x, mask, rel_embeddings=table, return_scores=True)
    assert out.shape == (2, 0, 32)
    assert scores.probs.shape == (2, 4, 0, 0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_fully_padded_sequence_is_finite(backend: str) -> None:
    module = make_module(backend)
    x, table = random_inputs(3, 5, 32, 8, seed=21)
    mask = padding_mask(5)
    mask[1] = 0  # one sequence entirely padding
    with torch.no_grad():
        out = module(x, mask, rel_embeddings=table)
    assert out.shape == (3, 5, 32)
    assert torch.isfinite(out).all()
    # The other sequences are unaffected by it.
    reference = with_backend(module, "naive")
    with torch.no_grad():
        expected = reference(x, padding_mask(5), rel_embeddings=table)
    keep = padding_mask(5).bool()
    keep[1] = False
    torch.testing.assert_close(out[keep], expected[keep], atol=1e-5, rtol=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_fully_padded_batch_attends_uniformly(backend: str) -> None:
    module = make_module(backend)
    x, table = random_inputs(3, 5, 32, 8, seed=22)
    with torch.no_grad():
        out = module(x, torch.zeros(3, 5, dtype=torch.long), rel_embeddings=table)
        out_scores, scores = module(
            x, torch.zeros(3, 5, dtype=torch.bool), rel_embeddings=table,
            return_scores=True,
        )
    # relpos.masked_softmax: a query whose keys are all padding gets uniform weights,
    # so every query's context is the mean of the values (per batch, the same for all).
    torch.testing.assert_close(scores.probs, torch.full((3, 4, 5, 5), 1 / 5))
    with torch.no_grad():
        mean_value = module.value_proj(x).mean(1, keepdim=True)  # (b, 1, hidden)
    expected = mean_value.expand(3, 5, 32)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out_scores, expected, atol=1e-5, rtol=1e-5)


def test_sequence_far_longer_than_span_is_clipped() -> None:
    # n = 100, k = 4: every distance beyond the window reads an end row; nothing is refused.
    n, k = 100, 4
    # float64: flex's score_mod runs uncompiled (a compile takes seconds).
    naive = make_module("naive", max_relative_positions=k).double()
    index = naive.position_index(n)
    assert index.shape == (n, n)
    assert int(index.min()) == 0 and int(index.max()) == 2 * k - 1
    assert int((index == 0).sum()) == sum(n - d for d in range(k, n))
    x, table = random_inputs(2, n, 32, k, torch.float64, seed=23)
    mask = torch.ones(2, n, dtype=torch.long)
    mask[1, 70:] = 0
    outs = {}
    with torch.no_grad():
        for backend in BACKENDS:
            outs[backend] = with_backend(naive, backend)(x, mask, rel_embeddings=table)
            assert outs[backend].shape == (2, n, 32)
            assert torch.isfinite(outs[backend]).all()
    keep = mask.bool()
    torch.testing.assert_close(outs["gather"][keep], outs["naive"][keep], atol=1e-5, rtol=0)
    torch.testing.assert_close(outs["flex"][keep], outs["naive"][keep], atol=1e-5, rtol=0)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("return_scores", [False, True])
@pytest.mark.parametrize("grad", [False, True])
def test_forward_does_not_change_its_inputs(backend: str, return_scores: bool, grad: bool) -> None:
    module = make_module(backend)
    x, table = random_inputs(3, 5, 32, 8, seed=24)
    for mask in (padding_mask(5), padding_mask(5, dtype=torch.float32), padding_mask(5).bool()):
        before = (x.clone(), table.clone(), mask.clone())
        with torch.set_grad_enabled(grad):
            module(x, mask, return_scores=return_scores, rel_embeddings=table)
        for tensor, saved in zip((x, table, mask), before):
            assert tensor.dtype == saved.dtype
            assert torch.equal(tensor, saved)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("pos_att_type", [("c2p", "p2c"), ("c2p",), ("p2c",)])
def test_return_scores_terms_sum_to_logits(backend: str, pos_att_type: tuple[str, ...]) -> None:
    module = make_module(backend, pos_att_type=pos_att_type, share_att_key=False, dtype=torch.float64)
    x, table = random_inputs(3, 6, 32, 8, torch.float64, seed=25)
    mask = padding_mask(6)
    with torch.no_grad():
        context, scores = module(x, mask, return_scores=True, rel_embeddings=table)
        plain = module(x, mask, rel_embeddings=table)

        # Recompute every term independently from the projections.
        query = module.split_heads(module.query_proj(x))  # (b, h, i, d)
        key = module.split_heads(module.key_proj(x))  # (b, h, j, d)
        value = module.split_heads(module.value_proj(x))  # (b, h, j, d)
        index = relative_position_index(6, max_relative_positions=8)  # (i, j)
        scale = 1.0 / (8 * (1 + len(pos_att_type))) ** 0.5
        assert module.scale == pytest.approx(scale)
        c2c = torch.einsum("bhid,bhjd->bhij", query, key) * scale
        logits = c2c.clone()
        torch.testing.assert_close(scores.c2c, c2c, atol=1e-12, rtol=0)
        if "c2p" in pos_att_type:
            pos_key = module.split_heads(module.pos_key_proj(table))[:, index]  # (h, i, j, d)
            c2p = torch.einsum("bhid,hijd->bhij", query, pos_key) * scale
            torch.testing.assert_close(scores.c2p, c2p, atol=1e-12, rtol=0)
            logits += c2p
        else:
            assert scores.c2p is None
        if "p2c" in pos_att_type:
            pos_query = module.split_heads(module.pos_query_proj(table))[:, index]  # (h, i, j, d)
            p2c = torch.einsum("bhjd,hijd->bhij", key, pos_query) * scale
            torch.testing.assert_close(scores.p2c, p2c, atol=1e-12, rtol=0)
            logits += p2c
        else:
            assert scores.p2c is None

    keep = mask.bool()
    probs = scores.probs  # (b, h, i, j)
    assert probs.shape == (3, 4, 6, 6)
    real_rows = probs.permute(0, 2, 1, 3)[keep]  # (real queries, h, j)
    torch.testing.assert_close(real_rows.sum(-1), torch.ones(real_rows.shape[:-1], dtype=torch.float64))
    # Padded keys get no probability; real keys get the masked softmax of the logits.
    assert probs.masked_select(~keep[:, None, None, :]).abs().max() == 0
    masked = logits.masked_fill(~keep[:, None, None, :], float("-inf"))
    torch.testing.assert_close(probs, masked.softmax(-1), atol=1e-12, rtol=0)
    # The context is probs @ values, and equals the plain forward.
    expected = (probs @ value).transpose(1, 2).flatten(-2)  # (b, n, hidden)
    torch.testing.assert_close(context, expected, atol=1e-12, rtol=0)
    torch.testing.assert_close(context[keep], plain[keep], atol=1e-10, rtol=0)


# -- checked at the edge: dtypes, flags, the bucket rule -----------------------------


def test_dtype_mismatches_name_the_argument() -> None:
    module = make_module("gather")  # float32 weights
    x, table = torch.randn(2, 5, 32), torch.randn(16, 32)
    with pytest.raises(TypeError, match="hidden_states"):
        module(x.double(), rel_embeddings=table.double())
    with pytest.raises(TypeError, match="rel_embeddings"):
        module(x, rel_embeddings=table.double())
    # A mask may be bool, integer or float; its dtype never meets the weights.
    for mask in (torch.ones(2, 5, dtype=torch.bool), torch.ones(2, 5), torch.ones(2, 5).long()):
        assert module(x, mask, rel_embeddings=table).dtype == torch.float32
    with pytest.raises(TypeError, match="attention_mask"):
        module(x, torch.ones(2, 5, dtype=torch.complex64), rel_embeddings=table)
    encoder = relpos.DisentangledEncoder(1, 32, 4, 64, max_relative_positions=8)
    with pytest.raises(TypeError, match="hidden_states"):
        encoder(x.double())


@pytest.mark.parametrize("flag", ["False", "True", 0, 1, None])
def test_share_att_key_must_be_a_bool(flag) -> None:
    with pytest.raises(TypeError, match="share_att_key"):
        DisentangledSelfAttention(32, 4, share_att_key=flag)
    with pytest.raises(TypeError, match="share_att_key"):
        relpos.DisentangledEncoder(1, 32, 4, 64, share_att_key=flag)


@pytest.mark.parametrize("buckets", [-5, -2])
def test_negative_bucket_counts_other_than_minus_one_are_refused(buckets: int) -> None:
    with pytest.raises(ValueError, match="position_buckets"):
        DisentangledSelfAttention(32, 4, position_buckets=buckets)
    with pytest.raises(ValueError, match="position_buckets"):
        relative_position_index(4, max_relative_positions=8, position_buckets=buckets)
    with pytest.raises(ValueError, match="position_buckets"):
        relpos.attention_span(8, buckets)


def test_the_low_level_helpers_check_their_input() -> None:
    query, rows = torch.randn(1, 2, 3, 4), torch.randn(2, 6, 4)
    index = torch.zeros(3, 3, dtype=torch.long)
    with pytest.raises(ValueError, match="index"):
        relpos.content_to_position(query, rows, index + 6)
    with pytest.raises(ValueError, match="index"):
        relpos.position_to_content(query, rows, torch.zeros(3, 2, dtype=torch.long))
    with pytest.raises(TypeError, match="index"):
        relpos.content_to_position(query, rows, index.float())
    with pytest.raises(TypeError, match="pos_key"):
        relpos.content_to_position(query, rows.double(), index)
    with pytest.raises(ValueError, match="pos_query"):
        relpos.position_to_content(query, torch.randn(2, 6, 5), index)
    with pytest.raises(ValueError, match="pos_key_pairs"):
        relpos.content_to_position_naive(query, torch.randn(3, 3, 2, 5))
    c2c = torch.randn(1, 2, 3, 3)
    with pytest.raises(ValueError, match="c2p"):
        relpos.combine_scores(c2c, torch.randn(1, 2, 3, 4), None, None)
    with pytest.raises(TypeError, match="key_mask"):
        relpos.combine_scores(c2c, None, None, torch.ones(1, 3))
    with pytest.raises(ValueError, match="key_mask"):
        relpos.combine_scores(c2c, None, None, torch.ones(1, 4, dtype=torch.bool))
    with pytest.raises(TypeError, match="key"):
        relpos.gather_scores(query, query.double(), None, None, index, None, 0.5)
