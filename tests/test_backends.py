"""The kernel registry, the one config and the layout of the core.

- A new kernel is one function and one ``register_backend`` call; every module
  then takes ``backend=`` its name.
- ``AttentionConfig`` is the one place the attention settings are checked; the
  attention, the encoder layer and the encoder take it, and its defaults are
  the constructors' defaults.
- ``import relpos`` loads neither the book layer nor its dependencies, and the
  core's modules import each other without a circle.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import pathlib
import subprocess
import sys

import pytest
import torch

import relpos
from relpos import AttentionConfig, DisentangledEncoder, DisentangledSelfAttention
from relpos.backends import BACKENDS, get_backend, register_backend
from relpos.backends.registry import _REGISTRY

CORE = pathlib.Path(relpos.__file__).parent


# -- the registry -----------------------------------------------------------------------


@pytest.fixture
def registry():
    saved = dict(_REGISTRY)
    yield
    _REGISTRY.clear()
    _REGISTRY.update(saved)


def test_builtin_backends_are_registered():
    # Each name builds a module that computes the same context; others are refused.
    assert relpos.BACKENDS is BACKENDS
    # float64: flex runs its score_mod uncompiled (compiling takes seconds; the
    # compiled kernel has its own tests, test_flex_lengths and test_causal).
    torch.manual_seed(0)
    x = torch.randn(2, 6, 16, dtype=torch.float64)
    table = torch.randn(8, 16, dtype=torch.float64)
    reference = DisentangledSelfAttention(16, 2, max_relative_positions=4)
    reference = reference.double().eval()
    with torch.no_grad():
        expected = reference(x, rel_embeddings=table)
        for name in ("naive", "gather", "flex"):
            assert name in BACKENDS
            module = DisentangledSelfAttention(
                16, 2, max_relative_positions=4, backend=name
            ).double().eval()
            module.load_state_dict(reference.state_dict())
            got = module(x, rel_embeddings=table)
            torch.testing.assert_close(got, expected, atol=1e-5, rtol=0)
    assert "fast" not in BACKENDS and 3 not in BACKENDS
    with pytest.raises(ValueError, match="backend"):
        DisentangledSelfAttention(16, 2, backend="fast")


def test_a_new_backend_is_one_function_and_one_call(registry):
    calls = []

    def doubled(query, key, value, terms, key_mask, scale, dropout_p):
        calls.append((query.shape, terms is not None, key_mask is not None, scale))
        return 2 * get_backend("gather").attend(
            query, key, value, terms, key_mask, scale, dropout_p
        )

    register_backend("doubled", doubled)
    assert "doubled" in BACKENDS and BACKENDS[-1] == "doubled"
    torch.manual_seed(0)
    mine = DisentangledSelfAttention(16, 2, max_relative_positions=4, backend="doubled")
    torch.manual_seed(0)
    gather = DisentangledSelfAttention(16, 2, max_relative_positions=4)
    x, table = torch.randn(2, 5, 16), torch.randn(8, 16)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    torch.testing.assert_close(
        mine(x, mask, rel_embeddings=table), 2 * gather(x, mask, rel_embeddings=table)
    )
    assert calls == [((2, 2, 5, 8), True, True, mine.scale)]
    # The same name works in the encoder, and the scores fall back to gather's.
    encoder = DisentangledEncoder(1, 16, 2, 32, max_relative_positions=4, backend="doubled")
    assert encoder(x, mask).shape == (2, 5, 16)
    _, scores = mine(x, return_scores=True, rel_embeddings=table)
    assert isinstance(scores, relpos.AttentionScores)


def test_register_backend_refuses_bad_input(registry):
    with pytest.raises(ValueError, match="already"):
        register_backend("gather", get_backend("naive").attend)
    with pytest.raises(TypeError, match="attend"):
        register_backend("broken", "not a function")
    with pytest.raises(ValueError, match="name"):
        register_backend("two words", get_backend("naive").attend)
    with pytest.raises(ValueError, match="backend"):
        get_backend("fast")
    register_backend("gather", get_backend("naive").attend, replace=True)
    assert get_backend("gather").attend is get_backend("naive").attend


# -- the config -------------------------------------------------------------------------


def test_the_constructor_defaults_are_the_config_defaults():
    defaults = {
        f.name: f.default
        for f in dataclasses.fields(AttentionConfig)
        if f.default is not dataclasses.MISSING
    }
    signature = inspect.signature(DisentangledSelfAttention)
    for name, default in defaults.items():
        assert signature.parameters[name].default == default, name


def test_a_config_builds_the_same_module_as_the_arguments():
    config = AttentionConfig(32, 4, max_relative_positions=8, position_buckets=4,
                             pos_att_type=["p2c"], share_att_key=False, backend="naive")
    assert config.pos_att_type == ("p2c",) and config.span == 4
    torch.manual_seed(0)
    by_config = DisentangledSelfAttention(config=config)
    torch.manual_seed(0)
    by_arguments = DisentangledSelfAttention(
        32, 4, max_relative_positions=8, position_buckets=4, pos_att_type=("p2c",),
        share_att_key=False, backend="naive",
    )
    assert by_config.config == by_arguments.config == config
    assert repr(by_config) == repr(by_arguments)
    for (name, a), (_, b) in zip(by_config.state_dict().items(),
                                 by_arguments.state_dict().items()):
        assert torch.equal(a, b), name
    encoder = DisentangledEncoder(2, intermediate_size=64, config=config)
    assert encoder.config is config
    assert all(layer.attention.config is config for layer in encoder.layers)
    with pytest.raises(ValueError, match="backend"):
        DisentangledSelfAttention(config=config, backend="flex")
    with pytest.raises(ValueError, match="hidden_size"):
        DisentangledEncoder(2, 16, intermediate_size=64, config=config)
    with pytest.raises(TypeError, match="config"):
        DisentangledSelfAttention(config=dict(hidden_size=32, num_heads=4))


def test_the_config_is_frozen_and_replace_checks_again():
    config = AttentionConfig(32, 4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.backend = "flex"  # type: ignore[misc]
    assert config.replace(backend="flex").backend == "flex"
    with pytest.raises(ValueError, match="position_buckets"):
        config.replace(position_buckets=-5)


@pytest.mark.parametrize(
    "changes, error, name",
    [
        (dict(share_att_key="False"), TypeError, "share_att_key"),
        (dict(share_att_key=1), TypeError, "share_att_key"),
        (dict(position_buckets=-5), ValueError, "position_buckets"),
        (dict(position_buckets=1), ValueError, "position_buckets"),
        (dict(position_buckets=2.0), TypeError, "position_buckets"),
        (dict(max_relative_positions=0), ValueError, "max_relative_positions"),
        (dict(num_heads=3), ValueError, "hidden_size"),
        (dict(dropout=True), TypeError, "dropout"),
        (dict(backend=None), ValueError, "backend"),
        (dict(pos_att_type=("c2c",)), ValueError, "pos_att_type"),
    ],
)
def test_every_setting_is_checked_once_with_its_name(changes, error, name):
    settings = dict(hidden_size=32, num_heads=4, max_relative_positions=8) | changes
    with pytest.raises(error, match=name):
        AttentionConfig(**settings)
    with pytest.raises(error, match=name):
        DisentangledSelfAttention(**settings)
    layer_settings = {k: v for k, v in settings.items() if k != "dropout"}
    with pytest.raises(error, match=name):
        DisentangledEncoder(1, intermediate_size=64, **layer_settings,
                            **({"attention_dropout": changes["dropout"]}
                               if "dropout" in changes else {}))


# -- the layout -------------------------------------------------------------------------


def test_import_relpos_loads_no_book_layer_and_no_optional_dependency():
    code = (
        "import sys, torch; before = set(sys.modules); import relpos; "
        "new = set(sys.modules) - before; "
        "print(sorted(m for m in new if not m.startswith(('relpos', 'torch'))) or '-'); "
        "print(sorted(m for m in new if m.startswith('relpos.book')) or '-')"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert out[:2] == ["-", "-"], out


def _module_level_imports(path: pathlib.Path) -> set[str]:
    """The ``relpos`` modules ``path`` imports at module level (not inside functions)."""
    package = "relpos." + ".".join(path.relative_to(CORE).with_suffix("").parts)
    package = package.removesuffix(".__init__")
    is_package = path.name == "__init__.py"
    base = package if is_package else package.rpartition(".")[0]
    found = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = base.split(".")
                root = ".".join(parts[: len(parts) - node.level + 1])
                module = f"{root}.{node.module}" if node.module else root
            else:
                module = node.module or ""
            if module.startswith("relpos"):
                found.add(module)
                found.update(f"{module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("relpos"))
    return found


def test_the_core_has_no_import_circle():
    files = [p for p in CORE.rglob("*.py") if "book" not in p.relative_to(CORE).parts]
    names = {}
    for path in files:
        name = "relpos." + ".".join(path.relative_to(CORE).with_suffix("").parts)
        names[name.removesuffix(".__init__")] = path
    graph = {
        name: {m for m in _module_level_imports(path) if m in names and m != name}
        for name, path in names.items()
    }
    # Importing a package's own submodule from the package is the usual layout.
    for name in graph:
        graph[name] = {m for m in graph[name] if not (name == "relpos")}
    state: dict[str, int] = {}

    def visit(node, trail):
        if state.get(node) == 1:
            raise AssertionError(f"import circle: {' -> '.join([*trail, node])}")
        if state.get(node) == 2:
            return
        state[node] = 1
        for nxt in sorted(graph[node]):
            visit(nxt, [*trail, node])
        state[node] = 2

    for node in sorted(graph):
        visit(node, [])
    assert "relpos.attention" not in graph["relpos.interop"]
    assert "relpos.attention" not in graph["relpos.backends.flex"]
