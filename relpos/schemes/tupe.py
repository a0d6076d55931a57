"""TUPE, untied positional encoding (Ke et al. 2021, ICLR): a position term of its own.

Nothing is added to the input. Each logit is the content term plus a separate
term of the two absolute positions, with its own table and its own projections
(untied from the content's), both scaled by ``1 / sqrt(2d)``::

    logits[h, i, j] = (x_i W_q^h) . (x_j W_k^h) / sqrt(2d)
                    + (p_i U_q^h) . (p_j U_k^h) / sqrt(2d)

``p`` is a learned table of ``max_length`` absolute positions (initialised as
BERT's, normal with std 0.02) that goes through a LayerNorm before ``U_q`` and
``U_k``, as the paper's code does (and as DeBERTa's relative table does,
``norm_rel_ebd``). The position term ignores the contents: it is a bias of
``(i, j)`` per head, so every kernel adds it like T5's or ALiBi's
(``BiasSelfAttention``). It is not relative: moving every position changes it.

Departures from the paper, both small: each layer owns its table and
projections (the paper shares one position term across layers; the book's
encoders build one attention per layer), and ``[CLS]`` gets no untied row of its
own (the book's models have no ``[CLS]``). A position past the table's last row
reads the last row (as a clipped table does), so a long sequence is not refused.

Shapes:
    h: heads; d: head width; P: table rows; i, j: query and key positions
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..backends import PositionTerms
from ..checks import check_bool, check_int
from .attention import BiasSelfAttention

#: Initial standard deviation of the position table (BERT's ``initializer_range``).
TABLE_STD = 0.02


class TupeBias(nn.Module):
    """TUPE's position term: ``(p_i U_q^h) . (p_j U_k^h) / sqrt(2d)`` per head.

    Args:
        hidden_size: model width (the table's width).
        num_heads: number of heads; must divide ``hidden_size``.
        max_length: rows of the table (positions ``0 .. max_length - 1``).

    Attributes:
        table: ``(max_length, hidden)``, the absolute positions ``p``.
        norm: the LayerNorm ``p`` goes through.
        pos_query: ``U_q``, the position queries' projection.
        pos_key: ``U_k``, the position keys' projection.

    Shapes:
        grid: ``grid(rows)`` is ``(h, rows, rows)``
        forward: query_positions ``(i,)``, key_positions ``(j,)`` -> ``(h, i, j)``
    """

    def __init__(self, hidden_size: int, num_heads: int, max_length: int = 512) -> None:
        super().__init__()
        self.hidden_size = check_int("hidden_size", hidden_size, minimum=1)
        self.num_heads = check_int("num_heads", num_heads, minimum=1)
        if self.hidden_size % self.num_heads:
            raise ValueError(
                "hidden_size must be divisible by num_heads, got "
                f"hidden_size={hidden_size} and num_heads={num_heads}"
            )
        self.max_length = check_int("max_length", max_length, minimum=1)
        self.head_size = self.hidden_size // self.num_heads
        self.table = nn.Parameter(torch.randn(self.max_length, hidden_size) * TABLE_STD)
        self.norm = nn.LayerNorm(hidden_size, eps=1e-7)
        self.pos_query = nn.Linear(hidden_size, hidden_size)
        self.pos_key = nn.Linear(hidden_size, hidden_size)

    @property
    def scale(self) -> float:
        """``1 / sqrt(2d)``, the paper's factor of both terms."""
        return 1.0 / math.sqrt(2 * self.head_size)

    def grid(self, rows: int | None = None) -> torch.Tensor:
        """The term of every pair of the first ``rows`` positions (default: all).

        Shapes:
            output: ``(h, rows, rows)``; ``[h, i, j]``: query ``i``, key ``j``
        """
        rows = self.max_length if rows is None else min(rows, self.max_length)
        p = self.norm(self.table[:rows])  # (rows, hidden)
        q = self.pos_query(p).unflatten(-1, (self.num_heads, self.head_size))
        k = self.pos_key(p).unflatten(-1, (self.num_heads, self.head_size))
        q, k = q.transpose(0, 1), k.transpose(0, 1)  # (h, rows, d) each
        return q @ k.transpose(-1, -2) * self.scale  # (h, rows, rows)

    def bias_at(
        self, head: torch.Tensor, rel: torch.Tensor, query_position: torch.Tensor
    ) -> torch.Tensor:
        """Head ``head``'s term for a query at ``query_position`` and a key ``rel``
        behind it (elementwise, from the whole table's grid; positions clipped).

        ``TupeSelfAttention`` reads the same values from the grid of the positions
        present only (``read_grid``).

        Shapes:
            head, rel, query_position: broadcastable integer tensors ``(*)``
            output: ``(*)``
        """
        return read_grid(self.grid(), head, rel, query_position)

    def forward(
        self, query_positions: torch.Tensor, key_positions: torch.Tensor
    ) -> torch.Tensor:
        """The term of every (query, key) pair, one per head.

        Shapes:
            query_positions: ``(i,)``; key_positions: ``(j,)`` integer tensors
            output: ``(h, i, j)``
        """
        for name, value in (("query_positions", query_positions),
                            ("key_positions", key_positions)):
            if not isinstance(value, torch.Tensor) or value.is_floating_point() or (
                value.dim() != 1
            ):
                raise ValueError(f"{name} must be an integer tensor of shape (n,)")
        rows = int(max(query_positions.max(), key_positions.max())) + 1
        grid = self.grid(rows)  # (h, rows, rows)
        last = grid.shape[-1] - 1
        qpos = query_positions.clamp(0, last)[:, None]  # (i, 1)
        kpos = key_positions.clamp(0, last)[None, :]  # (1, j)
        return grid[:, qpos, kpos]  # (h, i, j)

    def extra_repr(self) -> str:
        return f"num_heads={self.num_heads}, max_length={self.max_length}"


class TupeSelfAttention(BiasSelfAttention):
    """Self-attention with TUPE's untied position term; content over ``sqrt(2d)``.

    Args:
        hidden_size, num_heads, dropout: as for ``SchemeSelfAttention``.
        max_length: rows of the position table (``TupeBias``).
        causal: query ``i`` attends to keys ``j <= i`` only.
        backend: the kernel (``relpos.BACKENDS``); every kernel reads the term
            through ``bias(head, rel, query_position)``.

    Shapes:
        hidden_states: ``(b, n, hidden)``; attention_mask: ``(b, n)``
        output: ``(b, n, hidden)``
    """

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        max_length: int = 512,
        dropout: float = 0.0,
        *,
        causal: bool = False,
        backend: str = "gather",
        num_kv_heads: int | None = None,
    ) -> None:
        check_bool("causal", causal)
        bias = TupeBias(hidden_size, num_heads, max_length)
        super().__init__(
            hidden_size, num_heads, bias, dropout, causal=causal, backend=backend,
            num_kv_heads=num_kv_heads,
        )

    @property
    def scale_factor(self) -> int:
        """The ``s`` of ``1 / sqrt(d * s)``, here 2: the content term is scaled by
        ``1 / sqrt(2d)``, as the position term."""
        return 2

    def position_terms(
        self, query_positions: torch.Tensor, key_positions: torch.Tensor
    ) -> PositionTerms:
        """The term as ``bias(head, rel, query_position)``, read from one grid.

        The grid of the positions present is computed once per call; each pair
        reads ``grid[head, i, i - rel]`` (positions past the table clipped).

        Shapes:
            query_positions: ``(B, i)``; key_positions: ``(B, j)``
        """
        # Every row's term (the table is short): no host read of the positions, so
        # the module compiles as one graph; a position off the table reads its edge.
        grid = self.position_bias.grid()  # (h, rows, rows)

        def bias(head, rel, query_position):
            return read_grid(grid, head, rel, query_position)

        return PositionTerms(query_positions, key_positions, bias=bias)


