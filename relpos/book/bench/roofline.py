"""The roofline: a forward's matmul work, the machine's matmul speed, their ratio.

A forward pass of disentangled attention cannot run faster than its
multiply-adds allow. :func:`flop_breakdown` counts them (a multiply-add is 2
FLOP), :func:`measure_matmul_throughput` measures how many FLOP per second a
large square matrix product reaches on this machine, and the quotient of the
two is the *roofline time*: the forward's floor if every multiply-add ran at
matmul speed. A backend's *roofline fraction* is that floor over its measured
forward time, 1 at best.

What is counted, for batch ``b``, length ``n``, width ``H`` (``hidden``, equal
to ``h * d`` for ``h`` heads of width ``d``), span ``k`` (``2k`` table rows) and
``t`` position terms (2 for c2p + p2c)::

    projections        Q, K, V = x W + bias          3 * 2 b n H^2
    table projections  Pk, Pq = P W (once a batch)   t * 2 (2k) H^2
    c2c                Q K^T                         2 b n^2 H
    context            softmax(...) V                2 b n^2 H
    position tables    Q Pk^T, K Pq^T  (n x 2k)      t * 2 b n (2k) H

The heads cancel (``h * d = H``); they only have to divide ``H``. Not counted:
the bias adds, the scaling, the softmax (its exponentials, sums and
divisions), the gathers or table reads of the position terms, the masking and
every reshape. They are ``O(b h n^2)`` element-wise work against the
``O(b n^2 H)`` of the products, so they do not change the count's growth, but
they are far from free: they run at memory speed, not matmul speed, which is
why no backend reaches a fraction of 1. (A fraction above 1 can only mean that
the throughput was measured during a slow spell of a shared machine.)

The count is the least work of the gather formulation, and it is the same for
every backend: ``naive`` does more (it projects all ``n^2`` per-pair
embeddings), and its small fraction says so.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import torch

from relpos.checks import check_int
from relpos.schemes.registry import WorkSizes, position_work, resolve, scheme_names

MATMUL_SIZE = 2048


def flop_breakdown(
    n: int, hidden: int, heads: int, span: int, batch: int = 1, terms: int = 2
) -> dict[str, int]:
    """The forward's matrix-multiply FLOP, part by part (a multiply-add is 2 FLOP).

    Keys: ``"projections"``, ``"table_projections"``, ``"c2c"``, ``"context"``,
    ``"position_tables"``. ``terms`` is the number of position terms (0, 1 or 2).
    """
    n = check_int("n", n, minimum=0)
    hidden = check_int("hidden", hidden, minimum=1)
    heads = check_int("heads", heads, minimum=1)
    span = check_int("span", span, minimum=1)
    batch = check_int("batch", batch, minimum=1)
    terms = check_int("terms", terms, minimum=0)
    if terms > 2:
        raise ValueError(f"terms must be an int in [0, 2] (c2p, p2c), got {terms}")
    if hidden % heads:
        raise ValueError(
            f"hidden must be divisible by heads, got hidden={hidden} and heads={heads}"
        )
    rows = 2 * span
    return {
        "projections": 3 * 2 * batch * n * hidden * hidden,
        "table_projections": terms * 2 * rows * hidden * hidden,
        "c2c": 2 * batch * n * n * hidden,
        "context": 2 * batch * n * n * hidden,
        "position_tables": terms * 2 * batch * n * rows * hidden,
    }


def forward_flops(
    n: int, hidden: int, heads: int, span: int, batch: int = 1, terms: int = 2
) -> int:
    """The forward's matrix-multiply FLOP: the sum of :func:`flop_breakdown`.

    ``6 b n H^2 + 4 t k H^2 + 4 b n^2 H + 4 t b n k H``: at deberta-v3-base's
    shapes (``H = 768``, ``k = 256``, ``t = 2``) and ``n = 2048``, about 24.6 GFLOP.
    """
    return sum(flop_breakdown(n, hidden, heads, span, batch, terms).values())


# -- what positions add: the floor of each scheme against plain attention ------------

def floor_schemes() -> tuple[str, ...]:
    """``"plain"`` and every registered name whose scheme has positions and declares
    its arithmetic (a scheme without positions, ``none``, is ``"plain"``)."""
    counted = [
        name for name in scheme_names()
        if resolve(name)[0].positional and resolve(name)[0].arithmetic is not None
    ]
    return ("plain", *counted)


#: The schemes whose added work :func:`position_flops` counts: plain attention
#: and every registered scheme and variant whose registration declares its
#: ``arithmetic`` (``relpos.schemes.registry``), in the registry's order.
FLOOR_SCHEMES = floor_schemes()


def plain_flops(n: int, hidden: int, heads: int, batch: int = 1) -> int:
    """Plain attention's matrix-multiply FLOP: projections, ``Q K^T`` and context.

    ``6 b n H^2 + 4 b n^2 H``: :func:`forward_flops` with no position term.

    Shapes:
        n, hidden, heads, batch: ints; output: an int (FLOP)
    """
    return forward_flops(n, hidden, heads, span=1, batch=batch, terms=0)


def position_flops(
    scheme: str,
    n: int,
    hidden: int,
    heads: int,
    batch: int = 1,
    span: int = 256,
    width: int = 32,
) -> dict[str, int]:
    """The matrix-multiply FLOP a scheme adds to plain attention, part by part.

    Each scheme's least work, in its row (gather) form, for positions shared by
    the batch (a multiply-add is 2 FLOP; ``H`` = ``hidden``, ``k`` = ``span``):
    its registration's ``arithmetic`` (``relpos.schemes.registry.position_work``),
    which says what it counts. DeBERTa's table projections ``t * 2 (2k) H^2``
    and position tables ``t * 2 b n (2k) H`` are the ``table_projections`` and
    ``position_tables`` of :func:`flop_breakdown` with ``t`` terms; the bias
    schemes (T5, ALiBi, KERPLE) and rotary add nothing (element-wise work);
    ``plain`` adds nothing.

    Shapes:
        output: ``{part: FLOP}``, empty where the scheme adds no product
    """
    known = floor_schemes()  # the registry now (a scheme may register later)
    if not isinstance(scheme, str) or scheme not in known:
        raise ValueError(f"scheme must be one of {known}, got {scheme!r}")
    sizes = WorkSizes(n, hidden, heads, batch, span, width)
    if scheme == "plain":
        return {}
    return position_work(scheme, sizes)


def cost_floor(
    scheme: str, n: int, hidden: int, heads: int, batch: int = 1, **sizes: int
) -> float:
    """The least a scheme can cost, as a multiple of plain attention's FLOP.

    ``(plain + added) / plain`` with :func:`plain_flops` and
    :func:`position_flops` (``sizes``: its ``span`` and ``width``): 1 for a
    scheme that adds no product. At
    deberta-v3-base's shapes (``H = 768``, ``2k = 512``) and ``n = 2048``,
    DeBERTa's is about 1.22 (its position tables alone are half of ``Q K^T``,
    but the projections and the context weigh in the denominator too).

    Shapes:
        output: a float >= 1
    """
    plain = plain_flops(n, hidden, heads, batch)
    if plain == 0:
        raise ValueError(f"n must be >= 1 for a floor, got {n}")
    added = position_flops(scheme, n, hidden, heads, batch, **sizes)
    return (plain + sum(added.values())) / plain


def config_flops(n: int, config: dict[str, Any]) -> int:
    """:func:`forward_flops` for the ``config`` entry of a benchmark's results."""
    from relpos.positions import attention_span

    span = attention_span(config["max_relative_positions"], config["position_buckets"])
    terms = len(config.get("pos_att_type", ("c2p", "p2c")))
    hidden, heads, batch = config["hidden"], config["heads"], config["batch"]
    return forward_flops(n, hidden, heads, span, batch, terms)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def matmul_runs(
    size: int = MATMUL_SIZE,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    repeats: int = 5,
) -> list[float]:
    """Wall times of ``repeats`` square ``size x size`` products, after one warm-up."""
    size = check_int("size", size, minimum=1)
    repeats = check_int("repeats", repeats, minimum=1)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating-point torch.dtype, got {dtype!r}")
    device = torch.device(device)
    generator = torch.Generator().manual_seed(0)
    pair = torch.randn(2, size, size, generator=generator)  # (2, size, size)
    a, b = pair.to(device=device, dtype=dtype)
    out = torch.empty(size, size, device=device, dtype=dtype)
    runs = []
    for step in range(repeats + 1):
        _sync(device)
        start = time.perf_counter()
        torch.mm(a, b, out=out)
        _sync(device)
        if step:  # the first product is the warm-up
            runs.append(time.perf_counter() - start)
    return runs


