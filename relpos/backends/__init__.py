"""The attention kernels ("backends"), one function each, in one registry.

An attention module builds the per-head queries, keys and values (turned by
their positions first, for rotary) and its scheme's :class:`PositionTerms`;
then it hands them to the kernel its ``backend`` names, as x-transformers'
``Attend`` does. Every kernel has one signature::

    attend(query, key, value, terms, mask, scale, dropout_p) -> context

and computes ``softmax(scale * q_i . k_j + the terms at (i, j))`` over the keys
the ``mask`` (a ``relpos.masks.Mask``: padding, pairs, documents, causal)
allows, dropout ``dropout_p`` on the probabilities, times the values, plus the
terms' relative values. ``terms=None`` is content attention only. A kernel may
also give a ``scores`` function, the same computation with every term kept
(``return_scores=True``); without one, the gather scores are used.

Every scheme runs on every kernel: the terms are one interface (c2p and p2c
rows, a bias per row, a bias function of the distance, value rows), so a new
scheme needs no kernel of its own and a new kernel serves every scheme.

A new kernel is one file holding its function and one call::

    relpos.register_backend("mine", attend)

after which ``backend="mine"`` works in every module and ``"mine" in
relpos.BACKENDS``. The built-in ones: ``naive`` (every pair's row, the literal
construction), ``gather`` (score against the rows, gather, then torch's fused
attention) and ``flex`` (FlexAttention; nothing ``n x n`` stored).

Nothing here imports an attention module: the attentions import this registry,
the kernels import ``relpos.scores`` and ``relpos.positions``.

Shapes:
    query: ``(b, h, i, d)``; key, value: ``(b, h, j, d)``; output ``(b, h, i, d)``
    terms.lookup: ``(2L + 1,)``; terms.query_positions: ``(b or 1, i)``
"""

from __future__ import annotations

from . import flex, gather, naive, terms
from .registry import (
    BACKENDS,
    Attend,
    Backend,
    PositionTerms,
    get_backend,
    register_backend,
)

# The built-in kernels: one line each.
register_backend("naive", naive.attend, scores=naive.scores)
register_backend("gather", gather.attend, scores=gather.scores)
register_backend("flex", flex.attend)

__all__ = [
    "Attend",
    "BACKENDS",
    "Backend",
    "PositionTerms",
    "get_backend",
    "register_backend",
]
