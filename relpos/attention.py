"""Disentangled self-attention: content-to-content, content-to-position, position-to-content.

For query ``i`` and key ``j`` in one head, with ``row = delta(i, j)``:

    score[i, j] = ( Q_i . K_j  +  Q_i . Pk[row]  +  K_j . Pq[row] ) / sqrt(d * s)
                     c2c           c2p               p2c

``Pk`` and ``Pq`` are the shared ``(2k, hidden)`` table projected by the key and
query projections (``share_att_key=True``) or by their own ones. ``s`` is 1 plus
the number of position terms used. The p2c term reads row ``delta(i, j)``, the
same row as c2p: that is what the released DeBERTa code computes (the paper
writes ``delta(j, i)``).

Shape legend:
    b  batch              h  heads              d  head width (hidden // h)
    i  query position     j  key position       r  table row, 0 <= r < 2 * span
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import check_choice, check_int, check_rate
from .positions import attention_span, distance_lookup, index_from_lookup, relative_position_index

POS_ATT_TYPES = ("c2p", "p2c")
BACKENDS = ("naive", "gather", "flex")


class AttentionScores(NamedTuple):
    """The terms of the attention logits, each already divided by ``sqrt(d * s)``.

    A term that the module does not use is ``None``. ``c2c + c2p + p2c`` are the
    logits before masking; ``probs`` is the softmax after masking.

    Shapes:
        c2c, c2p, p2c, probs: ``(b, h, i, j)``
    """

    c2c: torch.Tensor
    c2p: torch.Tensor | None
    p2c: torch.Tensor | None
    probs: torch.Tensor


def content_to_position(
    query: torch.Tensor, pos_key: torch.Tensor, index: torch.Tensor
) -> torch.Tensor:
    """c2p by gather: score every query against all ``2k`` rows once, then pick ``index[i, j]``.

    ``out[b, h, i, j] = query[b, h, i] . pos_key[h, index[i, j]]``. Query and
    key lengths may differ.

    Shapes:
        query: ``(b, h, i, d)``; pos_key: ``(h, r, d)``; index: ``(i, j)``
        output: ``(b, h, i, j)``
    """
    b, h, i, _ = query.shape
    all_rows = torch.einsum("bhid,hrd->bhir", query, pos_key)  # (b, h, i, r)
    return all_rows.gather(-1, index.expand(b, h, i, index.shape[-1]))  # (b, h, i, j)


def position_to_content(
    key: torch.Tensor, pos_query: torch.Tensor, index: torch.Tensor
) -> torch.Tensor:
    """p2c by gather: score every key against all ``2k`` rows once, then pick ``index[i, j]``.

    ``out[b, h, i, j] = key[b, h, j] . pos_query[h, index[i, j]]``. Query and
    key lengths may differ.

    Shapes:
        key: ``(b, h, j, d)``; pos_query: ``(h, r, d)``; index: ``(i, j)``
        output: ``(b, h, i, j)``
    """
    b, h, j, _ = key.shape
    # Rows first, keys last, so that picking row index[i, j] for key j is a gather
    # along dim -2 that writes (b, h, i, j) in order (no transposed copy or add).
    all_rows = torch.einsum("hrd,bhjd->bhrj", pos_query, key)  # (b, h, r, j)
    return all_rows.gather(-2, index.expand(b, h, *index.shape))  # (b, h, i, j)


def content_to_position_naive(query: torch.Tensor, pos_key_pairs: torch.Tensor) -> torch.Tensor:
    """c2p from the per-pair table: one dot product per (i, j) pair.

    Shapes:
        query: ``(b, h, i, d)``; pos_key_pairs: ``(i, j, h, d)``
        output: ``(b, h, i, j)``
    """
    return torch.einsum("bhid,ijhd->bhij", query, pos_key_pairs)


def position_to_content_naive(key: torch.Tensor, pos_query_pairs: torch.Tensor) -> torch.Tensor:
    """p2c from the per-pair table: one dot product per (i, j) pair.

    Shapes:
        key: ``(b, h, j, d)``; pos_query_pairs: ``(i, j, h, d)``
        output: ``(b, h, i, j)``
    """
    return torch.einsum("bhjd,ijhd->bhij", key, pos_query_pairs)


def combine_scores(
    c2c: torch.Tensor,
    c2p: torch.Tensor | None,
    p2c: torch.Tensor | None,
    key_mask: torch.Tensor | None,
) -> AttentionScores:
    """Add the (already scaled) terms, give padded keys the dtype's minimum, take the softmax.

    Shapes:
        c2c, c2p, p2c: ``(b, h, i, j)``; key_mask: ``(b, j)`` bool or None
        output: ``AttentionScores`` of ``(b, h, i, j)`` tensors
    """
    logits = c2c
    for term in (c2p, p2c):
        if term is not None:
            logits = logits + term
    if key_mask is not None:
        logits = logits.masked_fill(~key_mask[:, None, None, :], torch.finfo(logits.dtype).min)
    return AttentionScores(c2c, c2p, p2c, logits.softmax(-1))


def gather_scores(
    query: torch.Tensor,
    key: torch.Tensor,
    pos_key: torch.Tensor | None,
    pos_query: torch.Tensor | None,
    index: torch.Tensor,
    key_mask: torch.Tensor | None,
    scale: float,
) -> AttentionScores:
    """Every score term explicitly, the position terms by gather; ``None`` for an unused term.

    Shapes:
        query, key: ``(b, h, n, d)``; pos_key, pos_query: ``(h, r, d)``; index: ``(i, j)``
        output: ``AttentionScores`` of ``(b, h, i, j)`` tensors
    """
    c2c = torch.einsum("bhid,bhjd->bhij", query, key) * scale
    c2p = None if pos_key is None else content_to_position(query, pos_key, index) * scale
    p2c = None if pos_query is None else position_to_content(key, pos_query, index) * scale
    return combine_scores(c2c, c2p, p2c, key_mask)


class DisentangledSelfAttention(nn.Module):
    """DeBERTa's disentangled self-attention over a shared relative-position table.

    Args:
        hidden_size: model width; must be divisible by ``num_heads``.
        num_heads: number of attention heads.
        max_relative_positions: ``k`` (clipping span), or the ``max_position`` of
            the log buckets when ``position_buckets > 0``.
        position_buckets: log buckets per side (DeBERTa-v2/v3), or -1 for none.
        pos_att_type: which position terms to add: any of ``"c2p"``, ``"p2c"``.
        share_att_key: project the table with the content query/key projections
            (DeBERTa-v3) instead of separate ``pos_query_proj``/``pos_key_proj``.
        dropout: dropout on the attention probabilities (training only).
        backend: ``"naive"`` (build the ``(n, n, hidden)`` per-pair table),
            ``"gather"`` (score against the ``2k`` rows, then gather) or
            ``"flex"`` (FlexAttention kernel; nothing ``n x n`` is stored).

    Shapes:
        hidden_states: ``(b, n, hidden)``
        rel_embeddings: ``(2 * span, hidden)``, the table shared by all layers
        attention_mask: ``(b, n)``, 1 for a token and 0 for padding
        output: ``(b, n, hidden)``, the context before any output projection
    """

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        max_relative_positions: int = 512,
        position_buckets: int = -1,
        pos_att_type: tuple[str, ...] | list[str] = ("c2p", "p2c"),
        share_att_key: bool = True,
        dropout: float = 0.0,
        backend: str = "gather",
    ) -> None:
        super().__init__()
        self.hidden_size = check_int("hidden_size", hidden_size, minimum=1)
        self.num_heads = check_int("num_heads", num_heads, minimum=1)
        if hidden_size % num_heads:
            raise ValueError(
                f"hidden_size must be divisible by num_heads, got hidden_size={hidden_size} "
                f"and num_heads={num_heads}"
            )
        self.head_size = hidden_size // num_heads
        self.max_relative_positions = check_int(
            "max_relative_positions", max_relative_positions, minimum=1
        )
        self.position_buckets = check_int("position_buckets", position_buckets)
        if self.position_buckets > 0:
            # Validate the bucket arguments once, here, rather than on every forward.
            relative_position_index(
                1,
                max_relative_positions=self.max_relative_positions,
                position_buckets=self.position_buckets,
            )
        self.span = attention_span(self.max_relative_positions, self.position_buckets)
        if isinstance(pos_att_type, str) or not isinstance(pos_att_type, (tuple, list)):
            raise TypeError(
                f"pos_att_type must be a tuple or list drawn from {POS_ATT_TYPES}, "
                f"got {pos_att_type!r}"
            )
        for term in pos_att_type:
            check_choice("pos_att_type entries", term, POS_ATT_TYPES)
        self.pos_att_type = tuple(t for t in POS_ATT_TYPES if t in pos_att_type)
        self.share_att_key = bool(share_att_key)
        self.dropout_p = check_rate("dropout", dropout)
        self.backend = check_choice("backend", backend, BACKENDS)

        self.query_proj = nn.Linear(hidden_size, hidden_size)
        self.key_proj = nn.Linear(hidden_size, hidden_size)
        self.value_proj = nn.Linear(hidden_size, hidden_size)
        if not self.share_att_key:
            if "c2p" in self.pos_att_type:
                self.pos_key_proj = nn.Linear(hidden_size, hidden_size)
            if "p2c" in self.pos_att_type:
                self.pos_query_proj = nn.Linear(hidden_size, hidden_size)
        self.dropout = nn.Dropout(self.dropout_p)

    # -- the pieces ------------------------------------------------------------

    @property
    def scale_factor(self) -> int:
        """``s``: 1 for c2c plus 1 for each position term."""
        return 1 + len(self.pos_att_type)

    @property
    def scale(self) -> float:
        """``1 / sqrt(d * s)``, the factor every score term is multiplied by."""
        return 1.0 / math.sqrt(self.head_size * self.scale_factor)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """Split the last dimension into heads.

        Shapes:
            x: ``(*, n, hidden)``
            output: ``(*, h, n, d)``
        """
        x = x.unflatten(-1, (self.num_heads, self.head_size))  # (*, n, h, d)
        return x.transpose(-3, -2)  # (*, h, n, d)

    def project_table(
        self, rel_embeddings: torch.Tensor
    ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """Project the shared table into per-head position keys (c2p) and queries (p2c).

        Returns ``(pos_key, pos_query)``; an unused term's entry is ``None``.

        Shapes:
            rel_embeddings: ``(r, hidden)``
            pos_key, pos_query: ``(h, r, d)``
        """
        pos_key = pos_query = None
        if "c2p" in self.pos_att_type:
            proj = self.key_proj if self.share_att_key else self.pos_key_proj
            pos_key = self.split_heads(proj(rel_embeddings))  # (h, r, d)
        if "p2c" in self.pos_att_type:
            proj = self.query_proj if self.share_att_key else self.pos_query_proj
            pos_query = self.split_heads(proj(rel_embeddings))  # (h, r, d)
        return pos_key, pos_query

    def distance_lookup(self, seq_len: int, device: torch.device | None = None) -> torch.Tensor:
        """The table row of each distance ``i - j``, at ``i - j + seq_len - 1`` (O(n) work).

        Shapes:
            output: ``(2 * seq_len - 1,)``
        """
        return distance_lookup(
            seq_len,
            max_relative_positions=self.max_relative_positions,
            position_buckets=self.position_buckets,
            device=device,
        )

    def position_index(self, seq_len: int, device: torch.device | None = None) -> torch.Tensor:
        """The table row of every (query, key) pair for this module's span and buckets.

        Equal to ``relative_position_index(seq_len, ...)``, built from the O(n)
        distance lookup rather than by bucketing all n^2 distances.

        Shapes:
            output: ``(i, j)``
        """
        return index_from_lookup(self.distance_lookup(seq_len, device=device))

    # -- forward ---------------------------------------------------------------

    def forward(
        self,
        hidden_states: torch.Tensor,
        rel_embeddings: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        return_scores: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, AttentionScores]:
        """Attend over ``hidden_states`` with relative positions from ``rel_embeddings``.

        Padding (``attention_mask == 0``) is removed from every query's keys; the
        outputs at padded positions are finite but carry no meaning.

        Returns:
            The context ``(b, n, hidden)``; with ``return_scores=True`` also an
            ``AttentionScores`` with the scaled c2c, c2p, p2c terms and the
            probabilities (computed the gather way whatever the backend).

        Shapes:
            hidden_states: ``(b, n, hidden)``
            rel_embeddings: ``(2 * span, hidden)``
            attention_mask: ``(b, n)``
            output: ``(b, n, hidden)``
        """
        key_mask = self._check_inputs(hidden_states, rel_embeddings, attention_mask)
        b, n, _ = hidden_states.shape
        query = self.split_heads(self.query_proj(hidden_states))  # (b, h, i, d)
        key = self.split_heads(self.key_proj(hidden_states))  # (b, h, j, d)
        value = self.split_heads(self.value_proj(hidden_states))  # (b, h, j, d)
        pos_key, pos_query = self.project_table(rel_embeddings)  # (h, r, d) each

        if return_scores or self.backend == "naive":
            scores = self._scores(query, key, pos_key, pos_query, rel_embeddings, key_mask)
            probs = self.dropout(scores.probs)
            context = probs @ value  # (b, h, i, d)
        elif self.backend == "gather":
            context = self._gather_attention(query, key, value, pos_key, pos_query, key_mask)
        else:
            from .flex import flex_disentangled_attention

            if self.training and self.dropout_p > 0:
                raise ValueError(
                    "backend='flex' has no attention dropout; set dropout=0.0 or call .eval(), "
                    "or use backend='gather'"
                )
            lookup = self.distance_lookup(n, device=hidden_states.device)
            context = flex_disentangled_attention(
                query, key, value, pos_key, pos_query, lookup, key_mask, self.scale
            )
        context = context.transpose(1, 2).flatten(-2)  # (b, n, hidden)
        return (context, scores) if return_scores else context

    def _scores(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        pos_key: torch.Tensor | None,
        pos_query: torch.Tensor | None,
        rel_embeddings: torch.Tensor,
        key_mask: torch.Tensor | None,
    ) -> AttentionScores:
        """Every score term explicitly: per pair for ``naive``, by gather otherwise."""
        n = query.shape[-2]
        index = self.position_index(n, device=query.device)  # (i, j)
        if self.backend != "naive":
            return gather_scores(query, key, pos_key, pos_query, index, key_mask, self.scale)
        c2c = torch.einsum("bhid,bhjd->bhij", query, key) * self.scale
        c2p = p2c = None
        pairs = rel_embeddings[index]  # (i, j, hidden): the literal per-pair table
        pos_key_pairs, pos_query_pairs = self.project_table(pairs.flatten(0, 1))  # (h, i*j, d) each
        if pos_key_pairs is not None:
            pos_key_pairs = pos_key_pairs.transpose(0, 1).unflatten(0, (n, n))  # (i, j, h, d)
            c2p = content_to_position_naive(query, pos_key_pairs) * self.scale
        if pos_query_pairs is not None:
            pos_query_pairs = pos_query_pairs.transpose(0, 1).unflatten(0, (n, n))  # (i, j, h, d)
            p2c = position_to_content_naive(key, pos_query_pairs) * self.scale
        return combine_scores(c2c, c2p, p2c, key_mask)

    def _gather_attention(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        pos_key: torch.Tensor | None,
        pos_query: torch.Tensor | None,
        key_mask: torch.Tensor | None,
    ) -> torch.Tensor:
        """The paper's efficient form: position terms by gather, summed into one bias.

        The bias (c2p + p2c, masked) is the only ``(b, h, n, n)`` tensor this
        function builds itself; ``scaled_dot_product_attention`` adds c2c to it
        and applies the softmax and the values. The tables are scaled once,
        before any ``n x n`` work.

        Shapes:
            query, key, value: ``(b, h, n, d)``; pos_key, pos_query: ``(h, r, d)``
            output: ``(b, h, n, d)``
        """
        b, h, n, _ = query.shape
        index = self.position_index(n, device=query.device)  # (i, j)
        bias = None
        if pos_key is not None:
            bias = content_to_position(query, pos_key * self.scale, index)  # (b, h, i, j)
        if pos_query is not None:
            p2c = position_to_content(key, pos_query * self.scale, index)  # (b, h, i, j)
            bias = p2c if bias is None else bias.add_(p2c)
            del p2c
        if key_mask is not None:
            if bias is None:
                bias = query.new_zeros(b, 1, 1, n)
            bias = bias.masked_fill(~key_mask[:, None, None, :], torch.finfo(query.dtype).min)
        return F.scaled_dot_product_attention(
            query,
            key,
            value,
            attn_mask=bias,
            dropout_p=self.dropout_p if self.training else 0.0,
            scale=self.scale,
        )

    def _check_inputs(
        self,
        hidden_states: torch.Tensor,
        rel_embeddings: torch.Tensor,
        attention_mask: torch.Tensor | None,
    ) -> torch.Tensor | None:
        """Validate the forward arguments; return the key mask as bool ``(b, n)``, or None if nothing is padded."""
        if not isinstance(hidden_states, torch.Tensor) or not hidden_states.is_floating_point():
            raise TypeError("hidden_states must be a floating-point tensor of shape (b, n, hidden)")
        if hidden_states.dim() != 3 or hidden_states.shape[-1] != self.hidden_size:
            raise ValueError(
                f"hidden_states must have shape (b, n, {self.hidden_size}), "
                f"got {tuple(hidden_states.shape)}"
            )
        expected = (2 * self.span, self.hidden_size)
        if not isinstance(rel_embeddings, torch.Tensor) or tuple(rel_embeddings.shape) != expected:
            got = tuple(rel_embeddings.shape) if isinstance(rel_embeddings, torch.Tensor) else rel_embeddings
            raise ValueError(f"rel_embeddings must have shape (2 * span, hidden) = {expected}, got {got}")
        if attention_mask is None:
            return None
        b, n, _ = hidden_states.shape
        if not isinstance(attention_mask, torch.Tensor) or tuple(attention_mask.shape) != (b, n):
            got = tuple(attention_mask.shape) if isinstance(attention_mask, torch.Tensor) else attention_mask
            raise ValueError(f"attention_mask must have shape (b, n) = {(b, n)}, got {got}")
        key_mask = attention_mask.to(device=hidden_states.device) != 0
        # A mask without padding changes nothing: skip the masking work altogether.
        return None if bool(key_mask.all()) else key_mask

    @classmethod
    def from_transformers(cls, module: nn.Module, *, backend: str = "gather") -> "DisentangledSelfAttention":
        """Build a module with the configuration and weights of a ``transformers`` one.

        ``module`` is a ``transformers`` DeBERTa-v2 ``DisentangledSelfAttention``
        (``transformers`` itself is imported only here, and only to check the type).

        Shapes:
            (copies weights; no tensors in or out)
        """
        from .interop import from_transformers

        return from_transformers(cls, module, backend=backend)

    def extra_repr(self) -> str:
        return (
            f"hidden_size={self.hidden_size}, num_heads={self.num_heads}, span={self.span}, "
            f"position_buckets={self.position_buckets}, pos_att_type={self.pos_att_type}, "
            f"share_att_key={self.share_att_key}, backend={self.backend!r}"
        )


__all__ = [
    "AttentionScores",
    "DisentangledSelfAttention",
    "combine_scores",
    "gather_scores",
    "content_to_position",
    "position_to_content",
    "content_to_position_naive",
    "position_to_content_naive",
    "POS_ATT_TYPES",
    "BACKENDS",
]
