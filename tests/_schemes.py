"""Every attention the library registers, built small, for the compile and export
tests: each scheme of ``relpos.schemes.ATTENTIONS`` plus DeBERTa's attention with
clipped distances and with log buckets."""

from __future__ import annotations

import torch

import relpos
from relpos.schemes import ATTENTIONS

HIDDEN, HEADS = 16, 2

#: DeBERTa's two forms: clipped at k = 4, and 4 log buckets up to distance 16.
DEBERTA = {
    "deberta": dict(max_relative_positions=4),
    "deberta-log": dict(max_relative_positions=16, position_buckets=4),
}


def scheme_names() -> list[str]:
    """The registry's schemes, then DeBERTa's two forms."""
    return [*ATTENTIONS, *DEBERTA]


def build(name: str, backend: str, causal: bool = False) -> relpos.SelfAttention:
    """Scheme ``name``'s attention on ``backend``, in eval mode, from seed 0."""
    torch.manual_seed(0)
    if name in DEBERTA:
        module = relpos.DisentangledSelfAttention(
            HIDDEN, HEADS, backend=backend, causal=causal, **DEBERTA[name]
        )
    else:
        module = ATTENTIONS[name](HIDDEN, HEADS, causal=causal)
        module.backend = backend  # every scheme runs on every kernel
    return module.eval()


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
