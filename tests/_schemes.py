"""Every attention module of ``_every.MODULES`` (the registry's schemes, DeBERTa's
two forms, content attention) in float32, with the inputs the compile and export
tests share."""

from __future__ import annotations

import torch

import relpos
from _every import HIDDEN, MODULES
from _every import build as build_float64


def scheme_names() -> list[str]:
    """Every module's name, read from the registries (``_every.MODULES``)."""
    return list(MODULES)


def build(name: str, backend: str, causal: bool = False) -> relpos.SelfAttention:
    """Module ``name`` on ``backend`` in float32 (flex compiles float32 on the CPU).
    """
    return build_float64(name, backend, causal=causal, dtype=torch.float32)


def padded(batch: int, length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Input ``(b, n, hidden)`` and a bool key mask ``(b, n)`` padding row 1's end.

    Shapes:
        output: ``(b, n, hidden)``, ``(b, n)``
    """
    x = torch.randn(batch, length, HIDDEN)
    mask = torch.ones(batch, length, dtype=torch.bool)
    mask[1, length - 2:] = False
    return x, mask


def shifted_positions(batch: int, length: int) -> torch.Tensor:
    """Per-sequence positions ``(b, n)``: row ``r`` starts at ``3 r`` (left padding).

    Shapes:
        output: ``(b, n)``
    """
    start = 3 * torch.arange(batch)[:, None]  # (b, 1)
    return start + torch.arange(length)[None]  # (b, n)


class Call(torch.nn.Module):
    """``attention(x, mask)`` as a module of two tensors (what export and trace take).
    """

    def __init__(self, attention: torch.nn.Module) -> None:
        super().__init__()
        self.attention = attention

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.attention(x, mask)
