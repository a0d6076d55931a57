"""One full benchmark run: every backend at every length, memory first, then timings.

:func:`run_benchmark` checks its arguments, builds the seeded reference once,
and for each length measures every backend's peak memory (each in a fresh
process on the CPU, so a run that dies of memory takes only its child) before
timing the backends that survived side by side. It reports progress one line a
measurement, records the machine (:func:`machine_info`) and config with the
results, and writes the JSON whose schema the docstring of ``relpos.book.bench``
describes.
"""

from __future__ import annotations

import datetime
import gc
import json
import os
import platform
import re
import sys
from pathlib import Path
from typing import Any, TextIO

import torch

from .. import _cli
from . import measure
from .config import (
    BENCH_BACKENDS,
    DEFAULT_LENGTHS,
    MIB,
    SCHEMA,
    BenchConfig,
    check_backends,
    check_device,
    check_lengths,
)
from .measure import failure, measure_memory, memory_method, skip_reason, time_backends
from .models import build_module, make_inputs, random_weights, transformers_module
from .roofline import config_flops, matmul_runs, roofline, throughput_record

# -- the run ---------------------------------------------------------------------------


def _processor_name() -> str:
    try:
        match = re.search(
            r"^model name\s*:\s*(.+)$", Path("/proc/cpuinfo").read_text(), re.MULTILINE
        )
    except OSError:
        match = None
    return (
        match.group(1).strip()
        if match
        else (platform.processor() or platform.machine())
    )


def machine_info(device: str) -> dict[str, Any]:
    """The ``machine`` entry of the results: platform, versions, device."""
    try:
        import transformers

        transformers_version = transformers.__version__
    except ImportError:
        transformers_version = None
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or _processor_name(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "transformers": transformers_version,
        "device": device,
        "device_name": torch.cuda.get_device_name()
        if device == "cuda"
        else _processor_name(),
        "threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "memory_method": memory_method(device),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"
        ),
    }


def _empty_row(backend: str, n: int) -> dict[str, Any]:
    return {
        "backend": backend,
        "n": n,
        "forward_s": None,
        "backward_s": None,
        "peak_bytes": None,
        "compile_s": None,
        "status": "ok",
        "error": None,
        "note": None,
        "forward_runs_s": None,
        "backward_runs_s": None,
        "backward_peak_bytes": None,
        "flops": None,
        "roofline_fraction": None,
    }


class _Progress:
    def __init__(self, total: int, stream: TextIO | None) -> None:
        self.total, self.done, self.stream = total, 0, stream

    def __call__(self, backend: str, n: int, what: str, message: str) -> None:
        self.done += 1
        if self.stream is not None:
            line = f"[{self.done}/{self.total}] {backend} n={n} {what}: {message}"
            print(line, file=self.stream, flush=True)


def _matmul_runs(config: BenchConfig) -> list[float]:
    """Timed square products at the run's size, dtype, device and thread count."""
    size, dtype = config.matmul_size, config.torch_dtype
    return matmul_runs(size, dtype, config.device, config.repeats)


def _describe_failure(row: dict[str, Any]) -> str:
    return row["status"] + (
        f" ({row['note'] or row['error']})" if row["note"] or row["error"] else ""
    )


