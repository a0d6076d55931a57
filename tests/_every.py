"""Every attention module on every kernel, read from the registries, for the tests of
relpos 0.3's core (masks, packing, the cache).

``MODULES`` lists each scheme of the registry (``relpos.schemes.REGISTRY``,
DeBERTa first, ``none``'s bare ``SelfAttention`` among them), each variant its
registration sizes at a span (DeBERTa's log buckets); ``GRID`` pairs each with each name of ``relpos.BACKENDS``.
``build`` makes one at tiny sizes, in float64 by default (flex in float64 on the
CPU runs torch's uncompiled reference, exact), with its parameters moved away
from their small initial values so that every position term changes the output
visibly.

Shape legend:
    b  batch      n  sequence length      hidden  model width (16)
"""

from __future__ import annotations

from typing import Callable

import pytest
import torch

import relpos
from relpos.schemes import REGISTRY
from relpos.schemes.registry import resolve, scheme_names

HIDDEN, HEADS = 16, 2

#: Sizes smaller than a scheme's defaults, where they cost time and test nothing
#: more: Shaw's values run one flex call per table row (k = 2 gives 5 rows instead
#: of 33, and clips inside the tests' 7 to 11 positions); FIRE's MLP runs, and
#: compiles, one hidden unit at a time (4 units still sum several ReLUs and give a
#: bias that varies with the distance: at 2, seed 0's is constant).
SIZES: dict[str, dict[str, int]] = {
    "shaw": {"max_relative_positions": 2},
    "fire": {"width": 4},
}
#: The span ``k`` of the schemes their registration sizes by one (``sized``):
#: DeBERTa's tables (and its log buckets) at 4.
SPAN = 4


def _names() -> list[str]:
    """The registry's schemes, and each variant built differently at a span."""
    return [
        name for name in scheme_names()
        if name in REGISTRY or name in resolve(name)[0].sized
    ]


def _builder(name: str) -> Callable[..., relpos.SelfAttention]:
    registration, variant = resolve(name)
    sizes = {} if variant is None else dict(registration.variants[variant])
    if name in registration.sized:
        sizes.update(registration.sized[name](SPAN))
    sizes.update(SIZES.get(name, {}))
    return lambda **kw: registration.attention(HIDDEN, HEADS, **sizes, **kw)


#: name -> builder(backend=..., causal=...) of every attention module.
MODULES: dict[str, Callable[..., relpos.SelfAttention]] = {
    name: _builder(name) for name in _names()
}

#: Modules whose logits depend on the positions through ``i - j`` alone: the
#: registry's ``relative`` schemes (``none``, content attention, among them).
RELATIVE = [name for name in MODULES if resolve(name)[0].relative]

#: The kernel the quick loop (``-m "not slow"``) runs every module on: the default
#: one. The others are marked slow: naive builds every pair's rows, and flex in
#: float64 on the CPU runs torch's uncompiled reference, which evaluates the
#: score_mod element by element (seconds per call for Shaw's relative values, one
#: kernel call per table row, and for FIRE's MLP).
QUICK_BACKEND = "gather"


def backend_param(backend: str, *values: object, id: str | None = None):
    """A pytest parameter ending in ``backend``, marked slow off the quick kernel."""
    slow = [pytest.mark.slow] if backend != QUICK_BACKEND else []
    return pytest.param(*values, backend, id=id or backend, marks=slow)


#: Every (module, backend) pair, as pytest parameters with readable ids.
GRID = [
    backend_param(backend, name, id=f"{name}-{backend}")
    for name in MODULES
    for backend in relpos.BACKENDS
]
#: Every backend alone, as pytest parameters.
KERNELS = [backend_param(backend) for backend in relpos.BACKENDS]



def build(
    name: str,
    backend: str,
    *,
    causal: bool = False,
    dtype: torch.dtype = torch.float64,
    seed: int = 0,
) -> relpos.SelfAttention:
    """Module ``name`` on ``backend``, in eval mode, its parameters spread out.

    Shapes:
        the module maps ``(b, n, 16)`` to ``(b, n, 16)``
    """
    torch.manual_seed(seed)
    module = MODULES[name](backend=backend, causal=causal)
    spread(module)
    return module.to(dtype).eval()


def spread(module: torch.nn.Module) -> None:
    """Add noise of scale 0.3 to every parameter: small initial tables (std 0.02)
    would make the position terms nearly vanish."""
    with torch.no_grad():
        for parameter in module.parameters():
            parameter.add_(0.3 * torch.randn_like(parameter))


def tolerance(dtype: torch.dtype) -> dict[str, float]:
    """``assert_close`` tolerances: tight in float64, the kernel's in float32."""
    if dtype == torch.float64:
        return dict(atol=1e-10, rtol=1e-10)
    return dict(atol=2e-5, rtol=2e-5)


def call(module: relpos.SelfAttention, x: torch.Tensor, *args, **kwargs):
    """``module(x, ...)`` without autograd (flex's CPU kernel has no backward)."""
    with torch.no_grad():
        return module(x, *args, **kwargs)


def _way_in(name: str) -> tuple:
    """How module ``name``'s positions reach a kernel: the fields of its
    ``PositionTerms`` that are set, and whether it turns queries and keys.

    Shapes:
        output: a tuple of field names (and ``"rotate"``)
    """
    module = build(name, "gather")
    x = torch.zeros(1, 4, HIDDEN, dtype=torch.float64)
    positions = torch.arange(4)[None]  # (1, n)
    terms = module.position_terms(positions, positions, **module.read_inputs({}, x))
    fields = () if terms is None else tuple(
        field for field in ("table", "key_rows", "row_bias", "bias", "value_rows")
        if getattr(terms, field) is not None
    )
    rotates = type(module).rotate is not relpos.SelfAttention.rotate
    return (*fields, *(("rotate",) if rotates else ()))


def _one_per_way_in() -> list[str]:
    """The first module (in ``MODULES``' order) of each way positions reach the
    kernel: the compiled flex kernel's score_mod reads only these, so one module
    a way covers what compiling adds to the eager flex tests of every module."""
    first: dict[tuple, str] = {}
    for name in MODULES:
        first.setdefault(_way_in(name), name)
    return list(first.values())


#: One module per way positions reach the kernel (``_way_in``): the modules the
#: compiled flex kernel (float32 on the CPU: one compile each, tens of seconds) is
#: checked on for packing and caching; every module runs flex eagerly in float64.
COMPILED = _one_per_way_in()
