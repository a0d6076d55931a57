"""No position information at all: content attention alone.

The score of a pair is the content logit ``q_i . k_j / sqrt(d)``; nothing in it
depends on where the two tokens sit. In an encoder the model sees a bag of
tokens (every permutation of the input permutes the output the same way). A
decoder (``causal=True``) still knows order: the mask lets query ``i`` read
``i + 1`` keys, so a query can count the keys before it.

Its self-attention is the bare ``SchemeSelfAttention`` (``relpos.SelfAttention``),
which overrides no position hook. It is the floor every scheme is compared with,
and the ``"plain"`` attention the benchmark times the others against.

Shapes:
    hidden_states: ``(b, n, hidden)``; output: ``(b, n, hidden)``
"""

from __future__ import annotations

from .attention import SchemeSelfAttention
from .registry import SchemeRegistration, element_wise, register

register(
    SchemeRegistration(
        "none",
        SchemeSelfAttention,
        # coverage: no pair reads any position entry
        entries=lambda attention, rel: {},
        # a shift of every position changes nothing, and the landscape is zero
        relative=True,
        content_free=True,
        positional=False,
        arithmetic=element_wise,
    )
)

__all__: list[str] = []