def run_benchmark(
    lengths: list[int] | tuple[int, ...] = DEFAULT_LENGTHS,
    backends: list[str] | tuple[str, ...] = BENCH_BACKENDS,
    *,
    repeats: int = 5,
    device: str | None = None,
    dtype: str = "float32",
    batch: int = 1,
    backward: bool = False,
    hidden: int = 768,
    heads: int = 12,
    max_relative_positions: int = 512,
    position_buckets: int = 256,
    naive_max_length: int = 1024,
    max_memory_gb: float = 20.0,
    seed: int = 0,
    matmul_size: int = 2048,
    output: str | Path | None = None,
    progress: TextIO | bool | None = True,
) -> dict[str, Any]:
    """Time and measure every backend at every length; return (and write) the results.

    For each length: first the memory of every backend (each in a fresh process
    on the CPU), then the timings of every backend back to back. A progress line
    per measurement goes to ``progress``: True for stderr, a stream, or
    False/None for silence. See the docstring of
    ``relpos.book.bench`` for the JSON schema and how each number is taken.

    The roofline: ``repeats`` products of two ``matmul_size`` square matrices
    (same device, dtype and threads) run before the first length and again
    after the last; ``2 matmul_size^3`` over the median of all of them is the
    machine's matmul throughput, and each row's ``roofline_fraction`` is its
    forward FLOP (:func:`relpos.book.bench.roofline.forward_flops`) over its forward
    time over that throughput.

    Args:
        lengths: sequence lengths ``n``.
        backends: drawn from ``BENCH_BACKENDS``.
        repeats: timed runs per measurement (the median is reported).
        device: ``"cpu"`` or ``"cuda"``; None picks cuda when available.
        dtype: one of ``DTYPES``.
        output: where to write the JSON, or None.
    """
    lengths = check_lengths(lengths)
    backends = check_backends(backends)
    if not backends or len(set(backends)) != len(backends):
        raise ValueError(
            f"backends must be a non-empty list without repeats, got {backends}"
        )
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    config = BenchConfig(
        hidden=hidden,
        heads=heads,
        max_relative_positions=max_relative_positions,
        position_buckets=position_buckets,
        dtype=dtype,
        batch=batch,
        repeats=repeats,
        device=check_device(device),
        backward=backward,
        naive_max_length=naive_max_length,
        max_memory_gb=max_memory_gb,
        seed=seed,
        matmul_size=matmul_size,
    )
    if output is not None:  # before the work, not after it
        output = _cli.check_writable("output", output, make_parents=True)

    weights = random_weights(config)
    reference = transformers_module(config, weights)
    kinds = ["peak memory", "forward"] + (["forward+backward"] if backward else [])
    stream = sys.stderr if progress is True else (progress or None)
    step = _Progress(len(lengths) * len(backends) * len(kinds), stream)
    matmul = _matmul_runs(config)  # before the timings; again after them
    results = []
    for n in lengths:
        rows = {backend: _empty_row(backend, n) for backend in backends}
        for (
            backend,
            row,
        ) in rows.items():  # memory first: a run that dies takes only its child
            reason = skip_reason(backend, n, config)
            if reason is not None:
                row.update(status="skipped", note=reason)
            elif device == "cpu":
                row.update(measure.memory_in_subprocess(backend, n, config))
            else:
                try:
                    row.update(measure_memory(backend, n, config, reference))
                except Exception as exc:
                    status, message = failure(exc)
                    row.update(status=status, error=message)
                torch.cuda.empty_cache()
            if row["status"] == "ok":
                where = "fresh process" if device == "cpu" else "cuda allocator"
                step(
                    backend,
                    n,
                    "peak memory",
                    f"{row['peak_bytes'] / MIB:.1f} MiB ({where})",
                )
            else:
                step(backend, n, "peak memory", _describe_failure(row))
        timed = [backend for backend, row in rows.items() if row["status"] == "ok"]
        if timed:  # then the timings, side by side
            modules = inputs = None
            try:
                modules = {
                    backend: build_module(backend, config, weights, reference)
                    for backend in timed
                }
                inputs = make_inputs(config, n)
                for backend, update in time_backends(
                    timed, config, modules, inputs
                ).items():
                    rows[backend].update(update)
            except (
                Exception
            ) as exc:  # building the modules or inputs failed: every timing fails
                status, message = failure(exc)
                for backend in timed:
                    rows[backend].update(status=status, error=message)
            del modules, inputs
            gc.collect()
            if device == "cuda":
                torch.cuda.empty_cache()
        for backend, row in rows.items():
            if row["status"] != "ok":
                for kind in kinds[1:]:
                    step(backend, n, kind, _describe_failure(row))
                continue
            compiled = (
                f"; first call with compile {row['compile_s']:.1f} s"
                if row["compile_s"]
                else ""
            )
            step(
                backend,
                n,
                "forward",
                f"{row['forward_s']:.4f} s (median of {repeats}{compiled})",
            )
            if backward:
                step(
                    backend,
                    n,
                    "forward+backward",
                    f"{row['backward_s']:.4f} s (median of {repeats})",
                )
        results.extend(rows.values())

    matmul += _matmul_runs(config)
    machine = machine_info(device)
    machine["matmul"] = throughput_record(
        config.matmul_size, config.torch_dtype, device, matmul
    )
    if stream is not None:
        gflops = machine["matmul"]["flop_per_s"] / 1e9
        line = f"matmul {config.matmul_size}^3: {gflops:.1f} GFLOP/s"
        print(f"{line} (median of {len(matmul)})", file=stream, flush=True)
    data = {
        "schema": SCHEMA,
        "machine": machine,
        "config": config.to_json(),
        "results": results,
    }
    for row in results:
        row["flops"] = config_flops(row["n"], data["config"])
    for row, line in zip(results, roofline(data)):
        row["roofline_fraction"] = line["fraction"]
    if output is not None:
        path = Path(output)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2) + "\n")
    return data
