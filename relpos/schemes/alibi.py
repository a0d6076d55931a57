"""ALiBi, attention with linear biases (Press et al. 2022): a fixed slope per head.

Nothing is learned. Head ``h`` subtracts ``slope_h`` times the distance from the
logit, so far keys weigh less, each head at its own rate.

- Causal, as in the paper (a decoder): ``bias[h, i, j] = -slope_h * (i - j)`` for
  keys behind or at the query (``j <= i``); keys ahead are masked, which is
  written here as a bias of ``-inf``. The paper writes the bias row of query
  ``i`` as ``slope * [-(i - 1), ..., -2, -1, 0]``, which is ``-slope * (i - j)``
  in the book's ``i - j``.
- Bidirectional (an encoder, e.g. MosaicBERT): ``bias[h, i, j] = -slope_h * |i - j|``;
  keys ahead are penalised by their distance just like keys behind, so the
  bias alone cannot tell left from right.

BLOOM (``transformers``' ``build_alibi_tensor``) adds ``slope_h * j`` instead,
counting only unpadded keys: for a causal query this differs from
``-slope_h * (i - j)`` by ``-slope_h * i``, a constant of the row, which the
softmax ignores.

Shapes:
    h: heads; i, j: query and key positions; r: distances ``i - j``
"""

from __future__ import annotations

import torch
from torch import nn

from ..checks import check_bool, check_dtype, check_int, check_int_tensor
from .attention import BiasSelfAttention


def _geometric(count: int) -> list[float]:
    """``2^(-8/count)``, its square, ..., its ``count``-th power."""
    start = 2.0 ** (-8.0 / count)
    return [start ** (m + 1) for m in range(count)]


def alibi_slopes(num_heads: int, *, dtype: torch.dtype | None = None) -> torch.Tensor:
    """The paper's slopes ``2^(-8 m / h)``, ``m = 1 .. h``, for ``h`` a power of two.

    Otherwise, with ``c`` the largest power of two below ``h``: the ``c`` slopes of
    ``c`` heads, then every other slope of ``2c`` heads (the 1st, 3rd, ...) for
    the remaining ``h - c`` heads, as in the authors' code and BLOOM.

    Args:
        num_heads: number of heads ``h``.
        dtype: floating dtype of the result (default: torch's default dtype).

    Shapes:
        output: ``(h,)``
    """
    num_heads = check_int("num_heads", num_heads, minimum=1)
    closest = 1 << (num_heads.bit_length() - 1)  # largest power of two <= num_heads
    slopes = _geometric(closest) + _geometric(2 * closest)[0::2][: num_heads - closest]
    slopes = torch.tensor(slopes, dtype=torch.float64)  # (h,)
    dtype = check_dtype("dtype", dtype, floating=True)
    return slopes.to(dtype or torch.get_default_dtype())


def alibi_bias(
    rel: torch.Tensor, slopes: torch.Tensor, *, causal: bool = False
) -> torch.Tensor:
    """ALiBi's bias of each distance ``r = i - j``, one per head.

    Bidirectional: ``-slope * |r|``. Causal: ``-slope * r`` for ``r >= 0`` and
    ``-inf`` for keys ahead (``r < 0``).

    Args:
        rel: integer tensor of distances ``i - j``.
        slopes: floating tensor, one slope per head (``alibi_slopes``).
        causal: the paper's causal form instead of the bidirectional one.

    Shapes:
        rel: ``(*)``; slopes: ``(h,)``
        output: ``(h, *)``, the dtype of ``slopes``
    """
    rel = check_int_tensor("rel", rel)
    check_bool("causal", causal)
    if not isinstance(slopes, torch.Tensor) or not slopes.is_floating_point():
        raise TypeError("slopes must be a floating-point tensor of shape (h,)")
    if slopes.dim() != 1:
        raise ValueError(f"slopes must have shape (h,), got {tuple(slopes.shape)}")
    slope = slopes.reshape(-1, *([1] * rel.dim()))  # (h, 1, ..., 1)
    distance = rel.to(slopes.dtype)  # (*)
    if not causal:
        return -slope * distance.abs()  # (h, *)
    bias = -slope * distance  # (h, *)
    return bias.masked_fill(rel < 0, float("-inf"))


