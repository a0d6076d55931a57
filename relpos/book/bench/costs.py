"""What positions cost: every scheme on every kernel against plain attention.

``python -m relpos.book.bench costs`` builds every cell of :mod:`.cells` (each
registered scheme and DeBERTa clipped and log-bucketed, on every backend) and
plain attention (the same projections, ``F.scaled_dot_product_attention``, no
positions), and at each length ``n`` reports each cell's forward time and peak
memory as a multiple of plain attention's, measured in the same run at the same
``n``, beside the scheme's arithmetic floor
(:func:`relpos.book.bench.roofline.cost_floor`).

Shapes are deberta-v3-base's by default (hidden 768, 12 heads, ``k = 256``),
batch 1, float32, on **all the machine's threads** (``torch.set_num_threads`` for
the run, restored after it): the position kernels gain less from a second thread
than torch's fused attention does, so one thread's ratios flatter them, and a user
runs all threads.

Time. Each cell's first call comes first and is never timed (``first_call_s``:
for ``flex`` it compiles the kernel; ``torch.compile`` is not used otherwise).
Then ``repeats`` rounds at one length run plain attention and every cell once
each, and a cell's time is the median of its runs: a slow spell of the machine
falls on the cell and on plain attention alike.

Memory: the peak of the bytes torch allocates during one forward, above what was
allocated before it (the output included), taken from the allocation events of
``torch.profiler.profile(profile_memory=True)`` (summed in time order) on the
CPU, and from ``torch.cuda.max_memory_allocated`` on a GPU. Why the profiler
rather than the resident set of a fresh process per cell (what
:mod:`relpos.book.bench` does for whole-layer memory): the profiler counts the
tensors' own bytes, exactly and in this process, so ``flex`` is compiled once a
cell and not again in a child, which at 20-50 s a compile would cost more than
the measurements; the memory a position scheme adds is tensors (scores, tables,
per-pair rows), which the count sees whole, and it does not see what it should
not (pages the allocator keeps, the interpreter, the compiler's buffers). It
runs once per cell, after the first call and outside the timed runs.

Skips, each recorded with status ``"skipped"`` and the reason: a cell whose
predicted peak exceeds ``max_memory_gb`` (its peak at the last length it ran,
``n'``, times ``(n / n')^2``, or before any, :func:`estimate_cell_bytes`:
naive's ``n^2 * hidden`` per-pair rows decide it); one whose predicted forward
exceeds ``max_forward_s`` (its time at ``n'`` times ``(n / n')^2``); and, with
``budget_s``, one that would take the run past its time budget (its first call
at ``n'``, a compile for ``flex``, plus its predicted forwards; a cell started
runs all its rounds). A cell that fails (out of memory, an error) is recorded
and the run goes on.

The JSON (``schema`` 1, ``kind`` ``"positions cost"``)::

    {"schema", "kind", "command",
     "machine": {... as the benchmark's, "threads", "memory_method",
                 "load_before", "load_after", "wall_s"},
     "config": {"hidden", "heads", "span", "batch", "dtype", "device", "repeats",
                "seed", "threads", "max_memory_gb", "max_forward_s", "budget_s",
                "lengths", "schemes", "backends", "scheme_arguments"},
     "results": [{"scheme", "backend", "n", "status", "note", "error",
                  "forward_s", "forward_runs_s", "first_call_s", "peak_bytes",
                  "time_ratio", "memory_ratio", "flops", "floor_ratio"}, ...]}

Plain attention's rows have scheme ``"plain"`` and backend ``"sdpa"``.
"""

from __future__ import annotations

import gc
import json
import math
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, TextIO

import torch

import relpos
from relpos.checks import check_int

from .. import _cli
from . import cells as cell_models
from .cells import PLAIN, SDPA, Shapes, cost_schemes
from .config import (
    DTYPES, GIB, MIB, check_device, check_dtype, check_lengths, check_positive,
)
from .measure import _peak_cuda, _timed, failure
from .roofline import FLOOR_SCHEMES, cost_floor, plain_flops, position_flops

SCHEMA = 1
KIND = "positions cost"
DEFAULT_COST_LENGTHS = (256, 1024, 2048, 4096, 8192)
COST_KEYS = (
    "scheme", "backend", "n", "status", "note", "error", "forward_s",
    "forward_runs_s", "first_call_s", "peak_bytes", "time_ratio", "memory_ratio",
    "flops", "floor_ratio",
)


