"""The probe of claim 1, generalisation across positions.

- ``design``: the prediction, falsifier, arms and mechanism, written before
  any run, and the probe's settings;
- ``transfer``: a run supervised in the first half and scored by position,
  and the intervention (the absolute rows rolled by ``L / 2``);
- ``run``: both parts under the protocol into one JSON (the transfer part,
  and the data-efficiency curve through ``sweep.run_sweep``);
- ``cli``: ``python -m relpos.book.probes.positions``
  (``make probe-positions``);
- ``plot``: the figure; ``live``: the probe in under a minute, for a chapter.

The verdict is ``relpos.book.experiments.verdicts.positions``.
"""

from .design import ARMS, FALSIFIER, MECHANISM, PREDICTION
from .live import live
from .run import run_probe
from .transfer import measure, transfer_config

__all__ = [
    "ARMS",
    "FALSIFIER",
    "MECHANISM",
    "PREDICTION",
    "live",
    "measure",
    "run_probe",
    "transfer_config",
]
