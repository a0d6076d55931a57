"""Transformer-XL (Dai et al. 2019): four terms, positions from a sinusoid of ``i - j``.

The paper's score of query ``i`` and key ``j`` (its section 3.3), with ``E`` the
content, ``R_{i-j}`` a fixed sinusoidal encoding of the distance and two learned
global vectors ``u`` and ``v``::

    A_ij = E_i^T W_q^T W_kE E_j      (a) content
         + E_i^T W_q^T W_kR R_{i-j}   (b) content-dependent position
         + u^T W_kE E_j               (c) global content bias
         + v^T W_kR R_{i-j}           (d) global position bias

Transformer-XL already writes ``R_{i-j}``, the book's query-minus-key sign. In
one head, with ``q_i = W_q E_i``, ``k_j = W_kE E_j`` and ``p_r = W_kR R_r``::

    A_ij = (q_i + u) . k_j  +  (q_i + v) . p_{i-j}

which is how the reference code computes it (XLNet's ``rel_attn_core``: ``u`` is
``r_w_bias``, ``v`` is ``r_r_bias``), divided by ``sqrt(d)``. DeBERTa's c2p is
term (b) with a learned, clipped table in place of the sinusoid; its p2c has no
counterpart here.

``R_r = [sin(r w_0), ..., sin(r w_{D/2-1}), cos(r w_0), ..., cos(r w_{D/2-1})]``
with ``w_m = 10000^(-2m / D)``: sines first, then cosines, as in the authors'
code and XLNet (``relpos.sinusoidal_table`` interleaves them instead).

Shapes:
    b: batch; h: heads; d: head width; i, j: query and key positions
    r: a distance ``i - j``; D: hidden (the width of R)
"""

from __future__ import annotations

import torch
from torch import nn

from ..checks import check_dtype, check_float_tensor, check_int, check_int_tensor
from ..backends import PositionTerms
from ..scores import c2p_by_gather, content_to_position
from .attention import SchemeSelfAttention, _relative_distances


def sinusoidal_encoding(
    rel: torch.Tensor, hidden_size: int, *, dtype: torch.dtype | None = None
) -> torch.Tensor:
    """Transformer-XL's ``R_r`` for each distance ``r``: sines, then cosines.

    Computed in float64, returned in ``dtype`` (default: torch's default dtype).

    Shapes:
        rel: ``(*)``
        output: ``(*, hidden_size)``
    """
    rel = check_int_tensor("rel", rel)
    hidden = check_int("hidden_size", hidden_size, minimum=2)
    if hidden % 2:
        raise ValueError(f"hidden_size must be even (sines and cosines), got {hidden}")
    dtype = check_dtype("dtype", dtype, floating=True)
    pairs = torch.arange(0, hidden, 2, dtype=torch.float64, device=rel.device)  # (D/2,)
    frequency = torch.pow(10000.0, -pairs / hidden)  # (D/2,)
    angle = rel.double()[..., None] * frequency  # (*, D/2)
    encoding = torch.cat([torch.sin(angle), torch.cos(angle)], dim=-1)  # (*, D)
    return encoding.to(dtype or torch.get_default_dtype())


