"""Shaw et al. (2018): clipped relative embeddings added to the keys and the values.

The paper (its equations 3 and 4), for query ``i`` and key ``j`` in one head::

    e_ij = x_i W^Q (x_j W^K + a^K_ij)^T / sqrt(d_z)
    z_i  = sum_j alpha_ij (x_j W^V + a^V_ij),       alpha = softmax_j(e)
    a^K_ij = w^K_{clip(j - i, k)},   a^V_ij = w^V_{clip(j - i, k)},
    clip(x, k) = max(-k, min(k, x))

So Shaw indexes by ``j - i`` (key minus query) and keeps ``2k + 1`` rows, one per
distance in ``[-k, k]``; the tables are shared by all heads (width ``d_z``, the
head width) and learned per layer. This module uses the book's ``i - j``: row
``shaw_index(i - j) = clip(i - j, k) + k``, so its row for ``i - j`` holds the
paper's ``w_{-(i - j)}`` (the paper's table upside down; both are learned, so
the model is the same). DeBERTa's ``delta`` instead keeps ``2k`` rows,
``[-k, k - 1]``.

Shapes:
    b: batch; h: heads; d: head width; i, j: query and key positions
    k: max_relative_positions; r: table row, ``0 <= r <= 2k``
"""

from __future__ import annotations

import torch
from torch import nn

from ..checks import (
    check_float_tensor,
    check_index,
    check_int,
    check_int_tensor,
    check_same_dtype,
)
from ..backends import PositionTerms
from ..scores import value_term
from .attention import SchemeSelfAttention, _relative_distances


def shaw_index(rel: torch.Tensor, max_relative_positions: int) -> torch.Tensor:
    """The table row of each distance ``r = i - j``: ``clip(r, k) + k``, in ``[0, 2k]``.

    Distance ``-k`` (and anything further ahead) reads row 0, distance 0 row ``k``,
    distance ``k`` (and anything further behind) row ``2k``.

    Shapes:
        rel: ``(*)``
        output: ``(*)``
    """
    rel = check_int_tensor("rel", rel).long()
    k = check_int("max_relative_positions", max_relative_positions, minimum=1)
    return rel.clamp(-k, k) + k


def relative_value_sum(
    probs: torch.Tensor, value_table: torch.Tensor, index: torch.Tensor
) -> torch.Tensor:
    """``sum_j probs[i, j] * value_table[index[i, j]]``, without a per-pair table.

    The weights of all keys that read the same row are added first (a scatter-add
    into ``2k + 1`` slots), then each row is read once: ``relpos.scores.value_term``,
    every kernel's value term, with the table shared by the heads.

    Shapes:
        probs: ``(b, h, i, j)``; value_table: ``(r, d)``; index: ``(i, j)``
        output: ``(b, h, i, d)``
    """
    check_float_tensor("probs", probs, "(b, h, i, j)", dim=4)
    check_float_tensor("value_table", value_table, "(r, d)", dim=2)
    check_same_dtype("value_table", value_table, "probs", probs.dtype)
    check_index("index", index, value_table.shape[0], "(i, j)")
    if tuple(index.shape) != tuple(probs.shape[2:]):
        raise ValueError(
            f"index must have shape (i, j) = {tuple(probs.shape[2:])} for probs of "
            f"shape {tuple(probs.shape)}, got {tuple(index.shape)}"
        )
    value_rows = value_table.expand(probs.shape[1], *value_table.shape)  # (h, r, d)
    return value_term(probs, value_rows, index)


