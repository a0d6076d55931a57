"""Each scheme's arithmetic lives in its registration; the roofline reads it.

The floors must be what they were when the roofline branched on scheme names:
``_before`` is that function (main before the arithmetic moved), kept here as
the reference, and the committed benchmark's ``floor_ratio`` values must come
out exactly again.
"""

from __future__ import annotations

import importlib

import pytest
import torch

from relpos.book import results
from relpos.book.bench import cells, costs_report
from relpos.schemes import registry
from relpos.schemes.registry import (
    SchemeRegistration,
    WorkSizes,
    element_wise,
    position_work,
    resolve,
)

roofline = importlib.import_module("relpos.book.bench.roofline")


def _before(scheme, n, hidden, heads, batch=1, span=256, width=32):
    """main's ``roofline.position_flops`` before the registration held the arithmetic."""
    parts = roofline.flop_breakdown(n, hidden, heads, span, batch, terms=2)
    b, H = batch, hidden
    if scheme != "plain" and resolve(scheme)[0].name == "deberta":
        return {key: parts[key] for key in ("table_projections", "position_tables")}
    if scheme == "shaw":
        rows = 2 * span + 1
        return {"key_rows": 2 * b * n * rows * H, "value_rows": 2 * b * n * rows * H}
    if scheme == "transformer_xl":
        rows = max(2 * n - 1, 0)
        return {"table_projections": 2 * rows * H * H, "key_rows": 2 * b * n * rows * H}
    if scheme == "fire":
        return {"mlp": 2 * n * n * (width + width * heads)}
    return {}


#: The schemes the roofline counted before: plain and the benchmark's cells.
BEFORE = ("plain", *cells.cost_schemes())

SIZES = [
    dict(n=2048, hidden=768, heads=12),
    dict(n=1, hidden=8, heads=2, batch=3, span=1, width=1),
    dict(n=100, hidden=64, heads=4, batch=2, span=16, width=7),
]


@pytest.mark.parametrize("sizes", SIZES)
@pytest.mark.parametrize("scheme", BEFORE)
def test_every_floor_is_what_the_named_branches_gave(scheme, sizes):
    assert roofline.position_flops(scheme, **sizes) == _before(scheme, **sizes)
    plain = roofline.plain_flops(sizes["n"], sizes["hidden"], sizes["heads"],
                                 sizes.get("batch", 1))
    floor = roofline.cost_floor(scheme, **sizes)
    assert floor == (plain + sum(_before(scheme, **sizes).values())) / plain


def test_the_committed_floors_come_out_exactly_again():
    data = costs_report.load_costs(results.path("bench_costs.json"))
    config = data["config"]
    rows = [r for r in data["results"] if r["floor_ratio"] is not None]
    assert {r["scheme"] for r in rows} == set(BEFORE)
    for row in rows:
        floor = roofline.cost_floor(
            row["scheme"], row["n"], config["hidden"], config["heads"],
            config["batch"], span=config["span"],
        )
        assert floor == row["floor_ratio"], row


def test_the_cells_are_built_as_the_committed_benchmark_built_them():
    # Shaw's table clipped at the common span (sized), as the committed run had it
    config = costs_report.load_costs(results.path("bench_costs.json"))["config"]
    shapes = cells.Shapes(config["hidden"], config["heads"], config["span"],
                          torch.float32, "cpu")
    for scheme, arguments in config["scheme_arguments"].items():
        assert cells.scheme_arguments(scheme, shapes) == arguments, scheme


def test_two_floors_by_hand():
    n, H, h, k = 2048, 768, 12, 256
    plain = 6 * n * H * H + 4 * n * n * H
    deberta = 2 * 2 * (2 * k) * H * H + 2 * 2 * n * (2 * k) * H
    assert roofline.cost_floor("deberta", n, H, h, span=k) == (plain + deberta) / plain
    shaw = 2 * 2 * n * (2 * k + 1) * H
    assert roofline.cost_floor("shaw", n, H, h, span=k) == (plain + shaw) / plain


def test_variants_count_what_they_build():
    sizes = WorkSizes(64, 32, 4, span=8)
    full = position_work("deberta", sizes)
    for one in ("deberta-c2p", "deberta-p2c"):
        assert {k: 2 * v for k, v in position_work(one, sizes).items()} == full
    assert position_work("shaw-keys", sizes) == {
        "key_rows": position_work("shaw", sizes)["key_rows"]
    }
    assert position_work("kerple-power", sizes) == {}
    assert "tupe" in roofline.floor_schemes() and "shaw-keys" in roofline.FLOOR_SCHEMES


def _sdpa_flops(query, key, value, *args, out_shape=None, **kwargs) -> int:
    from torch.utils.flop_counter import sdpa_flop_count

    return sdpa_flop_count(query, key, value)


def test_tupe_floor_is_its_counted_work_with_a_table_as_long_as_the_input():
    from torch.utils.flop_counter import FlopCounterMode

    n, hidden, heads = 24, 32, 4
    torch.manual_seed(0)
    module = registry.ATTENTIONS["tupe"](hidden, heads, max_length=n).eval()
    module.requires_grad_(False)
    x = torch.randn(1, n, hidden)
    cpu_sdpa = {torch.ops.aten._scaled_dot_product_flash_attention_for_cpu: _sdpa_flops}
    with FlopCounterMode(display=False, custom_mapping=cpu_sdpa) as counter:
        with torch.no_grad():
            module(x)
    added = roofline.position_flops("tupe", n, hidden, heads)
    assert counter.get_total_flops() == roofline.plain_flops(n, hidden, heads) + sum(
        added.values()
    )


def test_the_arithmetic_is_validated():
    attention = registry.ATTENTIONS["alibi"]
    with pytest.raises(TypeError, match="arithmetic must be callable"):
        SchemeRegistration("scratch", attention, arithmetic=3)
    with pytest.raises(ValueError, match="hidden must be divisible by heads"):
        WorkSizes(4, 10, 3)
    with pytest.raises(TypeError, match="span must be an int"):
        WorkSizes(4, 8, 2, span=2.0)
    with pytest.raises(ValueError, match="n must be an int >= 0"):
        WorkSizes(-1, 8, 2)
    with pytest.raises(TypeError, match="sizes must be a WorkSizes"):
        position_work("alibi", (4, 8, 2))
    assert element_wise(WorkSizes(4, 8, 2), {}) == {}


@pytest.mark.parametrize(
    "arithmetic, error",
    [(None, "declares its arithmetic"), (lambda s, a: {"x": -1}, "ints >= 0"),
     (lambda s, a: {"x": 1.5}, "ints >= 0")],
)
def test_a_scheme_without_sound_arithmetic_is_refused(arithmetic, error):
    scratch = SchemeRegistration(
        "scratch-arithmetic", registry.ATTENTIONS["alibi"], arithmetic=arithmetic
    )
    registry.register(scratch)
    try:
        with pytest.raises(ValueError, match=error):
            position_work("scratch-arithmetic", WorkSizes(4, 8, 2))
        if arithmetic is None:
            assert "scratch-arithmetic" not in roofline.floor_schemes()
            with pytest.raises(ValueError, match="scheme must be one of"):
                roofline.position_flops("scratch-arithmetic", 4, 8, 2)
    finally:
        del registry.REGISTRY["scratch-arithmetic"]
        del registry.ATTENTIONS["scratch-arithmetic"]