@dataclass(frozen=True)
class CostsConfig:
    """Everything that fixes one positions-cost run except lengths, schemes, backends.
    """

    hidden: int = 768
    heads: int = 12
    span: int = 256
    batch: int = 1
    dtype: str = "float32"
    device: str = "cpu"
    repeats: int = 3
    seed: int = 0
    threads: int = field(default_factory=lambda: os.cpu_count() or 1)
    max_memory_gb: float = 8.0
    max_forward_s: float = 10.0
    budget_s: float | None = None

    def __post_init__(self) -> None:
        for name in ("hidden", "heads", "span", "batch", "repeats", "threads"):
            check_int(name, getattr(self, name), minimum=1)
        check_int("seed", self.seed)
        if self.hidden % self.heads:
            raise ValueError(
                "hidden must be divisible by heads, got "
                f"hidden={self.hidden} and heads={self.heads}"
            )
        check_dtype(self.dtype)
        check_device(self.device)
        for name in ("max_memory_gb", "max_forward_s", "budget_s"):
            value = getattr(self, name)
            if value is not None or name != "budget_s":
                object.__setattr__(self, name, check_positive(name, value))

    @property
    def shapes(self) -> Shapes:
        """The sizes, dtype and device every cell is built with."""
        return Shapes(self.hidden, self.heads, self.span, DTYPES[self.dtype],
                      self.device)


def check_choices(name: str, values: Any, allowed: list[str] | tuple[str, ...]):
    """``values`` as a non-empty list of distinct names drawn from ``allowed``."""
    values = [values] if isinstance(values, str) else list(values)
    bad = [v for v in values if v not in allowed]
    if bad or not values or len(set(values)) != len(values):
        raise ValueError(
            f"{name} must be distinct names from {tuple(allowed)}, got {values!r}"
        )
    return values


# -- predictions and skips -----------------------------------------------------------


def estimate_cell_bytes(backend: str, n: int, config: CostsConfig) -> int:
    """A rough upper estimate of a cell's peak before anything was measured.

    ``naive``: four ``(n, n, hidden)`` per-pair tensors (gathered rows and their
    projections) and six ``(b, h, n, n)``; ``sdpa``: eight ``(b, n, hidden)``;
    every other kernel: six ``(b, h, n, n)``, the ``(n, n)`` int64 index and
    eight ``(b, n, hidden)``.
    """
    e = torch.empty((), dtype=DTYPES[config.dtype]).element_size()
    b, h, hidden = config.batch, config.heads, config.hidden
    scores = b * h * n * n * e
    linear = 8 * b * n * hidden * e
    if backend == SDPA:
        return linear
    if backend == "naive":
        return 4 * n * n * hidden * e + 6 * scores + linear
    return 6 * scores + n * n * 8 + linear


def _grown(value: float, n: int, before: int) -> float:
    return value * (n / before) ** 2


class _Run:
    """The state of one run: what each cell measured last, the clock and budget."""

    def __init__(self, config: CostsConfig, stream: TextIO | None) -> None:
        self.config, self.stream = config, stream
        self.start = time.perf_counter()
        self.last: dict[tuple[str, str], dict[str, Any]] = {}

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def say(self, line: str) -> None:
        if self.stream is not None:
            print(line, file=self.stream, flush=True)

    def predicted_s(self, cell: tuple[str, str], n: int) -> float | None:
        last = self.last.get(cell)
        if last is None or last.get("forward_s") is None:
            return None
        return _grown(last["forward_s"], n, last["n"])

    def skip_reason(
        self, cell: tuple[str, str], n: int, committed_s: float
    ) -> str | None:
        """Why ``cell`` is not measured at ``n`` (memory, time, budget), or None."""
        config = self.config
        last = self.last.get(cell)
        if last is not None and last.get("peak_bytes") is not None:
            memory = _grown(last["peak_bytes"], n, last["n"])
            source = f"{last['peak_bytes'] / MIB:.0f} MiB at n={last['n']} x (n/n')^2"
        else:
            memory = estimate_cell_bytes(cell[1], n, config)
            source = "a rough upper estimate"
        if memory > config.max_memory_gb * GIB:
            return (f"predicted {memory / GIB:.1f} GiB ({source}) > max_memory_gb "
                    f"{config.max_memory_gb:g}")
        seconds = self.predicted_s(cell, n)
        if seconds is not None and seconds > config.max_forward_s:
            return (f"predicted {seconds:.1f} s a forward ({last['forward_s']:.2f} s "
                    f"at n={last['n']} x (n/n')^2) > max_forward_s "
                    f"{config.max_forward_s:g}")
        if config.budget_s is not None:
            first = last["first_call_s"] if last is not None else 0.0
            cost = first + (config.repeats + 1) * (seconds or 0.0)
            spent = self.elapsed() + committed_s
            if spent + cost > config.budget_s:
                return (f"the run's budget_s {config.budget_s:g} would be passed "
                        f"({spent:.0f} s spent or committed, about {cost:.0f} s more)")
        return None


