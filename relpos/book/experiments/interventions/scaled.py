"""The sinusoid with a learned scale: the sinusoidal scheme, its size set free.

``sinusoidal`` adds fixed sine/cosine features to the tokens at a fixed size
(``SinusoidalPositions.scale``, the root mean square of the token embeddings at
initialisation), while a learned absolute table's rows grow in training (about
twice). Chapter 9 blames the sinusoid's hunger for data on its neighbouring
rows being nearly alike; its size is a second difference. The two schemes here
change the size alone:

- ``sinusoidal-scale``: the same features times one learned number;
- ``sinusoidal-scale-dims``: times one learned number per dimension of the
  model (which also lets training reweigh the frequencies, so neighbouring rows
  may grow less alike).

The learned factor is a parameter in the units of the rows, initialised to the
fixed scale: at its initial value the output is ``sinusoidal``'s, bit for bit.
The unit matters: AdamW moves a parameter by about the learning rate per step
whatever its size, so a factor starting at 1 could at most about triple the
rows in 500 steps at rate 0.01, while an entry of a learned table, starting
near 0.02, can grow many times over; a factor starting at the fixed scale has
the learned table's freedom. Nothing else changes: no random number is drawn
for the factor, so a model built under the same seed has every other weight
equal to ``sinusoidal``'s.

Both schemes are registered on import (``register_scheme``) with coverage
readers: the sinusoid's positions are a fixed formula, the factor one learned
entry that every pair reads.

Shapes:
    forward(n): ``(n, hidden)``
    scale: ``(1, 1)`` or ``(1, hidden)``
"""

from __future__ import annotations

import torch
from torch import nn

from relpos.checks import check_bool

from ..config import Config
from ..coverage import Entries, READERS, register_reader
from ..schemes import SCHEMES, SinusoidalPositions, content_encoder, register_scheme

#: The schemes of this module: name -> one factor per dimension (or one in all).
SCALED = {"sinusoidal-scale": False, "sinusoidal-scale-dims": True}
#: The parameter that holds the factor (for coverage and gradients).
SCALE_PARAMETER = "input_positions.scale"


class ScaledSinusoidalPositions(SinusoidalPositions):
    """``SinusoidalPositions`` whose factor ``scale`` is learned.

    Args:
        hidden_size: model width.
        per_dimension: one factor per dimension (``(1, hidden)``) instead of one
            in all (``(1, 1)``).

    Shapes:
        forward(n) -> ``(n, hidden)``
    """

    def __init__(self, hidden_size: int, *, per_dimension: bool = False) -> None:
        super().__init__(hidden_size)
        width = self.hidden_size if check_bool("per_dimension", per_dimension) else 1
        start = torch.full((1, width), self.scale)  # the fixed scale, no random draw
        self.scale = nn.Parameter(start)  # replaces the float of the parent


def _builder(per_dimension: bool):
    def build(config: Config):
        positions = ScaledSinusoidalPositions(
            config.hidden_size, per_dimension=per_dimension
        )
        return positions, content_encoder(config)

    return build


def _reader(config: Config, n: int) -> dict[str, Entries]:
    """The sinusoid's fixed entries, and the factor: entry 0, read by every pair."""
    found = dict(READERS["sinusoidal"](config, n))
    found["scale"] = Entries(torch.zeros(n, n, dtype=torch.long), True, SCALE_PARAMETER)
    return found


for _name, _per_dimension in SCALED.items():
    if _name not in SCHEMES:
        register_scheme(_name, _builder(_per_dimension))
    if _name not in READERS:
        register_reader(_name, _reader)


__all__ = ["SCALED", "SCALE_PARAMETER", "ScaledSinusoidalPositions"]
