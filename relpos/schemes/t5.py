"""T5's bucketed relative bias (Raffel et al. 2020): a learned scalar per head, bucket.

The logit of query ``i`` and key ``j`` in head ``h`` gets ``bias[bucket(i - j), h]``,
whatever the content: a content-free score bias. Small distances each have a
bucket of their own; larger ones share buckets whose width grows with ``log |r|``
up to ``max_distance``, beyond which everything shares the last bucket.

Sign convention. T5 (Mesh TensorFlow and ``transformers``' ``T5Attention``)
buckets ``relative_position = memory_position - query_position``, that is
``j - i``. This module takes the book's ``r = i - j`` and converts:
``t5_bucket(r) == T5Attention._relative_position_bucket(-r)``.

- Bidirectional (the encoder): half of the buckets for keys behind or at the
  query (``r >= 0``), the other half, offset by ``num_buckets // 2``, for keys
  ahead (``r < 0``; T5's ``j - i > 0``). Each half gives its first
  ``num_buckets // 4`` buckets to the exact distances ``0 .. num_buckets // 4 - 1``.
- Causal (the decoder): all buckets for keys behind (``r >= 0``), the first
  ``num_buckets // 2`` exact; keys ahead get bucket 0, like distance 0 (a causal
  mask hides them anyway).

T5 adds the bias to unscaled logits (it folds ``1 / sqrt(d)`` into the weight
initialisation); here the content logits keep ``1 / sqrt(d)`` like every other
scheme and the bias is added as it is.

Shapes:
    r: distances ``i - j``; h: heads; i, j: query and key positions
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..checks import check_bool, check_int, check_int_tensor
from .attention import BiasSelfAttention


def _check_buckets(num_buckets: int, max_distance: int, bidirectional: bool) -> int:
    """Validate the bucket arguments; return ``max_exact`` (exact buckets per side)."""
    if not isinstance(bidirectional, bool):
        raise TypeError(f"bidirectional must be a bool, got {bidirectional!r}")
    minimum = 4 if bidirectional else 2
    num_buckets = check_int("num_buckets", num_buckets, minimum=minimum)
    max_distance = check_int("max_distance", max_distance, minimum=1)
    max_exact = (num_buckets // 2 if bidirectional else num_buckets) // 2
    if max_distance <= max_exact:
        raise ValueError(
            f"max_distance must be > {max_exact} (the exact buckets per side) so the "
            f"log scale is defined, got max_distance={max_distance} for "
            f"num_buckets={num_buckets}"
        )
    return max_exact


def t5_exact_limit(num_buckets: int, *, bidirectional: bool = True) -> int:
    """The number of distances per side with a bucket of their own.

    Distances ``|r| < t5_exact_limit(...)`` are exact: ``num_buckets // 4`` for the
    bidirectional buckets (half the buckets per side, half of those exact),
    ``num_buckets // 2`` for the causal ones.
    """
    if not isinstance(bidirectional, bool):
        raise TypeError(f"bidirectional must be a bool, got {bidirectional!r}")
    minimum = 4 if bidirectional else 2
    num_buckets = check_int("num_buckets", num_buckets, minimum=minimum)
    return (num_buckets // 2 if bidirectional else num_buckets) // 2


def t5_bucket(
    rel: torch.Tensor,
    *,
    num_buckets: int = 32,
    max_distance: int = 128,
    bidirectional: bool = True,
) -> torch.Tensor:
    """T5's bucket of each distance ``r = i - j`` (the book's sign; T5 uses ``j - i``).

    With ``m = max_exact`` exact buckets per side (``t5_exact_limit``) and ``B``
    buckets per side (``num_buckets // 2`` bidirectional, ``num_buckets`` causal),
    a magnitude ``a`` goes to

        a                                                       if a < m
        min(B - 1, m + floor(log(a / m) / log(max_distance / m) * (B - m)))  otherwise

    Bidirectional: ``a = |r|``, plus ``num_buckets // 2`` when the key is ahead
    (``r < 0``). Causal: ``a = max(r, 0)``. The float32 arithmetic follows
    ``transformers``' ``T5Attention._relative_position_bucket`` so that every
    integer equals its result for ``-r``.

    Args:
        rel: integer tensor of distances ``i - j``.
        num_buckets: buckets in all (both sides when bidirectional).
        max_distance: distances from here on share the last bucket of their side.
        bidirectional: the encoder's two-sided buckets, or the causal one-sided ones.

    Returns:
        A ``torch.long`` tensor of buckets in ``[0, num_buckets)``.

    Shapes:
        rel: ``(*)``
        output: ``(*)``
    """
    rel = check_int_tensor("rel", rel).long()
    max_exact = _check_buckets(num_buckets, max_distance, bidirectional)
    # Every distance from max_distance on reads its side's last bucket: clamping
    # there changes no bucket, and keeps abs() of int64's minimum from overflowing.
    rel = rel.clamp(-max_distance, max_distance)
    per_side = num_buckets // 2 if bidirectional else num_buckets
    if bidirectional:
        offset = (rel < 0).long() * per_side  # keys ahead: T5's j - i > 0
        magnitude = rel.abs()
    else:
        offset = torch.zeros_like(rel)
        magnitude = rel.clamp(min=0)  # T5's -min(j - i, 0)
    # The log branch is only used for magnitude >= max_exact; clamping keeps log(0)
    # out of the small ones without changing the large ones.
    large = magnitude.clamp(min=max_exact)
    log_bucket = max_exact + (
        torch.log(large.float() / max_exact)
        / math.log(max_distance / max_exact)
        * (per_side - max_exact)
    ).to(torch.long)
    log_bucket = log_bucket.clamp(max=per_side - 1)
    return offset + torch.where(magnitude < max_exact, magnitude, log_bucket)


class T5Bias(nn.Module):
    """T5's learned bias: one scalar per bucket and head.

    Args:
        num_heads: number of heads.
        num_buckets, max_distance, bidirectional: as for ``t5_bucket``.

    Attributes:
        embedding: ``nn.Embedding(num_buckets, num_heads)``, normal init (std 0.02).

    Shapes:
        rel: ``(i, j)`` distances ``i - j``
        output: ``(h, i, j)``
    """

    def __init__(
        self,
        num_heads: int,
        num_buckets: int = 32,
        max_distance: int = 128,
        bidirectional: bool = True,
    ) -> None:
        super().__init__()
        self.num_heads = check_int("num_heads", num_heads, minimum=1)
        _check_buckets(num_buckets, max_distance, bidirectional)
        self.num_buckets = num_buckets
        self.max_distance = max_distance
        self.bidirectional = bidirectional
        self.embedding = nn.Embedding(num_buckets, self.num_heads)
        nn.init.normal_(self.embedding.weight, mean=0.0, std=0.02)
        # Every distance from max_distance on shares its side's last bucket: the
        # bucket of each distance in [-max_distance, max_distance], at r + reach.
        reach = torch.arange(-max_distance, max_distance + 1)  # (2L + 1,)
        buckets = t5_bucket(
            reach, num_buckets=num_buckets, max_distance=max_distance,
            bidirectional=bidirectional,
        )
        self.register_buffer("lookup", buckets, persistent=False)

    def forward(self, rel: torch.Tensor) -> torch.Tensor:
        """The bias of each distance, one per head.

        Shapes:
            rel: ``(i, j)``
            output: ``(h, i, j)``
        """
        buckets = t5_bucket(
            rel,
            num_buckets=self.num_buckets,
            max_distance=self.max_distance,
            bidirectional=self.bidirectional,
        )  # (i, j)
        return self.embedding(buckets).movedim(-1, 0)  # (h, i, j)

    def row_bias(self) -> torch.Tensor:
        """The bias of every bucket, one row per head (what the kernels read).

        Shapes:
            output: ``(h, num_buckets)``
        """
        return self.embedding.weight.t()  # (h, m)

    def bias_at(
        self, head: torch.Tensor, rel: torch.Tensor, query_position: torch.Tensor
    ) -> torch.Tensor:
        """The bias of head ``head`` at distance ``rel`` (elementwise; any kernel).

        Shapes:
            head, rel, query_position: broadcastable; output: their broadcast shape
        """
        reach = (self.lookup.shape[0] - 1) // 2
        bucket = self.lookup[rel.clamp(-reach, reach) + reach]
        return self.embedding.weight[bucket, head]

    def extra_repr(self) -> str:
        return (
            f"num_heads={self.num_heads}, num_buckets={self.num_buckets}, "
            f"max_distance={self.max_distance}, bidirectional={self.bidirectional}"
        )


class T5SelfAttention(BiasSelfAttention):
    """Self-attention with T5's bucketed bias, two-sided (encoder) or one-sided.

    ``logits[b, h, i, j] = q_i . k_j / sqrt(d) + bias[t5_bucket(i - j), h]``.

    Args:
        hidden_size, num_heads, dropout: as for ``SchemeSelfAttention``.
        num_buckets, max_distance: as for ``t5_bucket`` (T5's defaults 32, 128).
        causal: the causal attention (keys ``j <= i`` only), as T5's decoder.
        bidirectional: the buckets of ``t5_bucket``; ``None`` (the default) means
            ``not causal``: the encoder's two-sided buckets, or the decoder's
            one-sided ones that spend every bucket on keys behind.
        backend: the kernel (``relpos.BACKENDS``); every kernel reads the buckets.

    Shapes:
        hidden_states: ``(b, n, hidden)``; attention_mask: ``(b, n)``
        output: ``(b, n, hidden)``
    """

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        num_buckets: int = 32,
        max_distance: int = 128,
        dropout: float = 0.0,
        *,
        causal: bool = False,
        bidirectional: bool | None = None,
        backend: str = "gather",
        num_kv_heads: int | None = None,
    ) -> None:
        heads = check_int("num_heads", num_heads, minimum=1)
        check_bool("causal", causal)
        if bidirectional is None:
            bidirectional = not causal
        bias = T5Bias(heads, num_buckets, max_distance, bidirectional=bidirectional)
        super().__init__(
            hidden_size, num_heads, bias, dropout, causal=causal, backend=backend,
            num_kv_heads=num_kv_heads,
        )


__all__ = ["T5Bias", "T5SelfAttention", "t5_bucket", "t5_exact_limit"]


# -- registration (relpos.schemes.registry) -------------------------------------------

from .registry import (  # noqa: E402
    PositionEntries,
    SchemeRegistration,
    element_wise,
    register,
)


def _t5_entries(attention: T5SelfAttention, rel: torch.Tensor):
    """Coverage: pairs in the same bucket share its learned row."""
    bias = attention.position_bias
    buckets = t5_bucket(
        rel,
        num_buckets=bias.num_buckets,
        max_distance=bias.max_distance,
        bidirectional=bias.bidirectional,
    )  # (i, j)
    return {"bucket": PositionEntries(buckets, True, "position_bias.embedding.weight")}


register(
    SchemeRegistration(
        "t5",
        T5SelfAttention,
        # as many buckets as deberta-buckets has rows
        settings=lambda config: {
            "num_buckets": 2 * config.position_buckets,
            "max_distance": config.t5_max_distance,
        },
        entries=_t5_entries,
        content_free=True,
        arithmetic=element_wise,
    )
)
