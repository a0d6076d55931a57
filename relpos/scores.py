"""The explicit score path: position terms by gather, the softmax, relative values.

Every explicit score in relpos is computed here, once: ``c2p_by_gather`` and
``p2c_by_gather`` (each query or key against every row, then each pair's row
gathered), ``combine`` (the terms' sum, masked by ``relpos.masks.apply``, and the
softmax), ``scores_by_gather`` (all of it) and ``value_term`` (relative values).
The kernels (``relpos.backends``) and ``return_scores=True`` call these on inputs
they built; ``relpos.backends.terms`` reads a scheme's ``PositionTerms`` into
their arguments.

The public helpers (``content_to_position``, ``position_to_content``, their
``_naive`` per-pair forms, ``combine_scores``, ``gather_scores``,
``masked_softmax``) check their arguments and raise a ``TypeError``/``ValueError``
naming the bad one, then call the same arithmetic; checking an index's range
reads its values (a host sync), which the kernels avoid.

Causal attention (``causal=True``): query ``i`` reads keys up to itself only, in
the order of the sequence, counted from the end when there are more keys than
queries (a decoding step after a cache): ``relpos.masks.future_keys``.

Shape legend:
    b  batch              h  heads              d  head width
    i  query position     j  key position       r, m  table row
    B  b or 1 (rows per sequence, or shared)
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from . import masks
from .checks import (
    check_bool,
    check_float_tensor,
    check_index,
    check_number_tensor,
    check_same_dtype,
)


class AttentionScores(NamedTuple):
    """The terms of the attention logits, scaled, and the probabilities.

    ``c2c``, ``c2p`` and ``p2c`` are DeBERTa's terms, each already divided by
    ``sqrt(d * s)`` (``c2p`` is also Shaw's and Transformer-XL's query-against-row
    term); ``bias`` is a content-free term (T5, ALiBi, ...). A term that the
    module does not use is ``None``. Their sum is the logits before masking
    (``logits``); ``probs`` is the softmax after masking.

    Shapes:
        c2c, c2p, p2c, bias, probs: ``(b, h, i, j)``
    """

    c2c: torch.Tensor
    c2p: torch.Tensor | None
    p2c: torch.Tensor | None
    probs: torch.Tensor
    bias: torch.Tensor | None = None

    @property
    def logits(self) -> torch.Tensor:
        """``c2c + c2p + p2c + bias``, before masking (the ``SchemeScores`` field)."""
        terms = (self.c2p, self.p2c, self.bias)
        return sum((t for t in terms if t is not None), self.c2c)


class SchemeScores(NamedTuple):
    """The logits (scaled, position terms included, before masking) and probabilities.

    Shapes:
        logits, probs: ``(b, h, i, j)``
    """

    logits: torch.Tensor
    probs: torch.Tensor


# -- checks ---------------------------------------------------------------------------


def _check_rows(
    content_name: str,
    content: torch.Tensor,
    rows_name: str,
    rows: torch.Tensor,
    index: torch.Tensor,
    length_dim: str,
) -> None:
    """Shapes and dtypes of ``content (b, h, n, d)``, ``rows (h, r, d)``, ``index``."""
    check_number_tensor(content_name, content, "(b, h, n, d)", dim=4)
    check_number_tensor(rows_name, rows, "(h, r, d)", dim=3)
    check_same_dtype(rows_name, rows, content_name, content.dtype)
    _, h, n, d = content.shape
    if rows.shape[0] != h or rows.shape[2] != d:
        raise ValueError(
            f"{rows_name} must have shape (h, r, d) = ({h}, r, {d}) for {content_name} "
            f"of shape {tuple(content.shape)}, got {tuple(rows.shape)}"
        )
    check_index("index", index, rows.shape[1], "(i, j)")
    along = 0 if length_dim == "i" else 1
    if index.dim() != 2 or index.shape[along] != n:
        raise ValueError(
            f"index must have shape (i, j) with {length_dim} = {n} (the length of "
            f"{content_name}), got {tuple(index.shape)}"
        )


def _check_key_mask(key_mask: object, logits: torch.Tensor) -> None:
    if key_mask is None:
        return
    b, j = logits.shape[0], logits.shape[-1]
    if not isinstance(key_mask, torch.Tensor) or key_mask.dtype != torch.bool:
        got = getattr(key_mask, "dtype", type(key_mask).__name__)
        raise TypeError(
            f"key_mask must be a bool tensor of shape (b, j) or None, got {got}"
        )
    if tuple(key_mask.shape) != (b, j):
        raise ValueError(
            f"key_mask must have shape (b, j) = {(b, j)}, got {tuple(key_mask.shape)}"
        )


# -- the arithmetic (unchecked: the kernels call it on inputs they built) ----------


def c2p_by_gather(
    query: torch.Tensor, pos_key: torch.Tensor, rows: torch.Tensor
) -> torch.Tensor:
    """``q_i . pos_key[h, row(i, j)]``: every query against every row, then gathered.

    Shapes:
        query: ``(b, h, i, d)``; pos_key: ``(h, m, d)``
        rows: ``(i, j)``, or ``(B, i, j)`` (B = b or 1)
        output: ``(b, h, i, j)``
    """
    b, h, i, _ = query.shape
    all_rows = torch.einsum("bhid,hmd->bhim", query, pos_key)  # (b, h, i, m)
    index = rows.unsqueeze(-3).expand(b, h, i, rows.shape[-1])  # (b, h, i, j)
    return all_rows.gather(-1, index)  # (b, h, i, j)


def p2c_by_gather(
    key: torch.Tensor, pos_query: torch.Tensor, rows: torch.Tensor
) -> torch.Tensor:
    """``k_j . pos_query[h, row(i, j)]``: every key against every row, then gathered.

    Shapes:
        key: ``(b, h, j, d)``; pos_query: ``(h, m, d)``
        rows: ``(i, j)``, or ``(B, i, j)`` (B = b or 1)
        output: ``(b, h, i, j)``
    """
    b, h, j, _ = key.shape
    # Rows first, keys last, so that picking row[i, j] for key j is a gather along
    # dim -2 that writes (b, h, i, j) in order (no transposed copy or add).
    all_rows = torch.einsum("hmd,bhjd->bhmj", pos_query, key)  # (b, h, m, j)
    index = rows.unsqueeze(-3).expand(b, h, rows.shape[-2], j)  # (b, h, i, j)
    return all_rows.gather(-2, index)  # (b, h, i, j)


def combine(
    c2c: torch.Tensor,
    c2p: torch.Tensor | None,
    p2c: torch.Tensor | None,
    bias: torch.Tensor | None,
    mask: masks.Mask | None,
) -> AttentionScores:
    """The scores' fields and the masked softmax of their sum (``None``: no term).

    Shapes:
        c2c, c2p, p2c: ``(b, h, i, j)``; bias: ``(B, h, i, j)``
        output: ``AttentionScores``
    """
    if bias is not None:
        bias = bias.to(c2c.dtype).expand_as(c2c)
    scores = AttentionScores(c2c, c2p, p2c, c2c, bias)
    probs = masks.apply(scores.logits, mask).softmax(-1)  # (b, h, i, j)
    return scores._replace(probs=probs)


def scores_by_gather(
    query: torch.Tensor,
    key: torch.Tensor,
    pos_key: torch.Tensor | None,
    pos_query: torch.Tensor | None,
    rows: torch.Tensor | None,
    bias: torch.Tensor | None,
    mask: masks.Mask | None,
    scale: float,
) -> AttentionScores:
    """Every term of the logits explicitly, position terms by gather, and the softmax.

    The one explicit score path: ``gather_scores`` (DeBERTa's arguments) and the
    kernels' ``scores`` (a scheme's ``PositionTerms``) both end here.

    Shapes:
        query: ``(b, h, i, d)``; key: ``(b, h, j, d)``; pos_key, pos_query:
        ``(h, m, d)`` or None; rows: ``(i, j)`` or ``(B, i, j)``; bias:
        ``(B, h, i, j)`` or None; output: ``AttentionScores`` of ``(b, h, i, j)``
    """
    c2c = torch.einsum("bhid,bhjd->bhij", query, key) * scale  # (b, h, i, j)
    c2p = p2c = None
    if pos_key is not None:
        c2p = c2p_by_gather(query, pos_key, rows) * scale
    if pos_query is not None:
        p2c = p2c_by_gather(key, pos_query, rows) * scale
    return combine(c2c, c2p, p2c, bias, mask)


def value_term(
    probs: torch.Tensor, value_rows: torch.Tensor, rows: torch.Tensor | None
) -> torch.Tensor:
    """``sum_j p_ij value_rows[h, row(i, j)]``: the weight of each row, then the rows.

    The weights of the keys that read the same row are added first (a scatter-add
    into ``m`` slots), then each row is read once. With ``rows=None``, ``probs``
    already holds each row's weight ``(b, h, i, m)`` (``flex`` finds it from the
    kernel's log-sum-exps).

    Shapes:
        probs: ``(b, h, i, j)``, or ``(b, h, i, m)`` with rows None
        value_rows: ``(h, m, d)``; rows: ``(i, j)`` or ``(B, i, j)`` or None
        output: ``(b, h, i, d)``
    """
    weight = probs
    if rows is not None:
        b, h, i, j = probs.shape
        index = rows.unsqueeze(-3).expand(b, h, i, j)  # (b, h, i, j)
        weight = probs.new_zeros(b, h, i, value_rows.shape[1])  # (b, h, i, m)
        weight = weight.scatter_add(-1, index, probs)  # (b, h, i, m)
    values = value_rows.to(weight.dtype)  # (h, m, d)
    return torch.einsum("bhim,hmd->bhid", weight, values)  # (b, h, i, d)


def _mask(key_mask: torch.Tensor | None, causal: bool) -> masks.Mask:
    """The public helpers' ``key_mask`` and ``causal`` as the kernels' ``Mask``."""
    return masks.Mask(keys=key_mask, causal=causal)


# -- the public, checked helpers ------------------------------------------------------


def content_to_position(
    query: torch.Tensor, pos_key: torch.Tensor, index: torch.Tensor
) -> torch.Tensor:
    """c2p by gather: each query against all ``2k`` rows once, then ``index[i, j]``.

    ``out[b, h, i, j] = query[b, h, i] . pos_key[h, index[i, j]]``. Query and
    key lengths may differ.

    Shapes:
        query: ``(b, h, i, d)``; pos_key: ``(h, r, d)``; index: ``(i, j)``
        output: ``(b, h, i, j)``
    """
    _check_rows("query", query, "pos_key", pos_key, index, "i")
    return c2p_by_gather(query, pos_key, index)


def position_to_content(
    key: torch.Tensor, pos_query: torch.Tensor, index: torch.Tensor
) -> torch.Tensor:
    """p2c by gather: each key against all ``2k`` rows once, then pick ``index[i, j]``.

    ``out[b, h, i, j] = key[b, h, j] . pos_query[h, index[i, j]]``. Query and
    key lengths may differ.

    Shapes:
        key: ``(b, h, j, d)``; pos_query: ``(h, r, d)``; index: ``(i, j)``
        output: ``(b, h, i, j)``
    """
    _check_rows("key", key, "pos_query", pos_query, index, "j")
    return p2c_by_gather(key, pos_query, index)


def _check_pairs(content_name, content, pairs_name, pairs, along: int) -> None:
    check_number_tensor(content_name, content, "(b, h, n, d)", dim=4)
    check_number_tensor(pairs_name, pairs, "(i, j, h, d)", dim=4)
    check_same_dtype(pairs_name, pairs, content_name, content.dtype)
    _, h, n, d = content.shape
    if pairs.shape[2:] != (h, d) or pairs.shape[along] != n:
        raise ValueError(
            f"{pairs_name} must have shape (i, j, h, d) with h = {h}, d = {d} and "
            f"{'ij'[along]} = {n} for {content_name} of shape {tuple(content.shape)}, "
            f"got {tuple(pairs.shape)}"
        )


def content_to_position_naive(
    query: torch.Tensor, pos_key_pairs: torch.Tensor
) -> torch.Tensor:
    """c2p from the per-pair table: one dot product per (i, j) pair.

    Shapes:
        query: ``(b, h, i, d)``; pos_key_pairs: ``(i, j, h, d)``
        output: ``(b, h, i, j)``
    """
    _check_pairs("query", query, "pos_key_pairs", pos_key_pairs, 0)
    return torch.einsum("bhid,ijhd->bhij", query, pos_key_pairs)


def position_to_content_naive(
    key: torch.Tensor, pos_query_pairs: torch.Tensor
) -> torch.Tensor:
    """p2c from the per-pair table: one dot product per (i, j) pair.

    Shapes:
        key: ``(b, h, j, d)``; pos_query_pairs: ``(i, j, h, d)``
        output: ``(b, h, i, j)``
    """
    _check_pairs("key", key, "pos_query_pairs", pos_query_pairs, 1)
    return torch.einsum("bhjd,ijhd->bhij", key, pos_query_pairs)


def masked_softmax(
    logits: torch.Tensor, key_mask: torch.Tensor | None, *, causal: bool = False
) -> torch.Tensor:
    """Softmax over the keys, padded keys removed (given the dtype's minimum).

    A query whose keys are all padding gets uniform weights, not NaN. With
    ``causal=True`` the keys after each query (``relpos.masks.future_keys``) get
    no weight either (they get ``-inf``; a fully padded query spreads its weight
    over the keys up to itself).

    Shapes:
        logits: ``(b, h, i, j)``; key_mask: ``(b, j)`` bool (True = token) or None
        output: ``(b, h, i, j)``
    """
    check_float_tensor("logits", logits, "(b, h, i, j)", dim=4)
    _check_key_mask(key_mask, logits)
    mask = _mask(key_mask, check_bool("causal", causal))
    return masks.apply(logits, mask).softmax(-1)


def combine_scores(
    c2c: torch.Tensor,
    c2p: torch.Tensor | None,
    p2c: torch.Tensor | None,
    key_mask: torch.Tensor | None,
    *,
    causal: bool = False,
) -> AttentionScores:
    """Add the (scaled) terms, give padded keys the dtype's minimum, take the softmax.

    With ``causal=True`` keys after the query (``relpos.masks.future_keys``) get
    no weight.

    Shapes:
        c2c, c2p, p2c: ``(b, h, i, j)``; key_mask: ``(b, j)`` bool or None
        output: ``AttentionScores`` of ``(b, h, i, j)`` tensors
    """
    check_float_tensor("c2c", c2c, "(b, h, i, j)", dim=4)
    for name, term in (("c2p", c2p), ("p2c", p2c)):
        if term is None:
            continue
        check_float_tensor(name, term, "(b, h, i, j)", dim=4)
        check_same_dtype(name, term, "c2c", c2c.dtype)
        if term.shape != c2c.shape:
            raise ValueError(
                f"{name} must have the shape of c2c {tuple(c2c.shape)}, "
                f"got {tuple(term.shape)}"
            )
    _check_key_mask(key_mask, c2c)
    return combine(c2c, c2p, p2c, None, _mask(key_mask, check_bool("causal", causal)))


def gather_scores(
    query: torch.Tensor,
    key: torch.Tensor,
    pos_key: torch.Tensor | None,
    pos_query: torch.Tensor | None,
    index: torch.Tensor,
    key_mask: torch.Tensor | None,
    scale: float,
    *,
    causal: bool = False,
) -> AttentionScores:
    """Every score term explicitly, position terms by gather; ``None`` if unused.

    With ``causal=True`` keys after the query (``relpos.masks.future_keys``) get
    no weight.

    Shapes:
        query, key: ``(b, h, n, d)``; pos_key, pos_query: ``(h, r, d)``
        index: ``(i, j)``
        output: ``AttentionScores`` of ``(b, h, i, j)`` tensors
    """
    check_float_tensor("query", query, "(b, h, i, d)", dim=4)
    check_float_tensor("key", key, "(b, h, j, d)", dim=4)
    check_same_dtype("key", key, "query", query.dtype)
    if key.shape[:2] != query.shape[:2] or key.shape[-1] != query.shape[-1]:
        raise ValueError(
            f"key must have shape (b, h, j, d) matching query {tuple(query.shape)}, "
            f"got {tuple(key.shape)}"
        )
    if pos_key is not None:
        _check_rows("query", query, "pos_key", pos_key, index, "i")
    if pos_query is not None:
        _check_rows("key", key, "pos_query", pos_query, index, "j")
    if isinstance(scale, bool) or not isinstance(scale, (int, float)):
        raise TypeError(f"scale must be a float, got {type(scale).__name__}")
    b, j = query.shape[0], key.shape[-2]
    _check_key_mask(key_mask, query.new_empty(b, 0, 0, j))
    mask = _mask(key_mask, check_bool("causal", causal))
    return scores_by_gather(query, key, pos_key, pos_query, index, None, mask, scale)


__all__ = [
    "AttentionScores",
    "SchemeScores",
    "c2p_by_gather",
    "combine",
    "combine_scores",
    "content_to_position",
    "content_to_position_naive",
    "gather_scores",
    "masked_softmax",
    "position_to_content",
    "p2c_by_gather",
    "position_to_content_naive",
    "scores_by_gather",
    "value_term",
]
