"""DeBERTa's disentangled self-attention: moved to ``relpos.schemes.deberta``.

This module re-exports it (and the score functions it exported), so that
``relpos.attention.DisentangledSelfAttention`` and the old imports still work.
"""

from __future__ import annotations

from .schemes.deberta import (  # noqa: F401
    BACKENDS,
    POS_ATT_TYPES,
    AttentionScores,
    DisentangledSelfAttention,
    combine_scores,
    content_to_position,
    content_to_position_naive,
    gather_scores,
    position_to_content,
    position_to_content_naive,
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
