"""Packed documents, per-sequence positions and shifted positions, for every module
on every kernel (``_every.GRID``).

- ``document_ids``: a row that packs two documents, each with its positions
  restarting at 0, gives each document the output it gets on its own
  (bidirectional and causal).
- Per-sequence positions ``(b, n)`` with left padding: the real tokens get the
  output of the unpadded sequence.
- Moving every position by the same amount changes nothing for the modules whose
  logits read ``i - j`` alone (the registry's ``relative`` schemes, DeBERTa's,
  content attention).
"""

from __future__ import annotations

import pytest
import torch

from _every import COMPILED, GRID, HIDDEN, MODULES, RELATIVE, build, call, tolerance

CAUSAL = pytest.mark.parametrize(
    "causal", [False, True], ids=["bidirectional", "causal"]
)

#: Each row packs two documents: their lengths.
SPLITS = ((5, 6), (3, 8))


def states(n: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(1, n, HIDDEN, dtype=dtype, generator=generator)


def packed_batch(
    dtype: torch.dtype, splits: tuple[tuple[int, int], ...] = SPLITS
):
    """Two rows of two documents each (lengths ``splits``), their ids and their
    restarting positions.

    Shapes:
        output: documents (one ``(1, length, hidden)`` each, row by row),
        x ``(2, 11, hidden)``, ids ``(2, 11)``, positions ``(2, 11)``
    """
    documents, ids, positions = [], [], []
    for row, lengths in enumerate(splits):
        documents.append(
            [states(m, dtype, seed=10 * row + k) for k, m in enumerate(lengths)]
        )
        ids.append(torch.cat([torch.full((m,), k) for k, m in enumerate(lengths)]))
        positions.append(torch.cat([torch.arange(m) for m in lengths]))
    x = torch.cat([torch.cat(row, dim=1) for row in documents])  # (2, 11, hidden)
    return documents, x, torch.stack(ids), torch.stack(positions)


def check_packing(
    module, dtype: torch.dtype, splits: tuple[tuple[int, int], ...] = SPLITS
) -> None:
    documents, x, ids, positions = packed_batch(dtype, splits)
    packed = call(module, x, document_ids=ids, positions=positions)
    for row, row_documents in enumerate(documents):
        start = 0
        for document in row_documents:
            length = document.shape[1]
            alone = call(module, document)  # (1, length, hidden)
            torch.testing.assert_close(
                packed[row : row + 1, start : start + length], alone, **tolerance(dtype)
            )
            start += length
    # Without the ids the documents read each other: the output changes.
    together = call(module, x, positions=positions)
    assert not torch.allclose(together, packed, atol=1e-4)


@pytest.mark.parametrize("name, backend", GRID)
@CAUSAL
def test_packed_documents_equal_separate_runs(name, backend, causal):
    check_packing(build(name, backend, causal=causal), torch.float64)


@pytest.mark.parametrize("name, backend", GRID)
@CAUSAL
def test_left_padding_with_positions_equals_the_unpadded_sequence(
    name, backend, causal
):
    module = build(name, backend, causal=causal)
    n, pad = 8, 3
    x = torch.cat([states(n, torch.float64, seed=1), states(n, torch.float64, seed=2)])
    mask = torch.ones(2, n, dtype=torch.bool)
    mask[1, :pad] = False
    positions = (mask.cumsum(-1) - 1).clamp(min=0)  # (b, n): 0 on the padding too
    out = call(module, x, mask, positions=positions)
    tight = tolerance(x.dtype)
    torch.testing.assert_close(out[:1], call(module, x[:1]), **tight)
    torch.testing.assert_close(out[1:, pad:], call(module, x[1:, pad:]), **tight)


@pytest.mark.parametrize("name, backend", [p for p in GRID if p.values[0] in RELATIVE])
@CAUSAL
def test_shifted_positions_change_nothing_for_relative_modules(name, backend, causal):
    module = build(name, backend, causal=causal)
    x = torch.cat([states(9, torch.float64, seed=3), states(9, torch.float64, seed=4)])
    mask = torch.ones(2, 9, dtype=torch.bool)
    mask[0, -2:] = False
    expected = call(module, x, mask)
    shared = torch.arange(9) + 7  # (n,)
    per_sequence = torch.arange(9) + torch.tensor([[5], [11]])  # (b, n)
    for positions in (shared, per_sequence):
        got = call(module, x, mask, positions=positions)
        torch.testing.assert_close(got, expected, **tolerance(x.dtype))


def test_relative_modules_come_from_the_registry():
    # The shift test covers the registry's relative schemes and nothing else.
    from relpos.schemes import REGISTRY

    schemes = [name for name in RELATIVE if name in REGISTRY]
    assert schemes == [name for name, r in REGISTRY.items() if r.relative]
    assert set(RELATIVE) - set(REGISTRY) == set(MODULES) - set(REGISTRY)


@pytest.mark.slow
@pytest.mark.parametrize("name", COMPILED[:1])  # every module: eagerly, in GRID
def test_packing_on_compiled_flex(name):
    # float32 on the CPU runs flex's compiled kernel: one compilation for every
    # length up to 16 (relpos.backends.flex_shapes), so the four lengths cost one.
    # Documents reach the kernel as one more mask, read alike for every scheme: one
    # module checks what compiling does to them (each way positions reach the
    # kernel is compiled with a cache in tests/test_cache.py; every module packs
    # on flex eagerly in GRID). Each further module cost 20-55 s of one core.
    module = build(name, "flex", dtype=torch.float32)
    check_packing(module, torch.float32)
