"""The engineers' page (book/engineers.md) runs: every ```python block, in order.

The blocks run in one namespace, top to bottom, as a reader runs them; each states
what it claims with its own ``assert``s, so a block that runs is a claim that held.
Two kinds of block run in tests of their own, each after the first block (the
imports and sizes), since they build their own models: the compile block
(``torch.compile``: tens of seconds on a CPU) and the ONNX block (it needs the
``onnx`` and ``onnxscript`` packages, which no extra installs: skipped without
them). The page's own scheme (``"window"``) is taken out of the registries again
after each run, so that the other tests see the built-in schemes only.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from relpos.backends import registry as backend_registry
from relpos.schemes import registry as scheme_registry

pytestmark = pytest.mark.slow

PAGE = Path(__file__).resolve().parent.parent / "book" / "engineers.md"
BLOCK = re.compile(r"^```python\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)


def blocks() -> list[str]:
    return BLOCK.findall(PAGE.read_text())


def is_compile(block: str) -> bool:
    return "torch.compile(" in block


def is_onnx(block: str) -> bool:
    return "torch.onnx.export(" in block


@pytest.fixture
def run():
    """Run blocks in one fresh namespace; put the registries back afterwards."""
    schemes = dict(scheme_registry.REGISTRY)
    backends = dict(backend_registry._REGISTRY)

    def execute(chosen: list[str]) -> dict:
        namespace: dict = {"__name__": "engineers_page"}
        for number, block in enumerate(chosen):
            code = compile(block, f"{PAGE.name} block {number}", "exec")
            exec(code, namespace)
        return namespace

    yield execute
    for registry, saved in (
        (scheme_registry.REGISTRY, schemes),
        (backend_registry._REGISTRY, backends),
    ):
        registry.clear()
        registry.update(saved)
    scheme_registry.ATTENTIONS.clear()
    scheme_registry.ATTENTIONS.update(
        {name: r.attention for name, r in schemes.items()}
    )


def test_the_page_has_its_blocks():
    found = blocks()
    assert len(found) >= 12, len(found)
    assert sum(map(is_compile, found)) == 1 and sum(map(is_onnx, found)) == 1
    assert found[0].lstrip().startswith("import"), "the first block holds the imports"
    for block in found:
        for line in block.splitlines():
            assert len(line) <= 88, line


def test_every_block_runs_in_order(run):
    chosen = [b for b in blocks() if not is_compile(b) and not is_onnx(b)]
    namespace = run(chosen)
    # the page's decoding ran: generate with a cache gave the recomputed tokens
    assert namespace["greedy"].shape == (2, 13)
    assert "window" in namespace["schemes"].scheme_names()


def test_the_compile_block_runs(run):
    found = blocks()
    run([found[0]] + [b for b in found if is_compile(b)])


def test_the_onnx_block_runs(run):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxscript")
    found = blocks()
    run([found[0]] + [b for b in found if is_onnx(b)])
