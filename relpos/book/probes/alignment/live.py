"""The probe in under a minute on one core, for the chapter's live cell.

One small run of the main arm (DeBERTa with ``k = L``), a few hundred steps on
the grammar, scored on the committed items: accuracy per (relation, distance,
offset). :func:`live_check` is the assertion the chapter makes, one that holds
on every run: the nearest bracket relation (``d`` = :data:`LIVE_DISTANCE`, an
attractor pair right before the closer) is known at every offset alike, each
offset at least :data:`LIVE_FLOOR` right. The run is 200 steps at 1e-2, the
rate the sweep's tuning chose for this arm (at 3.16e-3 it took 300 steps, about
25 s of one core): on seeds 0 to 4 every offset is 1.0 right, in about 15 s of one
core; at 150 steps one seed of five fell to 0.66. Only the items at
:data:`LIVE_DISTANCE` are scored (the cell reads no other), and the validation
stream is :data:`LIVE_VALID_BYTES` long (its bits per byte are not read). The
agreement half is not asserted: at this budget no seed has learned it. The full
probe's verdict is the sweep's, not this run's.
"""

from __future__ import annotations

from typing import Any, Sequence

from .design import MAIN_ARM
from .run import ProbeRun, decode_margins, probe_run
from .summary import accuracy, correct

#: The live run: steps and rate (the tuning grid's choice for the main arm at
#: the probe's 300 steps; not tuned here).
LIVE_STEPS = 200
LIVE_RATE = 1e-2
#: Bytes of the live run's validation stream (the probe's runs read 2**16).
LIVE_VALID_BYTES = 2**12
#: The relation and distance the live assertion reads, and its floor.
LIVE_RELATION = "brackets"
LIVE_DISTANCE = 3
LIVE_FLOOR = 0.8


def live_probe(items: Sequence[dict[str, Any]], *, arm: str = MAIN_ARM,
               steps: int = LIVE_STEPS, seed: int = 0) -> dict[str, Any]:
    """Train one small run and score the ``items`` at :data:`LIVE_DISTANCE`: its
    record and accuracy by cell.

    Returns ``{"record": ..., "accuracy": {(relation, d, offset): share}}``.
    """
    run = ProbeRun(arm=arm, seed=seed, steps=steps, learning_rate=LIVE_RATE,
                   stream_bytes=steps * 32 * 65 + 1, valid_bytes=LIVE_VALID_BYTES)
    items = [item for item in items if item["distance"] == LIVE_DISTANCE]
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
           "LIVE_STEPS", "LIVE_VALID_BYTES", "live_check", "live_probe"]
