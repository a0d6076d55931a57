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
other rows: ``F = 2L - 1`` keys a query, linear in ``n``. In band columns (query
``a``, column ``f``: the key at distance ``L - 1 - f``) c2p is every query
against the ``F`` rows, ``(i, F)``, and p2c every key against them read along a
diagonal, a strided view. A block of ``BLOCK`` queries meets a window of ``W = B
+ F - 1`` keys; its band, padded with ``-inf`` and read ``W`` a row, is the
skewed mask of the fused kernel for the block (Transformer-XL's relative shift
again, ``relpos.backends.strided``), and all blocks of a chunk are one call,
which returns the band's log-sum-exp too. The three parts are merged exactly by
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
    the band's mask: ``(b blocks, h, B, W)`` per chunk, ``W = B + F - 1``
    the rows' scores: ``(b, h, F, B)`` per chunk and ``(b, h, F, j + F - 1)``
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

#: Queries per chunk of the band (one call of the fused kernel): its buffers, the
#: blocks' mask and the c2p scores, stay this size whatever the length (at ``k =
#: 256``, 12 heads: 4 MB); chunks of 512 were no faster at n = 2048.
CHUNK = 128

#: The band pays where the keys outnumber its width this many times: measured at
#: ``k = 256`` on one thread, it loses to the general path at 1.2 and 1.56 widths
#: (DeBERTa at n = 600, 800) and wins from 1.56 (log buckets at n = 1600) on.
WIDTHS = 1.75

#: torch's fused CPU kernel with its log-sum-exp (private; None where a torch
#: version lacks it, and then the general path serves every call).
_flash = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)


