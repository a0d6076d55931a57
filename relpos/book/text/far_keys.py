"""Chapter 11's masked rise, by intervention: the far keys cut at test time.

As masked encoders trained at ``L = 64``, DeBERTa's and Shaw's clipped tables
read windows of ``4L`` well and rise beyond it. The suspected cause
(``interventions.mechanisms.MASKED_FAR_KEYS``, whose prediction and falsifier
were written before any run): every key ``k`` or more away reads an edge row of
the table, one per side, and what grows with the window is how many keys share
those rows: at ``16L`` a masked byte has nearly a thousand, in training at most
``L - k - 1`` behind and as many ahead. The intervention keeps the weights and
the masked bytes and changes only the keys each query reads. Every trained model
is read on the same non-overlapping masked windows (the text sweep's
evaluation: the same windows, the same corrupted bytes, seeded by the length)
four ways:

- ``full``: as trained;
- ``cut``: every key ``k`` or more away removed, on both sides;
- ``ahead``: only the keys ``k`` or more ahead removed (``j - i >= k``);
- ``behind``: only those ``k`` or more behind (``i - j >= k``).

Each query keeps its own key. The losses are summed per module of the test
split, so intervals resample modules and seeds (``stats.clustered_interval``)
as the length probe's do. The runner (:func:`run_far_keys`, ``make
mechanism-far-keys``) is the text sweep (``relpos.book.text.sweep``: rates
tuned per scheme on two tuning seeds, then ten seeds) with a measured run of
its own (:func:`run_far_keys_job`); its runs folder is committed
(``relpos/book/results/probes/far_keys/runs``), keyed on
:data:`FAR_KEYS_SCHEMA`.

Shapes:
    stream: ``(N,)`` uint8; module sums: ``modules`` floats per reading and ``W``
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from ..experiments.config import derive_seed
from ..experiments.interventions.mechanisms import MASKED_FAR_KEYS
from ..experiments.interventions.surgery import distance_mask
from ..experiments.store import RunStore
from ..stats import clustered_difference
from .cli import WHOLE_SPLIT
from .config import TextConfig
from .context import module_ids
from .lm import IGNORE, objective_batch
from .train import (
    EVAL_TOKENS,
    corpus_of,
    evaluate_text,
    run_identity,
    train_text,
    tune_text,
)

#: The schema of the runs and the JSON; bump it only when their numbers change.
FAR_KEYS_SCHEMA = 1
#: The arms: the two clipped tables of the masked text sweep.
SCHEMES = ("deberta", "shaw")
#: The four readings of every trained model at every window length.
READINGS = ("full", "cut", "ahead", "behind")
#: The window lengths, as multiples of ``L`` (``L`` and ``4L`` are the references).
FACTORS = (1, 4, 8, 16)
#: Decimals of the per-module loss sums kept in a run.
SUM_DECIMALS = 3
#: Where the intervention writes: its JSON, its committed runs folder.
RESULTS = Path(__file__).resolve().parents[1] / "results" / "probes"
OUTPUT = RESULTS / "far_keys.json"
RUNS = RESULTS / "far_keys" / "runs"


def keep_rule(reading: str, width: int, span: int) -> torch.Tensor | None:
    """The pairs a query may read in ``reading`` (None: every pair).

    Shapes:
        output: ``(W, W)`` bool, True where query ``i`` may read key ``j``
    """
    if reading not in READINGS:
        raise ValueError(f"reading must be one of {READINGS}, got {reading!r}")
    rules = {
        "full": None,
        "cut": lambda rel: rel.abs() < span,
        "ahead": lambda rel: rel > -span,  # keys k or more ahead removed
        "behind": lambda rel: rel < span,  # keys k or more behind removed
    }
    rule = rules[reading]
    return None if rule is None else distance_mask(width, rule)  # (i, j)


@torch.no_grad()
def read_width(
    model: Any, config: TextConfig, stream: torch.Tensor, width: int, modules: int
) -> dict[str, dict[str, Any]]:
    """The four readings at one window length, on the same masked bytes.

    The windows and their corruption are the text sweep's evaluation
    (``train.evaluate_length``: non-overlapping windows, masks drawn in the same
    batches from a generator seeded by the length), so ``full`` is its loss.
    Returns ``{reading: {"loss", "bpb", "scored", "module_sums"}}`` and
    ``module_counts`` (the same for every reading).

    Shapes:
        stream: ``(N,)`` uint8
    """
    count = (stream.numel() - 1) // width
    if count < 1:
        raise ValueError(
            f"stream must hold more than {width} bytes, got {stream.numel()}"
        )
    span = config.max_relative_positions
    keeps = {name: keep_rule(name, width, span) for name in READINGS}
    ids = module_ids(stream)
    sums = {name: torch.zeros(modules, dtype=torch.float64) for name in READINGS}
    counts = torch.zeros(modules, dtype=torch.float64)
    generator = torch.Generator().manual_seed(derive_seed("text-eval-mask", width))
    starts = torch.arange(count) * width  # (windows,)
    batch = max(1, EVAL_TOKENS // width)
    model.eval()
    for first in range(0, count, batch):
        chunk = starts[first : first + batch]  # (b,)
        inputs, targets = objective_batch(config, stream, chunk, width, generator)
        chosen = targets != IGNORE  # (b, W)
        where = ids[chunk[:, None] + torch.arange(width)][chosen]  # module of each
        counts.index_add_(0, where, torch.ones(where.shape[0], dtype=torch.float64))
        for name, keep in keeps.items():
            pairs = None if keep is None else keep.expand(len(chunk), width, width)
            logits = model(inputs, pairs)  # (b, W, 256)
            losses = F.cross_entropy(logits[chosen], targets[chosen], reduction="none")
            sums[name].index_add_(0, where, losses.double())
    scored = int(counts.sum())
    out: dict[str, Any] = {}
    for name in READINGS:
        loss = float(sums[name].sum()) / max(scored, 1)
        out[name] = {
            "loss": loss,
            "bpb": loss / math.log(2),
            "scored": scored,
            "module_sums": [round(float(s), SUM_DECIMALS) for s in sums[name]],
        }
    out["module_counts"] = [int(c) for c in counts]
    return out


def read_model(model: Any, config: TextConfig, stream: torch.Tensor) -> dict[str, Any]:
    """The four readings at every ``config.eval_lengths``.

    Returns ``{reading: {str(W): {"loss", "bpb", "scored"}}}`` for each of
    :data:`READINGS`, ``module_sums`` (``{reading: {str(W): sums}}``) and
    ``module_counts`` (``{str(W): counts}``).
    """
    modules = int(module_ids(stream)[-1]) + 1  # the split ends with a module's 0
    out: dict[str, Any] = {name: {} for name in READINGS}
    sums: dict[str, dict[str, list[float]]] = {name: {} for name in READINGS}
    counts: dict[str, list[int]] = {}
    for width in config.eval_lengths:
        key = str(width)
        found = read_width(model, config, stream, width, modules)
        counts[key] = found.pop("module_counts")
        for name, reading in found.items():
            sums[name][key] = reading.pop("module_sums")
            out[name][key] = reading
    return {**out, "module_sums": sums, "module_counts": counts}


def run_far_keys_job(config: TextConfig) -> dict[str, Any]:
    """Train ``config`` and read it four ways on the test split: one measured run.

    The record: the text sweep's identity fields, ``eval`` (the text sweep's own
    evaluation, ``train.evaluate_text``, with its per-position losses: its loss is
    the ``full`` reading's), ``eval_seconds`` and every field of :func:`read_model`.
    """
    corpus = corpus_of(config)
    trained = train_text(config, corpus.stream("train"))
    start = time.perf_counter()
    test = corpus.stream("test")[: config.eval_bytes]
    readings = read_model(trained.model, config, test)
    return {
        **run_identity(config, trained),
        "eval": evaluate_text(trained.model, config, test),
        **readings,
        "eval_seconds": time.perf_counter() - start,
    }


def far_keys_job(kind: str, config: TextConfig, threads: int = 1) -> dict[str, Any]:
    """One job of an executor: :func:`run_far_keys_job` or the sweep's ``tune_text``."""
    if kind not in ("measured", "tuning"):
        raise ValueError(f"kind must be 'measured' or 'tuning', got {kind!r}")
    torch.set_num_threads(threads)
    return run_far_keys_job(config) if kind == "measured" else tune_text(config)


