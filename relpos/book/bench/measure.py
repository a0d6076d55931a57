"""Taking the measurements: what is skipped or failed, the timings, the peak memory.

Skips and failures: before a measurement starts, :func:`estimate_peak_bytes`
gives a rough upper bound of its memory so that a hopeless one is recorded as
``"skipped"`` with the reason (:func:`skip_reason`; the naive backend is also
skipped above ``--naive-max-length``). After one raises, :func:`failure`
classifies the exception as ``"oom"`` or ``"error"`` with a one-line message,
and the run goes on.

Timings (:func:`time_backends`): each backend gets one warm-up call (``flex``'s
first call, its compile, is timed apart as ``compile_s``); then ``repeats``
rounds run every backend once, so that a slow spell of a shared machine falls
on all of them alike and the ratios between them stay fair. On CUDA the clock
reads are fenced by ``torch.cuda.synchronize()``.

Peak memory (:func:`measure_memory`): on the CPU each measurement runs in a
fresh Python process (``python -m relpos.book.bench --_measure-memory``,
spawned by :func:`memory_in_subprocess` and answered by :func:`memory_child`)
so that no earlier allocation pollutes the count: the child warms up, resets
``VmHWM`` through ``/proc/self/clear_refs``, reads ``VmRSS`` as the baseline,
runs one forward and reads ``VmHWM`` again (``ru_maxrss`` where the mark cannot
be reset). On CUDA the count is the allocator's peak above what was allocated
before, in the benchmark's own process.

``run_benchmark`` calls :func:`memory_in_subprocess` and the timing code calls
:func:`relpos.book.bench.models.forward_fn` through their modules at call time,
so that a test can replace either with ``monkeypatch.setattr``.
"""

from __future__ import annotations

import gc
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

import torch
from torch import nn

from relpos.backends import banded

from . import models
from .config import GIB, BenchConfig, check_backends
from .models import build_module, clear_grads, make_inputs, random_weights, run_pass

_MEMORY_MARK = "RELPOS_BENCH_MEMORY "
_WARMUP_LENGTH = 16
_CHILD_TIMEOUT_S = 3600

# -- estimates and skips ---------------------------------------------------------------


def estimate_peak_bytes(backend: str, n: int, config: BenchConfig) -> int:
    """A rough upper estimate of one measurement's memory, to skip hopeless runs.

    ``transformers``: six ``(b, h, n, n)`` tensors; ``gather``: three, plus the
    ``(n, n)`` int64 row index; ``naive``: four ``(n, n, hidden)`` per-pair
    tables, four ``(b, h, n, n)`` and the index; ``flex``: the
    ``(b, h, n, 2 * span)`` row tables, a few ``(b, n, hidden)`` (three more
    for its head-by-head copies of the queries, keys and values) and 16 MiB for
    the kernel's own working buffers (with relpos' full-tile block mask they do
    not grow with ``n^2``: measured 963 MiB in all at n = 16384, 12 heads). With
    ``backward`` twice the total (autograd keeps the
    intermediates); ``flex`` on the CPU recomputes its backward by gather, so
    there it counts as gather. ``gather`` on the CPU in a forward alone takes
    windows and far rectangles beyond 1.5 band widths: linear in ``n``.
    """
    check_backends([backend])
    e = torch.empty((), dtype=config.torch_dtype).element_size()
    b, h, hidden = config.batch, config.heads, config.hidden
    scores = b * h * n * n * e  # one (b, h, n, n) tensor
    index = n * n * 8  # the (n, n) int64 row index
    linear = b * n * (2 * h * 2 * config.span + 6 * hidden) * e
    if backend == "transformers":
        quadratic = 6 * scores
    elif backend == "gather" and _windowed(n, config):
        # the windows and far rectangles (relpos.backends.banded), linear in n: about
        # twelve (b, n, hidden + 4h) tensors (the projections, the far keys laid out
        # twice, the outputs; measured 81.6 MiB at n = 2048, 157 at 4096) and two
        # (b, h, B, B + 2L) masks; no (b, h, n, 2k) row tables
        reach = config.max_relative_positions
        window = b * h * banded.BLOCK * (banded.BLOCK + 2 * reach) * e
        estimate = 12 * b * n * (hidden + 4 * h) * e + 2 * window
        return 2 * estimate if config.backward else estimate
    elif backend == "gather":
        quadratic = 3 * scores + index
    elif backend == "naive":
        quadratic = 4 * n * n * hidden * e + 4 * scores + index
    elif config.backward and config.device == "cpu":
        quadratic = 3 * scores + index  # flex: the CPU backward recomputes by gather
    else:
        quadratic = 16 * 2**20  # flex: the kernel's working buffers, not n^2
    if backend == "flex":
        linear += 3 * b * n * hidden * e  # its head-by-head copies of q, k and v
    estimate = quadratic + linear
    return 2 * estimate if config.backward else estimate


