"""The registry of attention kernels and the terms they are handed (see
``relpos.backends``).

Shapes:
    terms.lookup: ``(2L + 1,)``; terms.table: ``(m, hidden)``
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Callable, NamedTuple, Protocol

import torch

from ..masks import Mask


class PositionTerms(NamedTuple):
    """What a scheme adds to attention, in a form every kernel reads the same way.

    A pair ``(query i, key j)`` has the distance ``rel = query_positions[i] -
    key_positions[j]`` and reads row ``lookup[clamp(rel, -L, L) + L]`` of the
    scheme's rows (``2L + 1`` is the lookup's length: every distance beyond
    ``L`` reads the row of ``L``). Each field is optional:

    - ``table`` with ``project_key``/``project_query``: DeBERTa's shared table and
      how c2p and p2c project it (``(m, hidden)`` rows to ``(h, m, d)``); a kernel
      projects the rows once (gather, flex) or every pair's row (naive).
    - ``key_rows``: c2p rows given per head already (Shaw's ``a^K``,
      Transformer-XL's projected sinusoid): ``q_i . key_rows[h, row]``.
    - ``row_bias``: one number per head and row, added as it is (T5's buckets).
    - ``bias``: a function ``bias(head, rel, query_position)`` of broadcastable
      integer tensors, added as it is (ALiBi, KERPLE, FIRE). It uses elementwise
      operations only, so FlexAttention's ``score_mod`` calls it on single
      entries and the other kernels on whole ``(b, h, i, j)`` grids.
    - ``value_rows``: added to the context of query ``i`` as
      ``sum_j p_ij value_rows[h, row]`` (Shaw's relative values).
    - ``distance_only``: ``bias`` reads ``head`` and ``rel`` alone, never
      ``query_position`` (ALiBi, KERPLE; not FIRE), so a kernel may evaluate it
      once per distance (``relpos.backends.strided``).

    c2p and p2c are multiplied by the kernel's ``scale`` like the content term;
    ``row_bias`` and ``bias`` are logits already.

    Shapes:
        query_positions: ``(b or 1, i)``; key_positions: ``(b or 1, j)``
        lookup: ``(2L + 1,)``; table: ``(m, hidden)``
        key_rows, value_rows: ``(h, m, d)``; row_bias: ``(h, m)``
    """

    query_positions: torch.Tensor
    key_positions: torch.Tensor
    lookup: torch.Tensor | None = None
    table: torch.Tensor | None = None
    project_key: Callable[[torch.Tensor], torch.Tensor] | None = None
    project_query: Callable[[torch.Tensor], torch.Tensor] | None = None
    key_rows: torch.Tensor | None = None
    row_bias: torch.Tensor | None = None
    bias: Callable[..., torch.Tensor] | None = None
    value_rows: torch.Tensor | None = None
    distance_only: bool = False

    @property
    def reach(self) -> int:
        """``L``: the largest distance with a row of its own in ``lookup``."""
        return 0 if self.lookup is None else (self.lookup.shape[0] - 1) // 2

    @property
    def has_logit_terms(self) -> bool:
        """Whether anything is added to the logits (not only rotations)."""
        return any(
            field is not None
            for field in (
                self.project_key, self.project_query, self.key_rows,
                self.row_bias, self.bias,
            )
        )


class Attend(Protocol):
    """The signature of a kernel (see ``relpos.backends``).

    ``mask`` (a ``relpos.masks.Mask``, or None) holds the key padding, any pair
    mask, document ids and the causal rule.

    Shapes:
        query: ``(b, h, i, d)``; key, value: ``(b, h, j, d)``
        output: ``(b, h, i, d)``
    """

    def __call__(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        terms: PositionTerms | None,
        mask: Mask | None,
        scale: float,
        dropout_p: float,
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

    ``scores(query, key, terms, mask, scale) -> AttentionScores`` is optional.
    A taken ``name`` is a ``ValueError`` unless ``replace=True``.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"name must be a plain identifier string, got {name!r}")
    if not callable(attend):
        raise TypeError(f"attend must be callable, got {type(attend).__name__}")
    if scores is not None and not callable(scores):
        raise TypeError(f"scores must be callable or None, got {type(scores).__name__}")
    if not isinstance(replace, bool):
        raise TypeError(f"replace must be a bool, got {type(replace).__name__}")
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
