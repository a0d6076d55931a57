"""FIRE with its threshold where Li et al.'s code puts it: a quarter of training.

FIRE divides ``psi(i - j)`` by ``psi(max(L, i))``, ``L`` a learned threshold
(``relpos.schemes.fire``). The book's ``fire`` starts ``L`` at the training
length, so no training query is past it: the normaliser is the constant
``psi(L)`` in training, and the MLP meets the *progressive interpolation* (a
normaliser that grows with the query's position) only at test. Li et al.'s
reference code starts ``L`` at 512 and the paper trains at 2048: three quarters
of its training queries are past the threshold. ``fire-quarter`` is ``fire``
with ``L`` starting at ``train_length / THRESHOLD_SHARE`` and nothing else
changed (the MLP, ``c``, the learned factor of ``L``): the arm of
``mechanisms.FIRE_SETTINGS``.

Registered on import (``register_scheme``) with ``fire``'s coverage reader.

Shapes:
    bias: ``(h, i, j)``, as ``fire``'s
"""

from __future__ import annotations

from relpos.schemes import REGISTRY, FireSelfAttention

from ..config import Config
from ..coverage import READERS, register_reader
from ..schemes import SCHEMES, attention_encoder, register_scheme

#: The arm's name.
NAME = "fire-quarter"
#: The training length over the threshold's start (Li et al.'s code: 2048 / 512).
THRESHOLD_SHARE = 4


def threshold_of(config: Config) -> float:
    """The threshold ``L`` the arm starts at: ``train_length / THRESHOLD_SHARE``.

    Shapes:
        (no tensors)
    """
    return config.train_length / THRESHOLD_SHARE


def _build(config: Config):
    def attention() -> FireSelfAttention:
        arguments = REGISTRY["fire"].arguments(config)  # fire's, causal included
        arguments["threshold"] = threshold_of(config)
        return FireSelfAttention(config.hidden_size, config.num_heads, **arguments)

    return None, attention_encoder(config, attention)


if NAME not in SCHEMES:
    register_scheme(NAME, _build)
if NAME not in READERS:
    register_reader(NAME, READERS["fire"])


__all__ = ["NAME", "THRESHOLD_SHARE", "threshold_of"]
