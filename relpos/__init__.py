"""relpos: DeBERTa's relative position encoding, built up step by step.

Sign convention (used everywhere in this package and the book): the relative
position of key ``j`` seen from query ``i`` is ``i - j``, query minus key, as in
DeBERTa. Positive means the key lies behind (before) the query; negative means
it lies ahead. The table row of a pair is
``delta(i - j) = clamp(i - j, -k, k - 1) + k``.

Shape legend:
    b  batch                    n  sequence length
    h  attention heads          d  head width, hidden // h
    i  query position           j  key position
    k  span (max_relative_positions, or position_buckets with log buckets)
    r  table row, 0 <= r < 2k   hidden  model width
"""

from . import masks
from .attention import DisentangledSelfAttention
from .backends import BACKENDS, PositionTerms, register_backend
from .cache import KVCache
from .config import POS_ATT_TYPES, AttentionConfig
from .core import SelfAttention
from .scores import (
    AttentionScores,
    combine_scores,
    content_to_position,
    content_to_position_naive,
    gather_scores,
    position_to_content,
    position_to_content_naive,
)
from .embedding import (
    INITS,
    RelativePositionEmbedding,
    per_pair_memory_bytes,
    row_cosine_similarity,
    sinusoidal_table,
    table_memory_bytes,
)
from .encoder import DisentangledEncoderLayer, EncoderLayer
from .generate import generate
from .model import DisentangledModel, Embeddings
from .transformer import DisentangledEncoder, Transformer, TransformerLM
from .positions import (
    attention_span,
    delta,
    distance_lookup,
    exact_bucket_limit,
    index_from_lookup,
    log_bucket_position,
    position_index,
    relative_position_index,
    relative_positions,
)

__version__ = "0.4.0"

# The book's machinery moved to relpos.book in 0.2; its old names went in 0.3.
_MOVED_TO_BOOK = ("bench", "exercises", "experiments", "plot", "results")


def __getattr__(name: str):
    if name in _MOVED_TO_BOOK:
        raise AttributeError(
            f"relpos.{name} moved to relpos.book.{name} in 0.2 (old name gone in 0.3)"
        )
    raise AttributeError(f"module 'relpos' has no attribute {name!r}")

__all__ = [
    "AttentionConfig",
    "AttentionScores",
    "BACKENDS",
    "DisentangledEncoder",
    "DisentangledEncoderLayer",
    "DisentangledModel",
    "DisentangledSelfAttention",
    "Embeddings",
    "EncoderLayer",
    "INITS",
    "KVCache",
    "Transformer",
    "TransformerLM",
    "generate",
    "POS_ATT_TYPES",
    "PositionTerms",
    "RelativePositionEmbedding",
    "SelfAttention",
    "attention_span",
    "combine_scores",
    "content_to_position",
    "content_to_position_naive",
    "delta",
    "distance_lookup",
    "exact_bucket_limit",
    "gather_scores",
    "index_from_lookup",
    "masks",
    "log_bucket_position",
    "per_pair_memory_bytes",
    "position_index",
    "position_to_content",
    "position_to_content_naive",
    "register_backend",
    "relative_position_index",
    "relative_positions",
    "row_cosine_similarity",
    "sinusoidal_table",
    "table_memory_bytes",
]
