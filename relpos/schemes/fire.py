"""FIRE, functional interpolation for relative positions (Li et al. 2024, ICLR).

A content-free bias made by a small learned function of a *normalised* distance.
The paper's bias of query ``i`` and key ``j <= i`` (causal), in every head::

    b(i, j) = f( psi(i - j) / psi(max(L, i)) ),     psi(x) = log(c x + 1)

``f`` is an MLP from one number to one output per head (one hidden layer of
width 32 with a ReLU), ``c > 0`` is learned (it stretches the small distances
before the log), and ``L`` is a learned threshold: a query before position ``L``
divides by ``psi(L)``, one after it by ``psi(i)``, so the input of ``f`` stays in
``[0, 1]`` however long the sequence: the MLP *interpolates* between the
distances it was trained on instead of extrapolating to new ones. FIRE reads
the query's position as well as ``i - j``: past ``L`` it is not a relative scheme
(moving every position by the same amount changes its bias).

The paper's appendix (reproduced in e.g. github.com/mcleish7/arithmetic,
``cramming/architectures/embeddings.py``, class ``FIRE``) initialises
``c = 0.1`` and ``L = 512`` and learns ``L`` as ``|s| * 512`` with ``s`` starting
at 1, uses ``|c|`` and divides by ``psi(...) + 1e-6``; so does this module
(``initial_threshold`` times the learned ``threshold_scale``). Its ``f`` is
``Linear(1, 32) -> ReLU -> Linear(32, heads)`` with torch's default
initialisation, as here.

Sign convention and the encoder. The paper writes ``i - j`` (query minus key),
the book's sign, for keys behind (``i - j >= 0``). For an encoder, whose keys
may be ahead, this module defines::

    b(i, j) = f( sign(i - j) * psi(|i - j|) / psi(max(L, i, j)) )

- the sign of ``i - j`` goes into ``f``'s input, so one MLP learns both sides
  (keys ahead on ``[-1, 0)``, keys behind on ``(0, 1]``);
- the normaliser is the *later* of the two positions, ``max(i, j)``: for a key
  behind that is ``i``, the paper's own; for a key ahead it is ``j``, so
  ``|i - j| <= max(i, j)`` keeps the input in ``[-1, 1]`` for positions from 0
  (the book's) on both sides. With keys behind only this is exactly the
  paper's formula.

The causal form (``causal=True``) is the paper's: keys ahead read the input of
distance 0 (a causal mask hides them anyway).

Shapes:
    h: heads; i, j: query and key positions; r: distances ``i - j``; w: MLP width
"""

from __future__ import annotations

import math
import numbers

import torch
from torch import nn

from ..checks import check_bool, check_int, check_int_tensor
from .attention import BiasSelfAttention

#: Added to the normaliser ``psi(max(L, i, j))`` before dividing (the paper's code).
EPS = 1e-6


def _check_positive(name: str, value: object) -> float:
    real = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not real or not math.isfinite(value) or not value > 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def _check_scalar(name: str, value: object) -> torch.Tensor:
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return torch.tensor(float(value), dtype=torch.get_default_dtype())
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        if value.dim() == 0:
            return value
    raise TypeError(
        f"{name} must be a number or a 0-dim floating tensor, got {value!r}"
    )


def _fire_input(rel, query_position, c, threshold, causal):
    """The elementwise formula (module docstring); ``threshold`` is ``L``."""
    dtype = c.dtype
    behind = rel.clamp(min=0) if causal else rel.abs()  # |i - j| (or max(i - j, 0))
    later = query_position - rel.clamp(max=0)  # max(i, j): j = i - r
    normaliser = torch.maximum(later.to(dtype), threshold)  # max(L, i, j)
    scale = c.abs()
    value = torch.log1p(scale * behind.to(dtype)) / (
        torch.log1p(scale * normaliser) + EPS
    )
    return value if causal else value * torch.sign(rel).to(dtype)