class AlibiBias(nn.Module):
    """ALiBi's fixed bias; the slopes are a buffer, not a parameter.

    Args:
        num_heads: number of heads.
        causal: the causal form (keys ahead get ``-inf``) instead of
            ``-slope * |i - j|``.

    Shapes:
        rel: ``(i, j)`` distances ``i - j``
        output: ``(h, i, j)``
    """

    #: ``bias_at`` reads the distance alone (``PositionTerms.distance_only``).
    distance_only = True

    def __init__(self, num_heads: int, causal: bool = False) -> None:
        super().__init__()
        self.num_heads = check_int("num_heads", num_heads, minimum=1)
        check_bool("causal", causal)
        self.causal = causal
        self.register_buffer("slopes", alibi_slopes(self.num_heads), persistent=False)

    def forward(self, rel: torch.Tensor) -> torch.Tensor:
        """The bias of each distance, one per head.

        Shapes:
            rel: ``(i, j)``
            output: ``(h, i, j)``
        """
        return alibi_bias(rel, self.slopes, causal=self.causal)

    def bias_at(
        self, head: torch.Tensor, rel: torch.Tensor, query_position: torch.Tensor
    ) -> torch.Tensor:
        """The bias of head ``head`` at distance ``rel`` (elementwise; any kernel).

        Shapes:
            head, rel, query_position: broadcastable; output: their broadcast shape
        """
        slope = self.slopes[head]
        distance = rel.to(slope.dtype)
        if not self.causal:
            return -slope * distance.abs()
        return torch.where(rel < 0, float("-inf"), -slope * distance)

    def extra_repr(self) -> str:
        return f"num_heads={self.num_heads}, causal={self.causal}"


class AlibiSelfAttention(BiasSelfAttention):
    """Self-attention with ALiBi's bias ``-slope_h * |i - j|``, or the causal one.

    An encoder's (``causal=False``) adds the bidirectional bias; a decoder's
    (``causal=True``) adds the paper's ``-slope_h * (i - j)`` with ``-inf`` for
    keys ahead (``alibi_bias(..., causal=True)``) and masks them too.

    Args:
        hidden_size, num_heads, dropout: as for ``SchemeSelfAttention``.
        causal: the causal attention with the causal bias.
        backend: the kernel (``relpos.BACKENDS``); every kernel reads the slopes.

    Shapes:
        hidden_states: ``(b, n, hidden)``; attention_mask: ``(b, n)``
        output: ``(b, n, hidden)``
    """

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        dropout: float = 0.0,
        *,
        causal: bool = False,
        backend: str = "gather",
        num_kv_heads: int | None = None,
    ) -> None:
        check_bool("causal", causal)
        bias = AlibiBias(check_int("num_heads", num_heads, minimum=1), causal=causal)
        super().__init__(
            hidden_size, num_heads, bias, dropout, causal=causal, backend=backend,
            num_kv_heads=num_kv_heads,
        )


__all__ = ["AlibiBias", "AlibiSelfAttention", "alibi_bias", "alibi_slopes"]


# -- registration (relpos.schemes.registry) -------------------------------------------

from .registry import (  # noqa: E402
    PositionEntries,
    SchemeRegistration,
    element_wise,
    register,
)

register(
    SchemeRegistration(
        "alibi",
        AlibiSelfAttention,
        # coverage: a fixed formula of i - j (causal) or of |i - j| (bidirectional)
        entries=lambda attention, rel: {
            "distance": PositionEntries(
                (rel if attention.causal else rel.abs()).long(), False, None, none=None
            )
        },
        content_free=True,
        arithmetic=element_wise,
    )
)
