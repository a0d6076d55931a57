"""What fixes a benchmark run: backends, statuses, dtypes and :class:`BenchConfig`.

Every other module of ``relpos.book.bench`` reads its constants from here: the
schema number of the JSON, the backends that can be benchmarked, the statuses a
result can carry, the dtypes by name, the default lengths and the keys every
result row must have. :class:`BenchConfig` holds everything of one run except
the lengths and backends and checks every value when it is made, with a
``ValueError``/``TypeError`` naming the field; the command line builds one
before any work starts, so a bad flag never gets as far as a measurement.
:func:`check_backends` and :func:`check_lengths` check the other two.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass
from typing import Any, Iterable

import torch

from relpos.checks import check_int
from relpos.config import AttentionConfig
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
RESULT_KEYS = (
    "backend",
    "n",
    "forward_s",
    "backward_s",
    "peak_bytes",
    "compile_s",
    "status",
    "error",
)
ROOFLINE_KEYS = ("flops", "roofline_fraction")  # in every row from schema 2 on
MATMUL_KEYS = ("size", "dtype", "device", "threads", "runs_s", "flop_per_s")

MIB = 2**20
GIB = 2**30


@dataclass(frozen=True)
class BenchConfig:
    """Everything that fixes one benchmark run except the lengths and backends."""

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

    def __post_init__(self) -> None:
        for name in (
            "hidden",
            "heads",
            "max_relative_positions",
            "batch",
            "repeats",
            "naive_max_length",
            "matmul_size",
        ):
            check_int(name, getattr(self, name), minimum=1)
        check_int("seed", self.seed)
        try:  # the attention's own checks (the bucket rule too), in this class's names
            self.attention()
        except (TypeError, ValueError) as exc:
            message = str(exc).replace("hidden_size", "hidden")
            raise type(exc)(message.replace("num_heads", "heads")) from None
        check_dtype(self.dtype)
        check_device(self.device)
        if not isinstance(self.backward, bool):
            raise TypeError(f"backward must be a bool, got {self.backward!r}")
        memory = check_positive("max_memory_gb", self.max_memory_gb)
        object.__setattr__(self, "max_memory_gb", memory)  # 20 is stored as 20.0

    def attention(self, backend: str = "gather") -> AttentionConfig:
        """The attention settings of every relpos module the benchmark builds.

        DeBERTa-v3's choices: both position terms, shared keys, no dropout.
        """
        return AttentionConfig(
            self.hidden,
            self.heads,
            max_relative_positions=self.max_relative_positions,
            position_buckets=self.position_buckets,
            pos_att_type=("c2p", "p2c"),
            share_att_key=True,
            dropout=0.0,
            backend=backend,
        )

    @property
    def torch_dtype(self) -> torch.dtype:
        """The torch dtype named by ``dtype``."""
        return DTYPES[self.dtype]

    @property
    def span(self) -> int:
        """``k``, so the table has ``2k`` rows."""
        return attention_span(self.max_relative_positions, self.position_buckets)

    def to_json(self) -> dict[str, Any]:
        """The ``config`` entry of the results (the device is under ``machine``)."""
        config = asdict(self)
        del config["device"]
        attention = self.attention()
        config.update(
            share_att_key=attention.share_att_key,
            pos_att_type=list(attention.pos_att_type),
            mask="all ones",
        )
        return config


def check_dtype(dtype: object) -> str:
    """``dtype`` if it names one of ``DTYPES``; ValueError naming ``dtype``."""
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {tuple(DTYPES)}, got {dtype!r}")
    return dtype


def check_positive(name: str, value: object) -> float:
    """``value`` as a float if it is a finite positive number; else naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return float(value)


def check_backends(backends: Iterable[str]) -> list[str]:
    """``backends`` as a list, after checking each is one of ``BENCH_BACKENDS``."""
    if isinstance(backends, str):
        backends = [backends]
    backends = list(backends)
    for backend in backends:
        if backend not in BENCH_BACKENDS:
            raise ValueError(
                f"backends must be drawn from {BENCH_BACKENDS}, got {backend!r}"
            )
    return backends


def check_lengths(lengths: Iterable[int]) -> list[int]:
    """``lengths`` as a non-empty list of ints >= 1."""
    lengths = [check_int("lengths entries", n, minimum=1) for n in lengths]
    if not lengths:
        raise ValueError("lengths must name at least one sequence length")
    return lengths


def check_device(device: object) -> str:
    """``"cpu"``, or ``"cuda"`` where torch sees a GPU; ValueError naming ``device``."""
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            "device='cuda' was asked for but torch.cuda.is_available() is False"
        )
    return device
