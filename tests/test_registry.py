"""The scheme registry (relpos.schemes.registry) and the book reading it: every
registration's facts are true of its scheme, and a scheme registered in one place
is a scheme, a coverage reader and a trainable model of the book's experiments."""

from __future__ import annotations

import math

import pytest
import torch

from relpos.book.experiments import SCHEMES, Config, build_scheme, train
from relpos.book.experiments.coverage import READERS, coverage, read_entries
from relpos.book.experiments.schemes import TRAINED_BACKENDS
from relpos.schemes import (
    ATTENTIONS,
    REGISTRY,
    AlibiBias,
    BiasSelfAttention,
    PositionEntries,
    SchemeRegistration,
    build_attention,
    register,
    resolve,
    scheme_names,
    score_by_distance,
)

from _tiny import TINY, one_thread  # noqa: F401  (autouse fixture)

F64 = torch.float64
NAMES = scheme_names()


def test_every_registered_name_is_a_scheme_and_attentions_is_the_registry():
    assert list(ATTENTIONS) == list(REGISTRY)
    assert {"fire", "kerple", "kerple-power", "shaw-keys"} <= set(NAMES)
    for name in NAMES:
        assert name in SCHEMES
        registration, variant = resolve(name)
        assert (variant is None) == (name in ATTENTIONS)
        assert (name in READERS) == (registration.entries is not None)


@pytest.mark.parametrize("setting", ["encoder", "causal"])
@pytest.mark.parametrize("name", NAMES)
def test_the_book_builds_what_the_registration_says(name, setting):
    config = Config(scheme=name, setting=setting, **TINY)
    registration, variant = resolve(name)
    arguments = registration.arguments(config, variant)
    assert arguments.get("causal", False) is config.causal
    if name in TRAINED_BACKENDS:  # the kernel the committed runs used
        arguments["backend"] = TRAINED_BACKENDS[name]
    if registration.shared is not None:  # the stack owns the input (DeBERTa's table)
        arguments.update(registration.shared.detached)
    torch.manual_seed(0)
    expected = registration.attention(config.hidden_size, config.num_heads, **arguments)
    _, encoder = build_scheme(name, config)
    built = encoder.layers[0].attention
    assert type(built) is registration.attention and built.causal is config.causal
    shapes = [(n, p.shape) for n, p in expected.named_parameters()]
    assert [(n, p.shape) for n, p in built.named_parameters()] == shapes
    assert built.extra_repr() == expected.extra_repr()


def test_settings_carry_config_fields_into_the_constructor():
    config = Config(scheme="t5", **{**TINY, "position_buckets": 6,
                                     "t5_max_distance": 9})
    bias = build_attention("t5", config).position_bias
    assert (bias.num_buckets, bias.max_distance) == (12, 9)
    config = config.replace(scheme="shaw-keys", max_relative_positions=5)
    shaw = build_attention("shaw-keys", config)
    assert (shaw.max_relative_positions, shaw.relative_values) == (5, False)
    fire = build_attention("fire", config.replace(train_length=12))
    assert float(fire.position_bias.threshold.detach()) == 12.0


@pytest.mark.parametrize("name", NAMES)
def test_readers_draw_no_random_numbers_and_read_every_pair(name):
    registration, _ = resolve(name)
    if registration.entries is None:
        pytest.skip("no coverage reader")
    config = Config(scheme=name, **TINY)
    state = torch.get_rng_state()
    found = read_entries(config, 9)
    assert torch.equal(torch.get_rng_state(), state)  # built on the meta device
    for kind, entries in found.items():
        assert isinstance(entries, PositionEntries) and entries.index.shape == (9, 9)
        assert entries.index.device.type == "cpu", kind


@pytest.mark.parametrize("name", list(REGISTRY))
def test_relative_says_whether_a_shift_of_every_position_changes_the_logits(name):
    torch.manual_seed(0)
    attention = ATTENTIONS[name](16, 2).to(F64).eval()
    x = torch.randn(2, 8, 16, dtype=F64)
    with torch.no_grad():
        _, near = attention(x, return_scores=True)
        _, far = attention(x, positions=torch.arange(8) + 1000, return_scores=True)
    same = torch.allclose(near.logits, far.logits, atol=1e-8)
    assert same is REGISTRY[name].relative


@pytest.mark.parametrize("name", list(REGISTRY))
def test_content_free_says_whether_the_landscape_ignores_the_contents(name):
    torch.manual_seed(0)
    attention = ATTENTIONS[name](16, 2).to(F64).eval()
    distances = torch.arange(-6, 7)
    a, b, c, d = torch.randn(4, 16, dtype=F64)
    one = score_by_distance(attention, distances, a, b)
    other = score_by_distance(attention, distances, c, d)
    assert torch.allclose(one, other, atol=1e-10) is REGISTRY[name].content_free


