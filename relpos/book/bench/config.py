"""What fixes a benchmark run: the accepted backends, statuses and dtypes, and :class:`BenchConfig`.

Every other module of ``relpos.book.bench`` reads its constants from here: the
schema number of the JSON, the backends that can be benchmarked, the statuses a
result can carry, the dtypes by name, the default lengths and the keys every
result row must have. :class:`BenchConfig` holds everything of one run except
the lengths and backends, and the two checks here turn a bad backend name or a
non-positive count into a ``ValueError``/``TypeError`` naming the argument.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch

from relpos.positions import attention_span

SCHEMA = 2
# Schema 2 adds the roofline (``machine["matmul"]``, each row's ``flops`` and
# ``roofline_fraction``); schema 1 files, written before it, still load as they are.
READABLE_SCHEMAS = (1, 2)
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
ROOFLINE_KEYS = ("flops", "roofline_fraction")  # in every row from schema 2 on
MATMUL_KEYS = ("size", "dtype", "device", "threads", "runs_s", "flop_per_s")

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
    matmul_size: int = 2048

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


def _check_backends(backends: list[str] | tuple[str, ...]) -> None:
    for backend in backends:
        if backend not in BENCH_BACKENDS:
            raise ValueError(f"backends must be drawn from {BENCH_BACKENDS}, got {backend!r}")


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value}")
    return value