def measure_matmul_throughput(
    size: int = MATMUL_SIZE,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    repeats: int = 5,
) -> dict[str, Any]:
    """FLOP per second of a square matrix product: ``2 size^3`` over the median time.

    Runs in this process with its current thread count, which it records.
    Returns ``{"size", "dtype", "device", "threads", "runs_s", "flop_per_s"}``.
    """
    runs = matmul_runs(size, dtype, device, repeats)
    return throughput_record(size, dtype, torch.device(device).type, runs)


def throughput_record(
    size: int, dtype: torch.dtype, device: str, runs: list[float]
) -> dict[str, Any]:
    """The ``machine["matmul"]`` entry of the results, from the timed runs."""
    if not runs or min(runs) <= 0:
        raise ValueError(
            f"runs must be a non-empty list of positive seconds, got {runs!r}"
        )
    return {
        "size": size,
        "dtype": str(dtype).removeprefix("torch."),
        "device": device,
        "threads": torch.get_num_threads(),
        "runs_s": list(runs),
        "flop_per_s": 2 * size**3 / statistics.median(runs),
    }


def roofline_fraction(
    flops: int | None, seconds: float | None, flop_per_s: float | None
) -> float | None:
    """``flops / seconds / flop_per_s``: the share of matmul speed a forward reached.

    None where a number is missing (not measured, skipped, an older results file).
    """
    if flops is None or seconds is None or flop_per_s is None:
        return None
    if seconds <= 0 or flop_per_s <= 0:
        raise ValueError(
            "seconds and flop_per_s must be positive, "
            f"got {seconds!r} and {flop_per_s!r}"
        )
    return flops / seconds / flop_per_s


