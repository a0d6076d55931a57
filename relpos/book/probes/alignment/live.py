"""The probe in under a minute on one core, for the chapter's live cell.

One small run of the main arm (DeBERTa with ``k = L``), a few hundred steps on
the grammar, scored on the committed items: accuracy per (relation, distance,
offset). :func:`live_check` is the assertion the chapter makes, one that holds
on every run: the nearest bracket relation (``d`` = :data:`LIVE_DISTANCE`, an
attractor pair right before the closer) is known at every offset alike, each
offset at least :data:`LIVE_FLOOR` right (seed 0 on a 2-core AMD EPYC: 0.96, 1.0
and 1.0 at offsets 2, 20 and 38, in about 25 s). The agreement half is not
asserted: at 300 steps some seeds have learned it and some have not. The full
probe's verdict is the sweep's, not this run's.
"""

from __future__ import annotations

from typing import Any, Sequence

from .design import MAIN_ARM
from .run import ProbeRun, decode_margins, probe_run
from .summary import accuracy, correct

#: The live run: steps and rate (a rate of the tuning grid; not tuned here).
LIVE_STEPS = 300
LIVE_RATE = 3.16e-3
#: The relation and distance the live assertion reads, and its floor.
LIVE_RELATION = "brackets"
LIVE_DISTANCE = 3
LIVE_FLOOR = 0.8


def live_probe(items: Sequence[dict[str, Any]], *, arm: str = MAIN_ARM,
               steps: int = LIVE_STEPS, seed: int = 0) -> dict[str, Any]:
    """Train one small run and score ``items``: its record and accuracy by cell.

    Returns ``{"record": ..., "accuracy": {(relation, d, offset): share}}``.
    """
    run = ProbeRun(arm=arm, seed=seed, steps=steps, learning_rate=LIVE_RATE,
                   stream_bytes=steps * 32 * 65 + 1)
    record = probe_run(run, items)
    right = correct(decode_margins(record["margins"]))
    cells = accuracy(items, right, ("relation", "distance", "offset"))
    return {"record": record, "accuracy": cells}


def live_check(result: dict[str, Any]) -> dict[int, float]:
    """The chapter's assertion: every offset of the live cell is right at least
    :data:`LIVE_FLOOR` of the time. Returns the accuracy per offset."""
    shares = {
        offset: share for (relation, d, offset), share in result["accuracy"].items()
        if (relation, d) == (LIVE_RELATION, LIVE_DISTANCE)
    }
    if not shares:
        raise ValueError(f"result must score {LIVE_RELATION} items at d = "
                         f"{LIVE_DISTANCE}")
    low = min(shares.values())
    assert low >= LIVE_FLOOR, f"an offset fell to {low:.2f} (< {LIVE_FLOOR})"
    return shares


__all__ = ["LIVE_DISTANCE", "LIVE_FLOOR", "LIVE_RATE", "LIVE_RELATION",
           "LIVE_STEPS", "live_check", "live_probe"]