def fire_input(
    rel: torch.Tensor,
    query_position: torch.Tensor,
    *,
    c: float | torch.Tensor = 0.1,
    threshold: float | torch.Tensor = 512.0,
    causal: bool = False,
) -> torch.Tensor:
    """The input of FIRE's MLP: the normalised distance of each pair.

    Bidirectional: ``sign(r) * psi(|r|) / (psi(max(L, i, i - r)) + 1e-6)``;
    causal: ``psi(max(r, 0)) / (psi(max(L, i, i - r)) + 1e-6)``, with
    ``psi(x) = log(|c| x + 1)``, ``r = i - j`` and ``L = threshold``.

    Args:
        rel: integer tensor of distances ``i - j``.
        query_position: integer tensor of the query positions ``i``,
            broadcastable with ``rel``.
        c: the log's stretch (a number or a 0-dim tensor; its absolute value).
        threshold: ``L`` (a number > 0 or a 0-dim tensor).
        causal: the paper's one-sided form.

    Shapes:
        rel: ``(*)``; query_position: broadcastable to ``(*)``
        output: ``(*)``, the dtype of ``c`` (torch's default for a number)
    """
    rel = check_int_tensor("rel", rel)
    query_position = check_int_tensor("query_position", query_position)
    check_bool("causal", causal)
    c = _check_scalar("c", c)
    if not isinstance(threshold, torch.Tensor):
        threshold = _check_positive("threshold", threshold)
    threshold = _check_scalar("threshold", threshold).to(c.dtype)
    try:
        torch.broadcast_shapes(rel.shape, query_position.shape)
    except RuntimeError:
        raise ValueError(
            f"query_position must broadcast with rel {tuple(rel.shape)}, got shape "
            f"{tuple(query_position.shape)}"
        ) from None
    return _fire_input(rel, query_position, c, threshold, causal)


