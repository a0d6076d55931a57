"""Score arithmetic shared by every attention and backend: position terms, softmax.

The public helpers here (``content_to_position``, ``position_to_content``, their
``_naive`` per-pair forms, ``combine_scores``, ``gather_scores``,
``masked_softmax``) check their arguments and raise a ``TypeError``/``ValueError``
naming the bad one; checking an index's range reads its values (a host sync),
so the attentions and backends call the unchecked private twins
(``_content_to_position``, ...) on inputs they built themselves.

Causal attention (``causal=True``): query ``i`` reads keys ``j <= i`` only, in the
order of the sequence; ``future_keys`` is the ``(i, j)`` mask of the others.

Shape legend:
    b  batch              h  heads              d  head width
    i  query position     j  key position       r  table row
"""

from __future__ import annotations

from typing import NamedTuple

import torch

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


# -- the unchecked arithmetic ---------------------------------------------------------


def _content_to_position(query, pos_key, index):
    b, h, i, _ = query.shape
    all_rows = torch.einsum("bhid,hrd->bhir", query, pos_key)  # (b, h, i, r)
    return all_rows.gather(-1, index.expand(b, h, i, index.shape[-1]))  # (b, h, i, j)


def _position_to_content(key, pos_query, index):
    b, h, _, _ = key.shape
    # Rows first, keys last, so that picking row index[i, j] for key j is a gather
    # along dim -2 that writes (b, h, i, j) in order (no transposed copy or add).
    all_rows = torch.einsum("hrd,bhjd->bhrj", pos_query, key)  # (b, h, r, j)
    return all_rows.gather(-2, index.expand(b, h, *index.shape))  # (b, h, i, j)


def future_keys(
    query_len: int, key_len: int, device: torch.device | None = None
) -> torch.Tensor:
    """The pairs a causal mask removes: key ``j`` after query ``i`` (``j > i``).

    Counted in the order of the sequence (row ``i``, column ``j``), whatever the
    positions.

    Shapes:
        output: ``(i, j)`` bool, True above the diagonal
    """
    rows = torch.arange(query_len, device=device)[:, None]  # (i, 1)
    columns = torch.arange(key_len, device=device)[None, :]  # (1, j)
    return columns > rows  # (i, j)


def _masked_fill(logits, key_mask, causal: bool = False):
    # Padded keys get the dtype's minimum (a query whose keys are all padding
    # spreads its weight evenly); keys ahead of a causal query get -inf after
    # that, so that such a query spreads it over the keys up to itself only.
    if key_mask is not None:
        padded = ~key_mask[:, None, None, :]  # (b, 1, 1, j)
        logits = logits.masked_fill(padded, torch.finfo(logits.dtype).min)
    if causal:
        future = future_keys(logits.shape[-2], logits.shape[-1], logits.device)
        logits = logits.masked_fill(future, float("-inf"))  # (b, h, i, j)
    return logits


def _combine(c2c, c2p, p2c, key_mask, causal: bool = False) -> AttentionScores:
    logits = c2c
    for term in (c2p, p2c):
        if term is not None:
            logits = logits + term
    probs = _masked_fill(logits, key_mask, causal).softmax(-1)
    return AttentionScores(c2c, c2p, p2c, probs)


def _gather_scores(
    query, key, pos_key, pos_query, index, key_mask, scale, causal: bool = False
):
    c2c = torch.einsum("bhid,bhjd->bhij", query, key) * scale
    c2p = p2c = None
    if pos_key is not None:
        c2p = _content_to_position(query, pos_key, index) * scale
    if pos_query is not None:
        p2c = _position_to_content(key, pos_query, index) * scale
    return _combine(c2c, c2p, p2c, key_mask, causal)


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
    return _content_to_position(query, pos_key, index)


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
    return _position_to_content(key, pos_query, index)


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
    ``causal=True`` the keys after each query (``j > i``) get no weight either
    (they get ``-inf``; a fully padded query spreads its weight over keys
    ``0 .. i``).

    Shapes:
        logits: ``(b, h, i, j)``; key_mask: ``(b, j)`` bool (True = token) or None
        output: ``(b, h, i, j)``
    """
    check_float_tensor("logits", logits, "(b, h, i, j)", dim=4)
    _check_key_mask(key_mask, logits)
    return _masked_fill(logits, key_mask, check_bool("causal", causal)).softmax(-1)


def combine_scores(
    c2c: torch.Tensor,
    c2p: torch.Tensor | None,
    p2c: torch.Tensor | None,
    key_mask: torch.Tensor | None,
    *,
    causal: bool = False,
) -> AttentionScores:
    """Add the (scaled) terms, give padded keys the dtype's minimum, take the softmax.

    With ``causal=True`` keys after the query (``j > i``) get no weight.

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
    return _combine(c2c, c2p, p2c, key_mask, check_bool("causal", causal))


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

    With ``causal=True`` keys after the query (``j > i``) get no weight.

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
    causal = check_bool("causal", causal)
    return _gather_scores(
        query, key, pos_key, pos_query, index, key_mask, scale, causal
    )


__all__ = [
    "AttentionScores",
    "SchemeScores",
    "combine_scores",
    "content_to_position",
    "content_to_position_naive",
    "future_keys",
    "gather_scores",
    "masked_softmax",
    "position_to_content",
    "position_to_content_naive",
]
