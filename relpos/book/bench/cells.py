"""The cells of the positions-cost benchmark: every scheme on every kernel, and plain.

A *cell* is one scheme on one backend (``relpos.BACKENDS``). The schemes are
the registry's, in its order (``relpos.schemes.scheme_names()``): every
registered scheme and each variant that its registration sizes at the common
span ``k`` (``sized``). DeBERTa, the book's subject, comes first: its table
clipped at ``k`` (``2k`` rows), then ``deberta-buckets``, ``k`` log buckets a
side reaching ``2k`` (DeBERTa-v3's 256 and 512). Shaw's table is clipped at the
same ``k``; every other scheme is built with its class's defaults (T5: 32
buckets up to 128, FIRE: width 32, KERPLE: log).

*Plain attention* is what the cells are measured against: the same three
projections (the cells' own are copied from it), then torch's
``F.scaled_dot_product_attention`` with no positions and no mask. Every module
is called the same way, ``attention(hidden_states)``, without a mask.

Shapes:
    hidden_states: ``(b, n, hidden)``; every forward's output: ``(b, n, hidden)``
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import nn

import relpos
from relpos.schemes import REGISTRY
from relpos.schemes.registry import resolve, scheme_names

PLAIN = "plain"
#: The backend name of plain attention's rows.
SDPA = "sdpa"


#: Registered schemes the committed cost benchmark has not measured yet: TUPE
#: (absolute, registered for the gradient probe) waits for the next full run,
#: with its floor in ``roofline``.
NOT_YET_MEASURED = ("tupe",)


def cost_schemes() -> list[str]:
    """Every registered scheme measured so far, and each variant sized at a span;
    a scheme without positions (``none``) is plain attention, timed as ``PLAIN``."""
    return [
        name for name in scheme_names()
        if name not in NOT_YET_MEASURED and resolve(name)[0].positional
        and (name in REGISTRY or name in resolve(name)[0].sized)
    ]


@dataclass(frozen=True)
class Shapes:
    """The sizes every cell is built with.

    ``span`` is ``k``: DeBERTa's clipped table and Shaw's have ``2k`` (``2k + 1``)
    rows; the registrations' ``sized`` say what each scheme makes of it.
    """

    hidden: int
    heads: int
    span: int
    dtype: torch.dtype
    device: str


def scheme_arguments(scheme: str, shapes: Shapes) -> dict[str, Any]:
    """The constructor arguments of ``scheme`` beyond hidden, heads and backend:
    its variant's changes, then its registration's ``sized`` at ``shapes.span``."""
    return resolve(scheme)[0].arguments_at(scheme, shapes.span)


def plain_projections(shapes: Shapes, seed: int) -> relpos.SelfAttention:
    """The seeded query, key and value projections every module of a run shares."""
    torch.manual_seed(seed)
    module = relpos.SelfAttention(shapes.hidden, shapes.heads)
    return module.to(device=shapes.device, dtype=shapes.dtype).eval()


def build_cell(
    scheme: str, backend: str, shapes: Shapes, projections: relpos.SelfAttention,
    seed: int,
) -> nn.Module:
    """``scheme`` on ``backend``, seeded, with ``projections``' weights, in eval mode.
    """
    if scheme not in cost_schemes():
        raise ValueError(f"scheme must be one of {cost_schemes()}, got {scheme!r}")
    if backend not in relpos.BACKENDS:
        raise ValueError(f"backend must be one of {relpos.BACKENDS}, got {backend!r}")
    arguments = scheme_arguments(scheme, shapes)
    torch.manual_seed(seed)
    registration = resolve(scheme)[0]
    module = registration.attention(
        shapes.hidden, shapes.heads, backend=backend, **arguments
    )
    for name in ("query_proj", "key_proj", "value_proj"):
        getattr(module, name).load_state_dict(getattr(projections, name).state_dict())
    return module.to(device=shapes.device, dtype=shapes.dtype).eval()


def plain_attention(
    projections: relpos.SelfAttention, hidden_states: torch.Tensor
) -> torch.Tensor:
    """Attention without positions: the projections, then torch's fused kernel.

    Shapes:
        hidden_states: ``(b, n, hidden)``; output: ``(b, n, hidden)``
    """
    query = projections.split_heads(projections.query_proj(hidden_states))
    key = projections.split_heads(projections.key_proj(hidden_states))
    value = projections.split_heads(projections.value_proj(hidden_states))
    # query, key, value: (b, h, n, d)
    context = F.scaled_dot_product_attention(query, key, value)  # (b, h, n, d)
    return context.transpose(1, 2).flatten(-2)  # (b, n, hidden)


def forward_of(
    module: nn.Module | None, projections: relpos.SelfAttention,
    hidden_states: torch.Tensor,
) -> Callable[[], torch.Tensor]:
    """A closure running one forward under ``torch.no_grad()``: ``module``, or plain.

    Shapes:
        hidden_states: ``(b, n, hidden)``; the closure's output: ``(b, n, hidden)``
    """
    def forward() -> torch.Tensor:
        with torch.no_grad():
            if module is None:
                return plain_attention(projections, hidden_states)
            return module(hidden_states)

    return forward


def make_hidden_states(n: int, shapes: Shapes, seed: int, batch: int) -> torch.Tensor:
    """Seeded input of length ``n``.

    Shapes:
        output: ``(batch, n, hidden)``
    """
    generator = torch.Generator().manual_seed(seed + 1)
    x = torch.randn(batch, n, shapes.hidden, generator=generator)
    return x.to(device=shapes.device, dtype=shapes.dtype)


__all__ = [
    "NOT_YET_MEASURED",
    "PLAIN",
    "SDPA",
    "Shapes",
    "build_cell",
    "cost_schemes",
    "forward_of",
    "make_hidden_states",
    "plain_attention",
    "plain_projections",
    "scheme_arguments",
]
