"""The other relative position schemes, in the book's notation and sign (``i - j``).

Where position enters, scheme by scheme:

- content-dependent score terms: ``shaw`` (clipped relative keys and values,
  Shaw et al. 2018) and ``transformer_xl`` (a sinusoid of ``i - j`` and two global
  biases, Dai et al. 2019); DeBERTa's c2p and p2c (``relpos.attention``) belong here.
- a content-free score bias ``(h, i, j)``: ``t5`` (learned, bucketed; Raffel et
  al. 2020) and ``alibi`` (fixed slopes; Press et al. 2022).
- a query/key transform: ``rotary`` (Su et al. 2021).

Each module holds the scheme's pure functions (buckets, slopes, angles, the
sinusoid), in the book's ``i - j`` with the paper's own convention in its
docstring, and one self-attention module that owns the scheme's parameters.
The self-attentions share ``SchemeSelfAttention`` (projections, masking,
softmax, values) and all have the same call::

    attention(hidden_states, attention_mask=None) -> context   # (b, n, hidden)

and all are built as ``attention(hidden_size, num_heads, ..., causal=False)``:
``causal=True`` makes a decoder's attention (keys ``j <= i`` only) in the
scheme's causal form (ALiBi's one-sided bias, T5's one-sided buckets; the same
terms under the mask for Shaw, Transformer-XL and RoPE).

``score_by_distance`` gives what each scheme adds to a logit as a function of
``i - j``, for the landscape figure.

Shape legend:
    b  batch      n  sequence length      h  heads      d  head width
    i  query      j  key                  r  a distance i - j, or a table row
"""

from __future__ import annotations

from .alibi import AlibiBias, AlibiSelfAttention, alibi_bias, alibi_slopes
from .attention import (
    BiasSelfAttention,
    SchemeScores,
    SchemeSelfAttention,
    masked_softmax,
    relative_distances,
)
from .landscape import score_by_distance
from .rotary import (
    RotarySelfAttention,
    rotary_angles,
    rotary_frequencies,
    rotate,
    rotate_half,
)
from .shaw import ShawSelfAttention, relative_value_sum, shaw_index
from .t5 import T5Bias, T5SelfAttention, t5_bucket, t5_exact_limit
from .transformer_xl import (
    TransformerXLSelfAttention,
    sinusoidal_encoding,
    transformer_xl_terms,
)

#: Each scheme's self-attention by name; all take ``(hidden_size, num_heads, ...)``.
#: The one registry of attention schemes: ``relpos.book.experiments`` reads it too.
ATTENTIONS: dict[str, type[SchemeSelfAttention]] = {
    "shaw": ShawSelfAttention,
    "transformer_xl": TransformerXLSelfAttention,
    "t5": T5SelfAttention,
    "alibi": AlibiSelfAttention,
    "rotary": RotarySelfAttention,
}


def register_attention(
    name: str, attention: type[SchemeSelfAttention], *, replace: bool = False
) -> None:
    """Add a scheme's self-attention to ``ATTENTIONS`` as ``name``.

    ``attention`` is a subclass of ``SchemeSelfAttention`` built as
    ``attention(hidden_size, num_heads)``, and as
    ``attention(hidden_size, num_heads, causal=True)`` for a causal model. A
    taken ``name`` is a ``ValueError`` unless ``replace=True``; a name must be
    lowercase letters, digits, ``-`` and ``_`` (it is also a scheme name on the
    experiments' command line).
    """
    plain = isinstance(name, str) and name and all(
        c.isdigit() or c in "-_" or (c.isalpha() and c.islower()) for c in name
    )
    if not plain:
        raise ValueError(
            "name must be a non-empty lowercase name (letters, digits, '-', '_'), "
            f"got {name!r}"
        )
    if not (isinstance(attention, type) and issubclass(attention, SchemeSelfAttention)):
        raise TypeError(
            "attention must be a subclass of relpos.schemes.SchemeSelfAttention, "
            f"got {attention!r}"
        )
    if name in ATTENTIONS and not replace:
        raise ValueError(f"name {name!r} is already an attention; pass replace=True")
    ATTENTIONS[name] = attention

__all__ = [
    "ATTENTIONS",
    "AlibiBias",
    "AlibiSelfAttention",
    "BiasSelfAttention",
    "RotarySelfAttention",
    "SchemeScores",
    "SchemeSelfAttention",
    "ShawSelfAttention",
    "T5Bias",
    "T5SelfAttention",
    "TransformerXLSelfAttention",
    "alibi_bias",
    "alibi_slopes",
    "masked_softmax",
    "register_attention",
    "relative_distances",
    "relative_value_sum",
    "rotary_angles",
    "rotary_frequencies",
    "rotate",
    "rotate_half",
    "score_by_distance",
    "shaw_index",
    "sinusoidal_encoding",
    "t5_bucket",
    "t5_exact_limit",
    "transformer_xl_terms",
]
