"""The registry of attention kernels and the terms they are handed (see
``relpos.backends``).

Shapes:
    terms.table: ``(r, hidden)``; terms.lookup: ``(2n - 1,)``
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Callable, NamedTuple, Protocol

import torch


class PositionTerms(NamedTuple):
    """DeBERTa's relative terms: the table, how each term projects it, the rows.

    ``project_key(rows)`` turns table rows ``(m, hidden)`` into the c2p position
    keys ``(h, m, d)``; ``project_query`` likewise for p2c; ``None`` for a term
    not used. A kernel projects the ``2k`` rows once (gather, flex) or every
    pair's row (naive).

    Shapes:
        table: ``(r, hidden)``; lookup: ``(2n - 1,)``, the row of ``i - j``
        project_key(rows), project_query(rows): ``(m, hidden)`` -> ``(h, m, d)``
    """

    table: torch.Tensor
    lookup: torch.Tensor
    project_key: Callable[[torch.Tensor], torch.Tensor] | None
    project_query: Callable[[torch.Tensor], torch.Tensor] | None


class Attend(Protocol):
    """The signature of a kernel (see ``relpos.backends``).

    ``causal=True``: query ``i`` attends to keys ``j <= i`` only (in the order of
    the sequence), on top of ``key_mask``. A module passes ``causal`` only when it
    is True, so a kernel written without the keyword keeps working for
    bidirectional attention (and fails loudly, a ``TypeError``, for causal).

    Shapes:
        query: ``(b, h, i, d)``; key, value: ``(b, h, j, d)``; key_mask: ``(b, j)``
        output: ``(b, h, i, d)``
    """

    def __call__(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        terms: PositionTerms | None,
        key_mask: torch.Tensor | None,
        scale: float,
        dropout_p: float,
        *,
        causal: bool = False,
    ) -> torch.Tensor: ...


class Backend(NamedTuple):
    """A registered kernel: its ``attend`` and optionally its ``scores``."""

    name: str
    attend: Attend
    scores: Callable | None


_REGISTRY: dict[str, Backend] = {}


class _Names(Sequence):
    """The registered backend names, in registration order (a live, read-only view)."""

    def __getitem__(self, item):
        return tuple(_REGISTRY)[item]

    def __len__(self) -> int:
        return len(_REGISTRY)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in _REGISTRY

    def __eq__(self, other: object) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, Sequence) else other)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return repr(tuple(_REGISTRY))


#: The names ``backend=`` accepts: ``("naive", "gather", "flex")`` and any registered.
BACKENDS: Sequence[str] = _Names()


def register_backend(
    name: str, attend: Attend, *, scores: Callable | None = None, replace: bool = False
) -> None:
    """Make ``attend`` available as ``backend=name`` (signature: the module docstring).

    ``scores(query, key, terms, key_mask, scale, *, causal=False) ->
    AttentionScores`` is optional (``causal`` is passed only when True).
    A taken ``name`` is a ``ValueError`` unless ``replace=True``.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"name must be a plain identifier string, got {name!r}")
    if not callable(attend):
        raise TypeError(f"attend must be callable, got {type(attend).__name__}")
    if scores is not None and not callable(scores):
        raise TypeError(f"scores must be callable or None, got {type(scores).__name__}")
    if name in _REGISTRY and not replace:
        raise ValueError(f"backend {name!r} is registered already; pass replace=True")
    _REGISTRY[name] = Backend(name, attend, scores)


def get_backend(name: str) -> Backend:
    """The kernel registered as ``name``; a ``ValueError`` naming ``backend`` otherwise.
    """
    if not isinstance(name, str) or name not in _REGISTRY:
        raise ValueError(f"backend must be one of {tuple(_REGISTRY)}, got {name!r}")
    return _REGISTRY[name]


__all__ = [
    "Attend",
    "BACKENDS",
    "Backend",
    "PositionTerms",
    "get_backend",
    "register_backend",
]
