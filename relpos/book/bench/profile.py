"""Where the time of a forward goes: the stages of gather and flex, and flex's kernel.

The roofline (:mod:`relpos.book.bench.roofline`) says how far a backend is from
matmul speed; this module says where the rest of the time is spent. At one
length it runs the forward of ``gather`` and ``flex`` as the module does, op
for op, with a clock read between stages, and times four attention kernels on
the same queries, keys and values:

    gather  projections  Q, K, V and the table projections (Pk, Pq)
            tables       the two (b, h, n, 2k) row-score tables (two products)
            index        the (n, n) table row of every pair
            gathers      picking row delta(i, j) of each table, summed into a bias
            attention    scaled_dot_product_attention with that bias, then the
                         output laid out (b, n, hidden)
    flex    projections  as above
            lookup       the (2n - 1) table row of every distance
            head copies  queries, keys, values laid out head by head
            tables       the two row-score tables
            kernel       the FlexAttention kernel with the score_mod, then the
                         output laid out (b, n, hidden)

    kernels  sdpa             scaled_dot_product_attention, no bias
             flex             FlexAttention with no score_mod
             flex_c2p         with a score_mod that adds c2p
             flex_c2p_p2c     with the module's score_mod (c2p and p2c)

Every measurement is the median of ``repeats`` rounds; each round runs every
stage pipeline, every whole module forward and every kernel once, after one
warm-up round (which compiles the flex kernels), so a slow spell of a shared
machine falls on all of them alike. The matmul throughput is measured in the
same process, before and after, as the benchmark does. The padding mask has
no padding (as in the benchmark), so no key mask is applied.

Run it as a module (CPU only)::

    python -m relpos.book.bench.profile --n 2048 --repeats 5 \\
        --output relpos/book/results/profile_cpu.json
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import torch
import torch.nn.functional as F

from relpos.checks import check_int
from relpos.attention import DisentangledSelfAttention
from relpos.backends.flex import (
    heads_contiguous,
    make_score_mod,
    row_scores,
    run_kernel,
)
from .. import _cli
from .config import BenchConfig
from .models import build_module, make_inputs, random_weights
from .roofline import config_flops, matmul_runs, throughput_record
from .run import machine_info

SCHEMA = 1
STAGES = {
    "gather": ("projections", "tables", "index", "gathers", "attention"),
    "flex": ("projections", "lookup", "head copies", "tables", "kernel"),
}
KERNELS = ("sdpa", "flex", "flex_c2p", "flex_c2p_p2c")
_KEYS = ("machine", "config", "flops", "floor_s", "forward_s", "stages_s", "kernels_s")

Clock = Callable[[str], None]


def _projections(
    module: DisentangledSelfAttention, x: torch.Tensor, table: torch.Tensor
) -> tuple[torch.Tensor, ...]:
    query = module.split_heads(module.query_proj(x))  # (b, h, i, d)
    key = module.split_heads(module.key_proj(x))  # (b, h, j, d)
    value = module.split_heads(module.value_proj(x))  # (b, h, j, d)
    pos_key, pos_query = module.project_table(table)  # (h, r, d) each
    return query, key, value, pos_key, pos_query


def gather_forward(
    module: DisentangledSelfAttention,
    x: torch.Tensor,
    table: torch.Tensor,
    clock: Clock,
) -> torch.Tensor:
    """The gather backend's forward (no padding), ``clock(stage)`` after each stage.

    The same operations in the same order as ``module(x, rel_embeddings=table)``.

    Shapes:
        x: ``(b, n, hidden)``; table: ``(2k, hidden)``; output: ``(b, n, hidden)``
    """
    query, key, value, pos_key, pos_query = _projections(module, x, table)
    clock("projections")
    b, h, n, _ = query.shape
    scale = module.scale
    c2p_rows = torch.einsum("bhid,hrd->bhir", query, pos_key * scale)  # (b, h, i, r)
    p2c_rows = torch.einsum("hrd,bhjd->bhrj", pos_query * scale, key)  # (b, h, r, j)
    clock("tables")
    index = module.position_index(n, device=x.device)  # (i, j)
    clock("index")
    bias = c2p_rows.gather(-1, index.expand(b, h, n, n))  # (b, h, i, j)
    bias.add_(p2c_rows.gather(-2, index.expand(b, h, n, n)))  # (b, h, i, j)
    clock("gathers")
    context = F.scaled_dot_product_attention(
        query, key, value, attn_mask=bias, scale=scale
    )  # (b, h, i, d)
    out = context.transpose(1, 2).flatten(-2)  # (b, h, i, d) -> (b, n, hidden)
    clock("attention")
    return out


def flex_forward(
    module: DisentangledSelfAttention,
    x: torch.Tensor,
    table: torch.Tensor,
    clock: Clock,
) -> torch.Tensor:
    """The flex backend's forward (no padding), ``clock(stage)`` after each stage.

    Shapes:
        x: ``(b, n, hidden)``; table: ``(2k, hidden)``; output: ``(b, n, hidden)``
    """
    query, key, value, pos_key, pos_query = _projections(module, x, table)
    clock("projections")
    lookup = module.distance_lookup(x.shape[1], device=x.device)  # (2n - 1,)
    clock("lookup")
    query, key, value = heads_contiguous(query, key, value)  # (b, h, n, d) each
    clock("head copies")
    c2p_table, p2c_table = row_scores(query, key, pos_key, pos_query, module.scale)
    clock("tables")
    score_mod = make_score_mod(c2p_table, p2c_table, lookup, None)
    context = run_kernel(query, key, value, score_mod, module.scale)  # (b, h, i, d)
    out = context.transpose(1, 2).flatten(-2)  # (b, n, hidden)
    clock("kernel")
    return out


class _StageClock:
    """Seconds since the previous stage, recorded under each stage's name."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.last = time.perf_counter()

    def __call__(self, stage: str) -> None:
        now = time.perf_counter()
        self.seconds[stage] = now - self.last
        self.last = now


