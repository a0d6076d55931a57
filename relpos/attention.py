"""DeBERTa's disentangled self-attention: moved to ``relpos.schemes.deberta``.

This module re-exports it (and the score functions it exported), so that
``relpos.attention.DisentangledSelfAttention`` and the old imports still work.
"""

from __future__ import annotations

from .schemes import deberta as _deberta
from .schemes.deberta import *  # noqa: F401,F403

__all__ = list(_deberta.__all__)
