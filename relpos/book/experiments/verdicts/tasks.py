"""Chapter 13's verdicts on the tasks whose needed distance grows with the length.

``make task-sweeps`` trains two-layer causal decoders of width 64 on ``copy``,
``reverse``, ``mqar`` and ``addition`` (``layouts``) at every length from 8 to
16 and tests them at 16, 32 and 64, per token (``summary``) and by exact match
(``exact``), under the protocol (rates tuned until interior, ten seeds), into
``protocol/sweep_tasks.json``. No impossibility bound caps a two-layer causal
decoder (``bounds``), so every scheme here could in principle represent every
task; the verdicts are about what training finds. Each rule returns one record
of chapter :data:`CHAPTER`, with the thresholds of ``rules``.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from .rules import (
    FIT,
    FALL,
    Sweeps,
    combine,
    every,
    length_verdict,
    make_record,
    percent,
    separation,
)

#: The chapter that states these verdicts.
CHAPTER = 13
#: The results subfolder and file of the task sweep.
FOLDER = "protocol"
TASKS_SWEEP = "sweep_tasks.json"
EVIDENCE = f"{FOLDER}/{TASKS_SWEEP}"
#: The tasks that need one token per answer; ``addition`` needs a chain of them.
LOOKUPS = ("copy", "reverse", "mqar")
#: The schemes without randomised positions that read positions.
POSITIONED = ("absolute", "rotary", "t5")
#: The relative schemes of the sweep (the seed's length claim is about them).
RELATIVE = ("rotary", "t5", "alibi", "deberta")
#: The schemes of the published causal studies (chapter 10's).
PUBLISHED = ("none", "absolute", "t5", "alibi", "rotary")
#: Each randomised variant and the scheme it randomises.
RANDOMISED = {"absolute-randomised": "absolute", "rotary-randomised": "rotary"}


def _lengths(s: Sweeps) -> tuple[int, int, int]:
    """``L``, ``2L`` and the longest test length of the task sweep."""
    short = s.train_length(TASKS_SWEEP)
    return short, 2 * short, s.longest(TASKS_SWEEP)


def exact_values(s: Sweeps, task: str, scheme: str, n: int) -> list[float]:
    """Exact match per seed of one cell (the share of sequences wholly right).

    Shapes:
        output: ``(seeds,)``
    """
    for row in s(TASKS_SWEEP)["exact"]:
        if (row["task"], row["scheme"], row["length"]) == (task, scheme, n):
            return list(row["values"])
    raise KeyError(f"no exact-match cell ({task}, {scheme}, {n}) in {TASKS_SWEEP}")


def _edges(s: Sweeps) -> str:
    """The sentence naming every cell of the sweep whose tuned rate is at an edge."""
    found = [f"{c['scheme']} on {c['task']} ({c['learning_rate']:g}, after "
             f"{len(c['rates'])} rates)"
             for c in s(TASKS_SWEEP)["tuning"]["chosen"] if not c["bracketed"]]
    if not found:
        return " Every tuned rate of the sweep is inside its grid."
    return (" Tuned rates at an edge of their grid, the best perhaps outside it: "
            + ", ".join(found) + ".")


def _means(s: Sweeps, task: str, schemes: tuple[str, ...], n: int) -> str:
    return ", ".join(f"{x} {percent(s.mean(TASKS_SWEEP, task, x, n))}" for x in schemes)


def learned_at_l(s: Sweeps) -> dict[str, Any]:
    """``tasks-learned-at-l``: the positioned schemes at ``L`` on the lookups."""
    short, _, _ = _lengths(s)

    def fit(task: str, scheme: str) -> str:
        values = s.values(TASKS_SWEEP, task, scheme, short)
        if min(values) >= FIT:
            return "holds"
        return "qualified" if statistics.fmean(values) >= FIT else "fails"

    verdicts = {(t, x): fit(t, x) for t in LOOKUPS for x in POSITIONED}
    short_of = [f"{x} on {t}" for (t, x), v in verdicts.items() if v != "holds"]
    worst = min(((t, x) for t in LOOKUPS for x in POSITIONED),
                key=lambda c: min(s.values(TASKS_SWEEP, c[0], c[1], short)))
    return make_record(
        "tasks-learned-at-l", CHAPTER,
        f"Trained on lengths 8 to {short}, the learned absolute table, rotary "
        f"embeddings and T5 learn copy, reverse and mqar at L = {short} (a mean of "
        f"{percent(FIT)} per token).",
        combine(list(verdicts.values())),
        "; ".join(f"{t} at L: {_means(s, t, POSITIONED, short)}" for t in LOOKUPS)
        + ". Some seed stays under the mark in: " + (", ".join(short_of) or "none")
        + ". The tasks are learnable at L, so a loss beyond it is a loss of length."
        + _edges(s),
        (EVIDENCE, ["summary"]),
        s.values(TASKS_SWEEP, worst[0], worst[1], short),
    )


def addition_at_l(s: Sweeps) -> dict[str, Any]:
    """``tasks-addition-at-l``: no scheme reaches the mark on addition at ``L``."""
    short, _, _ = _lengths(s)
    schemes = s(TASKS_SWEEP)["grid"]["scheme"]
    best = max(schemes, key=lambda x: s.mean(TASKS_SWEEP, "addition", x, short))
    below = all(s.mean(TASKS_SWEEP, "addition", x, short) < FIT for x in schemes)
    exact = exact_values(s, "addition", best, short)
    return make_record(
        "tasks-addition-at-l", CHAPTER,
        f"Within the sweep's 1000 steps no scheme learns addition at L = {short}: "
        f"every mean stays under {percent(FIT)} per token.",
        "holds" if below else "fails",
        f"Best at L: {best} {percent(s.mean(TASKS_SWEEP, 'addition', best, short))} "
        f"per token, {percent(statistics.fmean(exact))} by exact match (seeds "
        f"{percent(min(exact))} to {percent(max(exact))}); every other scheme under "
        "it. A sum digit needs its two digits and, through the carry, every lower "
        "pair: a chain of reads, not one.",
        (EVIDENCE, ["summary", "exact"]),
        s.values(TASKS_SWEEP, "addition", best, short),
    )


def exact_beyond_l(s: Sweeps) -> dict[str, Any]:
    """``tasks-exact-beyond-l``: exact match at ``2L`` on the tasks of one
    answer per data token."""
    _, double, _ = _lengths(s)
    schemes = s(TASKS_SWEEP)["grid"]["scheme"]
    tasks = ("copy", "reverse", "addition")
    top = max(v for t in tasks for x in schemes for v in exact_values(s, t, x, double))
    best = max(schemes, key=lambda x: s.mean(TASKS_SWEEP, "copy", x, double))
    return make_record(
        "tasks-exact-beyond-l", CHAPTER,
        "At 2L no scheme, randomised positions included, gets a single copy, reverse "
        "or addition sequence exactly right, in any seed.",
        "holds" if top == 0 else "fails",
        f"The highest exact match at 2L over those tasks, schemes and seeds: "
        f"{percent(top)}. Per token the best on copy at 2L is {best} "
        f"{percent(s.mean(TASKS_SWEEP, 'copy', best, double))}: its errors spread "
        "over every sequence, and one wrong slot of 15 fails the sequence.",
        (EVIDENCE, ["exact", "summary"]),
        exact_values(s, "copy", best, double),
    )


def relative_length(s: Sweeps) -> dict[str, Any]:
    """``tasks-relative-length``: the seed's length claim on the lookups."""
    short, double, _ = _lengths(s)
    cells = {(t, x): length_verdict(s.values(TASKS_SWEEP, t, x, short),
                                     s.values(TASKS_SWEEP, t, x, double))
             for t in LOOKUPS for x in RELATIVE}
    kept = [f"{x} on {t}" for (t, x), v in cells.items() if v == "holds"]
    return make_record(
        "tasks-relative-length", CHAPTER,
        "A relative scheme trained at L keeps its per-token accuracy at 2L on tasks "
        "whose needed distance grows with the length (copy, reverse, mqar): the "
        "seed's length claim, on harder tasks.",
        combine(list(cells.values())),
        "Kept in every seed (learned at L, a fall of at most "
        f"{percent(FALL)}): " + (", ".join(kept) or "none") + ". Copy at 2L: "
        + _means(s, "copy", RELATIVE, double) + "; reverse: "
        + _means(s, "reverse", RELATIVE, double) + ". Where a rule holds, mqar, the "
        "answer is the token after a key found by its content; copy and reverse "
        "need a distance never trained.",
        (EVIDENCE, ["summary"]),
        s.values(TASKS_SWEEP, "copy", "rotary", double),
    )


