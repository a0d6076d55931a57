"""Clipped position terms as a band and two far fields: nothing ``n x n``.

A scheme that clips its distances (DeBERTa, Shaw) gives every distance beyond the
reach ``L`` the row of its edge: a key far behind its query (``i - j >= L``)
reads row ``lookup[2L]``, a key far ahead (``i - j <= -L``) row ``lookup[0]``.
There c2p, ``q_i . K[edge]``, is one number per query, and p2c, ``k_j .
Q[edge]``, one number per key. A number per key is one more dimension of the
keys: ``[q_i, 1] . [k_j, b_j] = q_i . k_j + b_j``; a number per query adds the same
logit to all of the query's keys in the field, so it leaves the field's output
as it is and adds itself to its log-sum-exp. Each far field is then plain
attention under the causal rule, on sequences shifted by ``L`` (query ``i``
reads the keys ``j <= i - L``), which torch's fused kernel computes without
building its scores, and it returns its log-sum-exp. The far-ahead field is the
same on reversed sequences. Only the *band* ``|i - j| < L`` reads the table's
other rows: ``2L - 1`` keys a query, linear in ``n``. It is computed a block of
``BLOCK`` queries at a time against their window of keys, each pair's c2p and
p2c gathered from the rows' scores, and the three parts are merged exactly by
their log-sum-exps (``out = sum_r exp(lse_r - lse) out_r``).

Shaw's relative values come out of the same pieces with linear memory: in the
band each pair's probability weighs its value row, and each far field's total
probability, ``exp(lse_r - lse)``, weighs its edge's value row.

A causal decoder has no far-ahead field. With a cache (queries ``t, ...`` against
keys ``0, ...``) the far-behind field also holds keys every query reads: a
rectangle beside its triangle, one more part of the merge.

When it applies (:func:`applies`): the rules of ``relpos.backends.strided`` (the
CPU, outside ``torch.compile``, without autograd, positions one shared
progression, no mask but the causal rule), for terms of a projected table
(DeBERTa and its variants, any lookup: only the band reads rows other than the
edges) or key rows (Shaw), with or without value rows, and nothing else added to
the logits; with the causal rule, the far-ahead field empty and the far-behind
one inside it. And only where it pays: ``n_k > WIDTHS * (2L - 1)``.

Shapes:
    query: ``(b, h, i, d)``; key, value: ``(b, h, j, d)``; output: ``(b, h, i, d)``
    a block of the band: ``(b, h, B, W)`` with ``W <= B + 2L - 2``
    the rows' scores: ``(b, h, i, 2L - 1)`` and ``(b, h, 2L - 1, j)``
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F

from ..masks import Mask
from .registry import PositionTerms
from .strided import progression_start
from .terms import projected_rows

#: Queries per block of the band: each block scores its queries against a window
#: of ``BLOCK + 2L - 2`` keys, of which ``2L - 1`` a query are in the band.
BLOCK = 128

#: The band pays where the keys outnumber its width this many times.
WIDTHS = 2

_flash = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu


def applies(query: torch.Tensor, terms: PositionTerms | None, mask: Mask | None) -> bool:
    """Whether :func:`attend` can serve this call (the module docstring's rules)."""
    if (
        terms is None
        or query.device.type != "cpu"
        or torch.is_grad_enabled()
        or torch.compiler.is_compiling()
        or terms.lookup is None
        or terms.row_bias is not None
        or terms.bias is not None
        or (terms.key_rows is None and terms.table is None)
        or (terms.table is not None and terms.key_rows is not None)
        or (mask is not None and not mask._replace(causal=False).empty)
    ):
        return False
    if terms.table is not None and (
        terms.project_key is None and terms.project_query is None
    ):
        return False
    offset = _offset(terms)
    if offset is None:
        return False
    reach = terms.reach
    i, j = terms.query_positions.shape[1], terms.key_positions.shape[1]
    if reach < 1 or j <= WIDTHS * (2 * reach - 1):
        return False
    if mask is not None and mask.causal:
        return abs(offset - (j - i)) < reach
    return True


def _offset(terms: PositionTerms) -> int | None:
    """``o``: the distance of query 0 to key 0 (pair ``(a, c)`` has ``o + a - c``),
    or None when the positions are not one shared progression."""
    query_start = progression_start(terms.query_positions)
    key_start = progression_start(terms.key_positions)
    if query_start is None or key_start is None:
        return None
    return query_start - key_start


class _Rows(NamedTuple):
    """The per-head rows the pairs read, scaled: the band's ``2L - 1`` (distance
    ``r`` at ``r + L - 1``) and the two edges' (far behind, far ahead).

    Shapes:
        key_band, query_band, value_band: ``(h, 2L - 1, d)`` or None
        key_edges, query_edges, value_edges: ``(h, 2, d)`` or None
    """

    key_band: torch.Tensor | None
    query_band: torch.Tensor | None
    value_band: torch.Tensor | None
    key_edges: torch.Tensor | None
    query_edges: torch.Tensor | None
    value_edges: torch.Tensor | None


def _rows(terms: PositionTerms, scale: float, dtype: torch.dtype) -> _Rows:
    """The band's and the edges' rows of each term (c2p and p2c times ``scale``)."""
    lookup, reach = terms.lookup, terms.reach
    band = lookup[1 : 2 * reach]  # (2L - 1,)
    edges = lookup[[2 * reach, 0]]  # (2,): far behind, far ahead
    pos_key, pos_query = projected_rows(terms)  # (h, m, d) each, or None
    found = []
    for rows, factor in (
        (pos_key, scale), (pos_query, scale), (terms.value_rows, 1.0)
    ):
        rows = None if rows is None else (rows * factor).to(dtype)
        found.append(rows)
    return _Rows(
        *(None if rows is None else rows[:, band] for rows in found),
        *(None if rows is None else rows[:, edges] for rows in found),
    )


def attend(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    terms: PositionTerms,
    mask: Mask | None,
    scale: float,
    dropout_p: float,
) -> torch.Tensor:
    """Attention as a band and two far fields merged by their log-sum-exps (call
    :func:`applies` first; ``dropout_p`` must be 0).

    Shapes:
        query: ``(b, h, i, d)``; key, value: ``(b, h, j, d)``
        output: ``(b, h, i, d)``
    """
    offset, reach = _offset(terms), terms.reach
    i, j = query.shape[-2], key.shape[-2]
    causal = mask is not None and mask.causal
    rows = _rows(terms, scale, query.dtype)
    out, lse = _band(query, key, value, rows, offset, reach, causal, scale)
    parts = [(0, out, lse)]
    behind = offset - reach  # query a reads the keys c <= a + behind
    parts += _far(query, key, value, rows, 0, behind, scale)
    if not causal:
        ahead = j - i - offset - reach  # the same on reversed sequences
        flipped = [tensor.flip(-2) for tensor in (query, key, value)]
        for _, out, lse in _far(*flipped, rows, 1, ahead, scale):
            parts.append((0, out.flip(-2), lse.flip(-1)))  # queries 0, ...
    return _merge(parts, i)


def _band(query, key, value, rows, offset, reach, causal, scale):
    """The band ``|rel| < L``, a block of queries at a time: its output and
    log-sum-exp (``-inf`` for a query with no key in it).

    Shapes:
        output: ``(b, h, i, d)`` and ``(b, h, i)``
    """
    b, h, i, d = query.shape
    j = key.shape[-2]
    width = 2 * reach - 1
    c2p = p2c = None
    if rows.key_band is not None:
        c2p = torch.einsum("bhid,hed->bhie", query, rows.key_band)  # (b, h, i, 2L-1)
    if rows.query_band is not None:
        p2c = torch.einsum("hed,bhjd->bhej", rows.query_band, key)  # (b, h, 2L-1, j)
    outs, lses = [], []
    for top in range(0, i, BLOCK):
        size = min(BLOCK, i - top)
        first = max(0, top + offset - reach + 1)
        last = min(j, top + size - 1 + offset + reach)  # the window: [first, last)
        if last <= first:
            outs.append(query.new_zeros(b, h, size, d))
            lses.append(query.new_full((b, h, size), float("-inf")))
            continue
        band, inside = _band_index(top, size, first, last, offset, reach, j - i, causal)
        scores = torch.einsum(
            "bhid,bhjd->bhij", query[:, :, top : top + size], key[:, :, first:last]
        ) * scale  # (b, h, B, W)
        index = band.expand(b, h, *band.shape)  # (b, h, B, W)
        if c2p is not None:
            scores += c2p[:, :, top : top + size].gather(-1, index)
        if p2c is not None:
            scores += p2c[..., first:last].gather(-2, index)
        scores = scores.masked_fill_(~inside, float("-inf"))
        lse = scores.logsumexp(-1)  # (b, h, B)
        probs = (scores - lse[..., None]).exp_()  # (b, h, B, W)
        out = probs @ value[:, :, first:last]  # (b, h, B, d)
        if rows.value_band is not None:
            weight = probs.new_zeros(b, h, size, width)  # (b, h, B, 2L - 1)
            weight.scatter_add_(-1, index, probs)
            out += torch.einsum("bhie,hed->bhid", weight, rows.value_band)
        outs.append(out)
        lses.append(lse)
    return torch.cat(outs, -2), torch.cat(lses, -1)


def _band_index(top, size, first, last, offset, reach, lag, causal):
    """Each pair's band row (``rel + L - 1``, clamped) and whether it is in the
    band and allowed (the causal rule: key ``c <= a + lag``).

    Shapes:
        output: ``(B, W)`` long and ``(B, W)`` bool
    """
    query = torch.arange(top, top + size)[:, None]  # (B, 1)
    key = torch.arange(first, last)[None, :]  # (1, W)
    band = offset + query - key + reach - 1  # (B, W)
    inside = (band >= 0) & (band <= 2 * reach - 2)
    if causal:
        inside &= key <= query + lag
    return band.clamp_(0, 2 * reach - 2), inside


def _far(query, key, value, rows, edge, shift, scale):
    """The far field where query ``a`` reads the keys ``c <= a + shift`` (edge 0:
    far behind; edge 1: far ahead, on reversed sequences): a triangle under the
    causal rule and, when ``shift > 0``, the rectangle every query reads.

    Returns ``(top, out, lse)`` for each part: its queries ``top, ..., i - 1``.

    Shapes:
        output: ``(b, h, i - top, d)`` and ``(b, h, i - top)`` each
    """
    i, j = query.shape[-2], key.shape[-2]
    top = max(0, -shift)
    if top >= i:
        return []
    corner = top + shift  # the triangle's first key, read by query top
    query = query[:, :, top:]  # (b, h, i - top, d)
    d = query.shape[-1]
    wide_query, wide_key, wide_value = _augmented(query, key, value, rows, edge, scale)
    parts = []
    if corner < j:
        parts.append(_flash(
            wide_query, wide_key[:, :, corner:], wide_value[:, :, corner:],
            is_causal=True, scale=1.0,
        ))
    if corner > 0:
        end = min(corner, j)
        parts.append(_flash(
            wide_query, wide_key[:, :, :end], wide_value[:, :, :end], scale=1.0
        ))
    shared = None  # c2p: one logit for all of a query's keys in the field
    if rows.key_edges is not None:
        shared = torch.einsum("bhid,hd->bhi", query, rows.key_edges[:, edge])
    found = []
    for out, lse in parts:
        out = out[..., :d]  # (b, h, i - top, d)
        if shared is not None:
            lse = lse + shared
        if rows.value_edges is not None:  # the field's probabilities sum to 1
            out = out + rows.value_edges[None, :, edge, None]  # (b, h, i - top, d)
        found.append((top, out, lse))
    return found


def _augmented(query, key, value, rows, edge, scale):
    """Queries, keys and values for the fused kernel at scale 1: p2c at the edge
    as one more dimension, ``[q_a scale, 1] . [k_c, k_c . Q[edge]]``.

    Shapes:
        query: ``(b, h, i, d)``; key, value: ``(b, h, j, d)``
        output: ``(b, h, i, d')``, ``(b, h, j, d')`` twice; ``d' = d`` or ``d + 1``
    """
    query = query * scale
    if rows.query_edges is None:
        return query, key, value
    per_key = torch.einsum("bhjd,hd->bhj", key, rows.query_edges[:, edge])
    query = torch.cat([query, query.new_ones(*query.shape[:-1], 1)], -1)
    key = torch.cat([key, per_key[..., None]], -1)  # (b, h, j, d + 1)
    return query, key, F.pad(value, (0, 1))


def _merge(parts, queries: int) -> torch.Tensor:
    """The parts' outputs weighed by ``exp(lse_r - lse)``, ``lse`` their total.

    Shapes:
        parts: ``(top, (b, h, n_r, d), (b, h, n_r))``; output: ``(b, h, i, d)``
    """
    _, out, lse = parts[0]
    total = lse.new_full((*lse.shape[:-1], queries), float("-inf"))  # (b, h, i)
    for top, _, lse in parts:
        rows = slice(top, top + lse.shape[-1])
        total[..., rows] = torch.logaddexp(total[..., rows], lse)
    merged = out.new_zeros(*out.shape[:-2], queries, out.shape[-1])  # (b, h, i, d)
    for top, out, lse in parts:
        rows = slice(top, top + lse.shape[-1])
        weight = (lse - total[..., rows]).exp_()[..., None]  # (b, h, n_r, 1)
        merged[..., rows, :] += weight * out
    return merged


__all__ = ["BLOCK", "WIDTHS", "applies", "attend"]
