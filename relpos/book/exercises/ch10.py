"""Checks for chapter 10, why the schemes win and lose.

Shape legend:
    ch10-ex1: a dict ``{scheme: test length or None}`` for training length
        ``PREDICT_AT``;
    ch10-ex2: a function ``builder(config) -> (input_positions, encoder)`` and
        its run record (an entry of ``relpos.book.experiments.compare``);
    ch10-ex3: a dict ``{scheme: accuracy gain, a fraction}`` at ``GAIN_AT`` times L

The sweeps are the protocol's, stored with the package (``relpos.book.results``,
:data:`SWEEP` and :data:`CAUSAL`: tuned rates, ten seeds); every check that reads
one also takes a dict of the same form by keyword.
"""

from __future__ import annotations

from typing import Any

import torch

from ._core import call, exercise, fail, require_callable
from .ch09 import THRESHOLD, _accuracy_at, _check_parameters, _run_record, fit

#: The encoder sweep the checks read unless given one (chapter 9's, under the protocol).
SWEEP = "protocol/sweep.json"
#: ch10-ex1 predicts for a model trained at this length, half the sweep's: chapter 9
#: prints the coverage of the sweep's own training length.
PREDICT_AT = 16
#: The causal sweep the checks read unless given one.
CAUSAL = "protocol/sweep_causal.json"
#: ch10-ex3 reads the gains at this multiple of the training length: not the longest,
#: whose gains chapter 10 states in its prose (T5's +83 points at 8L).
GAIN_AT = 2


def _first_untrained(sweep: dict[str, Any], task: str, scheme: str) -> int | None:
    """The shortest test length at which ``scheme`` reads an untrained learned entry."""
    lengths = sorted(
        {r["length"] for r in sweep["coverage"] if r["length"] > _train_length(sweep)}
    )
    for n in lengths:
        if any(
            r["learned"] and r["touched"] > 0
            for r in sweep["coverage"]
            if (r["setting"], r["task"], r["scheme"], r["length"])
            == ("encoder", task, scheme, n)
        ):
            return n
    return None


def _train_length(sweep: dict[str, Any]) -> int:
    return int(sweep["config"]["train_length"])


def first_untrained(
    scheme: str, task: str, train_length: int, multiples: list[int]
) -> int | None:
    """The first ``m * train_length`` at which ``scheme`` reads an untrained entry.

    From coverage alone (``relpos.book.experiments.coverage``), for a model
    trained at ``train_length`` on ``task``; ``None`` if it reads none.
    """
    from ..experiments import Config, coverage

    lengths = [m * train_length for m in multiples]
    config = Config(
        scheme=scheme, task=task, train_length=train_length,
        test_lengths=(train_length, *lengths),
    )
    for n in lengths:
        if coverage(config, n).untrained_touched > 0:
            return n
    return None


@exercise("ch10-ex1")
def predict_from_coverage(
    answer: Any,
    *,
    task: str = "relative",
    train_length: int = PREDICT_AT,
    sweep: dict[str, Any] | None = None,
) -> str:
    """``{scheme: first test length with an untrained learned entry, or None}``.

    For a model trained at ``train_length`` (the book: ``PREDICT_AT``; not the
    sweep's training length, whose coverage chapter 9 prints), at the sweep's
    multiples of the training length (2L, 4L, 8L), computed from coverage alone
    (``relpos.book.experiments.coverage``) for every scheme of the encoder
    sweep on ``task``; the feedback sets it against the sweep's own length.
    """
    from .. import results
    from ..experiments.sweep import load_sweep

    sweep = load_sweep(
        results.load(SWEEP) if sweep is None else sweep,
        needs=("config", "coverage"),
        name="sweep",
    )
    schemes = list(sweep["grid"]["scheme"])
    if not isinstance(answer, dict):
        fail(f"the answer must be a dict {{scheme: length or None}}, got "
             f"{type(answer).__name__}")
    missing = [s for s in schemes if s not in answer]
    if missing:
        fail(f"give one entry per scheme of the sweep; missing: {', '.join(missing)}")
    trained = _train_length(sweep)
    multiples = [
        n // trained for n in sweep["config"]["test_lengths"] if n > trained
    ]
    expected = {
        s: first_untrained(s, task, train_length, multiples) for s in schemes
    }
    at_sweep = {s: _first_untrained(sweep, task, s) for s in schemes}
    if answer == at_sweep and at_sweep != expected:
        fail(
            f"those are the lengths of the sweep's models, trained at L = {trained} "
            f"(chapter 9's table); the exercise trains at L = {train_length}"
        )
    for scheme in schemes:
        if answer[scheme] != expected[scheme]:
            hint = (
                "it reads no untrained learned entry at any test length: None"
                if expected[scheme] is None
                else f"the first test length at which it reads one is "
                f"{expected[scheme]}"
            )
            fail(f"{scheme}: {answer[scheme]!r} is not what coverage predicts; {hint}")

    def multiple(n: int | None, length: int) -> str:
        return "never" if n is None else f"{n // length}L"

    moved = [
        f"{s} ({multiple(at_sweep[s], trained)} at L = {trained}, "
        f"{multiple(expected[s], train_length)} at L = {train_length})"
        for s in schemes
        if multiple(at_sweep[s], trained) != multiple(expected[s], train_length)
    ]
    if not moved:
        return fit(
            f"at L = {train_length} every scheme reads its first untrained entry at "
            f"the same multiple of L as at L = {trained}.",
            "ch10-ex1",
        )
    return fit(
        "against the sweep's models, in multiples of L: "
        + "; ".join(moved)
        + ": their entries are set by a distance, not by L.",
        "ch10-ex1",
    )