def roofline(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The roofline of every result row: its FLOP, its floor time and its fraction.

    One entry per row, in order: ``{"backend", "n", "flops", "floor_s",
    "fraction"}``. ``flops`` comes from the run's config (so results written
    before the roofline have it too); ``floor_s`` (``flops`` over the measured
    matmul throughput) and ``fraction`` (``floor_s`` over the forward time) are
    None where the throughput or the time is missing.
    """
    matmul = results.get("machine", {}).get("matmul") or {}
    flop_per_s = matmul.get("flop_per_s")
    out = []
    for row in results["results"]:
        flops = row.get("flops")
        if flops is None:
            flops = config_flops(row["n"], results["config"])
        seconds = row["forward_s"] if row["status"] == "ok" else None
        out.append(
            {
                "backend": row["backend"],
                "n": row["n"],
                "flops": flops,
                "floor_s": None if flop_per_s is None else flops / flop_per_s,
                "fraction": roofline_fraction(flops, seconds, flop_per_s),
            }
        )
    return out


__all__ = [
    "FLOOR_SCHEMES",
    "MATMUL_SIZE",
    "config_flops",
    "cost_floor",
    "floor_schemes",
    "flop_breakdown",
    "forward_flops",
    "matmul_runs",
    "measure_matmul_throughput",
    "plain_flops",
    "position_flops",
    "roofline",
    "roofline_fraction",
    "throughput_record",
]
