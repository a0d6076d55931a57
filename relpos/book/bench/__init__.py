"""Benchmark of disentangled attention: transformers' reference against relpos.

Run it as a module::

    python -m relpos.book.bench --lengths 512,1024,2048,4096 --repeats 5 \\
        --output bench_results.json

Every backend runs the same weights: a seeded random ``transformers``
DeBERTa-v2 ``DisentangledSelfAttention`` (deberta-v3-base shapes by default:
hidden 768, 12 heads, ``max_relative_positions`` 512, 256 log buckets, shared
keys, c2p + p2c) and its ``relpos`` copies made with ``from_transformers``.
Every backend gets the same seeded input and an all-ones padding mask (the
pairwise ``(b, 1, n, n)`` form for ``transformers``, ``(b, n)`` for ``relpos``),
built before anything is measured.

What is measured, for each length ``n`` and backend:

- ``forward_s``: the median of ``repeats`` forward passes under ``torch.no_grad()``,
  in eval mode, after one warm-up pass. For ``flex`` the first call compiles;
  its wall time (compilation plus one forward) is ``compile_s`` and is never part
  of the timed runs.
- ``backward_s`` (with ``--backward``): the median of ``repeats`` forward plus
  backward passes, after one warm-up.
- ``peak_bytes``: the memory the forward pass needs above what was allocated
  right before it. On the CPU each (backend, length) runs in a fresh Python
  process (``--_measure-memory``, internal) so that no earlier allocation pollutes
  the count: the process warms up (a short sequence, or for ``flex`` the compile
  at the measured length), resets the kernel's resident-set high-water mark by
  writing ``5`` to ``/proc/self/clear_refs``, reads ``VmRSS`` as the baseline,
  runs one forward and reads ``VmHWM``. The child runs with
  ``MALLOC_MMAP_THRESHOLD_=65536`` so that freed blocks of 64 KiB and more return
  to the kernel at once and the resident set follows the live tensors (it counts
  whole pages, so a tiny forward served from memory the process already holds
  reads as 0). Where the mark cannot be reset, ``ru_maxrss`` is used instead and
  a measurement whose peak lies under an earlier mark is reported as unknown.
  On CUDA the count is ``torch.cuda.max_memory_allocated()`` after
  ``reset_peak_memory_stats()``, minus ``memory_allocated()`` before the call,
  in the benchmark's own process.

Timings run in the benchmark's own process, all backends of one length side by
side: after each backend's warm-up, ``repeats`` rounds run every backend once,
so a slow spell of the machine (this kind of shared, virtualised machine has
them) falls on every backend alike and the ratios stay fair. The memory runs of
a length come first: a run that dies of memory kills only its child process,
and that length's timing for the backend is skipped.

The roofline (:mod:`relpos.book.bench.roofline`): every row carries ``flops``, the
forward's matrix-multiply work by a formula in ``n``, hidden, span and batch
(a multiply-add is 2 FLOP; softmax, gathers and masking are not counted), and
``roofline_fraction``, that work over the forward time over the machine's
matmul throughput. The throughput is measured in the same process, dtype,
device and thread count: ``repeats`` products of two ``--matmul-size`` square
matrices (after a warm-up) before the first length and again after the last,
``2 size^3`` over the median of them all.

What positions cost: ``python -m relpos.book.bench costs`` (:mod:`.costs`)
measures every scheme on every backend against plain attention (the same
projections and torch's fused attention, no positions), time and peak memory
as ratios at each length, beside each scheme's arithmetic floor
(:func:`cost_floor`); its JSON (``bench_costs.json``) is described in
:mod:`.costs`.

Where the rest of the time goes: :mod:`relpos.book.bench.profile` times the stages
of ``gather`` and ``flex`` and four attention kernels alone at one length
(``python -m relpos.book.bench.profile``; the book's copy is ``profile_cpu.json``).

Skips: ``naive`` above ``--naive-max-length``, and any measurement whose
:func:`estimate_peak_bytes` exceeds ``--max-memory-gb``, are recorded with status
``"skipped"`` and the reason in ``note``. An out-of-memory or any other error in
one measurement is recorded (status ``"oom"`` or ``"error"``) and the run goes on.

The JSON written to ``--output`` (schema 2; :func:`load_results` reads it back)::

    {"schema": 2,
     "machine": {"platform", "processor", "cpu_count", "torch", "transformers",
                 "device", "device_name", "threads", "python", "memory_method", "date",
                 "matmul": {"size", "dtype", "device", "threads", "runs_s",
                            "flop_per_s"}},
     "config": {"hidden", "heads", "max_relative_positions", "position_buckets",
                "dtype", "batch", "repeats", "backward", "naive_max_length",
                "max_memory_gb", "seed", "matmul_size", "share_att_key",
                "pos_att_type", "mask"},
     "results": [{"backend", "n", "forward_s", "backward_s", "peak_bytes",
                  "compile_s", "status", "error", "note", "forward_runs_s",
                  "backward_runs_s", "backward_peak_bytes", "flops",
                  "roofline_fraction"}, ...]}

Times are seconds, memory is bytes, speeds FLOP per second; a value that was
not measured is ``null``. Schema 1 is schema 2 without the roofline (no
``matmul``, ``matmul_size``, ``flops`` or ``roofline_fraction``); such files
still load unchanged, and :func:`roofline` computes their FLOP from the config.
"""

from __future__ import annotations

from .cli import build_parser, main
from .config import (
    BENCH_BACKENDS,
    DEFAULT_LENGTHS,
    DTYPES,
    RESULT_KEYS,
    SCHEMA,
    STATUSES,
    BenchConfig,
)
from .measure import (
    estimate_peak_bytes,
    failure,
    measure_memory,
    memory_in_subprocess,
    memory_method,
    time_backends,
)
from .models import build_module, forward_fn, make_inputs, random_weights
from .report import format_table, load_results, ratios
from .roofline import (
    config_flops,
    flop_breakdown,
    forward_flops,
    measure_matmul_throughput,
    roofline,
    roofline_fraction,
)
from .run import machine_info, run_benchmark
from .costs import CostsConfig, run_costs
from .costs_report import cost_series, cost_table, load_costs
from .roofline import cost_floor, plain_flops, position_flops

# The modules, by idea: ``config`` (BenchConfig, its checks, the constants),
# ``models`` (the seeded modules and inputs), ``measure`` (skips, failures,
# timings, memory), ``roofline``, ``run`` (one whole run), ``report`` (reading
# and presenting results), ``cli`` and ``profile`` (where the time goes);
# ``cells``, ``costs`` and ``costs_report`` for what positions cost. To
# change what a run does in a test, replace ``measure.memory_in_subprocess`` or
# ``models.forward_fn``: the run and the measurements read them there at call time.

__all__ = [
    "BENCH_BACKENDS",
    "BenchConfig",
    "CostsConfig",
    "DTYPES",
    "STATUSES",
    "build_module",
    "build_parser",
    "config_flops",
    "cost_floor",
    "cost_series",
    "cost_table",
    "estimate_peak_bytes",
    "failure",
    "flop_breakdown",
    "forward_fn",
    "forward_flops",
    "format_table",
    "load_costs",
    "load_results",
    "machine_info",
    "main",
    "make_inputs",
    "measure_matmul_throughput",
    "measure_memory",
    "memory_in_subprocess",
    "memory_method",
    "plain_flops",
    "position_flops",
    "random_weights",
    "ratios",
    "roofline",
    "roofline_fraction",
    "run_benchmark",
    "run_costs",
    "time_backends",
]
