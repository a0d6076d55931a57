"""The ``flex`` backend's public names, where the book and the benchmark import them.

The kernel itself lives in ``relpos.backends.flex`` next to the other backends;
this module re-exports it (``relpos.flex.make_score_mod``,
``relpos.flex.full_block_mask``, ``relpos.flex.FlexUnavailableError``, ...).
"""

from __future__ import annotations

from .backends.flex import (  # noqa: F401  (the benchmark's profiler reads these)
    FlexUnavailableError,
    _flex_attention,
    _run_flex,
    _tables,
    attend,
    flex_disentangled_attention,
    full_block_mask,
    heads_contiguous,
    make_score_mod,
)

__all__ = [
    "FlexUnavailableError",
    "attend",
    "flex_disentangled_attention",
    "full_block_mask",
    "heads_contiguous",
    "make_score_mod",
]