def far_keys_store(folder: str | Path | None) -> RunStore:
    """The runs store: keyed on :data:`FAR_KEYS_SCHEMA`, not on the version."""
    return RunStore(folder, stamp={"probe": "far_keys", "schema": FAR_KEYS_SCHEMA})


def _module_means(run: dict[str, Any], reading: str, width: str) -> np.ndarray:
    sums = np.asarray(run["module_sums"][reading][width], dtype=float)
    scored = np.asarray(run["module_counts"][width], dtype=float)
    return sums / np.maximum(scored, 1)  # (modules,)


def difference(runs: list[dict[str, Any]], a: str, b: str, width: str) -> dict:
    """Reading ``a`` minus reading ``b`` at ``width`` (nats per byte) over seeds.

    The interval resamples the test split's modules and the seeds
    (``stats.clustered_difference``), each module weighted by its masked bytes;
    the paired test is over the seeds.
    """
    weights = np.asarray(runs[0]["module_counts"][width], dtype=float)
    per_module = np.stack(
        [(_module_means(r, a, width) - _module_means(r, b, width)) * weights
         for r in runs]
    )  # (seeds, modules)
    return clustered_difference(
        [r[a][width]["loss"] for r in runs], [r[b][width]["loss"] for r in runs],
        per_module, weights,
    )