def _timed(call: Callable[[], Any]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def _kernel_calls(
    module: DisentangledSelfAttention, x: torch.Tensor, table: torch.Tensor
) -> dict[str, Callable[[], torch.Tensor]]:
    """The kernels of :data:`KERNELS`, as closures over one input's q, k, v, tables."""
    with torch.no_grad():
        query, key, value, pos_key, pos_query = _projections(module, x, table)
        query, key, value = heads_contiguous(query, key, value)  # (b, h, n, d) each
        c2p, p2c = row_scores(query, key, pos_key, pos_query, module.scale)
        # c2p, p2c: (b, h, n, r)
        lookup = module.distance_lookup(x.shape[1], device=x.device)  # (2n - 1,)
    scale = module.scale

    def kernel(c2p_table, p2c_table) -> Callable[[], torch.Tensor]:
        score_mod = make_score_mod(c2p_table, p2c_table, lookup, None)
        return lambda: run_kernel(query, key, value, score_mod, scale)

    return {
        "sdpa": lambda: F.scaled_dot_product_attention(query, key, value, scale=scale),
        "flex": kernel(None, None),
        "flex_c2p": kernel(c2p, None),
        "flex_c2p_p2c": kernel(c2p, p2c),
    }


def profile_forward(
    n: int = 2048,
    *,
    repeats: int = 5,
    config: BenchConfig | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Stage times of gather and flex, whole forwards and kernel times at length ``n``.

    Returns the JSON described in this module's docstring and by
    :func:`relpos.book.bench.profile` (``schema``, ``machine``, ``config``, ``flops``,
    ``floor_s``, ``forward_s``, ``stages_s``, ``kernels_s``, ``runs_s``). CPU only.
    """
    n = check_int("n", n, minimum=1)
    repeats = check_int("repeats", repeats, minimum=1)
    config = BenchConfig() if config is None else config
    if not isinstance(config, BenchConfig):
        raise TypeError(f"config must be a BenchConfig, got {type(config).__name__}")
    if config.device != "cpu" or config.dtype != "float32":
        raise ValueError(
            "config must be a CPU float32 BenchConfig (the profile runs there), "
            f"got device={config.device!r}, dtype={config.dtype!r}"
        )
    weights = random_weights(config)
    modules = {name: build_module(name, config, weights) for name in STAGES}
    inputs = make_inputs(config, n)
    x, table, mask = inputs["hidden_states"], inputs["table"], inputs["mask"]
    pipelines = {"gather": gather_forward, "flex": flex_forward}
    kernels = _kernel_calls(modules["flex"], x, table)
    say = (lambda text: print(text, file=sys.stderr, flush=True)) if progress else None

    matmul = matmul_runs(config.matmul_size, torch.float32, "cpu", repeats)
    stages: dict[str, dict[str, list[float]]] = {
        name: {stage: [] for stage in STAGES[name]} for name in STAGES
    }
    forwards: dict[str, list[float]] = {name: [] for name in STAGES}
    kernel_runs: dict[str, list[float]] = {name: [] for name in KERNELS}
    with torch.no_grad():
        for step in range(repeats + 1):  # the first round warms up and compiles
            for name, pipeline in pipelines.items():
                clock = _StageClock()
                pipeline(modules[name], x, table, clock)
                module = modules[name]
                seconds = _timed(lambda: module(x, mask, rel_embeddings=table))
                if step:
                    for stage, value in clock.seconds.items():
                        stages[name][stage].append(value)
                    forwards[name].append(seconds)
            for name, call in kernels.items():
                seconds = _timed(call)
                if step:
                    kernel_runs[name].append(seconds)
            if say:
                say(f"round {step}/{repeats} done" + (" (warm-up)" if not step else ""))
    matmul += matmul_runs(config.matmul_size, torch.float32, "cpu", repeats)

    machine = machine_info("cpu")
    machine["matmul"] = throughput_record(
        config.matmul_size, torch.float32, "cpu", matmul
    )
    setup = config.to_json()
    for key in ("backward", "naive_max_length", "max_memory_gb"):
        setup.pop(key)
    setup.update(n=n, repeats=repeats)
    flops = config_flops(n, setup)
    median = statistics.median
    return {
        "schema": SCHEMA,
        "machine": machine,
        "config": setup,
        "flops": flops,
        "floor_s": flops / machine["matmul"]["flop_per_s"],
        "forward_s": {name: median(runs) for name, runs in forwards.items()},
        "stages_s": {
            name: {stage: median(runs) for stage, runs in parts.items()}
            for name, parts in stages.items()
        },
        "kernels_s": {name: median(runs) for name, runs in kernel_runs.items()},
        "runs_s": {"forward": forwards, "stages": stages, "kernels": kernel_runs},
    }


def profile_summary(data: dict[str, Any]) -> dict[str, Any]:
    """What a profile says: fractions, stage shares and the best fractions within reach.

    - ``fraction``: the roofline floor over each whole forward's time.
    - ``share``: each stage's part of the sum of its backend's stage times.
    - ``flex_kernel_alone``: the time of flex's stages other than the kernel
      (``outside_s``), the kernel with no ``score_mod`` (``plain_kernel_s``) and
      ``best_fraction``, the floor over their sum: what flex would reach if
      reading c2p and p2c inside the kernel cost nothing.
    - ``gather_without_gathers``: ``best_fraction``, the floor over gather's stage
      times without its gathers: what gather would reach if they cost nothing.
    """
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        got = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"data must be a profile of schema {SCHEMA}, got {got!r}")
    missing = [key for key in _KEYS if key not in data]
    if missing:
        raise ValueError(f"data must be a profile; it lacks {missing}")
    for name, stages in STAGES.items():
        if tuple(data["stages_s"].get(name, ())) != stages:
            raise ValueError(
                f"data['stages_s'][{name!r}] must have the stages {stages}"
            )
    if set(data["kernels_s"]) != set(KERNELS):
        raise ValueError(f"data['kernels_s'] must have the kernels {KERNELS}")
    floor = data["floor_s"]
    flex, gather = data["stages_s"]["flex"], data["stages_s"]["gather"]
    outside = sum(seconds for stage, seconds in flex.items() if stage != "kernel")
    plain = data["kernels_s"]["flex"]
    without_gathers = sum(s for stage, s in gather.items() if stage != "gathers")
    return {
        "floor_s": floor,
        "fraction": {name: floor / s for name, s in data["forward_s"].items()},
        "share": {
            name: {stage: s / sum(parts.values()) for stage, s in parts.items()}
            for name, parts in data["stages_s"].items()
        },
        "flex_kernel_alone": {
            "outside_s": outside,
            "plain_kernel_s": plain,
            "best_fraction": floor / (outside + plain),
        },
        "gather_without_gathers": {
            "seconds": without_gathers,
            "best_fraction": floor / without_gathers,
        },
    }


def build_parser() -> _cli.OneLineParser:
    """The parser of ``python -m relpos.book.bench.profile`` (help shows defaults)."""
    parser = _cli.OneLineParser(
        prog="python -m relpos.book.bench.profile",
        description="Where the forward time of gather and flex goes (CPU, float32).",
    )
    parser.add_argument(
        "--n", type=_cli.integer(1), default=2048, help="sequence length"
    )
    parser.add_argument(
        "--repeats", type=_cli.integer(1), default=5, help="timed rounds"
    )
    parser.add_argument(
        "--threads",
        type=_cli.integer(1, _cli.MAX_THREADS),
        default=None,
        help="torch threads (none: torch's own choice)",
    )
    parser.add_argument(
        "--output",
        default="profile_cpu.json",
        metavar="PATH",
        help="JSON path (its folder is made if missing)",
    )
    return parser


def main(argv: list[str] | None = None) -> None:
    """``python -m relpos.book.bench.profile``: profile one length, write the JSON."""
    parser = build_parser()
    args = parser.parse_args(argv)
    _cli.output_flag(parser, "--output", args.output, make_parents=True)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    data = profile_forward(args.n, repeats=args.repeats, progress=True)
    summary = profile_summary(data)
    print(
        f"n = {args.n}, {torch.get_num_threads()} threads, "
        f"floor {data['floor_s'] * 1e3:.0f} ms"
    )
    for name, parts in data["stages_s"].items():
        cells = ", ".join(f"{stage} {s * 1e3:.0f} ms" for stage, s in parts.items())
        print(
            f"{name}: {data['forward_s'][name] * 1e3:.0f} ms "
            f"({summary['fraction'][name]:.2f}); {cells}"
        )
    print(
        "kernels: "
        + ", ".join(f"{name} {s * 1e3:.0f} ms" for name, s in data["kernels_s"].items())
    )
    path = Path(args.output)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")
    print(f"wrote {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()


__all__ = [
    "KERNELS",
    "STAGES",
    "build_parser",
    "flex_forward",
    "gather_forward",
    "main",
    "profile_forward",
    "profile_summary",
]
