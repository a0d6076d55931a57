"""Every registered attention exports with a dynamic sequence length.

- ``torch.export.export`` with ``torch.export.Dim`` on the length, for every
  scheme on ``naive`` and ``gather`` (padded), and causal on gather: the
  exported program, run at two other lengths, equals eager.
- ONNX (``torch.onnx.export(..., dynamo=True)``), run in onnxruntime at two
  lengths: DeBERTa's attention on naive (padded) and gather (causal), every
  scheme on gather.
- ``torch.jit.trace`` follows the length too (the masks and Transformer-XL read
  no values while tracing); ``torch.export`` remains the supported path.

The modules are called as ``attention(x, mask)`` (``_schemes.Call``), the mask a
bool ``(b, n)`` with padding in the second row.
"""

from __future__ import annotations

import pytest
import torch
from torch.export import Dim

from _schemes import Call, build, padded, scheme_names

pytestmark = pytest.mark.slow

LENGTHS = (5, 11)  # the exported programs are traced at n = 6


def _dynamic_length():
    n = Dim("n", min=2, max=64)
    return ({1: n}, {1: n})  # x (b, n, hidden), mask (b, n)


def _export(module: torch.nn.Module) -> torch.export.ExportedProgram:
    return torch.export.export(
        Call(module), padded(2, 6), dynamic_shapes=_dynamic_length()
    )


# Padded on both kernels, causal on gather (the causal mask is the kernels' own
# code in both; the scheme's terms are the same).
KERNELS = [("naive", False), ("gather", False), ("gather", True)]


@pytest.mark.parametrize(
    "backend, causal", KERNELS, ids=["naive", "gather", "gather-causal"]
)
@pytest.mark.parametrize("name", scheme_names())
def test_export_with_a_dynamic_length_equals_eager(name, backend, causal):
    module = build(name, backend, causal)
    program = _export(module).module()
    for length in LENGTHS:
        x, mask = padded(2, length)
        with torch.no_grad():
            expected = module(x, mask)
            got = program(x, mask)
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def _onnx_equals_eager(module: torch.nn.Module, tmp_path) -> None:
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    program = torch.onnx.export(
        Call(module), padded(2, 6), dynamo=True, dynamic_shapes=_dynamic_length()
    )
    path = tmp_path / "attention.onnx"
    program.save(str(path))
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [given.name for given in session.get_inputs()]
    for length in LENGTHS:
        x, mask = padded(2, length)
        (got,) = session.run(None, dict(zip(names, (x.numpy(), mask.numpy()))))
        with torch.no_grad():
            expected = module(x, mask)
        torch.testing.assert_close(
            torch.from_numpy(got), expected, rtol=1e-4, atol=1e-5
        )


@pytest.mark.parametrize("backend, causal", [("naive", False), ("gather", True)])
def test_deberta_runs_in_onnxruntime(backend, causal, tmp_path):
    _onnx_equals_eager(build("deberta-buckets", backend, causal), tmp_path)


@pytest.mark.parametrize(
    "name", [name for name in scheme_names() if name != "deberta-buckets"]
)
def test_every_scheme_runs_in_onnxruntime(name, tmp_path):
    _onnx_equals_eager(build(name, "gather"), tmp_path)


@pytest.mark.parametrize("name", ["transformer_xl", "deberta-buckets", "alibi"])
def test_jit_trace_follows_the_length_and_the_mask(name):
    module = build(name, "gather")
    x = torch.randn(2, 6, 16)
    full = torch.ones(2, 6, dtype=torch.bool)  # no padding when traced
    with torch.no_grad():
        traced = torch.jit.trace(Call(module), (x, full), check_trace=False)
        for length in LENGTHS:
            x, mask = padded(2, length)
            torch.testing.assert_close(traced(x, mask), module(x, mask))
