"""Benchmark of disentangled attention: transformers' reference against relpos' backends.

Run it as a module::

    python -m relpos.bench --lengths 512,1024,2048,4096 --repeats 5 --output bench_results.json

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

Skips: ``naive`` above ``--naive-max-length``, and any measurement whose
:func:`estimate_peak_bytes` exceeds ``--max-memory-gb``, are recorded with status
``"skipped"`` and the reason in ``note``. An out-of-memory or any other error in
one measurement is recorded (status ``"oom"`` or ``"error"``) and the run goes on.

The JSON written to ``--output`` (schema 1; :func:`load_results` reads it back)::

    {"schema": 1,
     "machine": {"platform", "processor", "cpu_count", "torch", "transformers",
                 "device", "device_name", "threads", "python", "memory_method", "date"},
     "config": {"hidden", "heads", "max_relative_positions", "position_buckets",
                "dtype", "batch", "repeats", "backward", "naive_max_length",
                "max_memory_gb", "seed", "share_att_key", "pos_att_type", "mask"},
     "results": [{"backend", "n", "forward_s", "backward_s", "peak_bytes",
                  "compile_s", "status", "error", "note", "forward_runs_s",
                  "backward_runs_s", "backward_peak_bytes"}, ...]}

Times are seconds, memory is bytes; a value that was not measured is ``null``.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, TextIO

import torch
from torch import nn

from .attention import DisentangledSelfAttention
from .positions import attention_span, relative_position_index

SCHEMA = 1
BENCH_BACKENDS = ("transformers", "naive", "gather", "flex")
STATUSES = ("ok", "skipped", "oom", "error")
DTYPES = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "float64": torch.float64,
}
DEFAULT_LENGTHS = (512, 1024, 2048, 4096)
RESULT_KEYS = ("backend", "n", "forward_s", "backward_s", "peak_bytes", "compile_s", "status", "error")

_MEMORY_MARK = "RELPOS_BENCH_MEMORY "
_WARMUP_LENGTH = 16
_CHILD_TIMEOUT_S = 3600
_MIB = 2**20
_GIB = 2**30


@dataclass(frozen=True)
class BenchConfig:
    """Everything that fixes one benchmark run except the lengths and backends.

    Shapes:
        (no tensors)
    """

    hidden: int = 768
    heads: int = 12
    max_relative_positions: int = 512
    position_buckets: int = 256
    dtype: str = "float32"
    batch: int = 1
    repeats: int = 5
    device: str = "cpu"
    backward: bool = False
    naive_max_length: int = 1024
    max_memory_gb: float = 20.0
    seed: int = 0

    @property
    def torch_dtype(self) -> torch.dtype:
        """The torch dtype named by ``dtype``."""
        return DTYPES[self.dtype]

    @property
    def span(self) -> int:
        """``k``, so the table has ``2k`` rows."""
        return attention_span(self.max_relative_positions, self.position_buckets)

    def to_json(self) -> dict[str, Any]:
        """The ``config`` entry of the results (the device is reported under ``machine``)."""
        config = asdict(self)
        del config["device"]
        config.update(share_att_key=True, pos_att_type=["c2p", "p2c"], mask="all ones")
        return config


# -- building the modules and inputs ---------------------------------------------------


def random_weights(config: BenchConfig) -> dict[str, torch.Tensor]:
    """Seeded random query/key/value projections shared by every backend.

    Weights are drawn like DeBERTa's initialiser (normal, std 0.02); the biases
    are drawn too, so that no term is trivially zero.

    Shapes:
        ``*_proj.weight``: ``(hidden, hidden)``; ``*_proj.bias``: ``(hidden,)``
    """
    generator = torch.Generator().manual_seed(config.seed)
    weights = {}
    for name in ("query_proj", "key_proj", "value_proj"):
        weights[f"{name}.weight"] = 0.02 * torch.randn(config.hidden, config.hidden, generator=generator)
        weights[f"{name}.bias"] = 0.02 * torch.randn(config.hidden, generator=generator)
    return {name: w.to(config.torch_dtype) for name, w in weights.items()}


def _transformers_module(config: BenchConfig, weights: dict[str, torch.Tensor]) -> nn.Module:
    """transformers' DeBERTa-v2 attention with ``weights``, in eval mode on the device."""
    from transformers import DebertaV2Config
    from transformers.models.deberta_v2.modeling_deberta_v2 import DisentangledSelfAttention as Reference

    hf_config = DebertaV2Config(
        hidden_size=config.hidden,
        num_attention_heads=config.heads,
        relative_attention=True,
        max_relative_positions=config.max_relative_positions,
        position_buckets=config.position_buckets,
        pos_att_type=["c2p", "p2c"],
        share_att_key=True,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    module = Reference(hf_config).to(dtype=config.torch_dtype)
    module.load_state_dict(weights)
    return module.to(config.device).eval()


def build_module(
    backend: str,
    config: BenchConfig,
    weights: dict[str, torch.Tensor],
    reference: nn.Module | None = None,
) -> nn.Module:
    """The module of one backend, on ``config.device``, in eval mode.

    ``"transformers"`` is the reference itself (built here when ``reference`` is
    None). The relpos backends are ``from_transformers`` copies of ``reference``
    when it is given, else built directly with ``weights`` (the same numbers,
    without importing ``transformers``: used by the memory subprocess).

    Shapes:
        (no tensors)
    """
    _check_backends([backend])
    if backend == "transformers":
        return reference if reference is not None else _transformers_module(config, weights)
    if reference is not None:
        return DisentangledSelfAttention.from_transformers(reference, backend=backend).eval()
    module = DisentangledSelfAttention(
        config.hidden,
        config.heads,
        max_relative_positions=config.max_relative_positions,
        position_buckets=config.position_buckets,
        pos_att_type=("c2p", "p2c"),
        share_att_key=True,
        dropout=0.0,
        backend=backend,
    ).to(dtype=config.torch_dtype)
    module.load_state_dict(weights)
    return module.to(config.device).eval()


def make_inputs(config: BenchConfig, n: int) -> dict[str, torch.Tensor]:
    """Seeded hidden states, table, masks and output gradient for length ``n``.

    ``mask`` is the ``(b, n)`` padding mask relpos takes, ``pair_mask`` the
    pairwise form transformers takes; both are all ones.

    Shapes:
        hidden_states: ``(b, n, hidden)``; table: ``(2 * span, hidden)``
        mask: ``(b, n)``; pair_mask: ``(b, 1, n, n)`` bool; grad: ``(b, n, hidden)``
    """
    generator = torch.Generator().manual_seed(config.seed + 1)
    b, hidden = config.batch, config.hidden
    inputs = {
        "hidden_states": torch.randn(b, n, hidden, generator=generator),
        "table": torch.randn(2 * config.span, hidden, generator=generator),
        "grad": torch.randn(b, n, hidden, generator=generator),
    }
    inputs = {k: v.to(device=config.device, dtype=config.torch_dtype) for k, v in inputs.items()}
    mask = torch.ones(b, n, dtype=torch.long, device=config.device)
    inputs["mask"] = mask
    inputs["pair_mask"] = (mask[:, None, None, :] * mask[:, None, :, None]).bool()  # (b, 1, i, j)
    return inputs


def _forward_fn(
    backend: str, module: nn.Module, inputs: dict[str, torch.Tensor]
) -> Callable[[], torch.Tensor]:
    """A closure running one forward pass of ``module`` on ``inputs``."""
    x, table = inputs["hidden_states"], inputs["table"]
    if backend == "transformers":
        pair_mask = inputs["pair_mask"]
        return lambda: module(x, pair_mask, relative_pos=None, rel_embeddings=table)[0]
    mask = inputs["mask"]
    return lambda: module(x, table, mask)


def _run(
    forward: Callable[[], torch.Tensor], backward: bool, inputs: dict[str, torch.Tensor]
) -> torch.Tensor:
    """One forward pass (under no_grad), or one forward plus backward pass."""
    if not backward:
        with torch.no_grad():
            return forward()
    out = forward()
    out.backward(inputs["grad"])
    return out


def _clear_grads(module: nn.Module, inputs: dict[str, torch.Tensor]) -> None:
    module.zero_grad(set_to_none=True)
    inputs["hidden_states"].grad = None


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


# -- estimates and skips ----------------------------------------------------------------


def estimate_peak_bytes(backend: str, n: int, config: BenchConfig) -> int:
    """A rough upper estimate of one measurement's memory, used only to skip hopeless runs.

    ``transformers``: six ``(b, h, n, n)`` tensors; ``gather``: three, plus the
    ``(n, n)`` int64 row index; ``naive``: four ``(n, n, hidden)`` per-pair
    tables, four ``(b, h, n, n)`` and the index; ``flex``: the
    ``(b, h, n, 2 * span)`` row tables, a few ``(b, n, hidden)``, and a quarter of
    a ``(b, h, n, n)`` tensor for torch's CPU flex kernel, whose own buffers grow
    with ``n^2`` (measured without any score_mod: 142 MiB at n = 4096, 540 MiB at
    8192, for 12 heads). With ``backward`` twice the total (autograd keeps the
    intermediates); ``flex`` on the CPU recomputes its backward by gather, so
    there it counts as gather.

    Shapes:
        (no tensors)
    """
    _check_backends([backend])
    e = torch.empty((), dtype=config.torch_dtype).element_size()
    b, h, hidden = config.batch, config.heads, config.hidden
    scores = b * h * n * n * e  # one (b, h, n, n) tensor
    index = n * n * 8  # the (n, n) int64 row index
    linear = b * n * (2 * h * 2 * config.span + 6 * hidden) * e
    if backend == "transformers":
        quadratic = 6 * scores
    elif backend == "gather":
        quadratic = 3 * scores + index
    elif backend == "naive":
        quadratic = 4 * n * n * hidden * e + 4 * scores + index
    elif config.backward and config.device == "cpu":
        quadratic = 3 * scores + index  # flex: the CPU backward recomputes by gather
    elif config.device == "cpu":
        quadratic = scores // 4  # flex: the buffers of torch's CPU kernel
    else:
        quadratic = 0
    estimate = quadratic + linear
    return 2 * estimate if config.backward else estimate


def _skip_reason(backend: str, n: int, config: BenchConfig) -> str | None:
    if backend == "naive" and n > config.naive_max_length:
        return f"n > --naive-max-length {config.naive_max_length}"
    estimate = estimate_peak_bytes(backend, n, config)
    if estimate > config.max_memory_gb * _GIB:
        return f"estimated {estimate / _GIB:.1f} GiB > --max-memory-gb {config.max_memory_gb:g}"
    return None


def _is_oom(exc: BaseException) -> bool:
    if isinstance(exc, (MemoryError, torch.OutOfMemoryError)):
        return True
    text = str(exc).lower()
    return "out of memory" in text or "can't allocate memory" in text


def _failure(exc: BaseException) -> tuple[str, str]:
    """``(status, message)`` for an exception raised by a measurement."""
    first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return ("oom" if _is_oom(exc) else "error"), f"{type(exc).__name__}: {first_line}"[:500]


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
    warm_forward = _forward_fn(backend, module, warm_inputs)
    _run(warm_forward, False, warm_inputs)
    if config.backward:
        warm_inputs["hidden_states"].requires_grad_(True)
        _run(warm_forward, True, warm_inputs)
        _clear_grads(module, warm_inputs)
    del warm_inputs, warm_forward

    inputs = make_inputs(config, n)
    forward = _forward_fn(backend, module, inputs)
    result: dict[str, int | None] = {"peak_bytes": peak(lambda: _run(forward, False, inputs))}
    result["backward_peak_bytes"] = None
    if config.backward:
        inputs["hidden_states"].requires_grad_(True)
        result["backward_peak_bytes"] = peak(lambda: _run(forward, True, inputs))
    return result


def _memory_in_subprocess(backend: str, n: int, config: BenchConfig) -> dict[str, Any]:
    """Run :func:`measure_memory` in a fresh Python process; returns a partial result row."""
    spec = json.dumps({"backend": backend, "n": n, "config": asdict(config)})
    package_root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["MALLOC_MMAP_THRESHOLD_"] = "65536"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    command = [sys.executable, "-m", "relpos.bench", "--_measure-memory", spec]
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


# -- timing ------------------------------------------------------------------------------


def time_backends(
    backends: list[str], config: BenchConfig, modules: dict[str, nn.Module], inputs: dict[str, torch.Tensor]
) -> dict[str, dict[str, Any]]:
    """Median forward (and forward plus backward) times of several backends at one length.

    The backends run side by side: ``flex``'s first call (its compile, timed on
    its own as ``compile_s``) and one warm-up call each, then ``config.repeats``
    rounds in which every backend runs once, so that a slow spell of the machine
    falls on all of them alike. A backend that raises is dropped from the later
    rounds and its entry holds ``status`` and ``error`` instead of times.

    Shapes:
        (no tensors; ``inputs`` as made by :func:`make_inputs`, shared by all backends)
    """
    rows: dict[str, dict[str, Any]] = {
        backend: {"compile_s": None, "backward_s": None, "backward_runs_s": None} for backend in backends
    }
    forwards = {backend: _forward_fn(backend, modules[backend], inputs) for backend in backends}
    alive = list(backends)

    def attempt(backend: str, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except Exception as exc:
            status, message = _failure(exc)
            rows[backend].update(status=status, error=message)
            alive.remove(backend)
            gc.collect()
            return None

    def rounds(backward: bool) -> dict[str, list[float]]:
        for backend in list(alive):  # warm-up
            attempt(backend, lambda: _run(forwards[backend], backward, inputs))
            _clear_grads(modules[backend], inputs)
        runs: dict[str, list[float]] = {backend: [] for backend in alive}
        for _ in range(config.repeats):
            for backend in list(alive):
                elapsed = attempt(
                    backend, lambda: _timed(lambda: _run(forwards[backend], backward, inputs), config.device)
                )
                _clear_grads(modules[backend], inputs)
                if elapsed is not None:
                    runs[backend].append(elapsed)
        return {backend: runs[backend] for backend in alive}

    if "flex" in alive:  # the first call compiles: timed on its own, never a timed run

        def compile_and_run() -> torch.Tensor:
            return _run(forwards["flex"], False, inputs)

        rows["flex"]["compile_s"] = attempt("flex", lambda: _timed(compile_and_run, config.device))
    for backend, runs in rounds(False).items():
        rows[backend].update(forward_s=statistics.median(runs), forward_runs_s=runs)
    if config.backward and alive:
        inputs["hidden_states"].requires_grad_(True)
        for backend, runs in rounds(True).items():
            rows[backend].update(backward_s=statistics.median(runs), backward_runs_s=runs)
        inputs["hidden_states"].requires_grad_(False)
    return rows


# -- the run -----------------------------------------------------------------------------


def _check_backends(backends: list[str] | tuple[str, ...]) -> None:
    for backend in backends:
        if backend not in BENCH_BACKENDS:
            raise ValueError(f"backends must be drawn from {BENCH_BACKENDS}, got {backend!r}")


def _processor_name() -> str:
    try:
        match = re.search(r"^model name\s*:\s*(.+)$", Path("/proc/cpuinfo").read_text(), re.MULTILINE)
    except OSError:
        match = None
    return match.group(1).strip() if match else (platform.processor() or platform.machine())


def machine_info(device: str) -> dict[str, Any]:
    """The ``machine`` entry of the results: platform, versions, device.

    Shapes:
        (no tensors)
    """
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
        "device_name": torch.cuda.get_device_name() if device == "cuda" else _processor_name(),
        "threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "memory_method": memory_method(device),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
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
    }


class _Progress:
    def __init__(self, total: int, stream: TextIO | None) -> None:
        self.total, self.done, self.stream = total, 0, stream

    def __call__(self, backend: str, n: int, what: str, message: str) -> None:
        self.done += 1
        if self.stream is not None:
            line = f"[{self.done}/{self.total}] {backend} n={n} {what}: {message}"
            print(line, file=self.stream, flush=True)


def _describe_failure(row: dict[str, Any]) -> str:
    return row["status"] + (f" ({row['note'] or row['error']})" if row["note"] or row["error"] else "")


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
    output: str | Path | None = None,
    progress: TextIO | bool | None = True,
) -> dict[str, Any]:
    """Time and measure every backend at every length; return (and optionally write) the results.

    For each length: first the memory of every backend (each in a fresh process
    on the CPU), then the timings of every backend back to back. A progress line
    per measurement goes to ``progress``: True for stderr, a stream, or
    False/None for silence. See the module
    docstring for the JSON schema and how each number is taken.

    Args:
        lengths: sequence lengths ``n``.
        backends: drawn from ``BENCH_BACKENDS``.
        repeats: timed runs per measurement (the median is reported).
        device: ``"cpu"`` or ``"cuda"``; None picks cuda when available.
        dtype: one of ``DTYPES``.
        output: where to write the JSON, or None.

    Shapes:
        (no tensors)
    """
    lengths = [_positive_int("lengths entries", n) for n in lengths]
    if not lengths:
        raise ValueError("lengths must name at least one sequence length")
    backends = list(backends)
    _check_backends(backends)
    if not backends or len(set(backends)) != len(backends):
        raise ValueError(f"backends must be a non-empty list without repeats, got {backends}")
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' was asked for but torch.cuda.is_available() is False")
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {tuple(DTYPES)}, got {dtype!r}")
    if _positive_int("hidden", hidden) % _positive_int("heads", heads):
        raise ValueError(f"hidden must be divisible by heads, got hidden={hidden} and heads={heads}")
    if not isinstance(max_memory_gb, (int, float)) or max_memory_gb <= 0:
        raise ValueError(f"max_memory_gb must be a positive number, got {max_memory_gb!r}")
    config = BenchConfig(
        hidden=hidden,
        heads=heads,
        max_relative_positions=_positive_int("max_relative_positions", max_relative_positions),
        position_buckets=int(position_buckets),
        dtype=dtype,
        batch=_positive_int("batch", batch),
        repeats=_positive_int("repeats", repeats),
        device=device,
        backward=bool(backward),
        naive_max_length=_positive_int("naive_max_length", naive_max_length),
        max_memory_gb=float(max_memory_gb),
        seed=int(seed),
    )
    if config.position_buckets > 0:  # the bucket arguments must suit each other
        relative_position_index(
            1, max_relative_positions=config.max_relative_positions, position_buckets=config.position_buckets
        )

    weights = random_weights(config)
    reference = _transformers_module(config, weights)
    kinds = ["peak memory", "forward"] + (["forward+backward"] if backward else [])
    stream = sys.stderr if progress is True else (progress or None)
    step = _Progress(len(lengths) * len(backends) * len(kinds), stream)
    results = []
    for n in lengths:
        rows = {backend: _empty_row(backend, n) for backend in backends}
        for backend, row in rows.items():  # memory first: a run that dies takes only its child
            reason = _skip_reason(backend, n, config)
            if reason is not None:
                row.update(status="skipped", note=reason)
            elif device == "cpu":
                row.update(_memory_in_subprocess(backend, n, config))
            else:
                try:
                    row.update(measure_memory(backend, n, config, reference))
                except Exception as exc:
                    status, message = _failure(exc)
                    row.update(status=status, error=message)
                torch.cuda.empty_cache()
            if row["status"] == "ok":
                where = "fresh process" if device == "cpu" else "cuda allocator"
                step(backend, n, "peak memory", f"{row['peak_bytes'] / _MIB:.1f} MiB ({where})")
            else:
                step(backend, n, "peak memory", _describe_failure(row))
        timed = [backend for backend, row in rows.items() if row["status"] == "ok"]
        if timed:  # then the timings, side by side
            modules = inputs = None
            try:
                modules = {backend: build_module(backend, config, weights, reference) for backend in timed}
                inputs = make_inputs(config, n)
                for backend, update in time_backends(timed, config, modules, inputs).items():
                    rows[backend].update(update)
            except Exception as exc:  # building the modules or inputs failed: every timing fails
                status, message = _failure(exc)
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
            compiled = f"; first call with compile {row['compile_s']:.1f} s" if row["compile_s"] else ""
            step(backend, n, "forward", f"{row['forward_s']:.4f} s (median of {repeats}{compiled})")
            if backward:
                step(backend, n, "forward+backward", f"{row['backward_s']:.4f} s (median of {repeats})")
        results.extend(rows.values())

    data = {"schema": SCHEMA, "machine": machine_info(device), "config": config.to_json(), "results": results}
    if output is not None:
        path = Path(output)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2) + "\n")
    return data


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value}")
    return value


