"""A whole DeBERTa-v2 model without a head: token embeddings, then the encoder.

``Embeddings`` turns token ids into the encoder's input as ``transformers``'
``DebertaV2Embeddings`` does::

    e = word(ids) [+ absolute(positions)] [+ token_type(types)]   (b, n, embedding)
    x = dropout(mask * LayerNorm(embed_proj(e)))                  (b, n, hidden)

The absolute position embeddings are optional (``position_biased_input``): the
released DeBERTa checkpoints leave them out and rely on the relative positions of
the encoder alone. ``embed_proj`` (a Linear without bias) exists only when the
embedding width differs from the model width. The padding mask multiplies the
output, so padded tokens enter the encoder as zeros.

``DisentangledModel`` is ``Embeddings`` followed by ``DisentangledEncoder``:
``transformers``' ``DebertaV2Model``. ``from_transformers`` and
``to_transformers`` convert between the two (see ``relpos.interop``).

Shape legend:
    b  batch      n  sequence length      hidden  model width
    e  embedding width (embedding_size; hidden when not given)
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .checks import check_bool, check_index, check_int, check_int_tensor, check_rate
from .config import AttentionConfig
from .core import interop, normalise_mask
from .encoder import _check_eps
from .transformer import DisentangledEncoder


def _check_ids(
    name: str, ids: object, rows: int, shape: tuple[int, ...] | None
) -> torch.Tensor:
    """Integer ids of ``(b, n)`` (``shape``, when given) below ``rows``.

    The values are read on the CPU in eager mode only: elsewhere reading them
    would wait for the device, and the embedding lookup fails on a bad id anyway.
    """
    ids = check_int_tensor(name, ids)
    if ids.dim() != 2 or (shape is not None and tuple(ids.shape) != shape):
        want = "(b, n)" if shape is None else f"(b, n) = {shape}"
        raise ValueError(f"{name} must have shape {want}, got {tuple(ids.shape)}")
    if ids.device.type == "cpu" and not torch.compiler.is_compiling():
        check_index(name, ids, rows, "(b, n)")
    return ids


class Embeddings(nn.Module):
    """DeBERTa-v2's input embeddings: token ids to ``(b, n, hidden)`` vectors.

    Args:
        vocab_size: number of token ids.
        hidden_size: width of the output (the encoder's width).
        embedding_size: width of the embedding tables; ``None`` means
            ``hidden_size``. When it differs, ``embed_proj`` maps it to
            ``hidden_size``.
        position_biased_input: add learned absolute position embeddings
            (``max_position_embeddings`` of them) to the word embeddings.
        max_position_embeddings: number of absolute positions, the longest input
            with ``position_biased_input``.
        type_vocab_size: number of token types (segments); 0 means none.
        pad_token_id: the id whose embedding gets no gradient (``padding_idx``,
            initialised to zeros), or ``None``.
        layer_norm_eps: epsilon of the LayerNorm.
        dropout: dropout on the output (``hidden_dropout_prob``).

    Attributes:
        word_embeddings: ``nn.Embedding(vocab_size, e)``.
        position_embeddings: ``nn.Embedding(max_position_embeddings, e)``, or
            ``None`` without ``position_biased_input``.
        token_type_embeddings: ``nn.Embedding(type_vocab_size, e)`` or ``None``.
        embed_proj: ``nn.Linear(e, hidden, bias=False)``, or ``None`` when
            ``e == hidden``.
        norm: the LayerNorm; ``dropout``: the output dropout.

    Initial weights: the tables are drawn from N(0, 0.02^2) as in DeBERTa (the
    padding row is zero); ``embed_proj`` and the LayerNorm keep torch's defaults.

    Shapes:
        input_ids: ``(b, n)``
        attention_mask: ``(b, n)``, 1 for a token and 0 for padding
        token_type_ids: ``(b, n)``; positions: ``(n,)`` or ``(b, n)``
        output: ``(b, n, hidden)``, zero at padded positions (before dropout)
    """

    def __init__(
        self,
        vocab_size: int,
        hidden_size: int,
        *,
        embedding_size: int | None = None,
        position_biased_input: bool = False,
        max_position_embeddings: int = 512,
        type_vocab_size: int = 0,
        pad_token_id: int | None = 0,
        layer_norm_eps: float = 1e-7,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.vocab_size = check_int("vocab_size", vocab_size, minimum=1)
        self.hidden_size = check_int("hidden_size", hidden_size, minimum=1)
        width = hidden_size if embedding_size is None else embedding_size
        self.embedding_size = check_int("embedding_size", width, minimum=1)
        self.position_biased_input = check_bool(
            "position_biased_input", position_biased_input
        )
        self.max_position_embeddings = check_int(
            "max_position_embeddings", max_position_embeddings, minimum=1
        )
        self.type_vocab_size = check_int("type_vocab_size", type_vocab_size, minimum=0)
        if pad_token_id is not None:
            pad_token_id = check_int("pad_token_id", pad_token_id, minimum=0)
            if pad_token_id >= self.vocab_size:
                raise ValueError(
                    f"pad_token_id must be None or an id below vocab_size="
                    f"{self.vocab_size}, got {pad_token_id}"
                )
        self.pad_token_id = pad_token_id
        e = self.embedding_size
        self.word_embeddings = nn.Embedding(vocab_size, e, padding_idx=pad_token_id)
        self.position_embeddings = (
            nn.Embedding(max_position_embeddings, e) if position_biased_input else None
        )
        self.token_type_embeddings = (
            nn.Embedding(type_vocab_size, e) if type_vocab_size > 0 else None
        )
        self.embed_proj = (
            nn.Linear(e, hidden_size, bias=False) if e != hidden_size else None
        )
        self.norm = nn.LayerNorm(hidden_size, eps=_check_eps(layer_norm_eps))
        self.dropout = nn.Dropout(check_rate("dropout", dropout))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw the tables from N(0, 0.02^2) again; the padding row is zero."""
        with torch.no_grad():
            for table in (
                self.word_embeddings,
                self.position_embeddings,
                self.token_type_embeddings,
            ):
                if table is not None:
                    nn.init.normal_(table.weight, mean=0.0, std=0.02)
            if self.pad_token_id is not None:
                self.word_embeddings.weight[self.pad_token_id].zero_()

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        token_type_ids: torch.Tensor | None = None,
        positions: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Embed ``input_ids``; padded positions (mask 0) come out as zeros.

        ``token_type_ids`` default to type 0 (given without type embeddings: a
        ``ValueError``); ``positions`` (the absolute position of each token,
        default ``0, 1, ..., n - 1``) need ``position_biased_input``: without
        absolute embeddings the positions are only the order of the tokens.

        Shapes:
            input_ids: ``(b, n)``; attention_mask: ``(b, n)``
            token_type_ids: ``(b, n)``; positions: ``(n,)`` or ``(b, n)``
            output: ``(b, n, hidden)``
        """
        ids = _check_ids("input_ids", input_ids, self.vocab_size, None)
        b, n = ids.shape
        embedded = self.word_embeddings(ids)  # (b, n, e)
        if self.position_embeddings is not None:
            where = self._positions(positions, b, n)  # (b, n) or (1, n)
            embedded = embedded + self.position_embeddings(where)
        elif positions is not None:
            raise ValueError(
                "positions needs absolute position embeddings "
                "(position_biased_input=True); this model has none, the positions "
                "of its tokens are their order"
            )
        if self.token_type_embeddings is not None:
            if token_type_ids is None:
                token_type_ids = torch.zeros_like(ids)
            types = _check_ids(
                "token_type_ids", token_type_ids, self.type_vocab_size, (b, n)
            )
            embedded = embedded + self.token_type_embeddings(types)
        elif token_type_ids is not None:
            raise ValueError(
                "token_type_ids needs token type embeddings (type_vocab_size > 0); "
                "this model has type_vocab_size=0"
            )
        if self.embed_proj is not None:
            embedded = self.embed_proj(embedded)  # (b, n, hidden)
        out = self.norm(embedded)  # (b, n, hidden)
        key_mask = normalise_mask(attention_mask, out)  # (b, n) bool or None
        if key_mask is not None:
            out = out * key_mask[..., None].to(out.dtype)  # (b, n, hidden)
        return self.dropout(out)

    def _positions(
        self, positions: torch.Tensor | None, b: int, n: int
    ) -> torch.Tensor:
        """The absolute positions ``(b, n)`` (or ``(1, n)``), checked.

        Shapes:
            positions: ``(n,)`` or ``(b, n)``; output: ``(b, n)`` or ``(1, n)``
        """
        rows = self.max_position_embeddings
        if positions is None:
            if n > rows:
                raise ValueError(
                    f"input_ids has n={n} tokens but max_position_embeddings={rows} "
                    "absolute positions; pass shorter inputs"
                )
            return torch.arange(n, device=self.word_embeddings.weight.device)[None]
        positions = check_int_tensor("positions", positions)
        if positions.dim() == 1:
            positions = positions[None]  # (1, n)
        if positions.dim() != 2 or positions.shape[-1] != n or (
            positions.shape[0] not in (1, b)
        ):
            raise ValueError(
                f"positions must have shape (n,) or (b, n) = {(b, n)}, "
                f"got {tuple(positions.shape)}"
            )
        return _check_ids("positions", positions, rows, None)

    def extra_repr(self) -> str:
        return (
            f"vocab_size={self.vocab_size}, hidden_size={self.hidden_size}, "
            f"embedding_size={self.embedding_size}, "
            f"position_biased_input={self.position_biased_input}, "
            f"type_vocab_size={self.type_vocab_size}"
        )


class DisentangledModel(nn.Module):
    """DeBERTa-v2 without a head: ``Embeddings``, then ``DisentangledEncoder``.

    Equal to ``transformers``' ``DebertaV2Model`` on every non-padded position;
    ``from_transformers`` copies one, ``to_transformers`` builds one.

    Args:
        vocab_size: number of token ids.
        num_layers, hidden_size, num_heads, intermediate_size: as for
            ``DisentangledEncoder``.
        embedding_size, position_biased_input, type_vocab_size: as for ``Embeddings``.
        max_position_embeddings, pad_token_id: as for ``Embeddings``.
        dropout: ``hidden_dropout_prob``, on the embeddings' output and
            everywhere the encoder uses it.
        attention_dropout: ``attention_probs_dropout_prob``; ``None`` means
            ``dropout``.
        layer_norm_eps: epsilon of every LayerNorm (embeddings and encoder).
        norm_rel_ebd, config, attention_settings: as for ``DisentangledEncoder``
            (the fields of ``relpos.AttentionConfig``, with its defaults).

    Attributes:
        embeddings: the ``Embeddings``; encoder: the ``DisentangledEncoder``.

    Shapes:
        input_ids: ``(b, n)``
        attention_mask: ``(b, n)``, 1 for a token and 0 for padding
        token_type_ids: ``(b, n)``; positions: ``(n,)`` or ``(b, n)``
        output: ``(b, n, hidden)``, the last hidden states; outputs at padded
            positions are finite but carry no meaning
    """

    def __init__(
        self,
        vocab_size: int,
        num_layers: int,
        hidden_size: int | None = None,
        num_heads: int | None = None,
        intermediate_size: int | None = None,
        *,
        embedding_size: int | None = None,
        position_biased_input: bool = False,
        max_position_embeddings: int = 512,
        type_vocab_size: int = 0,
        pad_token_id: int | None = 0,
        dropout: float = 0.0,
        attention_dropout: float | None = None,
        layer_norm_eps: float = 1e-7,
        norm_rel_ebd: bool = True,
        config: AttentionConfig | None = None,
        **attention_settings: Any,
    ) -> None:
        super().__init__()
        encoder = DisentangledEncoder(
            num_layers,
            hidden_size,
            num_heads,
            intermediate_size,
            dropout=dropout,
            attention_dropout=attention_dropout,
            layer_norm_eps=layer_norm_eps,
            norm_rel_ebd=norm_rel_ebd,
            config=config,
            **attention_settings,
        )
        self.embeddings = Embeddings(
            vocab_size,
            encoder.hidden_size,
            embedding_size=embedding_size,
            position_biased_input=position_biased_input,
            max_position_embeddings=max_position_embeddings,
            type_vocab_size=type_vocab_size,
            pad_token_id=pad_token_id,
            layer_norm_eps=encoder.layers[0].layer_norm_eps,
            dropout=dropout,
        )
        self.encoder = encoder

    @property
    def config(self) -> AttentionConfig:
        """The attention settings of every layer (``encoder.config``)."""
        return self.encoder.config

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        token_type_ids: torch.Tensor | None = None,
        positions: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The last hidden states: the encoder over the embedded tokens.

        Shapes:
            input_ids: ``(b, n)``; attention_mask: ``(b, n)``
            token_type_ids: ``(b, n)``; positions: ``(n,)`` or ``(b, n)``
            output: ``(b, n, hidden)``
        """
        hidden_states = self.embeddings(
            input_ids,
            attention_mask,
            token_type_ids=token_type_ids,
            positions=positions,
        )  # (b, n, hidden)
        return self.encoder(hidden_states, attention_mask)

    @classmethod
    def from_transformers(
        cls, module: nn.Module, *, backend: str = "gather"
    ) -> "DisentangledModel":
        """A model with the configuration and weights of a ``DebertaV2Model``.

        Weights are copied, not shared; the result has the module's device,
        dtype and train/eval mode. Settings relpos does not implement raise a
        ``ValueError`` naming the setting (see ``relpos.interop``).
        """
        return interop().model_from_transformers(cls, module, backend=backend)

    def to_transformers(self) -> nn.Module:
        """This model as a ``transformers`` ``DebertaV2Model`` (weights copied).

        The ``DebertaV2Config`` is built from this model's settings; one that
        ``transformers`` cannot express (``causal=True``, say) raises a
        ``ValueError`` naming it. Same device, dtype and train/eval mode.
        """
        return interop().to_transformers(self)


__all__ = ["Embeddings", "DisentangledModel"]