def _windowed(n: int, config: BenchConfig) -> bool:
    """Whether ``gather`` takes its windows and far rectangles at length ``n``: on
    the CPU, in a forward alone, once the keys outnumber the band's width
    ``banded.WIDTHS`` times (the band reaches ``max_relative_positions``)."""
    width = 2 * config.max_relative_positions - 1
    return (config.device == "cpu" and not config.backward
            and n > banded.WIDTHS * width)


def skip_reason(backend: str, n: int, config: BenchConfig) -> str | None:
    """Why ``backend`` at length ``n`` is not measured, or None if it is."""
    if backend == "naive" and n > config.naive_max_length:
        return f"n > --naive-max-length {config.naive_max_length}"
    estimate = estimate_peak_bytes(backend, n, config)
    if estimate > config.max_memory_gb * GIB:
        limit = config.max_memory_gb
        return f"estimated {estimate / GIB:.1f} GiB > --max-memory-gb {limit:g}"
    return None


#: How torch and the C library word a failed allocation (lowercase): the CUDA
#: allocator, the CPU allocator, a tensor's sizes and strides, errno 12.
_OOM_WORDS = (
    "out of memory",
    "can't allocate memory",
    "could not allocate memory",
    "cannot allocate memory",
    "not enough memory",
)


def _is_oom(exc: BaseException) -> bool:
    if isinstance(exc, (MemoryError, torch.OutOfMemoryError)):
        return True
    text = str(exc).lower()
    return any(words in text for words in _OOM_WORDS)


def failure(exc: BaseException) -> tuple[str, str]:
    """``(status, message)`` for an exception raised by a measurement."""
    first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return ("oom" if _is_oom(exc) else "error"), f"{type(exc).__name__}: {first_line}"[
        :500
    ]


# -- timing ----------------------------------------------------------------------------


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _timed(call: Callable[[], Any], device: str) -> float:
    _sync(device)
    start = time.perf_counter()
    result = call()
    _sync(device)
    elapsed = time.perf_counter() - start
    del result
    return elapsed


