"""KERPLE, kernelised relative positions (Chi et al. 2022, NeurIPS): a learned kernel.

A content-free bias that is a conditionally positive definite kernel of the
distance, with two learned positive scalars per head, ``r1`` and ``r2``:

- logarithmic: ``-r1 * log(1 + r2 * |i - j|)``;
- power: ``-r1 * |i - j|^r2`` with ``0 < r2 <= 2``; ALiBi is this kernel at
  ``r2 = 1`` with ``r1`` fixed to its slope.

The paper writes ``|m - n|``; a kernel of the magnitude, it does not depend on
the sign, so the book's ``i - j`` gives the same bias. The paper's models are
causal; an encoder here uses the same kernel of ``|i - j|`` for keys ahead, and
the causal form is the same bias under the causal mask.

Reference code (chijames/KERPLE, ``megatron/mpu/layers.py``, classes
``ParallelKerpleLog`` and ``ParallelKerplePower``): the log kernel's ``r1``
(their ``bias_p``) starts uniform in ``[0, 2]`` and ``r2`` (``bias_a``) uniform
in ``[0, 1]``; the power kernel's ``r1`` (``bias_a``) uniform in ``[0, 1]`` and
``r2`` (``bias_p``) uniform in ``[0, 2]``. There the constraint is kept by
clamping the stored values to ``[0.01, ...]`` (and ``r2 <= 2``) at every step.
Here the same starting values are drawn (and raised to 0.01 likewise), but the
constraint is a parametrisation instead, so that it holds inside an
elementwise formula a kernel can call: ``r = softplus(raw)`` for the positive
ones and ``r2 = 2 * sigmoid(raw)`` for the power's exponent (its start is kept
below 1.99, where the sigmoid still has a gradient).

Shapes:
    h: heads; r: distances ``i - j``; i, j: query and key positions
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..checks import check_bool, check_choice, check_int, check_int_tensor
from .attention import BiasSelfAttention

#: The two kernels of the paper.
KERNELS = ("log", "power")
#: The least starting value of a parameter (the reference code's clamp).
FLOOR = 1e-2


def _check_parameters(r1: object, r2: object) -> tuple[torch.Tensor, torch.Tensor]:
    for name, value in (("r1", r1), ("r2", r2)):
        ok = isinstance(value, torch.Tensor) and value.is_floating_point()
        if not ok or value.dim() != 1:
            raise TypeError(f"{name} must be a floating tensor of shape (h,), got "
                            f"{getattr(value, 'shape', type(value).__name__)}")
        if not bool((value > 0).all()):
            raise ValueError(f"{name} must be > 0 in every head, got {value.tolist()}")
    if r1.shape != r2.shape:
        raise ValueError(
            f"r2 must have the shape of r1 {tuple(r1.shape)}, got {tuple(r2.shape)}"
        )
    return r1, r2


def _kernel(kernel: str, distance: torch.Tensor, r1, r2) -> torch.Tensor:
    if kernel == "log":
        return -r1 * torch.log1p(r2 * distance)
    return -r1 * distance.pow(r2)


def _heads_first(rel: torch.Tensor, r1, r2, kernel: str) -> torch.Tensor:
    rel = check_int_tensor("rel", rel)
    r1, r2 = _check_parameters(r1, r2)
    if kernel == "power" and not bool((r2 <= 2).all()):
        raise ValueError(f"r2 must be <= 2 for the power kernel, got {r2.tolist()}")
    shape = (-1, *([1] * rel.dim()))  # (h, 1, ..., 1)
    distance = rel.abs().to(r1.dtype)  # (*)
    return _kernel(kernel, distance, r1.reshape(shape), r2.reshape(shape))  # (h, *)


def kerple_log_bias(
    rel: torch.Tensor, r1: torch.Tensor, r2: torch.Tensor
) -> torch.Tensor:
    """KERPLE's logarithmic bias ``-r1 * log(1 + r2 * |r|)``, one per head.

    Args:
        rel: integer tensor of distances ``i - j``.
        r1, r2: floating tensors, one positive value per head.

    Shapes:
        rel: ``(*)``; r1, r2: ``(h,)``
        output: ``(h, *)``, the dtype of ``r1``
    """
    return _heads_first(rel, r1, r2, "log")


def kerple_power_bias(
    rel: torch.Tensor, r1: torch.Tensor, r2: torch.Tensor
) -> torch.Tensor:
    """KERPLE's power bias ``-r1 * |r|^r2``, one per head (``0 < r2 <= 2``).

    Args:
        rel: integer tensor of distances ``i - j``.
        r1: floating tensor, one positive value per head.
        r2: floating tensor, one value in ``(0, 2]`` per head.

    Shapes:
        rel: ``(*)``; r1, r2: ``(h,)``
        output: ``(h, *)``, the dtype of ``r1``
    """
    return _heads_first(rel, r1, r2, "power")


def _inverse_softplus(value: torch.Tensor) -> torch.Tensor:
    return value + torch.log(-torch.expm1(-value))


class KerpleBias(nn.Module):
    """KERPLE's learned kernel bias: two positive scalars per head.

    Args:
        num_heads: number of heads.
        kernel: ``"log"`` or ``"power"``.

    Attributes:
        raw_r1: ``(h,)`` unconstrained; ``r1``, the value the kernel reads, is its
            positive transform.
        raw_r2: ``(h,)`` unconstrained; likewise for ``r2``.

    Shapes:
        forward: rel ``(i, j)`` -> ``(h, i, j)``
    """

    #: ``bias_at`` reads the distance alone (``PositionTerms.distance_only``).
    distance_only = True

    def __init__(self, num_heads: int, kernel: str = "log") -> None:
        super().__init__()
        self.num_heads = check_int("num_heads", num_heads, minimum=1)
        self.kernel = check_choice("kernel", kernel, KERNELS)
        h = self.num_heads
        if kernel == "log":
            r1, r2 = torch.rand(h) * 2.0, torch.rand(h)  # the reference's starts
        else:
            r1, r2 = torch.rand(h), torch.rand(h) * 2.0
        r1, r2 = r1.clamp(min=FLOOR), r2.clamp(min=FLOOR)
        self.raw_r1 = nn.Parameter(_inverse_softplus(r1))
        if kernel == "log":
            raw_r2 = _inverse_softplus(r2)
        else:
            raw_r2 = torch.logit(r2.clamp(max=2.0 - FLOOR) / 2.0)
        self.raw_r2 = nn.Parameter(raw_r2)

    @property
    def r1(self) -> torch.Tensor:
        """The kernel's scale, ``softplus(raw_r1) > 0``, per head ``(h,)``."""
        return F.softplus(self.raw_r1)

    @property
    def r2(self) -> torch.Tensor:
        """``softplus(raw_r2) > 0`` (log) or ``2 sigmoid(raw_r2)`` in ``(0, 2)``
        (power), per head ``(h,)``."""
        if self.kernel == "log":
            return F.softplus(self.raw_r2)
        return 2.0 * torch.sigmoid(self.raw_r2)

    def bias_at(
        self,
        head: torch.Tensor,
        rel: torch.Tensor,
        query_position: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The bias of head ``head`` at distance ``rel`` (the query's position unused).

        Elementwise (no checks, no reading of values): FlexAttention's
        ``score_mod`` may call it on 0-dim tensors.

        Shapes:
            head, rel: broadcastable integer tensors ``(*)``
            output: ``(*)``
        """
        distance = rel.abs().to(self.raw_r1.dtype)
        return _kernel(self.kernel, distance, self.r1[head], self.r2[head])

    def forward(
        self, rel: torch.Tensor, query_positions: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The bias of each distance, one per head.

        Shapes:
            rel: ``(i, j)``; query_positions: ignored
            output: ``(h, i, j)``
        """
        rel = check_int_tensor("rel", rel)
        if rel.dim() != 2:
            raise ValueError(f"rel must have shape (i, j), got {tuple(rel.shape)}")
        heads = torch.arange(self.num_heads, device=rel.device)[:, None, None]
        return self.bias_at(heads, rel)  # (h, i, j)

    def extra_repr(self) -> str:
        return f"num_heads={self.num_heads}, kernel={self.kernel!r}"


class KerpleSelfAttention(BiasSelfAttention):
    """Self-attention with KERPLE's kernel bias of ``|i - j|``.

    ``logits[b, h, i, j] = q_i . k_j / sqrt(d) + kernel_h(|i - j|)``.

    Args:
        hidden_size, num_heads, dropout: as for ``SchemeSelfAttention``.
        kernel: ``"log"`` (the default) or ``"power"``.
        causal: the causal attention (keys ``j <= i`` only), the same bias.

    Shapes:
        hidden_states: ``(b, n, hidden)``; attention_mask: ``(b, n)``
        output: ``(b, n, hidden)``
    """

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        kernel: str = "log",
        dropout: float = 0.0,
        *,
        causal: bool = False,
        backend: str = "gather",
        num_kv_heads: int | None = None,
    ) -> None:
        check_bool("causal", causal)
        bias = KerpleBias(check_int("num_heads", num_heads, minimum=1), kernel)
        super().__init__(
            hidden_size, num_heads, bias, dropout, causal=causal, backend=backend,
            num_kv_heads=num_kv_heads,
        )


# -- registration (relpos.schemes.registry) -------------------------------------------

from .registry import (  # noqa: E402
    PositionEntries,
    SchemeRegistration,
    element_wise,
    register,
)

register(
    SchemeRegistration(
        "kerple",
        KerpleSelfAttention,
        # coverage: a fixed formula of |i - j| whose two scalars every pair shares
        entries=lambda attention, rel: {
            "distance": PositionEntries(rel.abs().long(), False, None, none=None)
        },
        variants={"kerple-power": {"kernel": "power"}},
        content_free=True,
        arithmetic=element_wise,
    )
)


__all__ = [
    "KERNELS",
    "KerpleBias",
    "KerpleSelfAttention",
    "kerple_log_bias",
    "kerple_power_bias",
]