class FireBias(nn.Module):
    """FIRE's learned bias: ``f(normalised distance)``, one output per head.

    Args:
        num_heads: number of heads.
        width: the MLP's hidden width (the paper's 32).
        c: the initial stretch of ``psi`` (the paper's 0.1).
        threshold: the initial ``L`` (the paper's code: 512).
        causal: the paper's one-sided form instead of the two-sided one.

    Attributes:
        first: ``Linear(1, width)``; second: ``Linear(width, num_heads)``.
        c: the learned stretch (0-dim); threshold_scale: the learned factor of
            ``L = |threshold_scale| * initial_threshold`` (0-dim, starts at 1).

    Shapes:
        forward: rel ``(i, j)``, query_positions ``(i,)`` -> ``(h, i, j)``
    """

    def __init__(
        self,
        num_heads: int,
        width: int = 32,
        c: float = 0.1,
        threshold: float = 512.0,
        causal: bool = False,
    ) -> None:
        super().__init__()
        self.num_heads = check_int("num_heads", num_heads, minimum=1)
        self.width = check_int("width", width, minimum=1)
        c = _check_positive("c", c)
        threshold = _check_positive("threshold", threshold)
        check_bool("causal", causal)
        self.causal = causal
        self.first = nn.Linear(1, self.width)
        self.second = nn.Linear(self.width, self.num_heads)
        self.c = nn.Parameter(torch.tensor(c))
        self.threshold_scale = nn.Parameter(torch.tensor(1.0))
        self.register_buffer("initial_threshold", torch.tensor(threshold))

    @property
    def threshold(self) -> torch.Tensor:
        """``L = |threshold_scale| * initial_threshold`` (0-dim)."""
        return self.threshold_scale.abs() * self.initial_threshold

    def bias_at(
        self, head: torch.Tensor, rel: torch.Tensor, query_position: torch.Tensor
    ) -> torch.Tensor:
        """Head ``head``'s bias at distance ``rel`` for a query at ``query_position``.

        Elementwise (no checks, no reading of values): FlexAttention's
        ``score_mod`` may call it on 0-dim tensors.

        Shapes:
            head, rel, query_position: broadcastable integer tensors ``(*)``
            output: ``(*)``
        """
        x = _fire_input(rel, query_position, self.c, self.threshold, self.causal)
        weight, bias = self.first.weight[:, 0], self.first.bias  # (w,), (w,)
        out = self.second.bias[head]
        # One hidden unit at a time: every step is elementwise, which FlexAttention's
        # compiled score_mod needs (a (*, w) hidden vector cannot be lowered there).
        for unit in range(weight.shape[0]):
            hidden = torch.relu(x * weight[unit] + bias[unit])  # (*)
            out = out + hidden * self.second.weight[head, unit]
        return out

    def forward(
        self, rel: torch.Tensor, query_positions: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The bias of every pair, one per head.

        Shapes:
            rel: ``(i, j)``; query_positions: ``(i,)``
            output: ``(h, i, j)``
        """
        rel = check_int_tensor("rel", rel)
        if rel.dim() != 2:
            raise ValueError(f"rel must have shape (i, j), got {tuple(rel.shape)}")
        if query_positions is None:
            raise ValueError(
                "query_positions must be given (shape (i,)): FIRE normalises each "
                "distance by its query's position"
            )
        query_positions = check_int_tensor("query_positions", query_positions)
        if tuple(query_positions.shape) != (rel.shape[0],):
            raise ValueError(
                f"query_positions must have shape (i,) = ({rel.shape[0]},), got "
                f"{tuple(query_positions.shape)}"
            )
        heads = torch.arange(self.num_heads, device=rel.device)[:, None, None]
        return self.bias_at(heads, rel, query_positions[:, None])  # (h, i, j)

    def extra_repr(self) -> str:
        return (
            f"num_heads={self.num_heads}, width={self.width}, "
            f"initial_threshold={float(self.initial_threshold)}, causal={self.causal}"
        )


class FireSelfAttention(BiasSelfAttention):
    """Self-attention with FIRE's bias, two-sided (encoder) or the paper's causal one.

    ``logits[b, h, i, j] = q_i . k_j / sqrt(d) + f_h(normalised distance of (i, j))``.

    Args:
        hidden_size, num_heads, dropout: as for ``SchemeSelfAttention``.
        width, c, threshold: as for ``FireBias``.
        causal: the causal attention (keys ``j <= i`` only) with the causal bias.
        backend: the kernel (``relpos.BACKENDS``); every kernel calls ``bias_at``.

    Shapes:
        hidden_states: ``(b, n, hidden)``; attention_mask: ``(b, n)``
        output: ``(b, n, hidden)``
    """

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        width: int = 32,
        c: float = 0.1,
        threshold: float = 512.0,
        dropout: float = 0.0,
        *,
        causal: bool = False,
        backend: str = "gather",
        num_kv_heads: int | None = None,
    ) -> None:
        check_bool("causal", causal)
        heads = check_int("num_heads", num_heads, minimum=1)
        bias = FireBias(heads, width, c, threshold, causal=causal)
        super().__init__(
            hidden_size, num_heads, bias, dropout, causal=causal, backend=backend,
            num_kv_heads=num_kv_heads,
        )



# -- registration (relpos.schemes.registry) -------------------------------------------

from .registry import PositionEntries, SchemeRegistration, register  # noqa: E402

register(
    SchemeRegistration(
        "fire",
        FireSelfAttention,
        # L starts at the training length: every training query sits before it, so
        # f meets inputs in [-1, 1] in training and still in [-1, 1] at any test
        # length (the paper's point), and it learns L from there
        settings=lambda config: {"threshold": float(config.train_length)},
        # coverage: a fixed formula of the signed distance (and, past L, of the
        # query's position) feeds f, whose weights every pair shares
        entries=lambda attention, rel: {
            "distance": PositionEntries(rel.long(), False, None, none=None)
        },
        relative=False,
        content_free=True,
        arithmetic=lambda sizes, arguments: {
            # its MLP on every pair's normalised distance: w hidden units, one
            # output per head
            "mlp": 2 * sizes.n * sizes.n * (sizes.width + sizes.width * sizes.heads)
        },
    )
)


__all__ = ["EPS", "FireBias", "FireSelfAttention", "fire_input"]
