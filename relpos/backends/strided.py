"""Position terms of the distance alone, read as a strided view: nothing ``n x n``.

A bias that depends on the distance ``rel = i - j`` alone is a Toeplitz matrix:
constant along every diagonal. Reverse the order of the ``n_q`` queries (query
``i`` becomes row ``i' = n_q - 1 - i``) and it becomes a Hankel matrix, constant
along every anti-diagonal: the entry ``(i', j)`` depends on ``s = i' + j`` alone.
It is entry ``s`` of one vector of ``n_q + n_k - 1`` numbers, so the whole grid
is a view of that vector with strides ``(1, 1)``, and torch's fused attention
reads the view as its mask. No index is built, nothing is gathered, and the
mask costs ``h (n_q + n_k - 1)`` numbers instead of ``h n_q n_k``.

Transformer-XL's c2p term ``q_i . R_{i - j}`` is the same idea one step on:
every query scored against the row of every distance it meets, then read along a
skewed view whose rows step by one more than their width: Dai et al.'s "relative
shift", done without a copy, a block of ``BLOCK`` queries at a time.

The causal rule is a rule on ``s`` too (query ``i`` reads the keys ``j <= i + n_k -
n_q``, that is ``s <= n_k - 1``), so it is folded into the same vector.

When it applies (:func:`applies`): on the CPU, outside ``torch.compile`` and
without autograd (inference); positions ``start, start + 1, ...`` shared by the
batch; no mask but the causal rule; terms of the distance alone (a bias per row,
a ``bias`` of the distance only, per-head key rows read one per distance, not
clipped), and neither DeBERTa's projected table nor relative values. Otherwise
the ``gather`` kernel takes its general path. Training keeps the general path:
the forward is the same, but the gradients of the keys sum over the reversed
queries in another order, which changes their last bits, and the book's trained
results are reproduced bit for bit.

Shapes:
    query: ``(b, h, i, d)``; key, value: ``(b, h, j, d)``; output: ``(b, h, i, d)``
    the mask view: ``(1, h, i, j)`` over ``(h, i + j - 1)``, or per block of
    ``B`` queries ``(b, h, B, j)`` over ``(b, h, B, B + j - 1)``
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..masks import Mask
from .registry import PositionTerms


def progression_start(positions: torch.Tensor) -> int | None:
    """``p`` when ``positions`` is ``[[p, p + 1, ..., p + n - 1]]``, else None.

    Shapes:
        positions: ``(B, n)`` integers
    """
    if positions.shape[0] != 1 or positions.shape[1] == 0:
        return None
    row = positions[0]
    start = int(row[0])
    steps = torch.arange(start, start + row.shape[0], dtype=row.dtype)
    return start if torch.equal(row, steps) else None


def applies(
    query: torch.Tensor, terms: PositionTerms | None, mask: Mask | None
) -> bool:
    """Whether :func:`attend` can serve this call (the module docstring's rules)."""
    if (
        terms is None
        or not terms.has_logit_terms
        or query.device.type != "cpu"
        or torch.is_grad_enabled()
        or torch.compiler.is_compiling()
        or terms.project_key is not None
        or terms.project_query is not None
        or terms.value_rows is not None
        or (terms.bias is not None and not terms.distance_only)
        or (mask is not None and not mask._replace(causal=False).empty)
    ):
        return False
    if terms.key_rows is not None:
        reach, lookup = terms.reach, terms.lookup
        if lookup is None or not torch.equal(lookup, torch.arange(2 * reach + 1)):
            return False
        low, high = _distance_range(terms)
        if low is None or low < -reach or high > reach:
            return False
        return True
    return _distance_range(terms)[0] is not None


def _distance_range(terms: PositionTerms) -> tuple[int | None, int | None]:
    """The smallest and largest distance of any pair, or ``(None, None)`` when the
    positions are not one shared progression."""
    query_start = progression_start(terms.query_positions)
    key_start = progression_start(terms.key_positions)
    if query_start is None or key_start is None:
        return None, None
    i, j = terms.query_positions.shape[1], terms.key_positions.shape[1]
    high = query_start + i - 1 - key_start
    return high - (i + j - 2), high


def _distance_bias(
    terms: PositionTerms, heads: int, distances: torch.Tensor
) -> torch.Tensor | None:
    """The content-free terms at each of ``distances``: ``row_bias`` by row plus
    ``bias``.

    Shapes:
        distances: ``(s,)``; output: ``(h, s)`` or None
    """
    total = None
    if terms.row_bias is not None:
        reach = terms.reach
        rows = terms.lookup[distances.clamp(-reach, reach) + reach]  # (s,)
        total = terms.row_bias[:, rows]  # (h, s)
    if terms.bias is not None:
        head = torch.arange(heads)[:, None]  # (h, 1)
        made = terms.bias(head, distances[None, :], distances.new_zeros(1, 1))
        made = made.expand(heads, distances.shape[0])  # (h, s)
        total = made if total is None else total + made
    return total


#: Queries per block of the skewed path: each block scores its queries against
#: ``block + n_k - 1`` distances, a buffer small enough to stay in the allocator
#: (a whole ``(b, h, n_q, 2 n - 1)`` product at n = 2048 is twice the ``n x n``
#: bias the view avoids, and writing it costs more than the product itself).
BLOCK = 256


def attend(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    terms: PositionTerms,
    mask: Mask | None,
    scale: float,
    dropout_p: float,
) -> torch.Tensor:
    """Attention with the distance terms as a strided view (call :func:`applies`
    first): the queries reversed, the mask a Hankel or skewed view, the output
    reversed back.

    Shapes:
        query: ``(b, h, i, d)``; key, value: ``(b, h, j, d)``
        output: ``(b, h, i, d)``
    """
    h, i = query.shape[1], query.shape[2]
    j = key.shape[-2]
    _, high = _distance_range(terms)
    flipped = query.flip(-2)  # (b, h, i, d): row i' is query i - 1 - i'
    causal = mask is not None and mask.causal
    if terms.key_rows is None:
        view = _hankel_mask(terms, h, i, j, high, causal, query.dtype)
        out = F.scaled_dot_product_attention(
            flipped, key, value, attn_mask=view, dropout_p=dropout_p, scale=scale
        )  # (b, h, i, d), queries reversed
        return out.flip(-2)
    # Every distance's row, last distance first: column c holds distance reach - c,
    # and the reversed query i' meets key j at column reach - high + i' + j.
    rows = (terms.key_rows * scale).flip(1)  # (h, m, d)
    distances = terms.reach - torch.arange(rows.shape[1])  # (m,)
    extra = _distance_bias(terms, h, distances)  # (h, m) or None
    first = terms.reach - high
    blocks = []
    for top in range(0, i, BLOCK):
        block = flipped[:, :, top : top + BLOCK]  # (b, h, B, d)
        columns = slice(first + top, first + top + block.shape[2] + j - 1)
        last = first + j - 1 if causal else None  # the causal rule: s <= n_k - 1
        view = _skewed_mask(block, rows[:, columns], extra, columns, j, last)
        blocks.append(F.scaled_dot_product_attention(
            block, key, value, attn_mask=view, dropout_p=dropout_p, scale=scale
        ))  # (b, h, B, d)
    return torch.cat(blocks, dim=-2).flip(-2)  # (b, h, i, d)


def _hankel_mask(terms, heads, i, j, high, causal, dtype) -> torch.Tensor:
    """The content-free terms as a Hankel view: entry ``(i', j)`` reads ``s = i' +
    j``, whose distance is ``high - s``.

    Shapes:
        output: ``(1, h, i, j)`` over an ``(h, i + j - 1)`` vector
    """
    s = torch.arange(i + j - 1)  # (i + j - 1,)
    along = _distance_bias(terms, heads, high - s).to(dtype)  # (h, i + j - 1)
    if causal:
        along = along.masked_fill(s > j - 1, float("-inf"))
    along = along.contiguous()
    return along.as_strided((1, heads, i, j), (0, along.stride(0), 1, 1))


def _skewed_mask(block, rows, extra, columns, j, last) -> torch.Tensor:
    """A block of reversed queries against the rows of its distances, read along
    the skew: the block's row ``r`` meets key ``j`` at its column ``r + j``. The
    ``columns`` of the whole product it holds; those after ``last`` (the causal
    rule, or None) at ``-inf``.

    Shapes:
        block: ``(b, h, B, d)``; rows: ``(h, B + j - 1, d)``; extra: ``(h, m)``
        output: ``(b, h, B, j)`` over ``(b, h, B, B + j - 1)``
    """
    b, h, size = block.shape[:3]
    scores = torch.einsum("bhid,hmd->bhim", block, rows)  # (b, h, B, B + j - 1)
    if extra is not None:
        scores = scores + extra[:, columns].to(scores.dtype)[None, :, None, :]
    if last is not None:
        future = torch.arange(columns.start, columns.stop) > last  # (B + j - 1,)
        scores = scores.masked_fill(future, float("-inf"))
    scores = scores.contiguous()
    width = scores.shape[-1]
    return scores.as_strided(
        (b, h, size, j),
        (scores.stride(0), scores.stride(1), width + 1, 1),
        scores.storage_offset(),
    )


__all__ = ["applies", "attend", "progression_start"]
