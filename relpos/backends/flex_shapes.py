"""Shapes that stay fixed while a sequence grows, so the compiled kernel compiles once.

torch compiles FlexAttention's kernel for each shape of its inputs and of every
tensor the ``score_mod`` reads, and guards on every Python number the
``score_mod`` closes over. Decoding with a ``KVCache`` adds a key at every step,
so without care each step compiles a kernel of its own (seconds each on the CPU)
until torch's recompile limit sends the kernel to its uncompiled path, which
stores ``n x n`` scores.

On the CPU the kernel pads the sequence to a multiple of 16 anyway (torch 2.13's
compiled CPU kernel needs it, ``relpos.backends.flex``). :func:`fixed_shapes`
pads everything else the ``score_mod`` reads to the same buckets:

- the queries, keys and values, the positions and every mask, to a multiple of 16
  positions (a padded key is masked out; a padded query's output is dropped);
- the rows (``pos_key``, ``pos_query``, ``row_bias``) to a multiple of 16 rows,
  which no distance reads;
- the lookup, to a reach ``L'`` that is a multiple of 16, its two end entries
  repeated: a distance between ``L`` and ``L'`` reads the row it read before;
- the real lengths, as 0-d tensors instead of numbers.

A decoding step then reuses the previous step's kernel until the keys cross a
multiple of 16 (``tests/test_flex_shapes.py`` counts the compilations).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F

from ..masks import Mask
from .registry import PositionTerms

#: Lengths, rows and the lookup's reach are rounded up to a multiple of this.
BUCKET = 16


class Fixed(NamedTuple):
    """The kernel's inputs at bucketed shapes, and the real lengths as tensors."""

    query: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor
    pos_key: torch.Tensor | None
    pos_query: torch.Tensor | None
    terms: PositionTerms | None
    mask: Mask
    query_len: torch.Tensor
    key_len: torch.Tensor


def round_up(n: int, multiple: int = BUCKET) -> int:
    """The smallest multiple of ``multiple`` that is at least ``n`` (0 stays 0)."""
    return -(-n // multiple) * multiple


def pad_to(
    t: torch.Tensor | None, dim: int, length: int, *, copy: bool = False
) -> torch.Tensor | None:
    """``t`` with zeros (False for a bool tensor) appended along ``dim`` to ``length``;
    with ``copy``, a new tensor even when ``t`` is that long already.

    torch guards on which captured tensors are one and the same: the query and
    key positions are often one tensor, and padding separates them, so the
    ``score_mod``'s small tensors are always copied, or a length at a multiple of
    16 would compile a kernel of its own.

    Shapes:
        t: any, ``t.shape[dim] <= length``; output: ``t.shape`` with ``length`` at
        ``dim``
    """
    if t is None:
        return None
    if t.shape[dim] == length:
        return t.clone() if copy else t
    dim = dim % t.dim()
    pad = [0, 0] * (t.dim() - 1 - dim) + [0, length - t.shape[dim]]
    return F.pad(t, pad)


def extend_lookup(lookup: torch.Tensor, reach: int) -> torch.Tensor:
    """The lookup of reach ``L`` as one of reach ``reach >= L``: the row of every
    distance is unchanged (a distance past ``L`` reads an end row either way).

    Shapes:
        lookup: ``(2L + 1,)``; output: ``(2 * reach + 1,)``
    """
    extra = reach - (lookup.shape[0] - 1) // 2
    if extra == 0:
        return lookup
    return torch.cat([lookup[:1].expand(extra), lookup, lookup[-1:].expand(extra)])


def _rows(pos_key, pos_query, terms: PositionTerms | None) -> int:
    for rows in (pos_key, pos_query):
        if rows is not None:
            return rows.shape[-2]
    if terms is not None and terms.row_bias is not None:
        return terms.row_bias.shape[-1]
    return 0


def fixed_shapes(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    pos_key: torch.Tensor | None,
    pos_query: torch.Tensor | None,
    terms: PositionTerms | None,
    mask: Mask | None,
) -> Fixed:
    """Every input of the kernel and its ``score_mod`` at bucketed shapes.

    The ``score_mod`` must read the real lengths from ``query_len`` and ``key_len``
    (``make_score_mod`` does): it masks the keys past ``key_len`` and clamps each
    index to the real ones. Relative values (``terms.value_rows``) are not
    bucketed: on the CPU they take the gather formulation.

    Shapes:
        query: ``(b, h, i, d)``; key, value: ``(b, h, j, d)``; pos_*: ``(h, m, d)``
        output: ``i``, ``j`` and ``m`` rounded up to a multiple of 16 (the lookup
        ``(2L' + 1,)``); ``query_len``, ``key_len``: ``()`` long
    """
    i, j = query.shape[-2], key.shape[-2]
    qn, kn = round_up(i), round_up(j)
    mask = Mask() if mask is None else mask
    mask = mask._replace(
        keys=pad_to(mask.keys, -1, kn, copy=True),  # (b, kn)
        pairs=pad_to(pad_to(mask.pairs, -1, kn), -2, qn, copy=True),  # (b, qn, kn)
        query_documents=pad_to(mask.query_documents, -1, qn, copy=True),  # (b, qn)
        key_documents=pad_to(mask.key_documents, -1, kn, copy=True),  # (b, kn)
    )
    rows = round_up(_rows(pos_key, pos_query, terms))
    if terms is not None:
        lookup = terms.lookup
        if lookup is not None:
            lookup = extend_lookup(lookup, round_up(terms.reach))
        terms = terms._replace(
            query_positions=pad_to(terms.query_positions, -1, qn, copy=True),
            key_positions=pad_to(terms.key_positions, -1, kn, copy=True),  # (B, kn)
            lookup=lookup,
            row_bias=pad_to(terms.row_bias, -1, rows),  # (h, rows)
        )
    device = query.device
    return Fixed(
        pad_to(query, -2, qn),  # (b, h, qn, d)
        pad_to(key, -2, kn),  # (b, h, kn, d)
        pad_to(value, -2, kn),  # (b, h, kn, d)
        pad_to(pos_key, -2, rows),  # (h, rows, d)
        pad_to(pos_query, -2, rows),  # (h, rows, d)
        terms,
        mask,
        torch.tensor(i, device=device),
        torch.tensor(j, device=device),
    )


__all__ = ["BUCKET", "Fixed", "extend_lookup", "fixed_shapes", "pad_to", "round_up"]
