"""The probe of chapter 1's length claim: does a model use the longer context?

Chapter 1 says that "relative models handle sequences longer than those seen
in training". Chapter 11 found that some schemes do not break beyond the
training length ``L``: their bits per byte stay flat on non-overlapping windows
up to ``16 L``. Flat is surviving; it is not using. A model that reads 512 bytes
but draws on the last 64 only is flat too. This probe asks the stronger question
of each causal byte-level language model trained at ``L``: at a window ``W > L``,
is its loss below that of the same model whose attention is cut to the last
``L`` keys of every query?

The prediction, the falsifier, the arms and the mechanism measured are stated
below, before any run. The runner (:func:`run_length_probe`, ``make
probe-length``) is the text sweep (``relpos.book.text.sweep``: rates tuned per
scheme on validation text at ``L``, two tuning seeds, ten measured seeds) with
a measured run of its own (:func:`run_length`: train, then the three readings
of ``relpos.book.text.context`` at every ``W``; the model is not kept). Its
runs folder is committed (``relpos/book/results/probes/length/runs``, keyed on
:data:`LENGTH_SCHEMA`, not on the relpos version), so the sweep resumes across
sessions. The JSON (``probes/length.json``) is the text sweep's, its runs
without their per-module arrays, plus ``probe`` (the sentences below) and
``contrasts`` (:func:`contrasts`).

Shapes:
    module_sums: ``modules`` floats per reading and ``W``
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..experiments.store import RunStore
from ..runner import EngineOptions
from ..stats import clustered_difference
from .cli import WHOLE_SPLIT
from .config import TextConfig
from .context import (
    attention_beyond,
    module_ids,
    nonoverlapping_plan,
    score_plan,
    sliding_plan,
)
from .train import corpus_of, run_identity, train_text, tune_text

#: The claim under test, in chapter 1's words.
SEED_CLAIM = "length"
CLAIM = "Relative models handle sequences longer than those seen in training."

#: What the claim predicts, written before the runs.
PREDICTION = (
    "A relative model trained at L uses the longer context it is given: evaluated "
    "on sliding windows of W = 2L, 4L and 8L bytes, its loss per byte is below the "
    "loss of the same model, on the same windows and the same scored bytes, with "
    "its attention cut to the last L keys of every query. The difference (cut minus "
    "full, in nats per byte) is above zero, with a 95% bootstrap interval over the "
    "test split's modules and the seeds that excludes zero, at every W > L."
)

#: What result would falsify the prediction, written before the runs.
FALSIFIER = (
    "For DeBERTa (or another relative scheme), the full and the cut losses at "
    "W > L are equal within the interval (the interval of cut minus full holds "
    "zero): the model only survives the longer window, reading no more than it "
    "read in training. A cut loss below the full one (an interval below zero) "
    "falsifies it too: the extra keys hurt."
)

#: The arms of the probe: the schemes and the three evaluations of each model.
ARMS = (
    "Nine causal byte-level language models of the text sweep (width 64, two "
    "layers, trained at L = 64 on the standard library's docstrings), one per "
    "position scheme: none, absolute, rotary, T5, ALiBi, KERPLE, FIRE, DeBERTa "
    "with its clipped table and DeBERTa with log buckets; the learning rate tuned "
    "per scheme on two tuning seeds, then ten seeds. Each trained model is read "
    "three ways at W = L, 2L, 4L and 8L on the whole test split: non-overlapping "
    "windows (chapter 11's evaluation); sliding windows of W with stride W / 2, "
    "scoring only the last W / 2 bytes of each, so every scored byte has at least "
    "W / 2 bytes of context (the first window scores all its bytes); and the same "
    "sliding windows with every query of every layer cut to its last L keys (a "
    "causal band mask). At W = L the cut changes nothing."
)

#: The mechanism measured beside the verdict.
MECHANISM = (
    "A model can use context beyond L only if its attention puts weight on keys "
    "at distances of L or more. For every query at position L or later in a window "
    "of W, the share of its attention on keys L or more back is measured, per "
    "layer, averaged over heads, queries and windows: the attention mass beyond L. "
    "A scheme whose distance term grows without bound (ALiBi's linear penalty, "
    "KERPLE's log kernel) is expected to leave almost none there; a clipped or "
    "bucketed table (DeBERTa) scores every far key alike, so what reaches them is "
    "content alone. Note that the cut is per layer: with two layers a byte can "
    "still hear from up to 2 (L - 1) bytes back through an intermediate one, so "
    "the cut removes direct reads of far keys, not every path to them."
)

#: The schema of the probe's records and JSON; bump it only when its numbers change.
LENGTH_SCHEMA = 1
#: The arms: the schemes of the causal text sweep this probe reads.
SCHEMES = (
    "none",
    "absolute",
    "rotary",
    "t5",
    "alibi",
    "kerple",
    "fire",
    "deberta",
    "deberta-buckets",
)
#: The window lengths, as multiples of ``L``.
FACTORS = (1, 2, 4, 8)
#: The three readings of a model at every window length.
READINGS = ("nonoverlapping", "sliding", "cut")
#: Decimals of the per-module loss sums kept in a record.
SUM_DECIMALS = 3
#: Where the probe writes: its JSON, its figure, its committed runs folder.
RESULTS = Path(__file__).resolve().parents[1] / "results" / "probes"
OUTPUT = RESULTS / "length.json"
RUNS = RESULTS / "length" / "runs"


def stride_of(width: int) -> int:
    """The stride of the sliding windows of ``width``: ``W / 2``, at least 1."""
    return max(1, width // 2)


def bin_of(config: TextConfig) -> int:
    """The width of a per-position bin: ``L / 4`` positions."""
    return max(1, config.train_length // 4)


def _without_modules(reading: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in reading.items() if not k.startswith("module_")}


def read_model(model: Any, config: TextConfig, stream: torch.Tensor) -> dict[str, Any]:
    """The three readings of a trained model at every ``config.eval_lengths``.

    Returns ``nonoverlapping``, ``sliding`` and ``cut`` (``{str(W): reading}``,
    each ``context.score_plan`` without its module arrays), ``module_sums``
    (``{reading: {str(W): sums}}``), ``module_counts`` (``nonoverlapping`` and
    ``sliding``; ``cut`` scores the sliding windows' bytes), ``stride`` and
    ``attention_beyond`` (``{str(W): per layer}`` for ``W > L``).

    Shapes:
        stream: ``(N,)`` uint8
    """
    L = config.train_length
    modules = int(module_ids(stream)[-1]) + 1  # the split ends with a module's 0
    out: dict[str, Any] = {r: {} for r in READINGS}
    sums: dict[str, dict[str, list[float]]] = {r: {} for r in READINGS}
    counts: dict[str, dict[str, list[int]]] = {"nonoverlapping": {}, "sliding": {}}
    beyond, strides = {}, {}
    for width in config.eval_lengths:
        key, stride = str(width), stride_of(width)
        strides[key] = stride
        plans = {
            "nonoverlapping": (nonoverlapping_plan(stream.numel(), width), None),
            "sliding": (sliding_plan(stream.numel(), width, stride), None),
            "cut": (sliding_plan(stream.numel(), width, stride), L),
        }
        for name, (plan, cut) in plans.items():
            reading = score_plan(
                model, stream, plan, modules=modules, cut=cut, bin_size=bin_of(config)
            )
            out[name][key] = _without_modules(reading)
            sums[name][key] = [round(v, SUM_DECIMALS) for v in reading["module_sums"]]
            if name in counts:
                counts[name][key] = reading["module_counts"]
        if width > L:
            beyond[key] = attention_beyond(model, stream, width, L)
    return {
        **out,
        "stride": strides,
        "attention_beyond": beyond,
        "module_sums": sums,
        "module_counts": counts,
    }


def run_length(config: TextConfig) -> dict[str, Any]:
    """Train ``config`` and read it three ways on the test split: one measured record.

    The record: the text sweep's identity fields (``train.run_identity``),
    ``eval`` (the non-overlapping reading, as the text sweep's ``eval``, its
    per-position losses binned by ``L / 4``), ``eval_seconds`` and every field
    of :func:`read_model`. The test split is cut to ``config.eval_bytes``.
    """
    corpus = corpus_of(config)
    trained = train_text(config, corpus.stream("train"))
    start = time.perf_counter()
    test = corpus.stream("test")[: config.eval_bytes]
    readings = read_model(trained.model, config, test)
    return {
        **run_identity(config, trained),
        "eval": readings["nonoverlapping"],
        **readings,
        "eval_seconds": time.perf_counter() - start,
    }


def length_job(kind: str, config: TextConfig, threads: int = 1) -> dict[str, Any]:
    """One job of an executor: :func:`run_length` or the text sweep's ``tune_text``."""
    if kind not in ("measured", "tuning"):
        raise ValueError(f"kind must be 'measured' or 'tuning', got {kind!r}")
    torch.set_num_threads(threads)
    return run_length(config) if kind == "measured" else tune_text(config)


def probe_store(folder: str | Path | None) -> RunStore:
    """The probe's runs store: keyed on :data:`LENGTH_SCHEMA`, not on the version."""
    return RunStore(folder, stamp={"probe": "length", "schema": LENGTH_SCHEMA})


def _module_means(run: dict[str, Any], reading: str, width: str) -> np.ndarray:
    counts = "sliding" if reading == "cut" else reading
    sums = np.asarray(run["module_sums"][reading][width], dtype=float)
    scored = np.asarray(run["module_counts"][counts][width], dtype=float)
    return sums / np.maximum(scored, 1)  # (modules,)


def _difference(runs: list[dict[str, Any]], a: str, b: str, width: str) -> dict:
    """Reading ``a`` minus ``b`` at ``width`` (nats per byte) over seeds, intervals.

    The interval resamples the modules and the seeds
    (``stats.clustered_difference``): each module's difference of mean losses,
    weighted by the bytes the sliding windows score there (for the cut and the
    full reading, the same bytes: the difference of their loss sums).
    """
    weights = np.asarray(runs[0]["module_counts"]["sliding"][width], dtype=float)
    per_module = np.stack(
        [(_module_means(r, a, width) - _module_means(r, b, width)) * weights
         for r in runs]
    )  # (seeds, modules)
    return clustered_difference(
        [r[a][width]["loss"] for r in runs], [r[b][width]["loss"] for r in runs],
        per_module, weights,
    )


def use_verdict(difference: dict[str, Any]) -> str:
    """``"uses"``, ``"hurt"`` or ``"survives"`` from cut minus full at one ``W``.

    ``uses``: the interval over modules and seeds lies above 0 and the paired
    test over seeds gives p < 0.05; ``hurt``: the same below 0; else
    ``survives`` (equal within the interval: the falsifier's case).
    """
    low, high = difference["interval"]
    p = difference["p_value"]
    significant = p is not None and p < 0.05
    if low > 0 and significant:
        return "uses"
    if high < 0 and significant:
        return "hurt"
    return "survives"


def contrasts(runs: list[dict[str, Any]], train_length: int) -> list[dict[str, Any]]:
    """Per (scheme, W): the three losses, cut minus full, sliding minus chapter 11's.

    ``cut_minus_full`` and ``sliding_minus_nonoverlapping`` hold the mean over
    seeds (nats per byte), each seed's value, the interval over the test
    split's modules and the seeds (``stats.clustered_interval``) and the
    paired test's p-value; ``verdict`` is :func:`use_verdict` for ``W > L``
    (``None`` at ``L``, where the cut changes nothing); ``attention_beyond``
    the mean over seeds per layer.
    """
    by_scheme: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        by_scheme.setdefault(run["scheme"], []).append(run)
    rows = []
    for scheme, group in by_scheme.items():
        group = sorted(group, key=lambda r: r["seed"])
        for width in group[0]["sliding"]:
            cut = _difference(group, "cut", "sliding", width)
            slide = _difference(group, "sliding", "nonoverlapping", width)
            beyond = [r["attention_beyond"].get(width) for r in group]
            row = {
                "scheme": scheme,
                "length": int(width),
                "seeds": [r["seed"] for r in group],
                **{
                    name: statistics.fmean(r[name][width]["loss"] for r in group)
                    for name in READINGS
                },
                "cut_minus_full": cut,
                "sliding_minus_nonoverlapping": slide,
                "attention_beyond": None
                if None in beyond
                else [statistics.fmean(layer) for layer in zip(*beyond)],
                "verdict": use_verdict(cut) if int(width) > train_length else None,
            }
            rows.append(row)
    return rows


def run_length_probe(
    base: TextConfig,
    *,
    schemes: list[str],
    seeds: list[int],
    learning_rates: list[float],
    tune_seeds: list[int],
    max_rates: int = 8,
    options: EngineOptions = EngineOptions(workers=1),
    runs_dir: str | Path | None = None,
    progress: bool = True,
    command: str | None = None,
) -> dict[str, Any]:
    """The text sweep with :func:`length_job`, then the probe's contrasts: the JSON.

    Arguments as ``sweep.run_text_sweep`` (causal only); ``runs_dir`` is the
    probe's store (:func:`probe_store`, None: in memory).
    """
    from .compare import compare
    from .sweep import run_text_sweep

    if not base.causal:
        raise ValueError(f"base.setting must be 'causal', got {base.setting!r}")
    result = run_text_sweep(
        base,
        settings=["causal"],
        schemes=schemes,
        seeds=seeds,
        learning_rates=learning_rates,
        tune_seeds=tune_seeds,
        max_rates=max_rates,
        options=options,
        progress=progress,
        command=command,
        job=length_job,
        store=probe_store(runs_dir),
    )
    L = base.train_length
    result["probe"] = {
        "schema": LENGTH_SCHEMA,
        "seed_claim": SEED_CLAIM,
        "claim": CLAIM,
        "prediction": PREDICTION,
        "falsifier": FALSIFIER,
        "arms": ARMS,
        "mechanism": MECHANISM,
        "readings": list(READINGS),
        "strides": {str(w): stride_of(w) for w in base.eval_lengths},
    }
    result["contrasts"] = contrasts(result["runs"], L)
    if "deberta" in schemes:  # chapter 11's table: every scheme beside DeBERTa's
        result["compared"] = compare(result["runs"], "deberta", "length")
    result["runs"] = [
        {k: v for k, v in run.items() if not k.startswith("module_")}
        for run in result["runs"]
    ]
    return result


#: The least gain of the sliding over the non-overlapping reading at ``L`` that the
#: live check asserts (0.030 nats measured at 200 steps: a third of it).
LIVE_GAIN = 0.01


def live_check(steps: int = 200) -> dict[str, Any]:
    """The probe in under a minute, for the chapter: one DeBERTa model, three readings.

    Trains DeBERTa at ``L = 32`` for ``steps`` steps and reads it at ``L`` and
    ``4 L`` on the first 16 KB of the test split. Asserts what holds on every
    run: the cut changes nothing at ``W = L``; the sliding windows score every
    byte once; and at ``L`` the sliding reading (every scored byte has at
    least ``L / 2`` bytes of context) is below chapter 11's non-overlapping one
    (whose first bytes have none). Returns the losses of the three readings per
    ``W`` and the cut minus full loss at ``4 L`` (measured, not asserted: the
    probe's question).
    """
    config = TextConfig(
        scheme="deberta", steps=steps, train_length=32, eval_lengths=(32, 128),
        eval_bytes=16384, batch_size=16, learning_rate=3e-3,
    )
    corpus = corpus_of(config)
    trained = train_text(config, corpus.stream("train"))
    test = corpus.stream("test")[: config.eval_bytes]
    readings = read_model(trained.model, config, test)
    losses = {
        name: {w: r["loss"] for w, r in readings[name].items()} for name in READINGS
    }
    assert losses["cut"]["32"] == losses["sliding"]["32"], "the cut acts at W = L"
    for reading in readings["sliding"].values():
        assert reading["scored"] == test.numel() - 1, "a byte scored twice or never"
    gain = losses["nonoverlapping"]["32"] - losses["sliding"]["32"]
    assert gain > LIVE_GAIN, f"sliding windows gain only {gain:.3f} nats at L"
    return {
        "losses": losses,
        "cut_minus_full": losses["cut"]["128"] - losses["sliding"]["128"],
        "attention_beyond": readings["attention_beyond"]["128"],
    }


def build_parser() -> Any:
    """The text sweep's parser (``relpos.book.text.cli``) with this run's defaults."""
    from .cli import probe_parser

    return probe_parser(
        "relpos.book.text.length_probe",
        (
            "The length probe: train the causal byte models of every scheme at L, "
            "then read each on non-overlapping windows, sliding windows, and sliding "
            "windows with attention cut to the last L keys, at W = L .. 8L."
        ),
        scheme=list(SCHEMES),
        eval_lengths=[64 * f for f in FACTORS],
        output=str(OUTPUT),
        runs_dir=str(RUNS),
    )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse ``argv``, run the probe, write its JSON and figure, return the JSON."""
    import json

    from .cli import probe_command, probe_keywords
    from .length_plot import length_figure

    argv = sys.argv[1:] if argv is None else list(argv)
    args, base, runs_dir, command = probe_command(
        build_parser(), argv, "causal", "relpos.book.text.length_probe"
    )
    result = run_length_probe(base, **probe_keywords(args, runs_dir, command))
    path = Path(args.output)
    path.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    length_figure(result).savefig(path.with_suffix(".png"), dpi=120)
    for row in result["contrasts"]:
        d = row["cut_minus_full"]
        print(
            f"{row['scheme']:<16} W={row['length']:<5} full {row['sliding']:.3f} "
            f"cut {row['cut']:.3f} cut-full {d['mean']:+.4f} "
            f"[{d['interval'][0]:+.4f}, {d['interval'][1]:+.4f}] {row['verdict']}"
        )
    print(f"wrote {path}", file=sys.stderr)
    return result


if __name__ == "__main__":
    main()


__all__ = [
    "ARMS",
    "CLAIM",
    "FACTORS",
    "FALSIFIER",
    "LENGTH_SCHEMA",
    "MECHANISM",
    "OUTPUT",
    "PREDICTION",
    "READINGS",
    "RUNS",
    "SCHEMES",
    "SEED_CLAIM",
    "WHOLE_SPLIT",
    "bin_of",
    "build_parser",
    "contrasts",
    "length_job",
    "LIVE_GAIN",
    "live_check",
    "main",
    "probe_store",
    "read_model",
    "run_length",
    "run_length_probe",
    "stride_of",
    "use_verdict",
]
