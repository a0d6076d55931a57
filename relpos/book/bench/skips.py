"""Measurements that do not run or do not finish: the skip estimate and the failure record.

Before a measurement starts, :func:`estimate_peak_bytes` gives a rough upper
bound of its memory so that a hopeless one is recorded as ``"skipped"`` with the
reason instead of run (the naive backend is also skipped above
``--naive-max-length``). After one raises, the exception is classified as
``"oom"`` or ``"error"`` with a one-line message, and the run goes on.
"""

from __future__ import annotations

import torch

from .config import _GIB, BenchConfig, _check_backends

# -- estimates and skips ----------------------------------------------------------------


def estimate_peak_bytes(backend: str, n: int, config: BenchConfig) -> int:
    """A rough upper estimate of one measurement's memory, used only to skip hopeless runs.

    ``transformers``: six ``(b, h, n, n)`` tensors; ``gather``: three, plus the
    ``(n, n)`` int64 row index; ``naive``: four ``(n, n, hidden)`` per-pair
    tables, four ``(b, h, n, n)`` and the index; ``flex``: the
    ``(b, h, n, 2 * span)`` row tables, a few ``(b, n, hidden)`` (three more
    for its head-by-head copies of the queries, keys and values) and 16 MiB for
    the kernel's own working buffers (with relpos' full-tile block mask they do
    not grow with ``n^2``: measured 963 MiB in all at n = 16384, 12 heads). With ``backward`` twice the total (autograd keeps the
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
    else:
        quadratic = 16 * 2**20  # flex: the kernel's working buffers, not n^2
    if backend == "flex":
        linear += 3 * b * n * hidden * e  # its head-by-head copies of q, k and v
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
