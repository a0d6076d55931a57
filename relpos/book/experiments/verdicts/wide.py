"""The headline verdicts again at a second scale: width 128, two layers (chapter 13).

The first scale (chapters 9, 10 and 12) trains one layer of width 32; a
referee asks whether its verdicts are facts about the schemes or about a model
that small. ``make wide-sweeps`` reruns the headline tasks (``relative`` and
``far``, 512 training sequences, encoder and causal) at width 128 with four
heads of 32 (so rotary turns 16 frequencies, not 4) and two layers, under the
same protocol (rates tuned until interior; five measured seeds, ten with
``make wide-sweeps WIDE_SEEDS=0,...,9``), into the results
subfolder :data:`FOLDER` with the first scale's file names. Each rule here
restates one first-scale verdict for that model and judges it with the same
thresholds (``rules``); :data:`TWINS` names the first-scale record each one
re-tests, and :func:`scale_rows` sets the two verdicts side by side.

The first scale's one-layer bounds (the shared entry, T5's shared bucket) do
not bind a second layer, which can relay a token through a nearer key (chapter
12's two-hop measurement), so no rule here rests on them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .rules import (
    Sweeps,
    combine,
    every,
    length_verdict,
    make_record,
    percent,
    separation,
)

#: The results subfolder of the second scale's sweeps.
FOLDER = "wide"
#: The chapter that states these verdicts.
CHAPTER = 13
SWEEP = "sweep.json"
CAUSAL = "sweep_causal.json"
#: The second scale's model, as the claims name it.
SCALE = "At width 128 with two layers"
#: The schemes of the published causal studies that the second scale runs (all of
#: chapter 10's but ALiBi).
PUBLISHED = ("none", "absolute", "t5", "rotary")
#: Each record's first-scale twin (its id in chapters 9 and 10).
TWINS = {
    "wide-encoder-relative-clipped": "encoder-relative-clipped",
    "wide-encoder-relative-absolute": "encoder-relative-absolute",
    "wide-encoder-relative-all-trained": "encoder-relative-all-trained",
    "wide-encoder-far-txl": "encoder-far-txl",
    "wide-causal-t5-relative": "causal-t5-relative",
    "wide-causal-rotary-far": "causal-rotary-far",
    "wide-causal-rotary-absolute": "causal-rotary-absolute",
    "wide-causal-none-best": "causal-none-best",
}


def _lengths(s: Sweeps, name: str) -> tuple[int, int, str]:
    short, long = s.train_length(name), s.longest(name)
    return short, long, f"{long // short}L"


def _length_of(s: Sweeps, name: str, task: str, scheme: str) -> str:
    short, long, _ = _lengths(s, name)
    return length_verdict(s.values(name, task, scheme, short),
                          s.values(name, task, scheme, long))


def _curve(s: Sweeps, name: str, task: str, scheme: str) -> str:
    """``"rotary 100, 98, 91, 80%"``: the mean at every test length."""
    lengths = s(name)["config"]["test_lengths"]
    return f"{scheme} " + percent([s.mean(name, task, scheme, n) for n in lengths])


def edges(s: Sweeps, name: str, task: str, schemes: tuple[str, ...]) -> str:
    """The sentence naming the cells of ``schemes`` whose tuned rate is at an edge.

    Shapes:
        output: a str
    """
    found = [f"{c['scheme']} ({c['learning_rate']:g} of {len(c['rates'])} rates)"
             for c in s(name)["tuning"]["chosen"]
             if c["task"] == task and c["scheme"] in schemes and not c["bracketed"]]
    if not found:
        return " Every rate it rests on is inside its grid."
    return (" At an edge of its grid, its best rate perhaps outside it: "
            + ", ".join(found) + ".")


def _hold(s: Sweeps, name: str, group: tuple[str, ...], id: str, claim: str,
          task: str = "relative") -> dict[str, Any]:
    """A record: every scheme of ``group`` keeps ``task`` from L to the longest."""
    _, long, _ = _lengths(s, name)
    worst = min(group, key=lambda x: s.mean(name, task, x, long))
    return make_record(
        id, CHAPTER, claim,
        combine([_length_of(s, name, task, x) for x in group]),
        "Mean from L: " + "; ".join(_curve(s, name, task, x) for x in group)
        + ". The same length rule as the first scale (every seed learned at L, "
        "a fall of at most 10 points)." + edges(s, name, task, group),
        (f"{FOLDER}/{name}", ["summary"]),
        s.values(name, task, worst, long),
    )


def encoder_relative_clipped(s: Sweeps) -> dict[str, Any]:
    _, _, span = _lengths(s, SWEEP)
    return _hold(s, SWEEP, ("deberta",), "wide-encoder-relative-clipped",
                 f"{SCALE}, DeBERTa's clipped table holds `relative` from L to {span} "
                 "in an encoder.")


def encoder_relative_absolute(s: Sweeps) -> dict[str, Any]:
    _, _, span = _lengths(s, SWEEP)
    return _hold(s, SWEEP, ("absolute",), "wide-encoder-relative-absolute",
                 f"{SCALE}, the learned absolute table holds `relative` from L to "
                 f"{span} in an encoder.")


def encoder_relative_all_trained(s: Sweeps) -> dict[str, Any]:
    _, _, span = _lengths(s, SWEEP)
    return _hold(s, SWEEP, ("t5", "rotary", "transformer_xl"),
                 "wide-encoder-relative-all-trained",
                 f"{SCALE}, T5, rotary embeddings and Transformer-XL hold `relative` "
                 f"from L to {span} in an encoder.")


def encoder_far_txl(s: Sweeps) -> dict[str, Any]:
    _, long, span = _lengths(s, SWEEP)
    order = sorted(s(SWEEP)["grid"]["scheme"],
                   key=lambda x: -s.mean(SWEEP, "far", x, long))
    txl = s.values(SWEEP, "far", "transformer_xl", long)
    rivals = [v for x in order if x != "transformer_xl"
              for v in s.values(SWEEP, "far", x, long)]
    return make_record(
        "wide-encoder-far-txl", CHAPTER,
        f"{SCALE}, Transformer-XL generalises furthest on `far` in an encoder: at "
        f"{span} every seed of it beats every seed of every other scheme.",
        separation(txl, rivals) if order[0] == "transformer_xl" else "fails",
        f"Mean at {span}: " + ", ".join(
            f"{x} {percent(s.mean(SWEEP, 'far', x, long))}" for x in order[:4])
        + f"; Transformer-XL's seeds {percent(min(txl))} to {percent(max(txl))}."
        + edges(s, SWEEP, "far", tuple(order)),
        (f"{FOLDER}/{SWEEP}", ["summary"]),
        txl,
    )


def _causal_beats_encoder(s: Sweeps, id: str, scheme: str, task: str,
                          label: str) -> dict[str, Any]:
    _, long, span = _lengths(s, CAUSAL)
    causal = s.values(CAUSAL, task, scheme, long)
    encoder = s.values(SWEEP, task, scheme, long)
    return make_record(
        id, CHAPTER,
        f"{SCALE}, a causal mask lets {label} keep more of `{task}` beyond L: at "
        f"{span} every causal seed beats every encoder seed.",
        separation(causal, encoder),
        f"Causal: {_curve(s, CAUSAL, task, scheme)}; encoder: "
        f"{_curve(s, SWEEP, task, scheme)} (mean from L)."
        + edges(s, CAUSAL, task, (scheme,)),
        (f"{FOLDER}/{CAUSAL}", ["summary"]),
        causal,
    )


def causal_t5_relative(s: Sweeps) -> dict[str, Any]:
    return _causal_beats_encoder(s, "wide-causal-t5-relative", "t5", "relative", "T5")


def causal_rotary_far(s: Sweeps) -> dict[str, Any]:
    return _causal_beats_encoder(s, "wide-causal-rotary-far", "rotary", "far",
                                 "rotary embeddings")


def causal_rotary_absolute(s: Sweeps) -> dict[str, Any]:
    _, _, span = _lengths(s, CAUSAL)
    return _hold(s, CAUSAL, ("rotary", "absolute"), "wide-causal-rotary-absolute",
                 f"{SCALE}, rotary embeddings and the learned absolute table hold "
                 f"`relative` from L to {span} in a causal decoder.")


def causal_none_best(s: Sweeps) -> dict[str, Any]:
    _, long, span = _lengths(s, CAUSAL)

    def order(task: str) -> list[str]:
        return sorted(PUBLISHED, key=lambda x: -s.mean(CAUSAL, task, x, long))

    tasks = ("relative", "far")
    verdict = every([order(t)[0] == "none" for t in tasks])
    return make_record(
        "wide-causal-none-best", CHAPTER,
        f"{SCALE}, a causal decoder without positions generalises best of the "
        f"published schemes run there (ALiBi is not): the highest mean at {span} on "
        "`relative` and `far`.",
        verdict,
        "; ".join(
            f"{t} at {span}: " + ", ".join(
                f"{x} {percent(s.mean(CAUSAL, t, x, long))}" for x in order(t))
            for t in tasks) + "."
        + edges(s, CAUSAL, "relative", PUBLISHED),
        (f"{FOLDER}/{CAUSAL}", ["summary"]),
        s.values(CAUSAL, "relative", "none", long),
    )


#: The rules that read the encoder sweep alone, and those that need the causal one.
ENCODER_RULES = (
    encoder_relative_clipped,
    encoder_relative_absolute,
    encoder_relative_all_trained,
    encoder_far_txl,
)
CAUSAL_RULES = (
    causal_t5_relative,
    causal_rotary_far,
    causal_rotary_absolute,
    causal_none_best,
)
#: Every rule of the second scale, in the ledger's order.
RULES = ENCODER_RULES + CAUSAL_RULES


def records(folder: str | Path) -> list[dict[str, Any]]:
    """Every second-scale record whose sweeps are in ``folder / FOLDER``: the
    encoder's rules once ``sweep.json`` is there, the causal ones once
    ``sweep_causal.json`` is too (a record is missing, never guessed).

    Shapes:
        output: one record dict per rule whose sweeps exist
    """
    wide = Path(folder) / FOLDER
    if not (wide / SWEEP).is_file():
        return []
    sweeps = Sweeps(wide)
    rules = ENCODER_RULES + (CAUSAL_RULES if (wide / CAUSAL).is_file() else ())
    return [each(sweeps) for each in rules]


def scale_rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each second-scale record beside its first-scale twin: a table's rows.

    ``id`` (the first scale's), ``claim`` (the second scale's sentence),
    ``width 32, one layer`` and ``width 128, two layers`` (verdict and seeds),
    ``interval`` (the second scale's, in percent, when it has ten seeds),
    ``changed``. A record whose twin is not in ``records`` is left out.

    Shapes:
        output: one dict per row
    """
    by_id = {r["id"]: r for r in records}
    rows = []
    for record in records:
        twin = by_id.get(TWINS.get(record["id"], ""))
        if twin is None:
            continue
        twin_id = twin["id"]
        interval = record.get("interval")
        rows.append({
            "id": twin_id,
            "claim": record["claim"],
            "width 32, one layer": f"{twin['verdict']} ({twin['seeds']} seeds)",
            "width 128, two layers": f"{record['verdict']} ({record['seeds']} seeds)",
            "interval": "none (under 10 seeds)" if interval is None
            else f"{100 * interval[0]:.0f} to {100 * interval[1]:.0f}%",
            "changed": twin["verdict"] != record["verdict"],
        })
    return rows


__all__ = [
    "CAUSAL_RULES",
    "CHAPTER",
    "ENCODER_RULES",
    "FOLDER",
    "RULES",
    "TWINS",
    "edges",
    "records",
    "scale_rows",
]
