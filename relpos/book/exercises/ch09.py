"""Checks for chapter 9, relative positions at work.

The check of the "predict, then run" exercise takes the student's run record
(an entry of ``relpos.book.experiments.compare``) and what it was built from;
it rebuilds the model (no training) to confirm that the run belongs to that
setting, then reads its accuracy (chapter 10's checks share these helpers).
The data-efficiency check reads the protocol's main sweep stored with the
package, ``relpos.book.results.load("protocol/sweep.json")``.
"""

from __future__ import annotations

import textwrap
from typing import Any

import torch

from relpos.positions import position_index
from ._core import as_number, exercise, fail

FAR_DISTANCE = 12  # the shift of the far task
THRESHOLD = 0.9  # "solves the task": mean accuracy of at least 90%
WIDTH = 88  # the book's column: a note is wrapped to fit it


def fit(note: str, label: str) -> str:
    """``note`` wrapped so that ``"<label>: correct. <note>"`` fits ``WIDTH``."""
    prefix = f"{label}: correct. "
    return textwrap.fill(prefix + note, WIDTH)[len(prefix):]


def own_row_span(distance: int, *, largest: int = 256) -> int:
    """The smallest span ``k`` at which ``distance`` has a row no other distance reads.
    """
    distances = torch.arange(-4 * largest, 4 * largest + 1)  # (8 * largest + 1,)
    for k in range(2, largest + 1):
        rows = position_index(distances, max_relative_positions=k)  # one per distance
        mine = rows[distances == distance]
        if int((rows == mine).sum()) == 1:
            return k
    raise ValueError(f"distance must be below {largest}, got {distance}")


def _run_record(run: Any) -> dict[str, Any]:
    """``run`` if it looks like one entry of ``compare(...)``, else a hint."""
    needed = {"task", "scheme", "accuracy", "parameters"}
    if not isinstance(run, dict) or not needed <= set(run):
        fail(
            "run must be one entry of compare(...), for example "
            'compare(config, ["deberta"])["deberta"]; got '
            f"{type(run).__name__}"
        )
    return run


def _accuracy_at(run: dict[str, Any], length: int) -> float:
    """The run's accuracy at test ``length``, or a hint naming the lengths it has."""
    accuracy = run["accuracy"]
    key = str(length)
    if key not in accuracy:
        fail(
            f"the run was not tested at its training length {length}; its test "
            f"lengths are {', '.join(accuracy)}: keep the training length among them"
        )
    return float(accuracy[key])


def _lengths(run: dict[str, Any]) -> str:
    return ", ".join(
        f"{100 * float(acc):.0f}% at {n}" for n, acc in run["accuracy"].items()
    )


def _check_parameters(run: dict[str, Any], config: Any, what: str) -> None:
    """A hint unless ``run`` has the parameter count of ``config``'s model."""
    from ..experiments import TinyModel, count_parameters

    with torch.random.fork_rng():
        expected = count_parameters(TinyModel(config))
    if run["parameters"] != expected:
        fail(
            f"the run has {run['parameters']} parameters, the model of {what} has "
            f"{expected}: the run was trained with other settings"
        )


@exercise("ch9-ex1")
def far_task_with_a_wider_window(smallest_k: Any, run: Any, *, config: Any) -> str:
    """The smallest span that gives distance 12 a row of its own, and a run with k = 16.

    ``config`` is the ``relpos.book.experiments.Config`` the run was trained with.
    """
    from ..experiments import Config

    got = as_number(smallest_k, "a span k, an int")
    expected = own_row_span(FAR_DISTANCE)
    if got != expected:
        if got <= FAR_DISTANCE:
            fail(
                f"with k = {got:g} distance {FAR_DISTANCE} lies outside the window "
                "[-k, k - 1] and is clipped onto the last row with every farther one"
            )
        if got < expected:
            fail(
                f"with k = {got:g} distance {FAR_DISTANCE} still reads row 2k - 1, "
                "and so does every distance behind it: the window stops at k - 1, "
                "and its last row is shared"
            )
        fail(
            f"k = {got:g} gives distance {FAR_DISTANCE} a row of its own, but so does "
            "a smaller span: find the first k at which nothing else reads its row"
        )
    if not isinstance(config, Config):
        got = type(config).__name__
        fail(f"config must be a relpos.book.experiments.Config, got {got}")
    run = _run_record(run)
    if config.task != "far" or run["task"] != "far":
        fail(f"train on the far task; the run's task is {run['task']!r}")
    if run["scheme"] != "deberta":
        fail(f"the exercise is about the deberta scheme, the run is {run['scheme']!r}")
    if config.max_relative_positions != 16:
        fail(
            "the exercise asks for k = 16: config.max_relative_positions is "
            f"{config.max_relative_positions}"
        )
    _check_parameters(run, config.replace(scheme="deberta"), "config")
    at_length = _accuracy_at(run, config.train_length)
    if at_length < THRESHOLD:
        fail(
            f"the run scores {100 * at_length:.0f}% at the training length; a model "
            "that reads distance 12 directly should fit it: train for more steps"
        )
    row = int(position_index(torch.tensor(FAR_DISTANCE), max_relative_positions=16))
    return fit(
        f"k = {expected}; with k = 16, distance {FAR_DISTANCE} reads row {row} of "
        f"32, and the run scores {_lengths(run)}: the far task has become the "
        "relative task.",
        "ch9-ex1",
    )