def transformer_xl_terms(
    query: torch.Tensor,
    key: torch.Tensor,
    pos_key: torch.Tensor,
    index: torch.Tensor,
    content_bias: torch.Tensor,
    position_bias: torch.Tensor,
) -> torch.Tensor:
    """Terms (b) + (c) + (d), unscaled: ``u . k_j + (q_i + v) . pos_key[index[i, j]]``.

    ``pos_key`` holds the projected encodings ``W_kR R_r`` of the distances the
    pairs need, and ``index[i, j]`` the row of pair ``(i, j)``'s distance. Every
    query is scored against every row once, then each pair's row is gathered
    (the job XLNet's ``rel_shift`` does by reshaping).

    Shapes:
        query: ``(b, h, i, d)``; key: ``(b, h, j, d)``; pos_key: ``(h, r, d)``
        index: ``(i, j)``; content_bias, position_bias: ``(h, d)``
        output: ``(b, h, i, j)``
    """
    content_to_position(query, pos_key, index)  # checks query, pos_key and index
    check_float_tensor("key", key, "(b, h, j, d)", dim=4)
    h, d = query.shape[1], query.shape[3]
    if key.shape[:2] != query.shape[:2] or key.shape[3] != d:
        raise ValueError(
            f"key must have shape (b, h, j, d) matching query {tuple(query.shape)}, "
            f"got {tuple(key.shape)}"
        )
    if index.shape[1] != key.shape[2]:
        raise ValueError(
            f"index must have shape (i, j) with j = {key.shape[2]}, got "
            f"{tuple(index.shape)}"
        )
    biases = (("content_bias", content_bias), ("position_bias", position_bias))
    for name, bias in biases:
        check_float_tensor(name, bias, "(h, d)", dim=2)
        if tuple(bias.shape) != (h, d):
            got = tuple(bias.shape)
            raise ValueError(f"{name} must have shape (h, d) = {(h, d)}, got {got}")
    return _transformer_xl_terms(
        query, key, pos_key, index, content_bias, position_bias
    )


def _transformer_xl_terms(query, key, pos_key, index, content_bias, position_bias):
    global_content = torch.einsum("hd,bhjd->bhj", content_bias, key)  # (b, h, j)
    shifted_query = query + position_bias[:, None, :]  # (b, h, i, d)
    position = c2p_by_gather(shifted_query, pos_key, index)  # (b, h, i, j)
    return global_content[:, :, None, :] + position  # (b, h, i, j)


def distance_reach(
    query_positions: torch.Tensor, key_positions: torch.Tensor
) -> int:
    """``L``, the largest ``|i - j|`` the encodings must cover.

    Eager: read from the positions (``int(...)``, a host sync), so that only the
    distances that occur get an encoding, whatever the positions. Under
    ``torch.compile`` and ``torch.export`` a value read would break the graph (or
    make the number of encodings data-dependent, which ``torch.export`` and ONNX
    refuse), and ``torch.jit.trace`` would keep the value of the traced call, so
    ``L`` comes from the shapes: ``max(i, j) - 1``, which covers the default
    positions (``0 .. n - 1``, after ``t`` cached ones) and any positions whose
    range is no wider. Wider positions fail a run-time check there (never a
    clipped, wrong encoding); compute them eagerly. (A trace keeps ``L`` of its
    traced length: longer inputs fail the check.)

    Shapes:
        query_positions: ``(B, i)``; key_positions: ``(B, j)``
    """
    if not (torch.compiler.is_compiling() or torch.jit.is_tracing()):
        return max(
            abs(int(query_positions.max() - key_positions.min())),
            abs(int(query_positions.min() - key_positions.max())),
        )
    reach = max(query_positions.shape[-1], key_positions.shape[-1]) - 1
    # The widest distance within each sequence (a distance never spans two rows).
    ahead = query_positions.amax(-1) - key_positions.amin(-1)  # (B,)
    behind = key_positions.amax(-1) - query_positions.amin(-1)  # (B,)
    widest = torch.maximum(ahead.abs(), behind.abs()).max()
    torch._assert_async(
        widest <= reach,
        "Transformer-XL compiled, exported or traced covers distances up to "
        "max(i, j) - 1 only; these positions are further apart: run them eagerly",
    )
    return reach


