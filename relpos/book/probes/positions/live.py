"""The probe live, for a chapter cell: two schemes, a seed or two, under a minute.

:func:`live` trains the transfer part's runs of a relative scheme and of the
learned absolute table at the probe's settings (first half supervised), at a
fixed rate instead of a tuned one, and returns each run's gap and the verdict
of the prediction's contrast on them: *holds* when, seed by seed, the absolute
table's gap exceeds the relative scheme's by at least ``ABSOLUTE_GAP`` (25
points). A seed or two cannot give the interval the probe's ``MARGIN`` is
judged by (one DeBERTa run at 250 steps had a gap of 4 points, at 500 steps
0.3 points), so the live verdict rests on the contrast, wide on every seed.
The assertion a chapter makes is on that verdict, never on a raw loss. The
runs are :data:`LIVE_STEPS` long, not the probe's 500: at 300 steps the contrast
is 0.91 to 0.97 on seeds 0 to 4 (the floor is 0.25), at 200 one seed's table
had not yet learned the first half (contrast 0.0). One run takes 1 to 3 s of one
core.
"""

from __future__ import annotations

import torch

from .design import ABSOLUTE_GAP
from .transfer import measure, transfer_config

#: The rate of every live run: the main sweep's choice at 512 sequences of the
#: relative task for both the absolute table and DeBERTa.
LIVE_RATE = 3.16e-2
#: Steps of every live run (the probe's runs take 500).
LIVE_STEPS = 300


def live(
    relative: str = "deberta",
    *,
    seeds: tuple[int, ...] = (0,),
    steps: int = LIVE_STEPS,
    train_size: int | None = None,
) -> dict[str, object]:
    """Train ``relative`` and ``absolute`` on the first half, score both halves.

    ``steps`` and ``train_size`` shrink the runs (a test); ``train_size``
    defaults to the probe's, ``steps`` to :data:`LIVE_STEPS`. Returns
    ``{"gaps": {scheme: [gap per seed]}, "runs": {scheme: [record]}, "verdict":
    "holds" | "fails"}``.

    Shapes:
        (no tensors): a dict of floats and records
    """
    if relative == "absolute":
        raise ValueError("relative must name a scheme other than 'absolute'")
    if not seeds:
        raise ValueError(f"seeds must hold at least one seed, got {seeds!r}")
    changes: dict[str, object] = {"steps": steps, "learning_rate": LIVE_RATE}
    if train_size is not None:
        changes["train_size"] = train_size
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        runs = {
            scheme: [
                measure(transfer_config(scheme, "first", seed, **changes))
                for seed in seeds
            ]
            for scheme in (relative, "absolute")
        }
    finally:
        torch.set_num_threads(before)
    gaps = {scheme: [r["gap"] for r in found] for scheme, found in runs.items()}
    holds = all(
        a - r >= ABSOLUTE_GAP for a, r in zip(gaps["absolute"], gaps[relative])
    )
    return {"gaps": gaps, "runs": runs, "verdict": "holds" if holds else "fails"}


__all__ = ["LIVE_RATE", "LIVE_STEPS", "live"]
