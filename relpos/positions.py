"""Relative positions: the distance ``i - j``, the clip-and-shift delta, log buckets.

Convention: query index minus key index. ``r = i - j > 0`` means the key lies
*behind* (before) the query; ``r < 0`` means it lies ahead.

Shapes:
    i, j:  query and key positions, ``0 <= i < query_len``, ``0 <= j < key_len``
    k:     the span, i.e. ``max_relative_positions`` (or ``position_buckets``)
"""

from __future__ import annotations

from typing import overload

import torch

from .checks import check_device, check_int, check_int_tensor


def relative_positions(
    query_len: int,
    key_len: int | None = None,
    *,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """The signed distance ``i - j`` for every (query, key) pair.

    Args:
        query_len: number of query positions (>= 0).
        key_len: number of key positions; defaults to ``query_len``.
        device: where to create the tensor.

    Returns:
        A ``torch.long`` tensor whose entry ``[i, j]`` is ``i - j``.

    Shapes:
        output: ``(query_len, key_len)``
    """
    query_len = check_int("query_len", query_len, minimum=0)
    key_len = query_len if key_len is None else check_int("key_len", key_len, minimum=0)
    device = check_device("device", device)
    q = torch.arange(query_len, dtype=torch.long, device=device)
    k = torch.arange(key_len, dtype=torch.long, device=device)
    return q[:, None] - k[None, :]  # (i, j)


@overload
def delta(rel: int, max_relative_positions: int) -> int: ...
@overload
def delta(rel: torch.Tensor, max_relative_positions: int) -> torch.Tensor: ...


def delta(rel: int | torch.Tensor, max_relative_positions: int) -> int | torch.Tensor:
    """Clip a distance to ``[-k, k - 1]``, shift it by ``k``: its row of the table.

    ``delta(r) = clamp(r, -k, k - 1) + k``. Distance ``-k`` (and anything further
    ahead) maps to row 0, distance 0 to row ``k``, distance ``k - 1`` (and anything
    further behind) to row ``2k - 1``.

    Args:
        rel: a distance ``i - j`` as a Python int, or an integer tensor of them.
        max_relative_positions: ``k``, a positive int.

    Returns:
        An int for an int input, else a ``torch.long`` tensor; values in ``[0, 2k)``.

    Shapes:
        rel: any shape ``(*)``
        output: ``(*)``, same as ``rel``
    """
    k = check_int("max_relative_positions", max_relative_positions, minimum=1)
    if isinstance(rel, torch.Tensor):
        rel = check_int_tensor("rel", rel)
        return rel.long().clamp(-k, k - 1) + k
    rel = check_int("rel", rel)
    return min(max(rel, -k), k - 1) + k


def log_bucket_position(
    rel: torch.Tensor, bucket_size: int, max_position: int
) -> torch.Tensor:
    """Map distances to DeBERTa-v2/v3 log buckets.

    With ``mid = bucket_size // 2``: distances with ``|r| <= mid`` keep their
    value (exact); beyond that, the bucket grows with ``log |r|`` so that
    ``|r| = max_position - 1`` lands on bucket ``2 * mid - 1`` (roughly
    ``bucket_size``), keeping the sign. The result is not clipped: distances past
    ``max_position`` get buckets past it; ``relative_position_index`` clips.
    The integers equal those of ``transformers``' ``make_log_bucket_position``.

    Args:
        rel: integer tensor of distances ``i - j``.
        bucket_size: number of buckets on each side, an int >= 2.
        max_position: the distance mapped to the last bucket, an int >= bucket_size.

    Returns:
        A ``torch.long`` tensor of buckets.

    Shapes:
        rel: ``(*)``
        output: ``(*)``
    """
    rel = check_int_tensor("rel", rel).long()
    bucket_size = check_int("bucket_size", bucket_size, minimum=2)
    max_position = check_int("max_position", max_position, minimum=1)
    if bucket_size > max_position:
        raise ValueError(
            f"bucket_size must be <= max_position, got bucket_size={bucket_size} "
            f"and max_position={max_position}"
        )
    mid = bucket_size // 2
    if max_position - 1 <= mid:
        raise ValueError(
            "max_position must be > bucket_size // 2 + 1 so the log scale is defined, "
            "got "
            f"max_position={max_position} and bucket_size={bucket_size}"
        )
    # The exact region is |r| <= mid; the float32 arithmetic below follows the
    # reference so that every integer matches it, rounding included.
    magnitude = rel.abs()
    far = magnitude > mid
    safe = torch.where(far, magnitude, torch.full_like(magnitude, mid)).float()
    log_ratio = torch.log(safe / mid) / torch.log(
        torch.tensor((max_position - 1) / mid, dtype=torch.float32)
    )
    far_bucket = (torch.ceil(log_ratio * (mid - 1)) + mid).long()
    return torch.where(far, far_bucket * rel.sign(), rel)


def position_index(
    rel: torch.Tensor, *, max_relative_positions: int, position_buckets: int = -1
) -> torch.Tensor:
    """The table row of each distance: its log bucket (if buckets are on), then delta.

    Without buckets this is ``delta(rel, max_relative_positions)``. With buckets,
    each distance is first mapped by ``log_bucket_position(rel, position_buckets,
    max_relative_positions)``, then shifted and clipped with span
    ``k = position_buckets``; the table then has ``2 * position_buckets`` rows.

    Args:
        rel: integer tensor of distances ``i - j``.
        max_relative_positions: ``k`` without buckets, ``max_position`` with them.
        position_buckets: number of log buckets per side, or ``-1`` (or 0) for none.

    Returns:
        A ``torch.long`` tensor with values in ``[0, 2 * span)``, where
        ``span = attention_span(max_relative_positions, position_buckets)``.

    Shapes:
        rel: ``(*)``
        output: ``(*)``
    """
    span = attention_span(max_relative_positions, position_buckets)
    if position_buckets > 0:
        rel = log_bucket_position(rel, position_buckets, max_relative_positions)
    return delta(rel, span)


def relative_position_index(
    query_len: int,
    key_len: int | None = None,
    *,
    max_relative_positions: int,
    position_buckets: int = -1,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """The row of the relative-position table that each (query, key) pair reads.

    ``position_index(relative_positions(query_len, key_len))``: buckets first
    when ``position_buckets > 0``, then shift and clip.

    Args:
        query_len: number of query positions.
        key_len: number of key positions; defaults to ``query_len``.
        max_relative_positions: ``k`` without buckets, ``max_position`` with them.
        position_buckets: number of log buckets per side, or ``-1`` (or 0) for none.
        device: where to create the tensor.

    Returns:
        A ``torch.long`` tensor with values in ``[0, 2 * span)``.

    Shapes:
        output: ``(query_len, key_len)``
    """
    rel = relative_positions(query_len, key_len, device=device)  # (i, j)
    return position_index(
        rel,
        max_relative_positions=max_relative_positions,
        position_buckets=position_buckets,
    )


def distance_lookup(
    seq_len: int,
    *,
    max_relative_positions: int,
    position_buckets: int = -1,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """The table row of every distance of a sequence, at ``i - j + seq_len - 1``.

    A sequence of length n has only ``2n - 1`` distinct distances, so its whole
    ``(n, n)`` index is determined by this ``(2n - 1,)`` vector:
    ``relative_position_index(n, ...)[i, j] == distance_lookup(n, ...)[i - j + n - 1]``.
    Computing the buckets here costs O(n) instead of O(n^2).

    Shapes:
        output: ``(2 * seq_len - 1,)``, empty when ``seq_len == 0``
    """
    seq_len = check_int("seq_len", seq_len, minimum=0)
    device = check_device("device", device)
    rel = torch.arange(
        1 - max(seq_len, 1), seq_len, dtype=torch.long, device=device
    )  # (2n - 1,)
    return position_index(
        rel,
        max_relative_positions=max_relative_positions,
        position_buckets=position_buckets,
    )


def index_from_lookup(lookup: torch.Tensor) -> torch.Tensor:
    """Expand a ``distance_lookup`` to the ``(n, n)`` index: ``lookup[i - j + n - 1]``.

    The index is a Toeplitz matrix (constant along each diagonal), so it is read
    as a strided view of the reversed lookup and copied once.

    Shapes:
        lookup: ``(2n - 1,)``
        output: ``(n, n)``
    """
    lookup = check_int_tensor("lookup", lookup)
    if lookup.dim() != 1 or lookup.shape[0] % 2 == 0 and lookup.shape[0] > 0:
        raise ValueError(
            "lookup must be a (2n - 1,) tensor (a distance_lookup), got shape "
            f"{tuple(lookup.shape)}"
        )
    n = (lookup.shape[0] + 1) // 2
    if n == 0:
        return lookup.new_empty(0, 0)
    reversed_rows = lookup.flip(0).as_strided(
        (n, n), (1, 1)
    )  # [a, j] = lookup[2n - 2 - a - j]
    return reversed_rows.flip(0)  # [i, j] = lookup[n - 1 + i - j]


def attention_span(max_relative_positions: int, position_buckets: int = -1) -> int:
    """The span ``k``: ``position_buckets`` if > 0, else ``max_relative_positions``.

    The relative-position table has ``2 * attention_span(...)`` rows.
    """
    k = check_int("max_relative_positions", max_relative_positions, minimum=1)
    buckets = check_buckets(k, position_buckets)
    return buckets if buckets > 0 else k


def check_buckets(max_relative_positions: int, position_buckets: int) -> int:
    """The bucket rule, checked here and nowhere else; returns ``position_buckets``.

    ``position_buckets`` is ``-1`` (or ``0``) for no buckets, or a count with
    ``2 <= position_buckets <= max_relative_positions`` and
    ``max_relative_positions > position_buckets // 2 + 1`` (so that the log
    scale of ``log_bucket_position`` is defined). Anything else, ``-5`` included,
    is a ``ValueError`` naming ``position_buckets``.
    """
    buckets = check_int("position_buckets", position_buckets)
    if buckets in (-1, 0):
        return buckets
    if not 2 <= buckets <= max_relative_positions or (
        max_relative_positions - 1 <= buckets // 2
    ):
        raise ValueError(
            "position_buckets must be -1 (no buckets) or an int with 2 <= "
            "position_buckets <= max_relative_positions and max_relative_positions > "
            f"position_buckets // 2 + 1, got position_buckets={buckets} and "
            f"max_relative_positions={max_relative_positions}"
        )
    return buckets


def exact_bucket_limit(bucket_size: int) -> int:
    """The largest ``|r|`` that ``log_bucket_position`` keeps exact, half the buckets.

    That is ``bucket_size // 2``.
    """
    return check_int("bucket_size", bucket_size, minimum=2) // 2


__all__ = [
    "relative_positions",
    "delta",
    "log_bucket_position",
    "position_index",
    "relative_position_index",
    "distance_lookup",
    "index_from_lookup",
    "attention_span",
    "check_buckets",
    "exact_bucket_limit",
]