def _randomised_against_plain(s: Sweeps, tasks: tuple[str, ...], n: int) -> list[str]:
    """:func:`separation` of each randomised variant from its plain scheme at ``n``,
    per task of ``tasks``.

    Shapes:
        output: ``(len(tasks) * len(RANDOMISED),)`` verdicts
    """
    return [separation(s.values(TASKS_SWEEP, t, r, n),
                       s.values(TASKS_SWEEP, t, plain, n))
            for t in tasks for r, plain in RANDOMISED.items()]


def randomised_lookups(s: Sweeps) -> dict[str, Any]:
    """``tasks-randomised``: each randomised variant against its plain scheme."""
    short, double, _ = _lengths(s)
    verdicts = _randomised_against_plain(s, LOOKUPS, double)
    untrained = {
        r["scheme"]: r["touched"] for r in s(TASKS_SWEEP)["coverage"]
        if r["task"] == "copy" and r["length"] == double and r["learned"]
        and r["scheme"] in ("absolute", "absolute-randomised")
    }
    return make_record(
        "tasks-randomised", CHAPTER,
        "Randomised positions let the learned absolute table and rotary embeddings "
        "keep more of copy, reverse and mqar at 2L: every seed of the randomised "
        "variant beats every seed of the plain scheme, per token.",
        combine(verdicts),
        "At 2L, copy: " + _means(s, "copy", tuple(RANDOMISED) + tuple(
            RANDOMISED.values()), double)
        + f". Coverage at 2L: the plain table reads an untrained row in "
        f"{percent(untrained.get('absolute', 0.0))} of the queries, the randomised "
        f"one in {percent(untrained.get('absolute-randomised', 0.0))}: training "
        "visited every position up to P - 1. The price at L, copy: "
        + _means(s, "copy", ("rotary", "rotary-randomised"), short) + ".",
        (EVIDENCE, ["summary", "coverage"]),
        s.values(TASKS_SWEEP, "copy", "absolute-randomised", double),
    )