# -- reading and presenting results ---------------------------------------------------------


def load_results(path: str | Path) -> dict[str, Any]:
    """Read a results file written by :func:`run_benchmark` and check its schema.

    Raises ``ValueError`` naming what is missing or malformed.

    Shapes:
        (no tensors)
    """
    data = json.loads(Path(path).read_text())
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        got = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"{path}: schema must be {SCHEMA}, got {got!r}")
    for key in ("machine", "config", "results"):
        if key not in data:
            raise ValueError(f"{path}: missing top-level key {key!r}")
    for i, row in enumerate(data["results"]):
        missing = [key for key in RESULT_KEYS if key not in row]
        if missing:
            raise ValueError(f"{path}: results[{i}] lacks {missing}")
        if row["status"] not in STATUSES:
            raise ValueError(f"{path}: results[{i}].status must be one of {STATUSES}, got {row['status']!r}")
    return data


def _ratio(value: float | None, reference: float | None) -> float | None:
    if value is None or reference is None or reference <= 0:
        return None
    return value / reference


def ratios(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Every result's time and memory as a multiple of transformers' at the same length.

    One entry per result, in order: ``{"backend", "n", "time_ratio",
    "backward_ratio", "memory_ratio"}``; a ratio is None where either number is
    missing (not measured, skipped, failed, or no transformers row).

    Shapes:
        (no tensors)
    """
    rows = results["results"]
    reference = {row["n"]: row for row in rows if row["backend"] == "transformers" and row["status"] == "ok"}
    out = []
    for row in rows:
        ref = reference.get(row["n"], {})
        ok = row["status"] == "ok"
        out.append({
            "backend": row["backend"],
            "n": row["n"],
            "time_ratio": _ratio(row["forward_s"], ref.get("forward_s")) if ok else None,
            "backward_ratio": _ratio(row["backward_s"], ref.get("backward_s")) if ok else None,
            "memory_ratio": _ratio(row["peak_bytes"], ref.get("peak_bytes")) if ok else None,
        })
    return out


def _cell(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def format_table(results: dict[str, Any]) -> str:
    """A plain-text table: per length and backend, times, peak memory and ratios vs transformers.

    Shapes:
        (no tensors)
    """
    config, machine = results["config"], results["machine"]
    show_backward = any(row.get("backward_s") is not None for row in results["results"])
    header = ["n", "backend", "status", "forward s", "x ref"]
    if show_backward:
        header += ["fwd+bwd s", "x ref"]
    header += ["peak MiB", "x ref", "compile s", "note"]
    lines = []
    for row, ratio in zip(results["results"], ratios(results)):
        cells = [str(row["n"]), row["backend"], row["status"], _cell(row["forward_s"], ".4f"),
                 _cell(ratio["time_ratio"], ".2f")]
        if show_backward:
            cells += [_cell(row.get("backward_s"), ".4f"), _cell(ratio["backward_ratio"], ".2f")]
        peak = row["peak_bytes"] / _MIB if row["peak_bytes"] is not None else None
        note = row.get("note") or row.get("error") or ""
        cells += [_cell(peak, ".1f"), _cell(ratio["memory_ratio"], ".2f")]
        cells += [_cell(row["compile_s"], ".1f"), note]
        lines.append(cells)
    widths = [max(len(line[c]) for line in [header, *lines]) for c in range(len(header) - 1)]

    def render(cells: list[str]) -> str:
        left = {1, 2}  # backend and status read better left-aligned
        parts = [
            cell.ljust(width) if c in left else cell.rjust(width)
            for c, (cell, width) in enumerate(zip(cells, widths))
        ]
        return "  ".join(parts + [cells[-1]]).rstrip()

    title = (
        f"disentangled attention on {machine['device']} ({machine['device_name']}), {config['dtype']}, "
        f"batch {config['batch']}, hidden {config['hidden']}, heads {config['heads']}, "
        f"max_relative_positions {config['max_relative_positions']}, "
        f"position_buckets {config['position_buckets']}; median of {config['repeats']}; "
        f"x ref = ratio to transformers at the same n"
    )
    rule = "-" * len(render(header))
    return "\n".join([title, render(header), rule, *(render(cells) for cells in lines)])


# -- command line -------------------------------------------------------------------------


def _comma_ints(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def _comma_backends(text: str) -> list[str]:
    values = [part.strip() for part in text.split(",") if part.strip()]
    bad = [v for v in values if v not in BENCH_BACKENDS]
    if bad or not values:
        raise argparse.ArgumentTypeError(
            f"backends must be drawn from {','.join(BENCH_BACKENDS)}, got {text!r}"
        )
    return values


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface of ``python -m relpos.bench``.

    Shapes:
        (no tensors)
    """
    default_device = "cuda" if torch.cuda.is_available() else "cpu"
    parser = argparse.ArgumentParser(
        prog="python -m relpos.bench",
        description="Time and measure DeBERTa's disentangled attention: transformers vs relpos backends.",
    )
    parser.add_argument("--lengths", type=_comma_ints, default=list(DEFAULT_LENGTHS),
                        help="comma-separated sequence lengths (default: 512,1024,2048,4096)")
    parser.add_argument(
        "--repeats", type=int, default=5, help="timed runs per measurement; the median is kept"
    )
    parser.add_argument("--backends", type=_comma_backends, default=list(BENCH_BACKENDS),
                        help=f"comma-separated, from {','.join(BENCH_BACKENDS)} (default: all)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default=default_device,
                        help=f"default: {default_device}")
    parser.add_argument("--dtype", choices=tuple(DTYPES), default="float32")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--backward", action="store_true", help="also time forward plus backward")
    parser.add_argument("--naive-max-length", type=int, default=1024,
                        help="skip the naive backend above this length (default: 1024)")
    parser.add_argument("--max-memory-gb", type=float, default=20.0,
                        help="skip a measurement whose estimated memory exceeds this (default: 20)")
    parser.add_argument("--output", default="bench_results.json", help="JSON results path")
    parser.add_argument("--hidden", type=int, default=768)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--max-relative-positions", type=int, default=512)
    parser.add_argument("--position-buckets", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--_measure-memory", dest="measure_memory", default=None, help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> None:
    """Parse ``argv``, run the benchmark, print the table, write the JSON.

    Shapes:
        (no tensors)
    """
    args = build_parser().parse_args(argv)
    if args.measure_memory is not None:
        _memory_child(args.measure_memory)
        return
    data = run_benchmark(
        args.lengths,
        args.backends,
        repeats=args.repeats,
        device=args.device,
        dtype=args.dtype,
        batch=args.batch,
        backward=args.backward,
        hidden=args.hidden,
        heads=args.heads,
        max_relative_positions=args.max_relative_positions,
        position_buckets=args.position_buckets,
        naive_max_length=args.naive_max_length,
        max_memory_gb=args.max_memory_gb,
        seed=args.seed,
        output=args.output,
    )
    print(format_table(data))
    print(f"wrote {args.output}", file=sys.stderr)


__all__ = [
    "BENCH_BACKENDS",
    "BenchConfig",
    "DTYPES",
    "STATUSES",
    "build_module",
    "build_parser",
    "estimate_peak_bytes",
    "format_table",
    "load_results",
    "machine_info",
    "main",
    "make_inputs",
    "measure_memory",
    "memory_method",
    "random_weights",
    "ratios",
    "run_benchmark",
    "time_backends",
]


if __name__ == "__main__":
    main()
