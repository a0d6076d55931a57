"""Randomised positions (Ruoss et al. 2023): an ordered random subset of ``0 .. P - 1``.

A model trained on sequences of at most ``L`` tokens with positions ``0 .. n - 1``
never meets a position (or a distance) of ``L`` or more; a longer test
sequence then reads entries it has never trained. Ruoss et al. give every
sequence instead the positions of an ordered random subset of ``0 .. P - 1``,
with ``P`` at least the longest test length, so that training visits the whole
range. Their reference code
(``google-deepmind/randomized_positional_encodings``) draws the subset again
at evaluation (the model's random key is passed at test time too), trains on
lengths up to 40 with ``P = 2048`` in its example, and draws one subset per
batch, shared by its sequences. Here each sequence draws its own subset, in
training and in evaluation alike (seeded: a run gives the same numbers every
time), and the positions reach a scheme as ``positions=(b, n)``: an absolute
table or sinusoid reads row ``p_i``, a relative scheme the distances
``p_i - p_j``. Their relative (Transformer-XL) and ALiBi variants sample the
distances themselves (one ordered subset of ``1 .. P - 1``, mirrored for keys
ahead) rather than positions; with positions, the distance of two tokens
``d`` apart in the sequence is a sum of ``d`` random gaps.

Shapes:
    positions: ``(b, n)``, increasing along each row, in ``0 .. P - 1``
"""

from __future__ import annotations

import torch

from relpos.checks import check_int

from .config import Config, data_seed


def draw_positions(
    b: int, n: int, position_range: int, generator: torch.Generator
) -> torch.Tensor:
    """``b`` ordered random subsets of ``n`` of the positions ``0 .. position_range-1``.

    Each row is uniform over the ``C(P, n)`` subsets, sorted.

    Shapes:
        output: ``(b, n)``
    """
    b = check_int("b", b, minimum=1)
    n = check_int("n", n, minimum=1)
    position_range = check_int("position_range", position_range, minimum=1)
    if n > position_range:
        raise ValueError(
            f"n must be <= position_range={position_range} (distinct positions), "
            f"got {n}"
        )
    keys = torch.rand(b, position_range, generator=generator)  # (b, P)
    return keys.argsort(-1)[:, :n].sort(-1).values  # (b, n)


def evaluation_positions(config: object, b: int, n: int) -> torch.Tensor | None:
    """The positions a model of ``config`` is measured with on ``b`` sequences of ``n``.

    ``None`` (positions ``0 .. n - 1``) unless the run randomises them; then
    :func:`draw_positions` from a generator seeded by ``(seed, task, n)``
    (``data_seed(config, n, "positions")``), so every scheme of a sweep cell is
    measured with the same positions. A config that is not an experiments
    ``Config`` (a text model's) never randomises.

    Shapes:
        output: ``(b, n)`` or None
    """
    if not isinstance(config, Config) or config.position_range is None:
        return None
    generator = torch.Generator().manual_seed(data_seed(config, n, "positions"))
    return draw_positions(b, n, config.position_range, generator)


__all__ = ["draw_positions", "evaluation_positions"]