def contrasts(runs: list[dict[str, Any]], train_length: int) -> list[dict[str, Any]]:
    """Per (scheme, W): the four losses (mean over seeds, nats per byte), full
    minus each cut with its interval and paired test, the rise over the model's
    own ``4L`` (full and cut) and the share of the full rise each cut removes.
    """
    by_scheme: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        by_scheme.setdefault(run["scheme"], []).append(run)
    reference = str(4 * train_length)
    rows = []
    for scheme, group in by_scheme.items():
        group = sorted(group, key=lambda r: r["seed"])
        base = statistics.fmean(r["full"][reference]["loss"] for r in group)
        for width in group[0]["full"]:
            means = {
                name: statistics.fmean(r[name][width]["loss"] for r in group)
                for name in READINGS
            }
            rise = means["full"] - base
            rows.append({
                "scheme": scheme,
                "length": int(width),
                "seeds": [r["seed"] for r in group],
                **means,
                "full_minus": {
                    name: difference(group, "full", name, width)
                    for name in READINGS[1:]
                },
                "rise_over_4l": {name: means[name] - base for name in READINGS},
                "share_removed": {
                    name: (means["full"] - means[name]) / rise if rise > 0 else None
                    for name in READINGS[1:]
                },
            })
    return rows


def run_far_keys(base: TextConfig, **sweep: Any) -> dict[str, Any]:
    """The masked text sweep with :func:`far_keys_job`, then the contrasts: the JSON.

    ``sweep``: ``sweep.run_text_sweep``'s keywords (schemes, seeds, rates, tuning
    seeds, engine options, ``command``) but ``runs_dir``, which names this
    intervention's store (:func:`far_keys_store`, None: in memory).
    """
    from .compare import compare
    from .sweep import run_text_sweep

    if base.causal:
        raise ValueError(f"base.setting must be 'masked', got {base.setting!r}")
    runs_dir = sweep.pop("runs_dir", None)
    result = run_text_sweep(
        base, settings=["masked"], job=far_keys_job, store=far_keys_store(runs_dir),
        **sweep,
    )
    design = MASKED_FAR_KEYS
    result["design"] = {
        "id": design.id,
        "schema": FAR_KEYS_SCHEMA,
        "claim": design.claim,
        "mechanism": design.mechanism,
        "prediction": design.prediction,
        "falsifier": design.falsifier,
        "arms": design.arms,
        "readings": list(READINGS),
        "span": base.max_relative_positions,
    }
    result["contrasts"] = contrasts(result["runs"], base.train_length)
    if "deberta" in sweep.get("schemes", ()):  # every scheme beside DeBERTa's
        result["compared"] = compare(result["runs"], "deberta", "far_keys")
    result["runs"] = [
        {k: v for k, v in run.items() if not k.startswith("module_")}
        for run in result["runs"]
    ]
    return result


def build_parser() -> Any:
    """The text sweep's parser (``relpos.book.text.cli``) with this run's defaults."""
    from .cli import probe_parser

    return probe_parser(
        "relpos.book.text.far_keys",
        (
            "Chapter 11's masked rise by intervention: train the masked byte models "
            "with DeBERTa's and Shaw's clipped tables at L, then read each at W = "
            "L, 4L, 8L and 16L as trained and with the keys k or more away cut "
            "(both sides, ahead only, behind only)."
        ),
        setting=["masked"],
        scheme=list(SCHEMES),
        eval_lengths=[64 * f for f in FACTORS],
        output=str(OUTPUT),
        runs_dir=str(RUNS),
    )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse ``argv``, run the intervention, write its JSON, return it."""
    import json

    from .cli import probe_command, probe_keywords
    from .far_keys_plot import far_keys_figure

    argv = sys.argv[1:] if argv is None else list(argv)
    args, base, runs_dir, command = probe_command(
        build_parser(), argv, "masked", "relpos.book.text.far_keys"
    )
    result = run_far_keys(base, **probe_keywords(args, runs_dir, command))
    path = Path(args.output)
    path.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    far_keys_figure(result).savefig(path.with_suffix(".png"), dpi=120)
    for row in result["contrasts"]:
        cut = row["full_minus"]["cut"]
        print(
            f"{row['scheme']:<8} W={row['length']:<5} full {row['full']:.3f} "
            f"cut {row['cut']:.3f} ahead {row['ahead']:.3f} behind "
            f"{row['behind']:.3f} full-cut {cut['mean']:+.4f} "
            f"[{cut['interval'][0]:+.4f}, {cut['interval'][1]:+.4f}]"
        )
    print(f"wrote {path}", file=sys.stderr)
    return result


if __name__ == "__main__":
    main()


__all__ = [
    "FACTORS",
    "FAR_KEYS_SCHEMA",
    "OUTPUT",
    "READINGS",
    "RUNS",
    "SCHEMES",
    "WHOLE_SPLIT",
    "build_parser",
    "contrasts",
    "difference",
    "far_keys_job",
    "far_keys_store",
    "keep_rule",
    "main",
    "read_model",
    "read_width",
    "run_far_keys",
    "run_far_keys_job",
]
