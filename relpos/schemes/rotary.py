"""Rotary position embedding, RoPE (Su et al. 2021): turn queries and keys by position.

Each pair of a head's dimensions is a point in a plane; the query at position
``m`` is turned by ``m * theta_t`` in plane ``t``, the key at ``n`` by
``n * theta_t``, with ``theta_t = base^(-2t / d)``. A rotation by ``a`` followed
by the dot product with a vector rotated by ``b`` only sees ``a - b``, so::

    (R_m q) . (R_n k) = q . R_{n - m} k,   a function of q, k and m - n only

The paper writes ``m - n``, query minus key: the book's ``i - j``. Nothing is
learned and nothing is added to the logits; the scheme lives in ``rotate``.

Layout. The paper pairs dimensions ``(2t, 2t + 1)``; this module pairs ``t``
with ``t + d/2`` ("rotate half"), as GPT-NeoX and Llama (``transformers``'
``apply_rotary_pos_emb``) do. The two differ by a fixed permutation of the
head dimensions, applied to queries and keys alike, which the learned
projections absorb: the same family of models.

Shapes:
    h: heads; d: head width (even); n: positions; t: plane, ``0 <= t < d/2``
"""

from __future__ import annotations

import torch

from ..checks import check_int, check_int_tensor
from .attention import SchemeSelfAttention


def _check_head_size(head_size: int) -> int:
    head_size = check_int("head_size", head_size, minimum=2)
    if head_size % 2:
        raise ValueError(
            f"head_size must be even (dimensions rotate in pairs), got {head_size}"
        )
    return head_size


def _check_base(base: float) -> float:
    if isinstance(base, bool) or not isinstance(base, (int, float)) or not base > 1:
        raise ValueError(f"base must be a number > 1, got {base!r}")
    return float(base)


def rotary_frequencies(head_size: int, base: float = 10000.0) -> torch.Tensor:
    """``theta_t = base^(-2t / d)`` for each plane ``t``, in float64.

    Shapes:
        output: ``(d/2,)``
    """
    head_size = _check_head_size(head_size)
    planes = torch.arange(0, head_size, 2, dtype=torch.float64)  # (d/2,)
    return torch.pow(_check_base(base), -planes / head_size)


def rotary_angles(
    positions: torch.Tensor, head_size: int, base: float = 10000.0
) -> torch.Tensor:
    """The angle ``position * theta_t`` of every position and plane, in float64.

    Shapes:
        positions: ``(*)`` integers
        output: ``(*, d/2)``
    """
    positions = check_int_tensor("positions", positions)
    frequencies = rotary_frequencies(head_size, base).to(positions.device)  # (d/2,)
    return positions.double()[..., None] * frequencies  # (*, d/2)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """``(x1, x2) -> (-x2, x1)`` on the two halves of the last dimension.

    Shapes:
        x: ``(*, d)``
        output: ``(*, d)``
    """
    if not isinstance(x, torch.Tensor) or x.dim() == 0 or x.shape[-1] % 2:
        got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"x must be a (*, d) tensor with d even, got {got}")
    if x.dtype == torch.bool:
        raise TypeError("x must be a floating-point tensor, got dtype torch.bool")
    first, second = x.chunk(2, dim=-1)  # (*, d/2) each
    return torch.cat([-second, first], dim=-1)


def rotate(x: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    """Turn plane ``(t, t + d/2)`` of each vector by its angle.

    ``x * cos(angle) + rotate_half(x) * sin(angle)``, each angle used for both
    dimensions of its plane.

    Args:
        x: queries or keys, the last two dimensions positions and head width.
        angles: ``rotary_angles`` of those positions.

    Shapes:
        x: ``(*, n, d)``; angles: ``(n, d/2)`` or ``(..., n, d/2)``
        output: ``(*, n, d)``
    """
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise TypeError("x must be a floating-point tensor of shape (*, n, d)")
    if not isinstance(angles, torch.Tensor) or not angles.is_floating_point():
        raise TypeError("angles must be a floating-point tensor of shape (n, d/2)")
    expected = (x.shape[-2], x.shape[-1] // 2) if x.dim() >= 2 else None
    if expected is None or tuple(angles.shape[-2:]) != expected or x.shape[-1] % 2:
        raise ValueError(
            "angles must have shape (n, d/2) (or (..., n, d/2), broadcast against x's "
            "leading dimensions) for x of shape (*, n, d) with d even, got "
            f"angles {tuple(angles.shape)} and x {tuple(x.shape)}"
        )
    return _rotate(x, angles)


def _rotate(x: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    both = torch.cat([angles, angles], dim=-1)  # (*, n, d): plane t at t and t + d/2
    return x * both.cos().to(x.dtype) + rotate_half(x) * both.sin().to(x.dtype)


class RotarySelfAttention(SchemeSelfAttention):
    """Self-attention with rotary position embedding on queries and keys.

    Args:
        hidden_size, num_heads, dropout: as for ``SchemeSelfAttention``
            (the head width ``hidden_size // num_heads`` must be even).
        base: ``theta_t = base^(-2t / d)`` (RoFormer and Llama: 10000).
        causal: the causal attention (keys ``j <= i`` only), as in Llama.
        backend: the kernel (``relpos.BACKENDS``): position enters through
            ``rotate`` only, so every kernel runs this scheme.

    Shapes:
        hidden_states: ``(b, n, hidden)``; attention_mask: ``(b, n)``
        output: ``(b, n, hidden)``
    """

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        base: float = 10000.0,
        dropout: float = 0.0,
        *,
        causal: bool = False,
        backend: str = "gather",
        num_kv_heads: int | None = None,
    ) -> None:
        super().__init__(
            hidden_size, num_heads, dropout, backend=backend, causal=causal,
            num_kv_heads=num_kv_heads,
        )
        if self.head_size % 2:
            raise ValueError(
                "hidden_size // num_heads must be even (dimensions rotate in pairs), "
                f"got {self.head_size}"
            )
        self.base = _check_base(base)

    def rotate(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        query_positions: torch.Tensor,
        key_positions: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Each query turned by its position, each key by its own.

        Shapes:
            query: ``(b, h, i, d)``; key: ``(b, h, j, d)``
            query_positions: ``(B, i)``; key_positions: ``(B, j)``
            output: ``(query, key)`` with the same shapes
        """
        d, base = self.head_size, self.base
        query_angles = rotary_angles(query_positions, d, base)  # (B, i, d/2)
        key_angles = rotary_angles(key_positions, d, base)  # (B, j, d/2)
        return _rotate(query, query_angles[:, None]), _rotate(key, key_angles[:, None])

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, base={self.base}"


__all__ = [
    "RotarySelfAttention",
    "rotary_angles",
    "rotary_frequencies",
    "rotate",
    "rotate_half",
]


# -- registration (relpos.schemes.registry) -------------------------------------------

from .registry import (  # noqa: E402
    PositionEntries,
    SchemeRegistration,
    element_wise,
    register,
)

register(
    SchemeRegistration(
        "rotary",
        RotarySelfAttention,
        # coverage: the angle of the signed distance, a fixed formula
        entries=lambda attention, rel: {
            "distance": PositionEntries(rel.long(), False, None, none=None)
        },
        arithmetic=element_wise,
    )
)
