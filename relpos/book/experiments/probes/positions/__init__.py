"""The probe of claim 1, generalisation across positions: ``design`` first.

``design`` holds the prediction, falsifier, arms and mechanism, written before
any run.
"""

from .design import ARMS, FALSIFIER, MECHANISM, PREDICTION

__all__ = ["ARMS", "FALSIFIER", "MECHANISM", "PREDICTION"]