class ShawSelfAttention(SchemeSelfAttention):
    """Self-attention with Shaw et al.'s clipped relative keys (and values).

    Args:
        hidden_size, num_heads, dropout: as for ``SchemeSelfAttention``.
        max_relative_positions: ``k``, the clipping distance (2k + 1 rows).
        relative_values: also add ``a^V`` to the values (the paper's eq. 3).
        causal: the causal attention (keys ``j <= i`` only), the same terms.
        backend: the kernel (``relpos.BACKENDS``); on ``flex`` the relative values
            cost one more kernel call per row.

    Attributes:
        key_table: ``(2k + 1, d)``, ``w^K`` shared by the heads (normal, std 0.02).
        value_table: ``(2k + 1, d)``, ``w^V``; only with ``relative_values``.

    Shapes:
        hidden_states: ``(b, n, hidden)``; attention_mask: ``(b, n)``
        output: ``(b, n, hidden)``
    """

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        max_relative_positions: int = 16,
        relative_values: bool = True,
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
        self.max_relative_positions = check_int(
            "max_relative_positions", max_relative_positions, minimum=1
        )
        if not isinstance(relative_values, bool):
            raise TypeError(f"relative_values must be a bool, got {relative_values!r}")
        self.relative_values = relative_values
        rows = 2 * self.max_relative_positions + 1
        self.key_table = nn.Parameter(torch.randn(rows, self.head_size) * 0.02)
        value_table = None
        if relative_values:
            value_table = nn.Parameter(torch.randn(rows, self.head_size) * 0.02)
        self.register_parameter("value_table", value_table)
        k = self.max_relative_positions
        rows = shaw_index(torch.arange(-k, k + 1), k)  # (2k + 1,): row of r at r + k
        self.register_buffer("lookup", rows, persistent=False)

    def table_index(
        self, query_positions: torch.Tensor, key_positions: torch.Tensor
    ) -> torch.Tensor:
        """The row of every (query, key) pair.

        Shapes:
            query_positions: ``(i,)``; key_positions: ``(j,)``
            output: ``(i, j)``
        """
        rel = _relative_distances(query_positions, key_positions)  # (i, j)
        return shaw_index(rel, self.max_relative_positions)

    def position_terms(
        self, query_positions: torch.Tensor, key_positions: torch.Tensor
    ) -> PositionTerms:
        """``a^K`` as c2p rows (``q_i . a^K_ij / sqrt(d)``) and ``a^V`` as value rows.

        Shapes:
            query_positions: ``(B, i)``; key_positions: ``(B, j)``
        """
        h = self.num_heads
        value_rows = None
        if self.value_table is not None:
            value_rows = self.value_table.expand(h, *self.value_table.shape)
        return PositionTerms(
            query_positions,
            key_positions,
            self.lookup,
            key_rows=self.key_table.expand(h, *self.key_table.shape),  # (h, r, d)
            value_rows=value_rows,  # (h, r, d)
        )

    def extra_repr(self) -> str:
        return (
            f"{super().extra_repr()}, "
            f"max_relative_positions={self.max_relative_positions}, "
            f"relative_values={self.relative_values}"
        )


__all__ = ["ShawSelfAttention", "relative_value_sum", "shaw_index"]


# -- registration (relpos.schemes.registry) -------------------------------------------

from .registry import (  # noqa: E402
    PositionEntries,
    SchemeRegistration,
    WorkSizes,
    register,
)


def _shaw_entries(attention: ShawSelfAttention, rel: torch.Tensor):
    """Coverage: pairs whose distances clip to the same row share its key (value) row.
    """
    rows = shaw_index(rel, attention.max_relative_positions)  # (i, j)
    found = {"shaw key row": PositionEntries(rows, True, "key_table")}
    if attention.relative_values:
        found["shaw value row"] = PositionEntries(rows, True, "value_table")
    return found


def _shaw_arithmetic(sizes: WorkSizes, arguments) -> dict[str, int]:
    """The queries against the ``2k + 1`` key rows (``2 b n (2k + 1) H``) and,
    with relative values, the probabilities summed by row times the value rows,
    as much again."""
    rows = 2 * sizes.span + 1
    flops = 2 * sizes.batch * sizes.n * rows * sizes.hidden
    work = {"key_rows": flops}
    if arguments.get("relative_values", True):
        work["value_rows"] = flops
    return work


register(
    SchemeRegistration(
        "shaw",
        ShawSelfAttention,
        settings=lambda config: {
            "max_relative_positions": config.max_relative_positions
        },
        entries=_shaw_entries,
        variants={"shaw-keys": {"relative_values": False}},
        # the benchmark's table clipped at its common span k (2k + 1 rows)
        sized={"shaw": lambda k: {"max_relative_positions": k}},
        arithmetic=_shaw_arithmetic,
    )
)