def time_backends(
    backends: list[str],
    config: BenchConfig,
    modules: dict[str, nn.Module],
    inputs: dict[str, torch.Tensor],
) -> dict[str, dict[str, Any]]:
    """Median forward (and forward plus backward) times of several backends at one n.

    The backends run side by side: ``flex``'s first call (its compile, timed on
    its own as ``compile_s``) and one warm-up call each, then ``config.repeats``
    rounds in which every backend runs once, so that a slow spell of the machine
    falls on all of them alike. A backend that raises is dropped from the later
    rounds and its entry holds ``status`` and ``error`` instead of times.
    """
    rows: dict[str, dict[str, Any]] = {
        backend: {"compile_s": None, "backward_s": None, "backward_runs_s": None}
        for backend in backends
    }
    forwards = {
        backend: models.forward_fn(backend, modules[backend], inputs)
        for backend in backends
    }
    alive = list(backends)

    def attempt(backend: str, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except Exception as exc:
            status, message = failure(exc)
            rows[backend].update(status=status, error=message)
            alive.remove(backend)
            gc.collect()
            return None

    def rounds(backward: bool) -> dict[str, list[float]]:
        for backend in list(alive):  # warm-up
            attempt(backend, lambda: run_pass(forwards[backend], backward, inputs))
            clear_grads(modules[backend], inputs)
        runs: dict[str, list[float]] = {backend: [] for backend in alive}
        for _ in range(config.repeats):
            for backend in list(alive):
                elapsed = attempt(
                    backend,
                    lambda: _timed(
                        lambda: run_pass(forwards[backend], backward, inputs),
                        config.device,
                    ),
                )
                clear_grads(modules[backend], inputs)
                if elapsed is not None:
                    runs[backend].append(elapsed)
        return {backend: runs[backend] for backend in alive}

    if "flex" in alive:  # the first call compiles: timed on its own, never a timed run

        def compile_and_run() -> torch.Tensor:
            return run_pass(forwards["flex"], False, inputs)

        rows["flex"]["compile_s"] = attempt(
            "flex", lambda: _timed(compile_and_run, config.device)
        )
    for backend, runs in rounds(False).items():
        rows[backend].update(forward_s=statistics.median(runs), forward_runs_s=runs)
    if config.backward and alive:
        inputs["hidden_states"].requires_grad_(True)
        for backend, runs in rounds(True).items():
            rows[backend].update(
                backward_s=statistics.median(runs), backward_runs_s=runs
            )
        inputs["hidden_states"].requires_grad_(False)
    return rows


# -- memory ----------------------------------------------------------------------------


def _proc_status_kib(field: str) -> int:
    text = Path("/proc/self/status").read_text()
    match = re.search(rf"^{field}:\s+(\d+) kB", text, flags=re.MULTILINE)
    if match is None:
        raise OSError(f"/proc/self/status has no {field}")
    return int(match.group(1))


def _reset_high_water_mark() -> bool:
    """Reset the kernel's peak-RSS mark of this process; False where it cannot."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return _proc_status_kib("VmHWM") <= _proc_status_kib("VmRSS") + 1024
    except OSError:
        return False


def _maxrss_bytes() -> int:
    usage = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return usage if sys.platform == "darwin" else usage * 1024


def memory_method(device: str) -> str:
    """How this machine measures peak memory for ``device`` (recorded in the results).
    """
    if device == "cuda":
        return (
            "torch.cuda.max_memory_allocated after reset_peak_memory_stats, "
            "minus memory_allocated before"
        )
    if _reset_high_water_mark():
        return (
            "fresh process per measurement; "
            "VmHWM after reset via /proc/self/clear_refs, "
            "minus VmRSS before"
        )
    return (
        "fresh process per measurement; "
        "ru_maxrss growth (unknown when under an earlier mark)"
    )


def _peak_cpu(call: Callable[[], Any]) -> int | None:
    """Peak resident-set growth in bytes during ``call()``, or None if unknowable."""
    gc.collect()
    if _reset_high_water_mark():
        baseline = _proc_status_kib("VmRSS")
        result = call()
        peak = _proc_status_kib("VmHWM")
        del result
        return max(0, peak - baseline) * 1024
    mark_before = _maxrss_bytes()
    try:
        baseline = _proc_status_kib("VmRSS") * 1024
    except OSError:
        baseline = mark_before
    result = call()
    mark_after = _maxrss_bytes()
    del result
    return mark_after - baseline if mark_after > mark_before else None


def _peak_cuda(call: Callable[[], Any]) -> int:
    """Peak allocated CUDA bytes during ``call()``, above what was allocated before."""
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    baseline = torch.cuda.memory_allocated()
    result = call()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    del result
    return peak - baseline


def measure_memory(
    backend: str, n: int, config: BenchConfig, reference: nn.Module | None = None
) -> dict[str, int | None]:
    """Peak memory of one forward pass (with ``backward``, also forward plus backward).

    Run this in a fresh process on the CPU (:func:`run_benchmark` does): the
    resident-set method counts everything the process allocates. Returns
    ``{"peak_bytes", "backward_peak_bytes"}``; exceptions propagate.
    """
    weights = random_weights(config)
    module = build_module(backend, config, weights, reference)
    peak = _peak_cuda if config.device == "cuda" else _peak_cpu
    # Warm up: flex compiles for this very length; the others need only a short run.
    warm_n = n if backend == "flex" else min(n, _WARMUP_LENGTH)
    warm_inputs = make_inputs(config, warm_n)
    warm_forward = models.forward_fn(backend, module, warm_inputs)
    run_pass(warm_forward, False, warm_inputs)
    if config.backward:
        warm_inputs["hidden_states"].requires_grad_(True)
        run_pass(warm_forward, True, warm_inputs)
        clear_grads(module, warm_inputs)
    del warm_inputs, warm_forward

    inputs = make_inputs(config, n)
    forward = models.forward_fn(backend, module, inputs)
    result: dict[str, int | None] = {
        "peak_bytes": peak(lambda: run_pass(forward, False, inputs))
    }
    result["backward_peak_bytes"] = None
    if config.backward:
        inputs["hidden_states"].requires_grad_(True)
        result["backward_peak_bytes"] = peak(lambda: run_pass(forward, True, inputs))
    return result


def memory_in_subprocess(backend: str, n: int, config: BenchConfig) -> dict[str, Any]:
    """Run :func:`measure_memory` in a fresh Python process; a partial result row."""
    spec = json.dumps({"backend": backend, "n": n, "config": asdict(config)})
    package_root = str(
        Path(__file__).resolve().parents[3]
    )  # the folder holding relpos/
    env = dict(os.environ)
    env["MALLOC_MMAP_THRESHOLD_"] = "65536"
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (package_root, env.get("PYTHONPATH")) if p
    )
    command = [sys.executable, "-m", "relpos.book.bench", "--_measure-memory", spec]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, env=env, timeout=_CHILD_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return {
            "status": "error",
            "error": f"memory subprocess timed out after {_CHILD_TIMEOUT_S} s",
        }
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(_MEMORY_MARK):
            return json.loads(line[len(_MEMORY_MARK) :])
    if done.returncode in (-9, 137):
        return {
            "status": "oom",
            "error": "memory subprocess killed by SIGKILL (out of memory)",
        }
    tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return {
        "status": "error",
        "error": f"memory subprocess exited with {done.returncode}: {tail}"[:500],
    }


def memory_child(spec_json: str) -> None:
    """The ``--_measure-memory`` mode: measure one case, print one marked JSON line."""
    spec = json.loads(spec_json)
    config = BenchConfig(**spec["config"])
    try:
        row: dict[str, Any] = {"status": "ok", "error": None}
        row.update(measure_memory(spec["backend"], spec["n"], config))
        if row["peak_bytes"] is None:
            row.update(
                status="error",
                error="peak under an earlier high-water mark that could not be reset",
            )
    except Exception as exc:  # recorded, not raised: the parent carries on
        status, message = failure(exc)
        row = {"status": status, "error": message}
    print(_MEMORY_MARK + json.dumps(row), flush=True)


__all__ = [
    "estimate_peak_bytes",
    "failure",
    "measure_memory",
    "memory_child",
    "memory_in_subprocess",
    "memory_method",
    "skip_reason",
    "time_backends",
]
