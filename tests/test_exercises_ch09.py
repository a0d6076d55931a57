"""Chapter 9's exercise checks pass right answers and fail typical wrong ones.

The check of exercise 9.1 reads run records of ``compare``; the runs here are
real (a second or two each, one thread), trained with the chapter's live
settings, or with a handful of steps (and a learning rate of zero, for an
untrained model) where the check must stop earlier. The tests that train are
marked slow (together some ten seconds); ``-m "not slow"`` leaves them out.
"""

from __future__ import annotations

import statistics
from typing import Any

import pytest
import torch

import relpos
from relpos.book import results
from relpos.book.experiments.sweep import load_sweep
from relpos.book.exercises import ExerciseError, check
from relpos.book.exercises.ch09 import own_row_span
from relpos.book.experiments import Config

from _tiny import (  # noqa: E402  (one_thread_per_module: an autouse fixture)
    FEW_STEPS,
    LIVE,
    TRAINS,
    one_thread_per_module,  # noqa: F401
    run_of,
)


# -- ch9-ex1: clip at k = 16 on the far task -------------------------------------------


def readers_of_its_row(distance: int, k: int) -> int:
    """How many distances in -99 .. 99 read the row of ``distance``, clamp by hand."""
    row = {r: min(max(r, -k), k - 1) + k for r in range(-99, 100)}
    return sum(1 for r in row if row[r] == row[distance])


@pytest.mark.parametrize("distance", [1, 3, 7, 12, 20])
def test_a_distance_behind_has_its_own_row_from_k_equal_distance_plus_two(distance):
    # Behind the query the window ends at k - 1, and that last row is shared.
    assert own_row_span(distance) == distance + 2
    assert readers_of_its_row(distance, distance + 2) == 1
    assert readers_of_its_row(distance, distance + 1) > 1  # one less: shared
    distances = torch.arange(-99, 100)
    rows = relpos.position_index(distances, max_relative_positions=distance + 1)
    assert int((rows == rows[distances == distance]).sum()) > 1


@pytest.mark.parametrize("distance", [-1, -5, -12])
def test_a_distance_ahead_has_its_own_row_from_k_equal_its_size_plus_one(distance):
    # Ahead of the query the window ends at -k: row 0 is shared from there on.
    assert own_row_span(distance) == -distance + 1
    assert readers_of_its_row(distance, -distance + 1) == 1
    assert readers_of_its_row(distance, -distance) > 1  # one less: row 0, shared


@pytest.fixture(scope="module")
def far16() -> tuple[Config, dict[str, Any]]:
    config = LIVE.replace(task="far", max_relative_positions=16)
    return config, run_of(config, "deberta")


@TRAINS
def test_ch9_ex1_passes_the_reference(far16, capsys) -> None:
    config, run = far16
    check("ch9-ex1", 14, run, config=config)
    out = " ".join(capsys.readouterr().out.split())
    assert out.startswith("ch9-ex1: correct.") and "row 28 of 32" in out


@TRAINS
@pytest.mark.parametrize(
    ("smallest_k", "message"),
    [
        (13, "still reads row 2k - 1"),
        (12, "outside the window"),
        (8, "outside the window"),
        (16, "a smaller span"),
        ("14", "must be a span k"),
    ],
)
def test_ch9_ex1_catches_a_wrong_span(far16, smallest_k, message: str) -> None:
    config, run = far16
    with pytest.raises(ExerciseError, match="ch9-ex1: not yet. .*" + message):
        check("ch9-ex1", smallest_k, run, config=config)


@TRAINS
def test_ch9_ex1_catches_the_run_of_the_default_window(far16) -> None:
    config16, _ = far16
    config8 = LIVE.replace(task="far")
    run8 = run_of(config8, "deberta")
    with pytest.raises(ExerciseError, match="asks for k = 16"):
        check("ch9-ex1", 14, run8, config=config8)
    with pytest.raises(ExerciseError, match="parameters.*other settings"):
        check("ch9-ex1", 14, run8, config=config16)


@TRAINS
def test_ch9_ex1_catches_the_wrong_task_and_too_little_training(far16) -> None:
    config16, run16 = far16
    with pytest.raises(ExerciseError, match="train on the far task"):
        check("ch9-ex1", 14, run16, config=LIVE.replace(max_relative_positions=16))
    untrained = config16.replace(steps=FEW_STEPS, learning_rate=0.0)
    with pytest.raises(ExerciseError, match="train for more steps"):
        check("ch9-ex1", 14, run_of(untrained, "deberta"), config=untrained)
    with pytest.raises(ExerciseError, match="one entry of compare"):
        check("ch9-ex1", 14, {"far": run16}, config=config16)


