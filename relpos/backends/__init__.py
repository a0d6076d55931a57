"""The attention kernels ("backends"), one function each, in one registry.

An attention module builds the per-head queries, keys and values and, for a
relative scheme, its :class:`PositionTerms`; then it hands them to the kernel
its ``backend`` names, as x-transformers' ``Attend`` does. Every kernel has one
signature::

    attend(query, key, value, terms, key_mask, scale, dropout_p, *, causal=False)
        -> context

and computes ``softmax(scale * (q_i . k_j + q_i . Pk[row] + k_j . Pq[row]))``
over the unpadded keys, dropout ``dropout_p`` on the probabilities, times the
values; ``row = lookup[i - j + n - 1]`` and a missing term adds nothing
(``terms=None``: content attention only). With ``causal=True`` query ``i`` reads
keys ``j <= i`` only; a module passes the keyword only when it is True, so a
kernel without it still serves bidirectional attention. A kernel may also give
a ``scores`` function, the same computation with every term kept
(``return_scores=True``); without one, the gather scores are used.

A new kernel is one file holding its function and one call::

    relpos.register_backend("mine", attend)

after which ``backend="mine"`` works in every module and ``"mine" in
relpos.BACKENDS``. The built-in ones: ``naive`` (the per-pair table, the
literal construction), ``gather`` (score against the ``2k`` rows, gather, then
torch's fused attention) and ``flex`` (FlexAttention; nothing ``n x n`` stored).

Nothing here imports an attention module: the attentions import this registry,
the kernels import ``relpos.scores`` and ``relpos.positions``.

Shapes:
    query: ``(b, h, i, d)``; key, value: ``(b, h, j, d)``; key_mask: ``(b, j)`` bool
    terms.table: ``(r, hidden)``; terms.lookup: ``(2n - 1,)``; output ``(b, h, i, d)``
"""

from __future__ import annotations

from . import flex, gather, naive
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