class TransformerXLSelfAttention(SchemeSelfAttention):
    """Self-attention with Transformer-XL's relative terms (no segment memory).

    Args:
        hidden_size, num_heads, dropout: as for ``SchemeSelfAttention``
            (``hidden_size`` must be even: it is also the width of ``R``).
        causal: the causal attention (keys ``j <= i`` only), the same terms (the
            paper's own setting: a language model).
        backend: the kernel (``relpos.BACKENDS``).

    Attributes:
        pos_key_proj: ``W_kR``, a ``Linear(hidden, hidden)`` without bias.
        content_bias: ``u``, ``(h, d)``; position_bias: ``v``, ``(h, d)`` (std 0.02).

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
        super().__init__(
            hidden_size, num_heads, dropout, backend=backend, causal=causal,
            num_kv_heads=num_kv_heads,
        )
        if self.hidden_size % 2:
            raise ValueError(
                "hidden_size must be even (the width of the sinusoid), "
                f"got {hidden_size}"
            )
        self.pos_key_proj = nn.Linear(self.hidden_size, self.hidden_size, bias=False)
        shape = (self.num_heads, self.head_size)
        self.content_bias = nn.Parameter(torch.randn(shape) * 0.02)
        self.position_bias = nn.Parameter(torch.randn(shape) * 0.02)

    def rotate(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        query_positions: torch.Tensor,
        key_positions: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Shift every query by ``u``, so that the content logit holds ``u . k_j``.

        ``(q + u) . k + (q + u) . R + (v - u) . R`` is Transformer-XL's
        ``q . k + u . k + (q + v) . R``: the kernels add the last two terms as
        c2p rows and a bias per row (``position_terms``).

        Shapes:
            query: ``(b, h, i, d)``; key: ``(b, h, j, d)``; output: the same
        """
        return query + self.content_bias[:, None, :].to(query.dtype), key

    def position_terms(
        self, query_positions: torch.Tensor, key_positions: torch.Tensor
    ) -> PositionTerms:
        """``R`` of every distance that occurs, as c2p rows and a bias ``(v - u) . R``.

        The encodings are made for the range of distances ``[-L, L]``
        (``distance_reach`` in this module).

        Shapes:
            query_positions: ``(B, i)``; key_positions: ``(B, j)``
        """
        reach = distance_reach(query_positions, key_positions)
        device = query_positions.device
        distances = torch.arange(-reach, reach + 1, device=device)  # (2L + 1,)
        dtype = self.pos_key_proj.weight.dtype
        encoding = sinusoidal_encoding(distances, self.hidden_size, dtype=dtype)
        pos_key = self.split_heads(self.pos_key_proj(encoding))  # (h, m, d)
        shift = (self.position_bias - self.content_bias)[:, None, :]  # (h, 1, d)
        row_bias = (shift * pos_key).sum(-1) * self.scale  # (h, m)
        lookup = torch.arange(2 * reach + 1, device=device)  # row of r at r + L
        return PositionTerms(
            query_positions, key_positions, lookup, key_rows=pos_key, row_bias=row_bias
        )


__all__ = [
    "TransformerXLSelfAttention",
    "distance_reach",
    "sinusoidal_encoding",
    "transformer_xl_terms",
]


# -- registration (relpos.schemes.registry) -------------------------------------------

from .registry import (  # noqa: E402
    PositionEntries,
    SchemeRegistration,
    WorkSizes,
    register,
)


def _transformer_xl_arithmetic(sizes: WorkSizes, arguments) -> dict[str, int]:
    """A sinusoid for each of the ``2n - 1`` distances, projected
    (``2 (2n - 1) H^2``), and the queries against it (``2 b n (2n - 1) H``): a
    second ``n x n``-sized product, like ``Q K^T``. Its global bias
    ``(v - u) . R`` (``(2n - 1) H`` multiply-adds) is element-wise work."""
    rows, H = max(2 * sizes.n - 1, 0), sizes.hidden
    return {
        "table_projections": 2 * rows * H * H,
        "key_rows": 2 * sizes.batch * sizes.n * rows * H,
    }


register(
    SchemeRegistration(
        "transformer_xl",
        TransformerXLSelfAttention,
        # coverage: a fixed sinusoid of the signed distance, every pair reads one
        entries=lambda attention, rel: {
            "distance": PositionEntries(rel.long(), False, None, none=None)
        },
        arithmetic=_transformer_xl_arithmetic,
    )
)
