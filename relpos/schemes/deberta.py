"""Disentangled self-attention: content-to-content, -to-position, position-to-content.

For query ``i`` and key ``j`` in one head, with ``row = delta(i, j)``:

    score[i, j] = ( Q_i . K_j  +  Q_i . Pk[row]  +  K_j . Pq[row] ) / sqrt(d * s)
                     c2c           c2p               p2c

``Pk`` and ``Pq`` are the shared ``(2k, hidden)`` table projected by the key and
query projections (``share_att_key=True``) or by their own ones. ``s`` is 1 plus
the number of position terms used. The p2c term reads row ``delta(i, j)``, the
same row as c2p: that is what the released DeBERTa code computes (the paper
writes ``delta(j, i)``).

DeBERTa is one scheme on ``relpos.core.SelfAttention``: the base does the
projections, checks, masking, softmax and dropout on every kernel; this module
gives the table terms once (``position_terms``) and its settings
(``relpos.AttentionConfig``). It registers itself like every scheme (the end of
this file): its settings, its variants (log buckets, one position term, separate
keys, and those that change the model around it), its coverage reader, and the
table its stack owns (``SharedInput``). ``relpos.attention`` re-exports it.

The table. A module owns a ``(2 * span, hidden)`` table (``table``, drawn as
DeBERTa draws it) unless built with ``own_table=False``; the call
``attention(hidden_states, attention_mask)`` reads it. An encoder shares one
table across its layers, as DeBERTa does, and hands it to each layer as
``rel_embeddings=``; any call may do the same (the book's chapters pass their
own tables that way).

Shape legend:
    b  batch              h  heads              d  head width (hidden // h)
    i  query position     j  key position       r  table row, 0 <= r < 2 * span
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ..backends import BACKENDS, PositionTerms
from ..checks import (
    check_bool,
    check_float_tensor,
    check_no_removed_call,
    check_same_device,
    check_same_dtype,
)
from ..config import POS_ATT_TYPES, AttentionConfig, resolve_config
from ..core import SelfAttention, interop
from ..embedding import RelativePositionEmbedding
from ..positions import distance_lookup, index_from_lookup, position_index
from ..scores import (
    AttentionScores,
    combine_scores,
    content_to_position,
    content_to_position_naive,
    gather_scores,
    position_to_content,
    position_to_content_naive,
)


class DisentangledSelfAttention(SelfAttention):
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
            ``"flex"`` (FlexAttention kernel; nothing ``n x n`` is stored), or
            any name registered with ``relpos.register_backend``.
        causal: query ``i`` attends to keys ``j <= i`` only (the same terms under
            the causal mask).
        num_kv_heads: grouped-query attention's key/value heads (``None``: one per
            head), as for ``relpos.SelfAttention``.
        config: all of the above as one ``relpos.AttentionConfig`` instead; an
            argument that differs from the config is a ``ValueError``.
        own_table: give the module a table of its own (``table``); False when the
            table always comes from outside (an encoder's shared one).

    Attributes:
        config: the ``AttentionConfig`` (frozen) the module was built from.
        table: the module's ``RelativePositionEmbedding``, or None.
        lookup: the row of each distance ``r`` in ``[-L, L]`` at ``r + L``; every
            distance beyond ``L`` reads the row of ``L`` (a buffer, not saved).

    Shapes:
        hidden_states: ``(b, n, hidden)``
        attention_mask: as ``relpos.SelfAttention`` (any convention of
            ``relpos.masks``)
        rel_embeddings: ``(2 * span, hidden)``, a table to read instead of ``table``
        query_states: ``(b, n, hidden)``, the queries' input (default hidden_states)
        output: ``(b, n, hidden)``, the context before any output projection
    """

    min_length = 0
    input_keywords = ("rel_embeddings",)

    def __init__(
        self,
        hidden_size: int | None = None,
        num_heads: int | None = None,
        max_relative_positions: int = 512,
        position_buckets: int = -1,
        pos_att_type: tuple[str, ...] | list[str] = POS_ATT_TYPES,
        share_att_key: bool = True,
        dropout: float = 0.0,
        backend: str = "gather",
        causal: bool = False,
        *,
        num_kv_heads: int | None = None,
        config: AttentionConfig | None = None,
        own_table: bool = True,
    ) -> None:
        config = resolve_config(
            config,
            dict(
                hidden_size=hidden_size,
                num_heads=num_heads,
                max_relative_positions=max_relative_positions,
                position_buckets=position_buckets,
                pos_att_type=pos_att_type,
                share_att_key=share_att_key,
                dropout=dropout,
                backend=backend,
                causal=causal,
                num_kv_heads=num_kv_heads,
            ),
        )
        super().__init__(
            config.hidden_size,
            config.num_heads,
            config.dropout,
            backend=config.backend,
            causal=config.causal,
            num_kv_heads=config.num_kv_heads,
        )
        self.config = config
        self.max_relative_positions = config.max_relative_positions
        self.position_buckets = config.position_buckets
        self.span = config.span
        self.pos_att_type = config.pos_att_type
        self.share_att_key = config.share_att_key
        if not self.share_att_key:
            if "c2p" in self.pos_att_type:
                self.pos_key_proj = nn.Linear(self.hidden_size, self.hidden_size)
            if "p2c" in self.pos_att_type:
                self.pos_query_proj = nn.Linear(self.hidden_size, self.hidden_size)
            self.dropout = self._modules.pop("dropout")  # listed last, as before
        self.table = None
        if check_bool("own_table", own_table):
            self.table = RelativePositionEmbedding(self.span, self.hidden_size)
        reach = max(self.max_relative_positions, self.span) + 1
        rows = distance_lookup(
            reach + 1,
            max_relative_positions=self.max_relative_positions,
            position_buckets=self.position_buckets,
        )  # (2L + 1,): the row of distance r at r + L
        self.register_buffer("lookup", rows, persistent=False)

    # -- the pieces ------------------------------------------------------------

    @property
    def scale_factor(self) -> int:
        """``s``: 1 for c2c plus 1 for each position term."""
        return 1 + len(self.pos_att_type)

    def _project_key(self, rows: torch.Tensor) -> torch.Tensor:
        if not self.share_att_key:
            return self.split_heads(self.pos_key_proj(rows))  # (h, m, d)
        # the content key projection: g heads, grouped as the content keys are
        return self.repeat_kv(self.split_heads(self.key_proj(rows)))  # (h, m, d)

    def _project_query(self, rows: torch.Tensor) -> torch.Tensor:
        proj = self.query_proj if self.share_att_key else self.pos_query_proj
        return self.split_heads(proj(rows))  # (h, m, d)

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
            pos_key = self._project_key(rel_embeddings)  # (h, r, d)
        if "p2c" in self.pos_att_type:
            pos_query = self._project_query(rel_embeddings)  # (h, r, d)
        return pos_key, pos_query

    def distance_lookup(
        self, seq_len: int, device: torch.device | None = None
    ) -> torch.Tensor:
        """The table row of each distance ``i - j``, at ``i - j + seq_len - 1`` (O(n)).

        Shapes:
            output: ``(2 * seq_len - 1,)``
        """
        return distance_lookup(
            seq_len,
            max_relative_positions=self.max_relative_positions,
            position_buckets=self.position_buckets,
            device=device,
        )

    def position_index(
        self, seq_len: int, device: torch.device | None = None
    ) -> torch.Tensor:
        """The table row of every (query, key) pair for this module's span and buckets.

        Equal to ``relative_position_index(seq_len, ...)``, built from the O(n)
        distance lookup rather than by bucketing all n^2 distances.

        Shapes:
            output: ``(i, j)``
        """
        return index_from_lookup(self.distance_lookup(seq_len, device=device))

    # -- the scheme's terms ----------------------------------------------------

    def position_terms(
        self,
        query_positions: torch.Tensor,
        key_positions: torch.Tensor,
        *,
        rel_embeddings: torch.Tensor | None = None,
    ) -> PositionTerms:
        """The table, its c2p/p2c projections and the row of each distance.

        Shapes:
            query_positions: ``(B, i)``; key_positions: ``(B, j)``
            rel_embeddings: ``(2 * span, hidden)``, default the module's table
        """
        table = self.table_or(rel_embeddings)
        return PositionTerms(
            query_positions,
            key_positions,
            self.lookup,
            table,
            self._project_key if "c2p" in self.pos_att_type else None,
            self._project_query if "p2c" in self.pos_att_type else None,
        )

    def table_or(self, rel_embeddings: torch.Tensor | None) -> torch.Tensor:
        """``rel_embeddings`` when given (a tensor or a ``RelativePositionEmbedding``),
        else the module's own table's weight.

        Shapes:
            output: ``(2 * span, hidden)``
        """
        if isinstance(rel_embeddings, RelativePositionEmbedding):
            return rel_embeddings.weight  # the module itself: its table
        if rel_embeddings is not None:
            return rel_embeddings
        if self.table is None:
            raise ValueError(
                "rel_embeddings must be given: this module has no table of its own "
                "(built with own_table=False, as an encoder's layers and modules "
                "converted from transformers are); pass rel_embeddings=table"
            )
        return self.table.weight

    # -- forward ---------------------------------------------------------------

    def forward(  # type: ignore[override]
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *removed: Any,
        rel_embeddings: torch.Tensor | None = None,
        positions: torch.Tensor | None = None,
        document_ids: torch.Tensor | None = None,
        cache: Any = None,
        query_states: torch.Tensor | None = None,
        return_scores: bool = False,
        key_padding_mask: torch.Tensor | None = None,
        attn_mask: torch.Tensor | None = None,
    ) -> torch.Tensor | tuple[torch.Tensor, AttentionScores]:
        """Attend over ``hidden_states`` with relative positions from the table.

        ``attention(hidden_states, attention_mask=None, *, rel_embeddings=None,
        positions=None, document_ids=None, cache=None, query_states=None,
        return_scores=False, key_padding_mask=None, attn_mask=None)``, the call
        of every ``relpos`` attention (torch's mask conventions by name, as
        ``relpos.SelfAttention``).
        Masked keys are removed from every query's keys (the outputs at padded
        positions are finite but carry no meaning); with ``causal``, so are the
        keys after each query. ``query_states`` (default ``hidden_states``) is
        what the queries are projected from (c2c and c2p read it; keys, values
        and p2c read ``hidden_states``), as in ``transformers``' DeBERTa and its
        enhanced mask decoder.

        The second positional argument is always the mask, whatever its shape or
        dtype. relpos 0.2's call, ``attention(hidden_states, rel_embeddings,
        attention_mask)``, was removed in 0.4: a third positional argument is a
        ``TypeError`` that names the call to write instead.

        Returns:
            The context ``(b, n, hidden)``; with ``return_scores=True`` also an
            ``AttentionScores`` with the scaled c2c, c2p, p2c terms and the
            probabilities (per pair for ``naive``, by gather otherwise).

        Shapes:
            hidden_states: ``(b, n, hidden)``
            rel_embeddings: ``(2 * span, hidden)``; attention_mask: see the class
            query_states: ``(b, n, hidden)``; output: ``(b, n, hidden)``
        """
        check_no_removed_call(type(self).__name__, removed)
        check_bool("return_scores", return_scores)
        self.check_hidden_states(hidden_states)
        prepared = self.prepare(
            hidden_states, attention_mask, positions=positions,
            document_ids=document_ids, cache=cache,
            key_padding_mask=key_padding_mask, attn_mask=attn_mask,
        )
        query_states = self.check_query_states(query_states, hidden_states)
        inputs = self.read_inputs({"rel_embeddings": rel_embeddings}, hidden_states)
        out = self.attend(
            hidden_states, prepared, return_scores, query_states=query_states,
            **inputs,
        )
        self.finish(prepared)
        return out

    def read_inputs(
        self, inputs: dict[str, Any], hidden_states: torch.Tensor
    ) -> dict[str, Any]:
        """``rel_embeddings``: the table given (checked), else the module's own.

        Shapes:
            hidden_states: ``(b, n, hidden)``
            output: ``{"rel_embeddings": (2 * span, hidden)}``
        """
        super().read_inputs(inputs, hidden_states)  # no other keyword
        table = self.table_or(inputs.get("rel_embeddings"))
        return {"rel_embeddings": self.check_table(table, hidden_states)}

    def check_table(self, rel_embeddings: object, like: torch.Tensor) -> torch.Tensor:
        """A ``(2 * span, hidden)`` floating table with ``like``'s dtype and device.

        Shapes:
            rel_embeddings: ``(2 * span, hidden)``
        """
        expected = (2 * self.span, self.hidden_size)
        table = rel_embeddings
        if not isinstance(table, torch.Tensor) or tuple(table.shape) != expected:
            got = getattr(rel_embeddings, "shape", rel_embeddings)
            got = tuple(got) if isinstance(got, torch.Size) else got
            raise ValueError(
                "rel_embeddings must have shape (2 * span, hidden) = "
                f"{expected}, got {got}"
            )
        check_float_tensor("rel_embeddings", rel_embeddings, "(2 * span, hidden)")
        name = "hidden_states" if like.dim() == 3 else "the states"
        check_same_dtype("rel_embeddings", rel_embeddings, name, like.dtype)
        check_same_device("rel_embeddings", rel_embeddings, name, like.device)
        return rel_embeddings

    @classmethod
    def from_transformers(
        cls, module: nn.Module, *, backend: str = "gather"
    ) -> "DisentangledSelfAttention":
        """Build a module with the configuration and weights of a ``transformers`` one.

        ``module`` is a ``transformers`` DeBERTa-v2 or DeBERTa (v1)
        ``DisentangledSelfAttention`` (``transformers`` itself is imported only
        here; see ``relpos.interop``).
        """
        return interop().from_transformers(cls, module, backend=backend)

    def extra_repr(self) -> str:
        return (
            f"hidden_size={self.hidden_size}, num_heads={self.num_heads}, "
            f"span={self.span}, position_buckets={self.position_buckets}, "
            f"pos_att_type={self.pos_att_type}, "
            f"share_att_key={self.share_att_key}, backend={self.backend!r}"
            + (", causal=True" if self.causal else "")
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


# -- registration (relpos.schemes.registry) -------------------------------------------

from .registry import (  # noqa: E402
    PositionEntries,
    SchemeRegistration,
    SharedInput,
    WorkSizes,
    register,
)

#: The book's name of DeBERTa's stack's table, wherever a model keeps it: the
#: ``weight`` of its ``RelativePositionEmbedding`` (``PositionEntries.table``).
RELATIVE_TABLE = ":RelativePositionEmbedding.weight"


def _deberta_entries(attention: DisentangledSelfAttention, rel: torch.Tensor):
    """Coverage: every position term reads the table row ``delta(i - j)``."""
    rows = position_index(
        rel,
        max_relative_positions=attention.max_relative_positions,
        position_buckets=attention.position_buckets,
    )  # (i, j)
    return {
        f"{term} row": PositionEntries(rows, True, RELATIVE_TABLE)
        for term in attention.pos_att_type
    }


def _shared_table(attention: DisentangledSelfAttention) -> RelativePositionEmbedding:
    """The stack's ``(2 * span, hidden)`` table, drawn as DeBERTa draws it."""
    return RelativePositionEmbedding(attention.span, attention.hidden_size)


def _deberta_arithmetic(sizes: WorkSizes, arguments) -> dict[str, int]:
    """The table's ``2k`` rows projected once a batch for each of the ``t``
    position terms (``t * 2 (2k) H^2``) and the queries (c2p) or keys (p2c)
    against them (``t * 2 b n (2k) H``), with or without log buckets."""
    terms = len(arguments.get("pos_att_type", ("c2p", "p2c")))
    rows, H = 2 * sizes.span, sizes.hidden
    return {
        "table_projections": terms * 2 * rows * H * H,
        "position_tables": terms * 2 * sizes.batch * sizes.n * rows * H,
    }


register(
    SchemeRegistration(
        "deberta",
        DisentangledSelfAttention,
        settings=lambda config: {
            "max_relative_positions": config.max_relative_positions,
            "pos_att_type": ("c2p", "p2c"),
        },
        entries=_deberta_entries,
        variants={
            # DeBERTa-v3's log buckets (256 a side up to 512) unless a config says
            "deberta-buckets": {"max_relative_positions": 512, "position_buckets": 256},
            "deberta-emd": {},
            "deberta-sinusoidal": {},
            "deberta-c2p": {"pos_att_type": ("c2p",)},
            "deberta-p2c": {"pos_att_type": ("p2c",)},
            "deberta-no-norm": {},
            "deberta-separate-keys": {"share_att_key": False},
        },
        variant_settings={
            "deberta-buckets": lambda config: {
                "max_relative_positions": config.bucket_max_position,
                "position_buckets": config.position_buckets,
            },
        },
        shared=SharedInput("rel_embeddings", _shared_table, {"own_table": False}),
        model={
            "deberta-emd": {"enhanced_mask_decoder": True},
            "deberta-sinusoidal": {"table_start": "sinusoidal"},
            "deberta-no-norm": {"table_norm": False},
        },
        sized={
            "deberta": lambda k: {"max_relative_positions": k, "position_buckets": -1},
            "deberta-buckets": lambda k: {
                "max_relative_positions": 2 * k, "position_buckets": k,
            },
        },
        arithmetic=_deberta_arithmetic,
    )
)
