"""The other relative position schemes, in the book's notation and sign (``i - j``).

Where position enters, scheme by scheme:

- nowhere: ``none`` (content attention alone, the floor every scheme is compared
  with; its registration says ``positional=False``).
- content-dependent score terms: ``shaw`` (clipped relative keys and values,
  Shaw et al. 2018) and ``transformer_xl`` (a sinusoid of ``i - j`` and two global
  biases, Dai et al. 2019), and ``deberta`` (c2p and p2c over a table its stack
  shares, He et al. 2021; ``relpos.schemes.deberta``).
- a content-free score bias ``(h, i, j)``: ``t5`` (learned, bucketed; Raffel et
  al. 2020), ``alibi`` (fixed slopes; Press et al. 2022), ``kerple`` (a kernel of
  ``|i - j|`` with two learned scalars per head; Chi et al. 2022) and ``fire`` (a
  small MLP of a normalised distance, which also reads the query's position;
  Li et al. 2024).
- a separate term of the two absolute positions, with its own table and
  projections: ``tupe`` (untied positional encoding; Ke et al. 2021).
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

Each scheme registers itself at the end of its own file (``registry``): its
class, which config fields size it, its variants, its coverage reader,
whether it is relative and content-free, and its arithmetic (the products its
position terms add, which the benchmark's roofline reads); ``ATTENTIONS`` is the
name -> class view of that registry, and ``relpos.book.experiments`` reads the rest.

``score_by_distance`` gives what each scheme adds to a logit as a function of
``i - j``, for the landscape figure.

Shape legend:
    b  batch      n  sequence length      h  heads      d  head width
    i  query      j  key                  r  a distance i - j, or a table row
"""

from __future__ import annotations

# Each scheme module registers itself when imported: this order is the registry's.
# DeBERTa, the book's subject, first.
# Then ``none``, no positions at all, the floor the others are compared with.
from . import deberta, none  # noqa: F401
from . import shaw, transformer_xl, t5, alibi, rotary, fire, kerple, tupe  # noqa: F401
from .deberta import DisentangledSelfAttention
from .alibi import AlibiBias, AlibiSelfAttention, alibi_bias, alibi_slopes
from .attention import (
    BiasSelfAttention,
    SchemeScores,
    SchemeSelfAttention,
    masked_softmax,
    relative_distances,
)
from .fire import FireBias, FireSelfAttention, fire_input
from .kerple import (
    KerpleBias,
    KerpleSelfAttention,
    kerple_log_bias,
    kerple_power_bias,
)
from .landscape import score_by_distance
from .registry import (
    ATTENTIONS,
    REGISTRY,
    PositionEntries,
    SchemeRegistration,
    SharedInput,
    WorkSizes,
    build_attention,
    element_wise,
    plain_name,
    position_work,
    register,
    resolve,
    scheme_names,
)
from .rotary import (
    RotarySelfAttention,
    rotary_angles,
    rotary_frequencies,
    rotate,
    rotate_half,
)
from .shaw import ShawSelfAttention, relative_value_sum, shaw_index
from .t5 import T5Bias, T5SelfAttention, t5_bucket, t5_exact_limit
from .tupe import TupeBias, TupeSelfAttention
from .transformer_xl import (
    TransformerXLSelfAttention,
    sinusoidal_encoding,
    transformer_xl_terms,
)

def register_attention(
    name: str, attention: type[SchemeSelfAttention], *, replace: bool = False
) -> None:
    """Add a scheme's self-attention to the registry as ``name``, with no settings.

    ``attention`` is a subclass of ``SchemeSelfAttention`` built as
    ``attention(hidden_size, num_heads)``, and as
    ``attention(hidden_size, num_heads, causal=True)`` for a causal model. A
    taken ``name`` is a ``ValueError`` unless ``replace=True``; a name must be
    lowercase letters, digits, ``-`` and ``_`` (it is also a scheme name on the
    experiments' command line). A scheme that the book's experiments should
    size from their config, read for coverage or build in variants registers a
    :class:`SchemeRegistration` with :func:`register` instead (its own file does,
    as ``fire.py`` and ``kerple.py`` do).
    """
    plain_name("name", name)
    register(SchemeRegistration(name, attention), replace=replace)


__all__ = [
    "ATTENTIONS",
    "AlibiBias",
    "AlibiSelfAttention",
    "BiasSelfAttention",
    "DisentangledSelfAttention",
    "FireBias",
    "FireSelfAttention",
    "KerpleBias",
    "KerpleSelfAttention",
    "PositionEntries",
    "REGISTRY",
    "RotarySelfAttention",
    "SchemeRegistration",
    "SchemeScores",
    "SchemeSelfAttention",
    "SharedInput",
    "ShawSelfAttention",
    "T5Bias",
    "T5SelfAttention",
    "TransformerXLSelfAttention",
    "TupeBias",
    "TupeSelfAttention",
    "WorkSizes",
    "alibi_bias",
    "alibi_slopes",
    "build_attention",
    "element_wise",
    "fire_input",
    "kerple_log_bias",
    "kerple_power_bias",
    "masked_softmax",
    "plain_name",
    "position_work",
    "register",
    "register_attention",
    "relative_distances",
    "relative_value_sum",
    "resolve",
    "rotary_angles",
    "rotary_frequencies",
    "rotate",
    "rotate_half",
    "scheme_names",
    "score_by_distance",
    "shaw_index",
    "sinusoidal_encoding",
    "t5_bucket",
    "t5_exact_limit",
    "transformer_xl_terms",
]