# -- measuring one length --------------------------------------------------------------


def _profiled_peak(call: Callable[[], Any]) -> int:
    """Peak bytes torch allocates on the CPU during ``call()``, above the start."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        result = call()
    del result
    events = prof.profiler.kineto_results.events()
    events = [e for e in events if e.name() == "[memory]"]
    events.sort(key=lambda e: e.start_ns())
    live = peak = 0
    for event in events:
        if event.device_type() == torch.autograd.DeviceType.CPU:
            live += event.nbytes()
            peak = max(peak, live)
    return peak


def peak_bytes(call: Callable[[], Any], device: str) -> int:
    """The peak memory of one ``call()`` above what was allocated before it.

    The CPU: the profiler's allocation events (module docstring); CUDA: the
    allocator's peak.
    """
    gc.collect()
    return _peak_cuda(call) if device == "cuda" else _profiled_peak(call)


def memory_method(device: str) -> str:
    """How peak memory is measured on ``device`` (recorded in the results)."""
    if device == "cuda":
        return ("torch.cuda.max_memory_allocated after reset_peak_memory_stats, "
                "minus memory_allocated before")
    return ("torch.profiler.profile(profile_memory=True): the CPU allocation events "
            "of one forward summed in time order, their peak above the start")


def _empty_row(scheme: str, backend: str, n: int) -> dict[str, Any]:
    row = dict.fromkeys(COST_KEYS)
    row.update(scheme=scheme, backend=backend, n=n, status="ok")
    return row


def _floor(scheme: str, n: int, config: CostsConfig) -> tuple[int | None, float | None]:
    name = PLAIN if scheme == PLAIN else scheme
    if name not in FLOOR_SCHEMES:
        return None, None
    args = (n, config.hidden, config.heads, config.batch)
    flops = plain_flops(*args)
    flops += sum(position_flops(name, *args, span=config.span).values())
    return flops, cost_floor(name, *args, span=config.span)


def measure_length(
    run: _Run, n: int, cells: list[tuple[str, str]]
) -> list[dict[str, Any]]:
    """Plain attention and every cell at length ``n``: first calls, memory, rounds.
    """
    config, shapes = run.config, run.config.shapes
    projections = cell_models.plain_projections(shapes, config.seed)
    x = cell_models.make_hidden_states(n, shapes, config.seed, config.batch)
    rows = {cell: _empty_row(*cell, n) for cell in [(PLAIN, SDPA), *cells]}
    forwards: dict[tuple[str, str], Callable[[], torch.Tensor]] = {}
    committed = 0.0
    for cell, row in rows.items():
        reason = None if cell[0] == PLAIN else run.skip_reason(cell, n, committed)
        if reason is not None:
            row.update(status="skipped", note=reason)
            run.say(f"n={n} {cell[0]} {cell[1]}: skipped ({reason})")
            continue
        try:
            module = None
            if cell[0] != PLAIN:
                module = cell_models.build_cell(*cell, shapes, projections, config.seed)
            forward = cell_models.forward_of(module, projections, x)
            row["first_call_s"] = _timed(forward, config.device)
            row["peak_bytes"] = peak_bytes(forward, config.device)
        except Exception as exc:  # recorded; the run goes on
            row["status"], row["error"] = failure(exc)
            run.say(f"n={n} {cell[0]} {cell[1]}: {row['status']} ({row['error']})")
            gc.collect()
            continue
        forwards[cell] = forward
        committed += config.repeats * (run.predicted_s(cell, n) or 0.0)
    runs: dict[tuple[str, str], list[float]] = {cell: [] for cell in forwards}
    for _ in range(config.repeats):
        for cell in list(forwards):
            try:
                runs[cell].append(_timed(forwards[cell], config.device))
            except Exception as exc:
                rows[cell]["status"], rows[cell]["error"] = failure(exc)
                del forwards[cell]
    del forwards
    gc.collect()
    plain = rows[PLAIN, SDPA]
    for cell, row in rows.items():
        row["flops"], row["floor_ratio"] = _floor(cell[0], n, config)
        if row["status"] != "ok":
            continue
        row["forward_runs_s"] = runs[cell]
        row["forward_s"] = statistics.median(runs[cell])
        row["time_ratio"] = _ratio(row["forward_s"], plain["forward_s"])
        row["memory_ratio"] = _ratio(row["peak_bytes"], plain["peak_bytes"])
        run.last[cell] = row
        run.say(f"n={n} {cell[0]} {cell[1]}: {row['forward_s']:.4f} s "
                f"(x{row['time_ratio'] or math.nan:.2f} plain), "
                f"{row['peak_bytes'] / MIB:.1f} MiB")
    return list(rows.values())


def _ratio(value: float | None, reference: float | None) -> float | None:
    if value is None or reference is None or reference <= 0:
        return None
    return value / reference


# -- the run ---------------------------------------------------------------------------


def run_costs(
    lengths: list[int] | tuple[int, ...] = DEFAULT_COST_LENGTHS,
    schemes: list[str] | None = None,
    backends: list[str] | None = None,
    *,
    config: CostsConfig = CostsConfig(),
    output: str | Path | None = None,
    progress: TextIO | bool | None = True,
    command: str | None = None,
) -> dict[str, Any]:
    """Measure every scheme on every backend against plain attention; return the JSON.

    ``schemes`` default to :func:`relpos.book.bench.cells.cost_schemes`,
    ``backends`` to ``relpos.BACKENDS``. Progress goes to ``progress`` (True:
    stderr). ``command`` is recorded as given (the command line fills it in).
    """
    from .run import machine_info

    lengths = check_lengths(lengths)
    schemes = check_choices("schemes", schemes or cost_schemes(), cost_schemes())
    backends = check_choices("backends", backends or relpos.BACKENDS, relpos.BACKENDS)
    if not isinstance(config, CostsConfig):
        raise TypeError(f"config must be a CostsConfig, got {type(config).__name__}")
    if output is not None:
        output = _cli.check_writable("output", output, make_parents=True)
    stream = sys.stderr if progress is True else (progress or None)
    load_before = list(os.getloadavg())
    threads = torch.get_num_threads()
    torch.set_num_threads(config.threads)
    try:
        if config.device == "cpu":
            peak_bytes(lambda: torch.ones(1), "cpu")  # the profiler's first start
        run = _Run(config, stream)
        cells = [(scheme, backend) for scheme in schemes for backend in backends]
        results = []
        for n in lengths:
            results.extend(measure_length(run, n, cells))
        machine = machine_info(config.device)
        machine.update(
            memory_method=memory_method(config.device),
            load_before=load_before,
            load_after=list(os.getloadavg()),
            wall_s=run.elapsed(),
        )
    finally:
        torch.set_num_threads(threads)
    settings = asdict(config)
    shapes = config.shapes
    settings.update(
        lengths=lengths, schemes=schemes, backends=backends,
        scheme_arguments={s: cell_models.scheme_arguments(s, shapes) for s in schemes},
    )
    data = {"schema": SCHEMA, "kind": KIND, "command": command, "machine": machine,
            "config": settings, "results": results}
    if output is not None:
        Path(output).write_text(json.dumps(data, indent=2) + "\n")
    return data


__all__ = [
    "COST_KEYS",
    "CostsConfig",
    "DEFAULT_COST_LENGTHS",
    "KIND",
    "SCHEMA",
    "check_choices",
    "estimate_cell_bytes",
    "measure_length",
    "memory_method",
    "peak_bytes",
    "run_costs",
]
