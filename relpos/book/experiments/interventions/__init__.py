"""Interventions: each mechanism the book asserts, tested by changing its cause alone.

Chapters 9 and 10 explain four verdicts by a mechanism read off a correlation.
Each intervention here changes the suspected cause and nothing else, paired by
seed (the same seeds, data and, where the arms share them, weights), and
reports the result whichever way it goes:

- ``row_zero``: ``deberta-buckets``' loss beyond ``4L`` blamed on its untrained
  row 0; the trained model with row 0's reads redirected to a trained row, or
  masked.
- ``sinusoid_scale``: ``sinusoidal``'s hunger for data blamed on its similar
  neighbouring rows, confounded with its fixed size; the same sinusoid with a
  learned scale (``scaled``: ``sinusoidal-scale``, ``sinusoidal-scale-dims``).
- ``two_hop``: two layers solving ``far`` by a two-hop path inside the window;
  the path measured, then cut (``two_hop``).
- ``causal_t5``: causal T5 holding ``relative`` past ``L`` "by twice the
  resolution"; its bias gap against the number of competing keys, and the
  encoder's keys cut to the causal ones.

- ``mqar_rates``, ``sinusoid_one_rate``, ``deberta_reach``: three of the six
  mechanisms of chapters 11 to 13 (``mechanisms``: each design's prediction,
  falsifier and arms, written before the runs; ``make mechanisms``), the first
  and last trained twice with one setting changed (``retrained``).

``surgery`` runs a trained model with one thing changed (per-layer pair
masks, a redirected table row); ``run`` trains every cell through the sweep's
engine and runs folder and writes one JSON; the command line is
``python -m relpos.book.experiments.interventions --output PATH``
(``make interventions``).

Importing this package registers the two scaled-sinusoid schemes.
"""

from .common import Side, arm_accuracies, paired, run_record
from .run import (
    DEFAULT_SEEDS,
    INTERVENTIONS,
    Cell,
    Intervention,
    cell_config,
    intervention_of,
    run_interventions,
)
from .scaled import SCALED, ScaledSinusoidalPositions
from .surgery import (
    accuracy_with,
    distance_mask,
    forward_layers,
    redirect_row,
    rows_read,
)

__all__ = [
    "Cell",
    "DEFAULT_SEEDS",
    "INTERVENTIONS",
    "Intervention",
    "SCALED",
    "ScaledSinusoidalPositions",
    "Side",
    "accuracy_with",
    "arm_accuracies",
    "cell_config",
    "distance_mask",
    "forward_layers",
    "intervention_of",
    "paired",
    "redirect_row",
    "rows_read",
    "run_interventions",
    "run_record",
]