def applies(
    query: torch.Tensor, terms: PositionTerms | None, mask: Mask | None
) -> bool:
    """Whether :func:`attend` can serve this call (the module docstring's rules)."""
    if (
        terms is None
        or _flash is None
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
    if not 1 - reach <= offset <= j - i + reach - 1:
        return False  # a query whose band holds no key
    return mask is None or not mask.causal or offset > j - i - reach


def _offset(terms: PositionTerms) -> int | None:
    """``o``: the distance of query 0 to key 0 (pair ``(a, c)`` has ``o + a - c``),
    or None when the positions are not one shared progression."""
    query_start = progression_start(terms.query_positions)
    key_start = progression_start(terms.key_positions)
    if query_start is None or key_start is None:
        return None
    return query_start - key_start


class _Rows(NamedTuple):
    """The per-head rows the pairs read, scaled: the band's ``F <= 2L - 1``
    (column ``f``: distance ``L - 1 - f``) and the two edges' (far behind, far
    ahead).

    Shapes:
        key_band, query_band, value_band: ``(h, F, d)`` or None
        key_edges, query_edges, value_edges: ``(h, 2, d)`` or None
    """

    width: int
    key_band: torch.Tensor | None
    query_band: torch.Tensor | None
    value_band: torch.Tensor | None
    key_edges: torch.Tensor | None
    query_edges: torch.Tensor | None
    value_edges: torch.Tensor | None


def _rows(terms: PositionTerms, scale: float, dtype: torch.dtype, width: int) -> _Rows:
    """The band's and the edges' rows of each term (c2p and p2c times ``scale``).
    """
    lookup, reach = terms.lookup, terms.reach
    band = lookup[1 : 2 * reach].flip(0)[:width]  # (F,): column f, distance L - 1 - f
    edges = lookup[[2 * reach, 0]]  # (2,): far behind, far ahead
    pos_key, pos_query = projected_rows(terms)  # (h, m, d) each, or None
    found = []
    for rows, factor in (
        (pos_key, scale), (pos_query, scale), (terms.value_rows, 1.0)
    ):
        rows = None if rows is None else (rows * factor).to(dtype)
        found.append(rows)
    return _Rows(
        width,
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
    width = 2 * reach - 1  # the causal rule keeps f <= j - i - offset + L - 1
    width = min(width, j - i - offset + reach) if causal else width
    rows = _rows(terms, scale, query.dtype, width)
    parts = [(0, *_band(query, key, value, rows, offset, reach, scale))]
    behind = offset - reach  # query a reads the keys c <= a + behind
    parts += _far(query, key, value, rows, 0, behind, scale)
    if not causal:
        ahead = j - i - offset - reach  # the same on reversed sequences
        flipped = [tensor.flip(-2) for tensor in (query, key, value)]
        for _, out, lse in _far(*flipped, rows, 1, ahead, scale):
            parts.append((0, out.flip(-2), lse.flip(-1)))  # queries 0, ...
    return _merge(parts, i)


def _band(query, key, value, rows, offset, reach, scale):
    """The band: blocks of ``B`` queries, each against its window of ``W = B + F -
    1`` keys, the position terms a skewed mask of torch's fused kernel; a chunk of
    blocks at a time.

    Query ``a`` meets key ``c = a + offset - L + 1 + f`` at band column ``f``
    (distance ``L - 1 - f``); block row ``r`` meets window column ``w = r + f``.
    The causal rule cuts the band's columns (``F <= 2L - 1``); keys before the
    first or after the last are ``-inf``.

    Shapes:
        query: ``(b, h, i, d)``; key, value: ``(b, h, j, d)``
        output: ``(b, h, i, d)`` and ``(b, h, i)``
    """
    i, j = query.shape[-2], key.shape[-2]
    width = rows.width
    size = min(BLOCK, i)
    chunk = size * max(1, CHUNK // BLOCK)
    padded = -(-i // size) * size
    start = offset - reach + 1  # the key of query 0's column 0
    key, value = (_keys(tensor, start, padded + width - 1) for tensor in (key, value))
    scored = None  # p2c: every key against every band row
    if rows.query_band is not None:
        scored = rows.query_band @ key.transpose(-1, -2)  # (b, h, F, c)
    outs, lses = [], []
    for top in range(0, i, chunk):
        bottom = min(i, top + chunk)
        blocks = -(-(bottom - top) // size)
        keys = slice(top, top + blocks * size + width - 1)
        bias = _band_bias(query[:, :, top:bottom], scored, top, rows)  # (b, h, r, F)
        _outside(bias, start + top, j)
        out, lse = _band_blocks(
            query[:, :, top:bottom], key[:, :, keys], value[:, :, keys], bias, rows,
            size, scale,
        )
        outs.append(out)
        lses.append(lse)
    return torch.cat(outs, -2), torch.cat(lses, -1)


def _band_blocks(query, key, value, bias, rows, size, scale):
    """One chunk of the band (:func:`_band`), its blocks a batch of the fused kernel.

    Shapes:
        query: ``(b, h, i, d)``; key, value: ``(b, h, blocks B + F - 1, d)``
        bias: ``(b, h, i, F)``; output: ``(b, h, i, d)`` and ``(b, h, i)``
    """
    b, _, i, _ = query.shape
    blocks = -(-i // size)
    window = size + rows.width - 1
    if blocks * size > i:  # the last block filled up with queries of no use
        bias = F.pad(bias, (0, 0, 0, blocks * size - i))  # (b, h, blocks B, F)
        query = F.pad(query, (0, 0, 0, blocks * size - i))
    mask = _skewed(bias, size, window)  # (b blocks, h, B, W)
    stacked = _by_block(query, size)
    keys, values = (_windows(tensor, size, window) for tensor in (key, value))
    out, lse = _flash(stacked, keys, values, attn_mask=mask, scale=scale)
    if rows.value_band is not None:
        out = out + _value_term(stacked, keys, bias, lse, rows, scale)
    out = _from_blocks(out, b)[:, :, :i]  # (b, h, i, d)
    return out, _from_blocks(lse[..., None], b)[:, :, :i, 0]


def _keys(tensor: torch.Tensor, start: int, span: int) -> torch.Tensor:
    """Keys (or values) ``start, ..., start + span - 1``, zeros where there are none.

    Shapes:
        tensor: ``(b, h, j, d)``; output: ``(b, h, span, d)``
    """
    j = tensor.shape[-2]
    inside = tensor[:, :, max(0, start) : max(0, min(j, start + span))]
    left = min(span, max(0, -start))
    return F.pad(inside, (0, 0, left, span - left - inside.shape[-2]))


def _band_bias(query, scored, top, rows) -> torch.Tensor:
    """c2p and p2c in band columns: ``q_a . K[f] + k_{top + a + f} . Q[f]`` (keys
    from the band's first), built as ``(F, i)``: p2c is read along the diagonal
    ``(f, top + a + f)`` of every key's scores, a view with strides ``(c + 1, 1)``.

    Shapes:
        query: ``(b, h, i, d)``; scored: ``(b, h, F, c)`` or None
        output: ``(b, h, i, F)``, a transposed view
    """
    b, h, i, _ = query.shape
    width = rows.width
    bias = None
    if rows.key_band is not None:
        bias = rows.key_band @ query.transpose(-1, -2)  # (b, h, F, i)
    if scored is not None:
        diagonal = scored.as_strided(
            (b, h, width, i), (*scored.stride()[:2], scored.shape[-1] + 1, 1),
            scored.storage_offset() + top,
        )  # (b, h, F, i): entry (f, a) is key top + a + f's score against row f
        bias = diagonal.clone() if bias is None else bias.add_(diagonal)
    return bias.transpose(-1, -2)  # (b, h, i, F)


def _outside(bias: torch.Tensor, start: int, keys: int) -> None:
    """``-inf`` (in place) where query ``a``'s column ``f`` has no key: ``c = start
    + a + f`` outside ``0, ..., keys - 1`` (the first and last rows only).

    Shapes:
        bias: ``(b, h, i, F)``
    """
    queries, width = bias.shape[-2:]
    for rows in (
        range(0, min(queries, max(0, -start))),
        range(max(0, keys - start - width + 1), queries),
    ):
        if len(rows):
            key = start + torch.arange(rows.start, rows.stop)[:, None]  # (r, 1)
            key = key + torch.arange(width)  # (r, F)
            found = bias[..., rows.start : rows.stop, :]  # (b, h, r, F)
            found.masked_fill_((key < 0) | (key >= keys), float("-inf"))


def _skewed(bias: torch.Tensor, size: int, window: int) -> torch.Tensor:
    """Band columns to window columns: block row ``r``, column ``w = r + f`` holds
    ``bias[r, f]``, the rest ``-inf``. Each row padded with ``B`` entries of
    ``-inf`` is ``W + 1`` long; read ``W`` a row, row ``r`` starts ``r`` later.

    Shapes:
        bias: ``(b, h, blocks B, F)``; output: ``(b blocks, h, B, W)``
    """
    b, h, n, width = bias.shape
    blocks = n // size
    padded = bias.new_empty(b, blocks, h, size, size + width)  # (b, t, h, B, B + F)
    padded[..., width:] = -torch.inf
    padded[..., :width] = bias.view(b, h, blocks, size, width).transpose(1, 2)
    flat = padded.view(b * blocks, h, size * (size + width))[..., : size * window]
    return flat.view(b * blocks, h, size, window)


def _by_block(tensor: torch.Tensor, size: int) -> torch.Tensor:
    """Blocks of ``B`` rows as a batch.

    Shapes:
        tensor: ``(b, h, blocks B, d)``; output: ``(b blocks, h, B, d)``
    """
    b, h, n, d = tensor.shape
    blocks = tensor.view(b, h, n // size, size, d)  # (b, h, blocks, B, d)
    return blocks.transpose(1, 2).reshape(b * (n // size), h, size, d)


def _from_blocks(tensor: torch.Tensor, b: int) -> torch.Tensor:
    """The inverse of :func:`_by_block`.

    Shapes:
        tensor: ``(b blocks, h, B, d)``; output: ``(b, h, blocks B, d)``
    """
    stacked, h, size, d = tensor.shape
    blocks = tensor.view(b, stacked // b, h, size, d)  # (b, blocks, h, B, d)
    return blocks.transpose(1, 2).reshape(b, h, stacked // b * size, d)


def _windows(tensor: torch.Tensor, size: int, window: int) -> torch.Tensor:
    """Block ``t``'s window: rows ``t B, ..., t B + W - 1``.

    Shapes:
        tensor: ``(b, h, blocks B + F - 1, d)``; output: ``(b blocks, h, W, d)``
    """
    b, h, _, d = tensor.shape
    found = tensor.unfold(2, window, size)  # (b, h, blocks, d, W)
    blocks = found.shape[2]
    return found.permute(0, 2, 1, 4, 3).reshape(b * blocks, h, window, d)


def _value_term(query, key, bias, lse, rows, scale) -> torch.Tensor:
    """Shaw's values in the band: each pair's probability, read in band columns
    (a view with strides ``(W + 1, 1)`` of the block's scores), times its row.

    Shapes:
        query: ``(b blocks, h, B, d)``; key: ``(b blocks, h, W, d)``
        bias: ``(b, h, blocks B, F)``; lse: ``(b blocks, h, B)``
        output: ``(b blocks, h, B, d)``
    """
    stacked, h, size, _ = query.shape
    window, width = key.shape[-2], rows.width
    scores = (query * scale) @ key.transpose(-1, -2)  # (b t, h, B, W)
    band = scores.as_strided(
        (stacked, h, size, width), (*scores.stride()[:2], window + 1, 1)
    )  # (b t, h, B, F): row r, column f is window column r + f
    band = band + _by_block(bias, size) - lse[..., None]
    return torch.einsum("bhif,hfd->bhid", band.exp_(), rows.value_band)


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
        last = min(j, corner + i - top)  # query top + r reads keys up to corner + r
        parts.append(_flash(
            wide_query, wide_key[:, :, corner:last], wide_value[:, :, corner:last],
            is_causal=True, scale=scale,
        ))
    if corner > 0:
        end = min(corner, j)
        parts.append(_flash(
            wide_query, wide_key[:, :, :end], wide_value[:, :, :end], scale=scale
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
    """Queries, keys and values for the fused kernel: p2c at the edge as one more
    dimension, ``scale [q_a, 1 / scale] . [k_c, k_c . Q[edge]]`` (the rows
    scaled already), the values padded with a zero to the same width.

    Shapes:
        query: ``(b, h, i, d)``; key, value: ``(b, h, j, d)``
        output: ``(b, h, i, d')``, ``(b, h, j, d')`` twice; ``d' = d`` or ``d + 1``
    """
    if rows.query_edges is None:
        return query, key, value
    per_key = torch.einsum("bhjd,hd->bhj", key, rows.query_edges[:, edge])
    query = torch.cat([query, query.new_full((*query.shape[:-1], 1), 1 / scale)], -1)
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


__all__ = ["BLOCK", "CHUNK", "WIDTHS", "applies", "attend"]