@exercise("ch10-ex2")
def absolute_positions_back(builder: Any, run: Any, *, config: Any) -> str:
    """A scheme with relative attention and a learned absolute table, and its run.

    ``builder(config) -> (input_positions, encoder)`` is the function given to
    ``register_scheme``; ``run`` is its entry of ``compare(config, [name])``, and
    ``config`` the ``relpos.book.experiments.Config`` of that call.

    Shapes:
        input_positions(n): ``(n, hidden)``; encoder: ``(b, n, hidden)``, ``(b, n)``
            -> ``(b, n, hidden)``
    """
    from ..experiments import SCHEMES, Config

    builder = require_callable(builder, "a function builder(config)")
    if not isinstance(config, Config):
        got = type(config).__name__
        fail(f"config must be a relpos.book.experiments.Config, got {got}")
    with torch.random.fork_rng():
        parts = call(builder, config, what="builder(config)")
    if not (isinstance(parts, tuple) and len(parts) == 2):
        fail("builder(config) must return a pair (input_positions, encoder)")
    input_positions, encoder = parts
    if input_positions is None:
        fail(
            "input_positions is None: this is the deberta scheme again, with no "
            "absolute position anywhere; add a learned table to the input"
        )
    if not hasattr(encoder, "rel_embeddings"):
        fail(
            "the encoder has no relative table: that is the absolute scheme; keep "
            "DeBERTa's encoder (disentangled_encoder(config, ...))"
        )
    n, hidden = config.max_length, config.hidden_size
    added = call(input_positions, n, what=f"input_positions({n})")
    if not isinstance(added, torch.Tensor) or tuple(added.shape) != (n, hidden):
        fail(f"input_positions({n}) must return a ({n}, {hidden}) tensor")
    run = _run_record(run)
    if config.task != "absolute" or run["task"] != "absolute":
        fail(f"train on the absolute task; the run's task is {run['task']!r}")
    if SCHEMES.get(run["scheme"]) is not builder:
        fail(
            f"the run's scheme {run['scheme']!r} is not this builder: register it, "
            "register_scheme(name, builder, replace=True), and train that name"
        )
    _check_parameters(run, config.replace(scheme=run["scheme"]), "config")
    length = config.train_length
    at_length = _accuracy_at(run, length)
    if at_length < THRESHOLD:
        fail(
            f"the run scores {100 * at_length:.0f}% at the training length; with "
            "absolute positions in the input it should fit it: train for more steps"
        )
    beyond = {int(n): float(a) for n, a in run["accuracy"].items() if int(n) > length}
    tail = ""
    if beyond:
        longest = max(beyond)
        tail = (
            f", {100 * beyond[longest]:.0f}% at {longest}: past the training length "
            "the absolute rows are as untrained as in the absolute scheme"
        )
    return fit(f"{100 * at_length:.0f}% at the training length{tail}.", "ch10-ex2")


def _mean_at(
    sweep: dict[str, Any], setting: str, task: str, length: int, field: str = "mean"
) -> dict[str, float]:
    """``{scheme: field}`` of the largest training size at test ``length``."""
    size = max(sweep["grid"]["train_size"])
    return {
        r["scheme"]: float(r[field])
        for r in sweep["summary"]
        if (r["setting"], r["task"], r["train_size"], r["length"])
        == (setting, task, size, length)
    }


