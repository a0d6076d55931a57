"""The probe of claim 4, "cleaner gradient flow": an intervention, not a correlation.

Chapter 1's words: since position and content never add up to one vector,
position gradients cannot interfere with content learning. This probe changes
how positions enter one model (its arms, :data:`design.ARMS`) and measures what
training a position objective beside the content objective costs the content
objective in each arm; :mod:`.design` states the prediction and the falsifier,
written before the runs.
"""

from .design import (
    ARMS,
    AUX_TARGET,
    FALSIFIER,
    MECHANISM,
    MIXES,
    OFFSET,
    PREDICTION,
    SCHEMA,
)

__all__ = [
    "ARMS",
    "AUX_TARGET",
    "FALSIFIER",
    "MECHANISM",
    "MIXES",
    "OFFSET",
    "PREDICTION",
    "SCHEMA",
]
