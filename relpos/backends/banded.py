"""Clipped position terms as windows and far rectangles: nothing ``n x n``.

A scheme that clips its distances (DeBERTa, Shaw) gives every distance beyond the
reach ``L`` the row of its edge: a key far behind its query (``i - j >= L``)
reads row ``lookup[2L]``, a key far ahead (``i - j <= -L``) row ``lookup[0]``.
There c2p, ``q_i . K[edge]``, is one number per query, and p2c, ``k_j .
Q[edge]``, one number per key. Only the *band* ``|i - j| < L`` reads the table's
other rows: ``F = 2L - 1`` keys a query.

The queries go in blocks of ``B``. A block meets a *window* of ``W = B + F - 1``
keys, those in the band of any of its queries; every key before the window is far
behind *every* query of the block, every key after it far ahead. Numbers per query
and per key are more dimensions of the fused kernel: ``[q_i, c_i, c'_i, 1] .
[k_j, 1, 0, b_j]`` far behind and ``[k_j, 0, 1, b'_j]`` far ahead (``c``: c2p,
``b``: p2c at each edge). With the keys laid out twice, far-ahead form then
far-behind form, a block's far keys are one slice: from the key after its window
(first copy) to the key before it (second copy). Its *far rectangle*: no mask, no
causal rule, torch's fused kernel at its plain speed; every block whose window
lies inside the sequence has ``n - W`` far keys, so all of them are one call on
a strided view of the keys.

The window is one call of the fused kernel too, its mask ``B x W``: in band columns
(query ``a``, column ``f``: the key at distance ``L - 1 - f``), ``GROUP`` rows at
a time, c2p, the queries against the rows, plus p2c, the keys against them read
along a diagonal; each row padded with ``B`` entries and the whole read ``W`` a
row (the skewed view of ``relpos.backends.strided``). A row's ``B`` entries are
the pairs of the window outside the band: its own far ahead, then the next row's
far behind, each an edge's c2p plus its p2c. The window's and the far rectangle's
outputs are merged exactly by their log-sum-exps (``out = sum_r exp(lse_r - lse)
out_r``), which the kernel returns.

Without p2c (Shaw, c2p alone) the far keys need no more dimensions: a block meets
its far-behind and its far-ahead slices in two calls, each side's c2p added to its
log-sum-exp. Shaw's relative values come out of the same pieces with linear
memory: in the window each pair's probability weighs its row (an edge's outside the
band, summed over the tails); a far side's probabilities sum to 1, so its output
gains its edge's row (with p2c, the far values carry two more columns, 1 behind
and 1 ahead, whose outputs are each edge's share).

A causal decoder has no far ahead: its far rectangle is the far-behind slice alone
(one call a block, their lengths differ), and the window's columns past the
causal rule are ``-inf``. A cache (queries ``t, ...`` against keys ``0, ...``)
only moves the windows.

When it applies (:func:`applies`): the rules of ``relpos.backends.strided`` (the
CPU, outside ``torch.compile``, without autograd, positions one shared
progression, no mask but the causal rule), for terms of a projected table
(DeBERTa and its variants, any lookup: only the band reads rows other than the
edges) or key rows (Shaw), with or without value rows, and nothing else added to
the logits; with the causal rule, no far ahead. And only where it pays: ``n_k >
WIDTHS * (2L - 1)``.

Shapes:
    query: ``(b, h, i, d)``; key, value: ``(b, h, j, d)``; output: ``(b, h, i, d)``
    a call's blocks: ``(b h, blocks, B, d)``, views; the window's keys ``(b h,
    blocks, W, d)`` and mask ``(b h, blocks, B, W)``; with p2c the far keys ``(b,
    h, 2j, d')``, ``d' >= d + 3``, and a call's view of them ``(b h, blocks, j - W,
    d')``
    the rows' scores, per chunk and ``GROUP`` rows: c2p ``(b, h, B, GROUP)``, p2c
    ``(b, h, B + GROUP - 1, GROUP)``
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F

from ..masks import Mask
from .registry import PositionTerms
from .strided import progression_start
from .terms import projected_rows

#: Queries per block: each block meets a window of ``BLOCK + 2L - 2`` keys under a
#: mask and the rest, its far keys, without one. At n = 2048, ``k = 256``: 128 left
#: the kernel's far calls 1.4x slower a pair than one square (its query tiles are
#: 32 rows below 192 queries, 64 from 192), 256 and 512 about as fast, 768 slower
#: (its windows' work grows faster than the far calls' shrinks).
BLOCK = 256

#: Queries per chunk of the windows (one call of the fused kernel, at least one
#: block): its buffers, the blocks' mask and band, stay this size whatever the
#: length (at ``k = 256``, 12 heads, one block of 256: 16 MB; 25 MB with Shaw's
#: values); two blocks a call were no faster at n = 2048.
CHUNK = 128

#: The windows and far rectangles pay where the keys outnumber the band's width
#: this many times: measured at ``k = 256`` on 2 threads against the general path,
#: DeBERTa loses at 1.5 widths (n = 768) and wins at 1.75, Shaw wins from 1.5, log
#: buckets from 1.25 (n = 1280; 1.2x faster at 1.5).
WIDTHS = 1.5

#: Band rows a matmul: c2p, a block's queries against ``GROUP`` rows, and p2c, its
#: ``B + GROUP - 1`` keys against them, of which one diagonal is read (no ``(F, n)``
#: array of scores; 32 and 128 were slower at n = 2048).
GROUP = 64

#: The far keys' width ``d' >= d + 3`` is a multiple of this (the kernel is
#: slower at odd widths).
STEP = 4

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
    """Attention as windows and far rectangles merged by their log-sum-exps (call
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
    size = min(BLOCK, i)
    padded = -(-i // size) * size
    if padded > i:  # the last block filled up with queries of no use
        query = F.pad(query, (0, 0, 0, padded - i))  # (b, h, blocks B, d)
    query = query.contiguous()  # its blocks are views
    edges = _Edges(
        None if rows.key_edges is None  # (b, h, blocks B, 2)
        else torch.einsum("bhid,hed->bhie", query, rows.key_edges),
        None if rows.query_edges is None  # (b, h, j, 2)
        else torch.einsum("bhjd,hed->bhje", key, rows.query_edges),
    )
    start = offset - reach + 1  # block t's window: keys start + t B + (0, ..., W - 1)
    near, near_lse = _near(
        query, key, value, rows, edges, start, i, size, causal, scale
    )
    far, far_lse = (_far if edges.keys is not None else _far_sides)(
        query, key, value, rows, edges, start, size, causal, scale
    )
    total = torch.logaddexp(near_lse, far_lse)  # (b, h, blocks B)
    out = near.mul_((near_lse - total).exp_()[..., None])
    out += far * (far_lse - total).exp_()[..., None]
    return out[:, :, :i]


class _Edges(NamedTuple):
    """c2p of every query and p2c of every key at the two edges (far behind, far
    ahead), scaled.

    Shapes:
        queries: ``(b, h, i, 2)`` or None; keys: ``(b, h, j, 2)`` or None
    """

    queries: torch.Tensor | None
    keys: torch.Tensor | None


def _near(query, key, value, rows, edges, start, i, size, causal, scale):
    """The windows: blocks of ``B`` queries, each against its ``W = B + F - 1``
    keys under a mask (:func:`_mask`); a chunk of blocks a call.

    Shapes:
        query: ``(b, h, blocks B, d)``; key, value: ``(b, h, j, d)``
        output: ``(b, h, blocks B, d)`` and ``(b, h, blocks B)``
    """
    b, h, padded, d = query.shape
    j, width = key.shape[-2], rows.width
    window = size + width - 1
    chunk = min(padded, size * max(1, CHUNK // size))
    span = padded + width - 1  # the keys of all windows
    key, value = (_keys(tensor, start, span) for tensor in (key, value))
    far_queries = _edge_queries(edges.queries, query)  # (b, h, 2, blocks B + 1)
    far_keys = _far_keys_by_block(  # (b, h, blocks, 2B)
        _edge_keys(edges.keys, query, start, span, size, j, causal),
        padded // size, size, width,
    )
    buffers = (  # the chunk's mask and Shaw's scores, the same memory each chunk
        query.new_empty(b, h, chunk // size, size, width + size),
        None if rows.value_band is None
        else query.new_empty(b * h, chunk // size, size, window),
    )
    near = query.new_empty(b, h, padded, d)
    near_lse = query.new_empty(b, h, padded)
    outs, lses = (
        tensor.view(b * h, padded // size, size, -1)
        for tensor in (near, near_lse[..., None])
    )  # (b h, blocks, B, d or 1)
    for top in range(0, padded, chunk):
        blocks = (min(padded, top + chunk) - top) // size
        mask = _mask(
            query, key, far_queries, far_keys, rows, buffers[0], top, blocks, start, i,
            j,
        )  # (b h, blocks, B, W)
        found = [
            _strided_blocks(tensor, first, blocks, length, size)
            for tensor, first, length in (
                (query, top, size), (key, top, window), (value, top, window)
            )
        ]  # (b h, blocks, B or W, d)
        out, lse = _flash(*found, attn_mask=mask, scale=scale)
        if rows.value_band is not None:
            scores = buffers[1][:, :blocks]  # (b h, blocks, B, W)
            out = out + _value_term(*found[:2], mask, lse, rows, scale, scores)
        outs[:, top // size : top // size + blocks] = out
        lses[:, top // size : top // size + blocks, :, 0] = lse
    return near, near_lse


def _mask(query, key, far_queries, far_keys, rows, buffer, top, blocks, start, i, j):
    """The windows' mask for the blocks from query ``top`` on: in band columns
    (query ``a`` meets key ``start + a + f`` at column ``f``, distance ``L - 1 -
    f``), ``GROUP`` rows at a time, c2p the queries against them plus p2c the keys
    against them read along a diagonal; each row then its ``B`` entries
    of :func:`_tail`, the whole read ``W`` a row (block row ``r`` meets window
    column ``w = r + f``). Keys before the first or after the last are ``-inf``;
    queries from ``i`` on are padding.

    Shapes:
        query: ``(b, h, blocks B, d)``; key: ``(b, h, span, d)`` (from key ``start``)
        buffer: ``(b, h, t, B, F + B)``, ``t >= blocks``
        output: ``(b h, blocks, B, W)``
    """
    b, h, _, d = query.shape
    size, width = buffer.shape[-2], rows.width
    queries = blocks * size
    padded = buffer[:, :, :blocks]  # (b, h, t, B, F + B)
    band = padded[..., :width].view(b, h, queries, width)  # (b, h, t B, F)
    for first in range(0, width, GROUP):
        columns = slice(first, first + min(GROUP, width - first))
        parts = []
        if rows.key_band is not None:  # c2p: the queries against the rows
            parts.append(query[:, :, top : top + queries] @ (
                rows.key_band[:, columns].transpose(-1, -2)
            ))  # (b, h, t B, g)
        if rows.query_band is not None:  # p2c: keys top + first + ... against them
            group = columns.stop - first
            scored = key[:, :, top + first : top + first + queries + group - 1] @ (
                rows.query_band[:, columns].transpose(-1, -2)
            )  # (b, h, t B + g - 1, g)
            parts.append(scored.as_strided(
                (b, h, queries, group), (*scored.stride()[:2], group, group + 1)
            ))  # (b, h, t B, g): entry (a, f) is key top + a + first + f
        if len(parts) == 2:
            torch.add(*parts, out=band[..., columns])
        else:
            band[..., columns] = parts[0]
    _outside(band[:, :, : max(0, i - top)], start + top, j)
    _tail(far_queries, far_keys, top, blocks, padded[..., width:])  # (b, h, t, B, B)
    window = size + width - 1
    flat = padded.reshape(b * h, blocks, size * (width + size))[..., : size * window]
    return flat.view(b * h, blocks, size, window)


def _keys(tensor: torch.Tensor, start: int, span: int) -> torch.Tensor:
    """Keys (or values) ``start, ..., start + span - 1``, zeros where there are none.

    Shapes:
        tensor: ``(b, h, j, d)``; output: ``(b, h, span, d)``
    """
    j = tensor.shape[-2]
    inside = tensor[:, :, max(0, start) : max(0, min(j, start + span))]
    left = min(span, max(0, -start))
    return F.pad(inside, (0, 0, left, span - left - inside.shape[-2]))


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


def _edge_queries(per_query, query):
    """Each query's c2p at the two edges (0 without c2p), and an entry of 0 after
    the last query.

    Shapes:
        per_query: ``(b, h, i, 2)`` or None; output: ``(b, h, 2, i + 1)``
    """
    b, h, i, _ = query.shape
    found = query.new_zeros(b, h, 2, i + 1)
    if per_query is not None:
        found[..., :i] = per_query.transpose(-1, -2)
    return found


def _edge_keys(per_key, query, start, span, size, keys, causal):
    """Each window key's p2c at the two edges (0 without p2c), ``-inf`` where there
    is no key and (the causal rule) for the far ahead; ``B`` entries more before,
    ``2B`` after.

    Entry ``B + w`` is for key ``start + w``.

    Shapes:
        per_key: ``(b, h, j, 2)`` or None; output: ``(b, h, 2, B + span + 2B)``
    """
    b, h = query.shape[:2]
    found = query.new_full((b, h, 2, size + span + 2 * size), float("-inf"))
    low, high = max(0, start), min(keys, start + span)  # the keys there are
    if high > low:
        inside = found[:, :, : 2 - causal, size + low - start : size + high - start]
        if per_key is None:
            inside.zero_()
        else:
            inside.copy_(per_key[:, :, low:high, : 2 - causal].transpose(-1, -2))
    return found


def _far_keys_by_block(far_keys, blocks, size, width):
    """Each block's window keys' p2c in the order the mask's tails read them:
    entry ``m`` of block ``t`` is far ahead for ``m < B - 1`` (window key ``m + F``),
    else far behind (window key ``m + 1 - B``).

    Shapes:
        far_keys: ``(b, h, 2, B + span + 2B)``; output: ``(b, h, blocks, 2B)``
    """
    b, h = far_keys.shape[:2]
    strides = far_keys.stride()
    found = [
        far_keys.as_strided(
            (b, h, blocks, 2 * size), (*strides[:2], size, 1),
            far_keys.storage_offset() + edge * strides[2] + first,
        )  # (b, h, blocks, 2B)
        for edge, first in ((0, 1), (1, size + width))
    ]
    return torch.where(torch.arange(2 * size) < size - 1, found[1], found[0])


def _tail(far_queries, by_block, top, blocks, out):
    """The ``B`` entries after each row's band, written in ``out``: row ``r``'s far
    ahead (window columns ``r + F, ..., W - 1``), then row ``r + 1``'s far behind
    (columns ``0, ..., r``), an edge's c2p plus its p2c. Entry ``x`` of row ``r``
    is far ahead where ``m = r + x < B - 1``, and its p2c entry ``m`` of
    :func:`_far_keys_by_block` (read along anti-diagonals).

    Shapes:
        far_queries: ``(b, h, 2, i + 1)``; by_block: ``(b, h, t, 2B)``
        out: ``(b, h, blocks, B, B)`` for the blocks from query ``top`` on
    """
    b, h, _, size, _ = out.shape
    queries = blocks * size
    found = by_block[:, :, top // size :]
    keys = found.as_strided(
        out.shape, (*found.stride()[:3], 1, 1), found.storage_offset()
    )  # (b, h, blocks, B, B): entry (r, x) is entry r + x of the block's
    ahead = torch.arange(size)[:, None] + torch.arange(size) < size - 1  # (B, B)
    per_query = [
        far_queries[:, :, edge, first : first + queries].view(b, h, blocks, size, 1)
        for edge, first in ((0, top + 1), (1, top))
    ]  # far behind: query a + 1; far ahead: query a
    torch.add(torch.where(ahead, per_query[1], per_query[0]), keys, out=out)


def _strided_blocks(tensor, first: int, blocks: int, length: int, step: int):
    """Rows ``first + t step, ..., first + t step + length - 1`` for each block
    ``t``, a batch of views (they overlap where ``length > step``).

    Shapes:
        tensor: ``(b, h, n, d)``; output: ``(b h, blocks, length, d)``
    """
    b, h, _, d = tensor.shape
    if tensor.stride(-1) != 1 or (b > 1 and tensor.stride(0) != h * tensor.stride(1)):
        tensor = tensor.contiguous()
    rows, heads = tensor.stride(2), tensor.stride(1)
    return tensor.as_strided(
        (b * h, blocks, length, d), (heads, step * rows, rows, 1),
        tensor.storage_offset() + first * rows,
    )


def _value_term(query, key, mask, lse, rows, scale, probs) -> torch.Tensor:
    """Shaw's values in the windows: each pair's probability times its row, read
    in band columns (a view with strides ``(W + 1, 1)`` of the probabilities), and
    each edge's probability times the edge's row, summed over the tails (the ``B``
    entries after each row's band: its far ahead, then the next row's far behind).

    Shapes:
        query: ``(b h, t, B, d)``; key, mask: ``(b h, t, W, d)``, ``(b h, t, B, W)``
        lse: ``(b h, t, B)``; probs (written): ``(b h, t, B, W)``
        output: ``(b h, t, B, d)``
    """
    heads, blocks, size, d = query.shape
    window, width = key.shape[-2], rows.width
    h = rows.value_band.shape[0]
    torch.matmul(query * scale, key.transpose(-1, -2), out=probs)  # (b h, t, B, W)
    probs = probs.add_(mask).sub_(lse[..., None]).exp_()
    strides = probs.stride()[:2]
    band = probs.as_strided((heads, blocks, size, width), (*strides, window + 1, 1))
    band = band.view(heads // h, h, blocks, size, width)  # (b, h, t, B, F)
    out = torch.einsum("bhtif,hfd->bhtid", band, rows.value_band)
    tails = probs.as_strided(
        (heads, blocks, size - 1, size), (*strides, window + 1, 1),
        probs.storage_offset() + width,
    )  # (b h, t, B - 1, B): rows 0, ..., B - 2 (the last row's tail is none)
    ahead = torch.arange(size - 1)[:, None] + torch.arange(size) < size - 1
    ahead = (tails * ahead).sum(-1)  # (b h, t, B - 1): rows 0, ..., B - 2
    behind = tails.sum(-1) - ahead  # rows 1, ..., B - 1
    for edge, total in enumerate((F.pad(behind, (1, 0)), F.pad(ahead, (0, 1)))):
        total = total.view(heads // h, h, blocks, size, 1)  # (b, h, t, B, 1)
        out += total * rows.value_edges[:, None, None, edge]  # (h, 1, 1, d)
    return out.reshape(heads, blocks, size, d)


def _far(query, key, value, rows, edges, start, size, causal, scale):
    """The far rectangles: block ``t`` against the keys outside its window, its
    far-ahead keys (form ``[k, 0, 1, b']``) then its far-behind ones (``[k, 1, 0,
    b]``) one slice of the keys laid out twice; a run of blocks with slices as
    long, each ``B`` keys on, one call.

    Shapes:
        query: ``(b, h, blocks B, d)``; key, value: ``(b, h, j, d)``
        output: ``(b, h, blocks B, d)`` and ``(b, h, blocks B)`` (``-inf``: no
        far keys)
    """
    b, h, padded, d = query.shape
    j, window = key.shape[-2], size + rows.width - 1
    wide_query, wide_key, wide_value = _wide(
        query, key, value, rows, edges, causal, scale
    )
    out = query.new_zeros(b, h, padded, wide_key.shape[-1])
    lse = query.new_full((b, h, padded), float("-inf"))
    runs = []  # (first block, blocks, first key, keys)
    for block in range(padded // size):
        low = start + block * size  # the window's first key
        behind = min(max(low, 0), j)
        first = 0 if causal else min(max(low + window, 0), j)  # ahead: first, ...
        length = behind if causal else j - first + behind
        last = runs[-1] if runs else None
        if last and last[3] == length and last[2] + last[1] * size == first:
            runs[-1] = (last[0], last[1] + 1, last[2], length)
        elif length:
            runs.append((block, 1, first, length))
    outs, lses = (
        tensor.view(b * h, padded // size, size, -1) for tensor in (out, lse[..., None])
    )  # (b h, blocks, B, d' or 1)
    for block, blocks, first, length in runs:
        found, found_lse = _flash(
            _strided_blocks(wide_query, block * size, blocks, size, size),
            *(
                _strided_blocks(tensor, first, blocks, length, size)
                for tensor in (wide_key, wide_value)
            ),
            scale=scale,
        )  # (b h, blocks, B, d'), (b h, blocks, B)
        outs[:, block : block + blocks] = found
        lses[:, block : block + blocks, :, 0] = found_lse
    if rows.value_edges is not None:  # each edge's share of the far probability
        shares = out[..., d : d + 2, None]  # (b, h, blocks B, 2, 1)
        out[..., :d] += (shares * rows.value_edges[:, None]).sum(-2)
    return out[..., :d], lse


def _far_sides(query, key, value, rows, edges, start, size, causal, scale):
    """The far rectangles without p2c (Shaw, c2p alone): each block against its
    far-behind keys and, apart, its far-ahead ones, on the keys as they are; each
    side's c2p added to its log-sum-exp, and its edge's value row to its output
    (its probabilities sum to 1), the sides merged by their log-sum-exps.

    Shapes:
        query: ``(b, h, blocks B, d)``; key, value: ``(b, h, j, d)``
        output: ``(b, h, blocks B, d)`` and ``(b, h, blocks B)`` (``-inf``: no
        far keys)
    """
    b, h, padded, d = query.shape
    j, window = key.shape[-2], size + rows.width - 1
    out = query.new_zeros(b, h, padded, d)
    lse = query.new_full((b, h, padded), float("-inf"))
    outs, lses = (
        tensor.view(b * h, padded // size, size, -1) for tensor in (out, lse[..., None])
    )  # (b h, blocks, B, d or 1)
    for block in range(padded // size):
        low = start + block * size  # the window's first key
        rows_at = slice(block * size, (block + 1) * size)
        sides = [(0, 0, min(max(low, 0), j))]  # (edge, first key, keys)
        if not causal:
            first = min(max(low + window, 0), j)
            sides.append((1, first, j - first))
        for edge, first, length in sides:
            if not length:
                continue
            found, found_lse = _flash(
                _strided_blocks(query, block * size, 1, size, size),
                *(_strided_blocks(t, first, 1, length, size) for t in (key, value)),
                scale=scale,
            )  # (b h, 1, B, d), (b h, 1, B)
            found, found_lse = found[:, 0], found_lse[:, 0]  # (b h, B, d), (b h, B)
            if edges.queries is not None:  # c2p: one logit for the side's keys
                shared = edges.queries[:, :, rows_at, edge]  # (b, h, B)
                found_lse = found_lse + shared.reshape(b * h, size)
            if rows.value_edges is not None:
                edge_row = rows.value_edges[:, edge]  # (h, d)
                found = (found.view(b, h, size, d) + edge_row[:, None]).flatten(0, 1)
            total = torch.logaddexp(lses[:, block, :, 0], found_lse)  # (b h, B)
            outs[:, block] *= (lses[:, block, :, 0] - total).exp()[..., None]
            outs[:, block] += found * (found_lse - total).exp()[..., None]
            lses[:, block, :, 0] = total
    return out, lse


def _wide(query, key, value, rows, edges, causal, scale):
    """Queries ``[q, c / s, c' / s, 1 / s]``, keys laid out twice, ``[k, 0, 1, b']``
    then ``[k, 1, 0, b]`` (causal: the second alone), values ``[v, 0, 1]`` then
    ``[v, 1, 0]`` (Shaw's) or ``[v]``, zeros up to a width ``d'``, a multiple of
    ``STEP``; ``s`` the scale the kernel multiplies by.

    Shapes:
        query: ``(b, h, i, d)``; key, value: ``(b, h, j, d)``
        output: ``(b, h, i, d')``, ``(b, h, 2j or j, d')`` twice
    """
    b, h, i, d = query.shape
    j = key.shape[-2]
    wide = -(-(d + 3) // STEP) * STEP
    forms = 1 if causal else 2  # far ahead, far behind
    wide_query = query.new_empty(b, h, i, wide)
    wide_query[..., d:] = 0
    wide_query[..., :d] = query
    if edges.queries is not None:
        wide_query[..., d : d + 2] = edges.queries / scale
    if edges.keys is not None:
        wide_query[..., d + 2] = 1 / scale
    wide_key = key.new_empty(b, h, forms, j, wide)
    wide_key[..., d:] = 0
    wide_key[..., :d] = key[:, :, None]
    wide_key[:, :, -1, :, d] = 1  # far behind
    if not causal:
        wide_key[:, :, 0, :, d + 1] = 1  # far ahead
    if edges.keys is not None:
        wide_key[:, :, -1, :, d + 2] = edges.keys[..., 0]
        if not causal:
            wide_key[:, :, 0, :, d + 2] = edges.keys[..., 1]
    wide_value = value.new_empty(b, h, forms, j, wide)
    wide_value[..., d:] = 0
    wide_value[..., :d] = value[:, :, None]
    if rows.value_edges is not None:
        wide_value[..., d : d + 2] = wide_key[..., d : d + 2]
    return (
        wide_query,
        wide_key.view(b, h, forms * j, wide),
        wide_value.view(b, h, forms * j, wide),
    )


__all__ = ["BLOCK", "CHUNK", "GROUP", "STEP", "WIDTHS", "applies", "attend"]