def randomised_addition(s: Sweeps) -> dict[str, Any]:
    """``tasks-randomised-addition``: the randomised variants on addition."""
    short, double, _ = _lengths(s)
    verdicts = _randomised_against_plain(s, ("addition",), double)
    return make_record(
        "tasks-randomised-addition", CHAPTER,
        "Randomised positions help on addition as on copy: at 2L every seed of the "
        "randomised variant beats every seed of the plain scheme, per token.",
        combine(verdicts),
        "At 2L: " + _means(s, "addition", tuple(RANDOMISED) + tuple(
            RANDOMISED.values()), double)
        + "; at L: " + _means(s, "addition", ("rotary", "rotary-randomised"), short)
        + ". Why is not isolated: slot k reads its digits 3k + 2 and 3k + 3 tokens "
        "back, an offset in tokens that random gaps spread over many distances.",
        (EVIDENCE, ["summary"]),
        s.values(TASKS_SWEEP, "addition", "rotary-randomised", double),
    )


def none_best(s: Sweeps) -> dict[str, Any]:
    """``tasks-none-best``: where ``none`` ranks at ``2L`` among the published."""
    _, double, _ = _lengths(s)

    def order(task: str) -> list[str]:
        return sorted(PUBLISHED, key=lambda x: -s.mean(TASKS_SWEEP, task, x, double))

    tasks = s(TASKS_SWEEP)["grid"]["task"]
    verdict = every([order(t)[0] == "none" for t in tasks])
    return make_record(
        "tasks-none-best", CHAPTER,
        "A causal decoder without positions generalises best of the published "
        "schemes on these tasks, as NoPE does in Kazemnejad et al. (2023): the "
        "highest mean at 2L on every task.",
        verdict,
        "; ".join(f"{t} at 2L: " + ", ".join(
            f"{x} {percent(s.mean(TASKS_SWEEP, t, x, double))}" for x in order(t)[:3])
            for t in tasks)
        + ". Per token, two layers of width 64, against the paper's exact match at "
        "about 107M parameters.",
        (EVIDENCE, ["summary"]),
        s.values(TASKS_SWEEP, "copy", "none", double),
    )


def mqar_biases(s: Sweeps) -> dict[str, Any]:
    """``tasks-mqar-bias``: T5 and ALiBi against the other plain schemes on mqar."""
    short, _, long = _lengths(s)
    plain = [x for x in s(TASKS_SWEEP)["grid"]["scheme"] if x not in RANDOMISED]
    biases = ("t5", "alibi")
    weakest = min(biases, key=lambda x: s.mean(TASKS_SWEEP, "mqar", x, long))
    others = [v for x in plain if x not in biases
              for v in s.values(TASKS_SWEEP, "mqar", x, long)]
    return make_record(
        "tasks-mqar-bias", CHAPTER,
        f"On mqar the bias schemes, T5 and ALiBi, keep the most at {long // short}L of "
        "the schemes without randomised positions: every seed of each beats every "
        "seed of the others.",
        combine([separation(s.values(TASKS_SWEEP, "mqar", x, long), others)
                 for x in biases]),
        f"At {long // short}L: " + _means(s, "mqar", tuple(plain), long)
        + ". Why is not isolated: a query needs the token after the key that matches "
        "it, found by content, and a bias leaves a far key reachable where a "
        "rotation at an unseen distance may not.",
        (EVIDENCE, ["summary"]),
        s.values(TASKS_SWEEP, "mqar", weakest, long),
    )


#: Every rule of the task sweep, in the ledger's order.
RULES = (
    learned_at_l,
    addition_at_l,
    exact_beyond_l,
    relative_length,
    randomised_lookups,
    randomised_addition,
    none_best,
    mqar_biases,
)


def records(folder: str | Path) -> list[dict[str, Any]]:
    """Every record of the task sweep in ``folder / FOLDER``; none while the sweep
    is not there.

    Shapes:
        output: one record dict per rule
    """
    if not (Path(folder) / FOLDER / TASKS_SWEEP).is_file():
        return []
    sweeps = Sweeps(Path(folder) / FOLDER)
    return [each(sweeps) for each in RULES]


__all__ = ["CHAPTER", "RULES", "TASKS_SWEEP", "exact_values", "records"]
