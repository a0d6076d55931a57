"""DeBERTa's enhanced mask decoder, tiny: absolute positions added late.

DeBERTa (He et al. 2021, ``he2021deberta``) reads only relative positions in
its encoder and adds the absolute ones just before its masked-language-model
head, in the *enhanced mask decoder* (EMD). Microsoft's code
(``DeBERTa/apps/models/masked_language_model.py``, ``EnhancedMaskDecoder``)
does this::

    hidden = encoder_layers[-2]              # the input of the last layer
    query = hidden + z                       # z: absolute position embeddings
    for _ in range(2):                       # the last layer, twice, shared weights
        query = last_layer(hidden, query_states=query, rel_embeddings=table)
    logits = lm_head(query)

Keys and values always come from ``hidden``, which carries no absolute
position; the queries carry it, and the attention sub-layer's residual adds the
query states (as ``transformers``' ``DebertaV2Layer`` with ``query_states``).
Because the decoder replaces the last layer's ordinary pass, the absolute
positions reach the output through the decoder alone. ``transformers`` keeps
only a remnant: ``DebertaV2Model.z_steps`` (0, so off) reruns the last layer
with ``query_states`` but adds no absolute position, and its masked-language
model head reads the encoder's output directly. :class:`EnhancedMaskDecoder` is
the encoder of the ``deberta-emd`` scheme.

The tiny version (:class:`EnhancedMaskDecoder`) keeps: relative attention (the
shared LayerNorm-ed table, c2p and p2c) in every layer; a learned absolute
table ``z`` of ``max_length`` rows (initialised like every other embedding here,
``N(0, 0.02^2)``, and added without a LayerNorm to LayerNorm-ed hidden states,
as in DeBERTa); the last layer applied twice with shared weights, keys and
values from its input, queries from the running query states. It drops: the
masked-language-model head and its sharing of the token embedding matrix
(the tiny model's classifier reads the decoder's output at every position,
not only at masked ones), the selection of masked positions, DeBERTa's
convolution layer, and the other branch of ``position_biased_input`` (with it
on, DeBERTa adds absolute positions at the input as BERT does and skips the
decoder; the decoder is the ``position_biased_input=False`` branch kept here).
The model's cost grows by one layer: the last layer runs twice. With one
encoder layer, the last layer's input is the embedding output, so the whole
model is the two decoder passes.

Shapes:
    hidden_states, query_states: ``(b, n, hidden)``; attention_mask: ``(b, n)``
    output: ``(b, n, hidden)``
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from relpos.checks import check_int
from relpos.transformer import DisentangledEncoder

#: How many times the decoder applies the last layer (two in DeBERTa).
EMD_PASSES = 2


class EnhancedMaskDecoder(DisentangledEncoder):
    """A ``DisentangledEncoder`` whose last layer runs as DeBERTa's mask decoder.

    The first ``num_layers - 1`` layers run as in ``DisentangledEncoder``; the
    last one runs :data:`EMD_PASSES` times with keys and values from its input
    ``hidden`` and queries from ``hidden + positions(n)``, then from the previous
    pass's output. ``table``, ``layers``, ``rel_embeddings`` and ``span`` are the
    encoder's, so every measurement of a DeBERTa encoder reads this one too.

    Args:
        num_layers: encoder layers, the decoder's layer included.
        positions: the absolute positions ``z``: a module called as
            ``positions(n)`` that returns ``(n, hidden)``.
        others: as for ``DisentangledEncoder``.

    Shapes:
        hidden_states: ``(b, n, hidden)``; attention_mask: ``(b, n)``
        output: ``(b, n, hidden)``
    """

    def __init__(self, num_layers: int, positions: nn.Module, **kwargs: Any) -> None:
        check_int("num_layers", num_layers, minimum=1)
        if not isinstance(positions, nn.Module):
            raise TypeError(
                "positions must be an nn.Module called as positions(n) -> (n, hidden), "
                f"got {type(positions).__name__}"
            )
        super().__init__(num_layers, **kwargs)
        self.positions = positions

    def encode(
        self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The input of the last layer: the first ``num_layers - 1`` layers.

        No absolute position enters here.

        Shapes:
            hidden_states: ``(b, n, hidden)``; attention_mask: ``(b, n)``
            output: ``(b, n, hidden)``
        """
        return self.run_layers(hidden_states, attention_mask, self.layers[:-1])

    def decode(
        self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The decoder passes over the last layer's input ``hidden_states``.

        Shapes:
            hidden_states: ``(b, n, hidden)``; attention_mask: ``(b, n)``
            output: ``(b, n, hidden)``
        """
        last = self.layers[-1]
        table = self.rel_embeddings()  # (r, hidden)
        query = hidden_states + self.positions(hidden_states.shape[1])  # (b, n, hidden)
        for _ in range(EMD_PASSES):
            query = last(
                hidden_states,
                attention_mask,
                rel_embeddings=self.table_dropout(table),
                query_states=query,
            )  # (b, n, hidden)
        return query

    def forward(
        self, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """``decode(encode(hidden_states))``.

        Shapes:
            hidden_states: ``(b, n, hidden)``; attention_mask: ``(b, n)``
            output: ``(b, n, hidden)``
        """
        hidden = self.encode(hidden_states, attention_mask)  # (b, n, hidden)
        return self.decode(hidden, attention_mask)

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, passes={EMD_PASSES}"


__all__ = ["EMD_PASSES", "EnhancedMaskDecoder"]