# -- ch9-ex2: data efficiency from the committed sweep -----------------------------


def fewest_from_runs(sweep: dict, length: int, reduce=statistics.fmean) -> dict:
    """Written independently of the check: from the runs, not the summary."""
    sweep = load_sweep(sweep)
    fewest = {}
    for scheme in sweep["grid"]["scheme"]:
        sizes = []
        for size in sweep["grid"]["train_size"]:
            values = [
                r["accuracy"][str(length)]
                for r in sweep["runs"]
                if (r["setting"], r["task"], r["scheme"], r["train_size"])
                == ("encoder", "relative", scheme, size)
            ]
            if values and reduce(values) >= 0.9:
                sizes.append(size)
        fewest[scheme] = min(sizes) if sizes else None
    return fewest


@pytest.fixture(scope="module")
def sweep() -> dict:
    return results.load("protocol/sweep.json")


def test_ch9_ex2_passes_the_reference(sweep, capsys) -> None:
    answer = fewest_from_runs(sweep, sweep["config"]["train_length"])
    assert answer["deberta"] == min(sweep["grid"]["train_size"])  # the chapter's reading
    assert answer["none"] is None
    check("ch9-ex2", answer)
    out = " ".join(capsys.readouterr().out.split())
    assert out.startswith("ch9-ex2: correct.") and "deberta" in out


def test_ch9_ex2_catches_the_wrong_length_and_a_wrong_entry(sweep) -> None:
    longest = max(sweep["config"]["test_lengths"])
    at_longest = fewest_from_runs(sweep, longest)
    assert at_longest != fewest_from_runs(sweep, sweep["config"]["train_length"])
    with pytest.raises(ExerciseError, match=f"test length {longest}"):
        check("ch9-ex2", at_longest)
    answer = fewest_from_runs(sweep, sweep["config"]["train_length"])
    with pytest.raises(ExerciseError, match="missing: deberta"):
        check("ch9-ex2", {s: n for s, n in answer.items() if s != "deberta"})
    with pytest.raises(ExerciseError, match="none: 8 is not the fewest"):
        check("ch9-ex2", {**answer, "none": 8})
    with pytest.raises(ExerciseError, match="must be a dict"):
        check("ch9-ex2", list(answer.items()))


def small_sweep() -> dict:
    """Two schemes, two sizes, two seeds: the best seed reaches 90% before the mean."""
    accuracy = {  # (scheme, size) -> accuracy of seeds 0 and 1 at length 8
        ("a", 4): (0.95, 0.7),
        ("a", 16): (0.95, 0.92),
        ("b", 4): (0.5, 0.6),
        ("b", 16): (0.91, 0.93),
    }
    runs, summary = [], []
    for (scheme, size), values in accuracy.items():
        for seed, value in enumerate(values):
            runs.append({"task": "relative", "scheme": scheme, "train_size": size,
                         "seed": seed, "accuracy": {"8": value, "16": value / 2}})
        for length, scale in ((8, 1.0), (16, 0.5)):
            summary.append({"task": "relative", "scheme": scheme, "train_size": size,
                            "length": length, "mean": statistics.fmean(values) * scale,
                            "max": max(values) * scale})
    return {"schema": 1, "settings": {"train_length": 8, "test_lengths": [8, 16]},
            "schemes": ["a", "b"], "train_sizes": [4, 16], "seeds": [0, 1], "runs": runs,
            "summary": summary}


def test_ch9_ex2_on_a_small_sweep() -> None:
    data = small_sweep()
    assert fewest_from_runs(data, 8) == {"a": 16, "b": 16}
    check("ch9-ex2", {"a": 16, "b": 16}, sweep=data)
    assert fewest_from_runs(data, 8, reduce=max) == {"a": 4, "b": 16}
    with pytest.raises(ExerciseError, match="best seed"):
        check("ch9-ex2", {"a": 4, "b": 16}, sweep=data)
    with pytest.raises(ExerciseError, match="test length 16"):
        check("ch9-ex2", {"a": None, "b": None}, sweep=data)