def read_grid(
    grid: torch.Tensor,
    head: torch.Tensor,
    rel: torch.Tensor,
    query_position: torch.Tensor,
) -> torch.Tensor:
    """``grid[head, i, i - rel]`` with ``i = query_position``, both clipped to the grid.

    Elementwise (FlexAttention's ``score_mod`` calls it on 0-d tensors).

    Shapes:
        grid: ``(h, rows, rows)``; head, rel, query_position: broadcastable ``(*)``
        output: ``(*)``
    """
    last = grid.shape[-1] - 1
    key_position = query_position - rel
    return grid[head, query_position.clamp(0, last), key_position.clamp(0, last)]


__all__ = ["TABLE_STD", "TupeBias", "TupeSelfAttention", "read_grid"]


# -- registration (relpos.schemes.registry) -------------------------------------------

from .registry import (  # noqa: E402
    PositionEntries,
    SchemeRegistration,
    WorkSizes,
    register,
)


def _tupe_entries(attention: TupeSelfAttention, rel: torch.Tensor) -> dict:
    """Each pair reads the table's row of its query and of its key (clipped).

    ``rel`` holds the distances of positions ``0 .. n - 1``: its first column is
    the query's position, and the key's is the query's less ``rel``.
    """
    last = attention.position_bias.max_length - 1
    query = rel[:, :1].expand_as(rel)  # (i, j): i
    key = query - rel  # (i, j): j
    table = "position_bias.table"
    return {
        "query row": PositionEntries(query.clamp(0, last).long().contiguous(),
                                     True, table),
        "key row": PositionEntries(key.clamp(0, last).long().contiguous(), True, table),
    }


def _tupe_arithmetic(sizes: WorkSizes, arguments) -> dict[str, int]:
    """The ``n`` rows of the positions present through ``U_q`` and ``U_k``
    (``2 * 2 n H^2``) and their grid, position queries against position keys
    (``2 n^2 H``, shared by the batch): a second ``n x n``-sized product."""
    n, H = sizes.n, sizes.hidden
    return {"table_projections": 2 * 2 * n * H * H, "grid": 2 * n * n * H}


register(
    SchemeRegistration(
        "tupe",
        TupeSelfAttention,
        # a row for every position the run trains or is tested at, as BERT's table
        settings=lambda config: {"max_length": int(config.table_length)},
        entries=_tupe_entries,
        relative=False,
        content_free=True,
        arithmetic=_tupe_arithmetic,
    )
)