# -- a scheme added in one place -------------------------------------------------


class HalfAlibi(BiasSelfAttention):
    """A test scheme: ALiBi's bias times ``factor``, in one file (this one)."""

    def __init__(self, hidden_size, num_heads, factor=1.0, dropout=0.0, *,
                 causal=False):
        bias = AlibiBias(num_heads, causal=causal)
        super().__init__(hidden_size, num_heads, bias, dropout, causal=causal)
        self.factor = factor

    def position_logits(self, query, key, query_positions, key_positions):
        logits = super().position_logits(query, key, query_positions, key_positions)
        return logits * self.factor


@pytest.fixture
def half_alibi():
    register(
        SchemeRegistration(
            "half-alibi",
            HalfAlibi,
            settings=lambda config: {"factor": config.train_length / 16},
            entries=lambda attention, rel: {
                "distance": PositionEntries(rel.abs(), False, None, none=None)
            },
            variants={"half-alibi-flat": {"factor": 0.0}},
            content_free=True,
        )
    )
    yield
    del REGISTRY["half-alibi"], ATTENTIONS["half-alibi"]


def test_a_registration_is_all_the_book_needs(half_alibi):
    assert {"half-alibi", "half-alibi-flat"} <= set(SCHEMES) & set(READERS)
    config = Config(scheme="half-alibi", **{**TINY, "steps": 4})
    _, encoder = build_scheme("half-alibi", config)
    assert encoder.layers[0].attention.factor == 0.5  # train_length 8 / 16
    flat = build_scheme("half-alibi-flat", config.replace(scheme="half-alibi-flat"))
    assert flat[1].layers[0].attention.factor == 0.0
    trained = train(config)
    assert all(math.isfinite(x) for x in trained.losses)
    found = coverage(config, 16)
    assert found.kinds["distance"].unseen == tuple(range(8, 16))
    assert not found.kinds["distance"].learned


def test_bad_registrations_name_the_argument():
    with pytest.raises(ValueError, match="name"):
        SchemeRegistration("Bad Name", HalfAlibi)
    with pytest.raises(TypeError, match="attention"):
        SchemeRegistration("ok", torch.nn.Linear)
    with pytest.raises(TypeError, match="settings"):
        SchemeRegistration("ok", HalfAlibi, settings={"factor": 2})
    with pytest.raises(TypeError, match="entries"):
        SchemeRegistration("ok", HalfAlibi, entries="rows")
    with pytest.raises(ValueError, match="variants"):
        SchemeRegistration("ok", HalfAlibi, variants={"Not OK": {}})
    with pytest.raises(TypeError, match="variants"):
        SchemeRegistration("ok", HalfAlibi, variants={"ok-2": ["factor"]})
    with pytest.raises(TypeError, match="relative"):
        SchemeRegistration("ok", HalfAlibi, relative="yes")
    with pytest.raises(TypeError, match="registration"):
        register(HalfAlibi)
    with pytest.raises(ValueError, match="already"):
        register(SchemeRegistration("alibi", HalfAlibi))
    with pytest.raises(ValueError, match="already"):
        register(SchemeRegistration("new", HalfAlibi, variants={"shaw-keys": {}}))
    with pytest.raises(ValueError, match="variant"):
        REGISTRY["shaw"].arguments(Config(scheme="shaw"), "shaw-values")
    with pytest.raises(ValueError, match="name"):
        resolve("no-such-scheme")
    assert "new" not in REGISTRY and list(ATTENTIONS) == list(REGISTRY)
    variants = REGISTRY["shaw"].variants
    with pytest.raises(TypeError):
        variants["shaw-keys"]["relative_values"] = True  # read-only


def test_build_attention_honours_the_backend_and_names_a_missing_field():
    import types

    from relpos.schemes import build_attention

    sizes = dict(hidden_size=16, num_heads=2, causal=False)
    config = types.SimpleNamespace(**sizes, backend="flex")
    assert build_attention("alibi", config).backend == "flex"  # config.backend
    assert build_attention("alibi", config, backend="naive").backend == "naive"
    # One default kernel for every scheme, rotary included.
    plain = types.SimpleNamespace(**sizes)
    assert build_attention("rotary", plain).backend == "gather"
    assert build_attention("alibi", plain).backend == "gather"
    with pytest.raises(TypeError, match="config must have a field 'position_buckets'"):
        build_attention("t5", plain)
    with pytest.raises(ValueError, match="backend must be one of"):
        build_attention("alibi", plain, backend="cuda")
