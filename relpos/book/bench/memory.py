"""Peak memory of one forward pass: the kernel's resident-set mark on the CPU, the allocator on CUDA.

On the CPU each measurement runs in a fresh Python process (``python -m
relpos.book.bench --_measure-memory``, spawned by :func:`_memory_in_subprocess` and
answered by :func:`_memory_child`) so that no earlier allocation pollutes the
count: the child warms up, resets ``VmHWM`` through ``/proc/self/clear_refs``,
reads ``VmRSS`` as the baseline, runs one forward and reads ``VmHWM`` again
(``ru_maxrss`` where the mark cannot be reset). On CUDA the count is the
allocator's peak above what was allocated before, in the benchmark's own process.
"""

from __future__ import annotations

import gc
import json
import os
import re
import resource
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

import torch
from torch import nn

from .config import _CHILD_TIMEOUT_S, _MEMORY_MARK, _WARMUP_LENGTH, BenchConfig
from . import models
from .models import _clear_grads, _run, build_module, make_inputs, random_weights
from .skips import _failure

# -- memory ------------------------------------------------------------------------------


def _proc_status_kib(field: str) -> int:
    text = Path("/proc/self/status").read_text()
    match = re.search(rf"^{field}:\s+(\d+) kB", text, flags=re.MULTILINE)
    if match is None:
        raise OSError(f"/proc/self/status has no {field}")
    return int(match.group(1))


def _reset_high_water_mark() -> bool:
    """Reset the kernel's peak-RSS mark of this process; False where that is not possible."""
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

    Shapes:
        (no tensors)
    """
    if device == "cuda":
        return "torch.cuda.max_memory_allocated after reset_peak_memory_stats, minus memory_allocated before"
    if _reset_high_water_mark():
        return (
            "fresh process per measurement; VmHWM after reset via /proc/self/clear_refs, "
            "minus VmRSS before"
        )
    return "fresh process per measurement; ru_maxrss growth (unknown when under an earlier mark)"


def _peak_cpu(call: Callable[[], Any]) -> int | None:
    """Peak resident-set growth in bytes during ``call()``, or None if it cannot be known."""
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
    """Peak allocated CUDA memory in bytes during ``call()``, above what was allocated before."""
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
    """Peak memory of one forward (and, with ``backward``, one forward plus backward) pass.

    Run this in a fresh process on the CPU (:func:`run_benchmark` does): the
    resident-set method counts everything the process allocates. Returns
    ``{"peak_bytes", "backward_peak_bytes"}``; exceptions propagate.

    Shapes:
        (no tensors)
    """
    weights = random_weights(config)
    module = build_module(backend, config, weights, reference)
    peak = _peak_cuda if config.device == "cuda" else _peak_cpu
    # Warm up: flex compiles for this very length; the others need only a short run.
    warm_n = n if backend == "flex" else min(n, _WARMUP_LENGTH)
    warm_inputs = make_inputs(config, warm_n)
    warm_forward = models._forward_fn(backend, module, warm_inputs)
    _run(warm_forward, False, warm_inputs)
    if config.backward:
        warm_inputs["hidden_states"].requires_grad_(True)
        _run(warm_forward, True, warm_inputs)
        _clear_grads(module, warm_inputs)
    del warm_inputs, warm_forward

    inputs = make_inputs(config, n)
    forward = models._forward_fn(backend, module, inputs)
    result: dict[str, int | None] = {"peak_bytes": peak(lambda: _run(forward, False, inputs))}
    result["backward_peak_bytes"] = None
    if config.backward:
        inputs["hidden_states"].requires_grad_(True)
        result["backward_peak_bytes"] = peak(lambda: _run(forward, True, inputs))
    return result


def _memory_in_subprocess(backend: str, n: int, config: BenchConfig) -> dict[str, Any]:
    """Run :func:`measure_memory` in a fresh Python process; returns a partial result row."""
    spec = json.dumps({"backend": backend, "n": n, "config": asdict(config)})
    package_root = str(Path(__file__).resolve().parents[2])  # the folder holding relpos/
    env = dict(os.environ)
    env["MALLOC_MMAP_THRESHOLD_"] = "65536"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    command = [sys.executable, "-m", "relpos.book.bench", "--_measure-memory", spec]
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=_CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"status": "error", "error": f"memory subprocess timed out after {_CHILD_TIMEOUT_S} s"}
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(_MEMORY_MARK):
            return json.loads(line[len(_MEMORY_MARK):])
    if done.returncode in (-9, 137):
        return {"status": "oom", "error": "memory subprocess killed by SIGKILL (out of memory)"}
    tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return {"status": "error", "error": f"memory subprocess exited with {done.returncode}: {tail}"[:500]}


def _memory_child(spec_json: str) -> None:
    """The ``--_measure-memory`` mode: measure one case, print one marked JSON line."""
    spec = json.loads(spec_json)
    config = BenchConfig(**spec["config"])
    try:
        row: dict[str, Any] = {"status": "ok", "error": None}
        row.update(measure_memory(spec["backend"], spec["n"], config))
        if row["peak_bytes"] is None:
            row.update(status="error", error="peak under an earlier high-water mark that could not be reset")
    except Exception as exc:  # recorded, not raised: the parent carries on
        status, message = _failure(exc)
        row = {"status": status, "error": message}
    print(_MEMORY_MARK + json.dumps(row), flush=True)