def causal_gain(
    encoder: dict[str, Any],
    causal: dict[str, Any],
    *,
    task: str = "relative",
    length: int | None = None,
    field: str = "mean",
) -> dict[str, float]:
    """``{scheme: causal minus encoder accuracy}`` for the schemes of the causal sweep.

    At test ``length`` (the longest by default), with the largest training size
    of each sweep, ``field`` of the seeds (``"mean"`` unless told).
    Both sweeps are read by ``load_sweep`` (schema 1 is upgraded).
    """
    from ..experiments.sweep import load_sweep

    encoder = load_sweep(encoder, name="encoder")
    causal = load_sweep(causal, needs=("config",), name="causal")
    if length is None:
        length = max(causal["config"]["test_lengths"])
    before = _mean_at(encoder, "encoder", task, length, field)
    after = _mean_at(causal, "causal", task, length, field)
    return {s: after[s] - before[s] for s in causal["grid"]["scheme"]}


def _close(got: dict[str, Any], expected: dict[str, float]) -> bool:
    return all(abs(float(got[s]) - expected[s]) < 0.005 for s in expected)


@exercise("ch10-ex3")
def what_the_mask_changes(
    answer: Any,
    *,
    task: str = "relative",
    encoder: dict[str, Any] | None = None,
    causal: dict[str, Any] | None = None,
) -> str:
    """``{scheme: causal minus encoder mean accuracy at 2L}``, as fractions.

    For every scheme of the causal sweep, on ``task``, with 512 training
    sequences, at ``GAIN_AT`` times the training length; answers within half a
    point of the sweep's pass.
    """
    from .. import results
    from ..experiments.sweep import load_sweep

    encoder = load_sweep(
        results.load(SWEEP) if encoder is None else encoder, name="encoder"
    )
    causal = load_sweep(
        results.load(CAUSAL) if causal is None else causal,
        needs=("config",),
        name="causal",
    )
    length = GAIN_AT * int(causal["config"]["train_length"])
    expected = causal_gain(encoder, causal, task=task, length=length)
    if not isinstance(answer, dict):
        fail(f"the answer must be a dict {{scheme: gain}}, got {type(answer).__name__}")
    missing = [s for s in expected if s not in answer]
    if missing:
        fail(
            "give one entry per scheme of the causal sweep; missing: "
            + ", ".join(missing)
        )
    bad = [s for s in expected if not isinstance(answer[s], (int, float))]
    if bad:
        fail(f"{bad[0]}: the gain must be a number, got {answer[bad[0]]!r}")
    got = {s: float(answer[s]) for s in expected}
    if _close(got, expected):
        best = max(expected, key=expected.get)
        worst = min(expected, key=expected.get)
        flat = [s for s, g in expected.items() if abs(g) < 0.02]
        loses = (
            f"{worst} loses most, {100 * expected[worst]:+.0f}; "
            if expected[worst] <= -0.02
            else ""
        )
        return fit(
            f"{best} gains most, {100 * expected[best]:+.0f} points; {loses}"
            f"{', '.join(flat) or 'no scheme'} "
            f"{'moves' if len(flat) == 1 else 'move'} less than 2 points.",
            "ch10-ex3",
        )
    if _close({s: -g for s, g in got.items()}, expected):
        fail("the signs are flipped: the gain is causal minus encoder, not the reverse")
    if _close({s: g / 100 for s, g in got.items()}, expected):
        fail("those are points (percent); give the gains as fractions, 0.25 not 25")
    at_l = causal_gain(
        encoder, causal, task=task, length=int(causal["config"]["train_length"])
    )
    if _close(got, at_l):
        fail(
            "those are the gains at the training length; the exercise reads "
            f"{GAIN_AT}L, {length}"
        )
    for n in causal["config"]["test_lengths"]:
        at_n = causal_gain(encoder, causal, task=task, length=n)
        if n != length and _close(got, at_n):
            fail(f"those are the gains at test length {n}; the exercise reads {length}")
    for field in ("max", "min"):
        gains = causal_gain(encoder, causal, task=task, length=length, field=field)
        if _close(got, gains):
            fail(f"those gains compare the {field} seed; use the mean over the seeds")
    wrong = next(s for s in expected if abs(got[s] - expected[s]) >= 0.005)
    fail(
        f"{wrong}: {got[wrong]:.3f} is not its causal mean minus its encoder mean "
        f"at test length {length}, with 512 training sequences"
    )


__all__ = [
    "CAUSAL", "GAIN_AT", "PREDICT_AT", "SWEEP", "causal_gain", "first_untrained"
]
