"""Wall-clock timing of several backends at one length, run side by side.

Each backend gets one warm-up call (``flex``'s first call, its compile, is
timed apart as ``compile_s``); then ``repeats`` rounds run every backend once,
so that a slow spell of a shared machine falls on all of them alike and the
ratios between them stay fair. On CUDA the clock reads are fenced by
``torch.cuda.synchronize()``.
"""

from __future__ import annotations

import gc
import statistics
import time
from typing import Any, Callable

import torch
from torch import nn

from .config import BenchConfig
from . import models
from .models import _clear_grads, _run
from .skips import _failure


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
    forwards = {backend: models._forward_fn(backend, modules[backend], inputs) for backend in backends}
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