def _fewest(
    sweep: dict[str, Any],
    task: str,
    length: int,
    field: str,
    threshold: float = THRESHOLD,
) -> dict:
    """For each scheme, the smallest training size whose ``field`` reaches
    ``threshold`` (default 90%)."""
    rows = [
        r
        for r in sweep["summary"]
        if r["task"] == task and r["length"] == length and r["setting"] == "encoder"
    ]
    fewest: dict[str, int | None] = {}
    for scheme in sweep["grid"]["scheme"]:
        sizes = sorted(
            r["train_size"]
            for r in rows
            if r["scheme"] == scheme and r[field] >= threshold
        )
        fewest[scheme] = sizes[0] if sizes else None
    return fewest


@exercise("ch9-ex2")
def data_efficiency(
    answer: Any,
    *,
    percent: int = 90,
    multiple: int = 1,
    sweep: dict[str, Any] | None = None,
) -> str:
    """``{scheme: the fewest training sequences whose mean accuracy reaches
    percent%}`` at ``multiple`` times the training length (the book: 90% at L).

    On the relative task at the training length, in the encoder setting, from
    the protocol's stored sweep (or from ``sweep``, a dict of the same form; a schema-1
    file is read as an encoder sweep). ``None`` where no size reaches it.
    """
    from .. import results

    from ..experiments.sweep import load_sweep

    stored = results.load("protocol/sweep.json") if sweep is None else sweep
    sweep = load_sweep(stored)
    sizes = sweep["grid"]["train_size"]
    length = multiple * int(sweep["config"]["train_length"])
    if length not in sweep["config"]["test_lengths"]:
        raise ValueError(
            f"multiple must give a test length of the sweep, "
            f"{sweep['config']['test_lengths']}, got {multiple}"
        )
    level = percent / 100
    expected = _fewest(sweep, "relative", length, "mean", level)
    if not isinstance(answer, dict):
        got = type(answer).__name__
        fail(f"the answer must be a dict {{scheme: size or None}}, got {got}")
    missing = [s for s in expected if s not in answer]
    if missing:
        fail(f"give one entry per scheme of the sweep; missing: {', '.join(missing)}")
    got = {s: answer[s] for s in expected}
    if got == expected:
        efficient = [s for s, n in expected.items() if n == min(sizes)]
        never = [s for s, n in expected.items() if n is None]
        return fit(
            f"at {min(sizes)} sequences {', '.join(efficient)} "
            f"reach {percent}%; {', '.join(never) or 'no scheme'} never do.",
            "ch9-ex2",
        )
    longest = max(r["length"] for r in sweep["summary"])
    if length != longest and got == _fewest(sweep, "relative", longest, "mean", level):
        fail(
            f"those are the sizes at test length {longest}; read the accuracy at "
            f"{multiple} L, {length}"
        )
    if got == _fewest(sweep, "relative", length, "max", level):
        fail(
            f"those sizes are where the best seed reaches {percent}%; use the mean "
            "over seeds"
        )
    for scheme, size in expected.items():
        if got[scheme] != size:
            fail(
                f"{scheme}: {got[scheme]!r} is not the fewest training sequences at "
                f"which its mean accuracy reaches {percent}% at length {length}"
            )
    raise AssertionError("unreachable")  # pragma: no cover


__all__ = [
    "data_efficiency",
    "fit",
    "far_task_with_a_wider_window",
    "own_row_span",
]
