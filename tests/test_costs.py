"""What positions cost (``python -m relpos.book.bench costs``): the run, floor, figure.

The run is checked on tiny shapes (hidden 32, n 12 and 32) in float64, where
FlexAttention on the CPU runs torch's uncompiled reference instead of compiling
each scheme's kernel; speed is never asserted, only what the harness records.
The appendix's numbers are checked against the committed JSON.
"""

from __future__ import annotations

import gc
import importlib
import json
import re
from pathlib import Path

import pytest
import torch

import relpos
from relpos.book import plot, results
from relpos.book.bench import cells, costs, costs_report
from relpos.book.bench.cli import main
from relpos.book.bench.costs import CostsConfig, run_costs

# the module (relpos.book.bench.roofline is also the name of a function there)
roofline = importlib.import_module("relpos.book.bench.roofline")
TINY = CostsConfig(hidden=32, heads=4, span=8, repeats=2, dtype="float64", threads=1)
LENGTHS = (12, 32)
APPENDIX = Path(__file__).resolve().parent.parent / "book" / "appendix_benchmark.md"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path, int]:
    path = tmp_path_factory.mktemp("costs") / "costs.json"
    threads = torch.get_num_threads()
    # run_costs collects garbage before each of its 58 memory counts, and a collection
    # walks every object of the test session (0.2-0.5 s each). Frozen, those objects
    # are left out; the run's own garbage is still collected, and the profiler's count
    # is what it was (the frozen objects are alive, never collected mid-count).
    gc.collect()
    gc.freeze()
    try:
        data = run_costs(LENGTHS, config=TINY, output=path, progress=None, command="x")
    finally:
        gc.unfreeze()
    return data, path, threads


@pytest.mark.slow
def test_tiny_run_measures_every_scheme_on_every_backend(tiny):
    data, path, threads = tiny
    assert torch.get_num_threads() == threads  # restored after the one-thread run
    assert costs_report.load_costs(path) == json.loads(json.dumps(data))
    machine, config = data["machine"], data["config"]
    assert machine["threads"] == 1 and config["threads"] == 1
    assert len(machine["load_before"]) == len(machine["load_after"]) == 3
    assert machine["torch"] == torch.__version__ and data["command"] == "x"
    assert "profiler" in machine["memory_method"]
    expected = [("plain", "sdpa")] + [
        (s, b) for s in cells.cost_schemes() for b in relpos.BACKENDS
    ]
    for n in LENGTHS:
        rows = [r for r in data["results"] if r["n"] == n]
        assert [(r["scheme"], r["backend"]) for r in rows] == expected
        for row in rows:
            assert row["status"] == "ok", row
            assert len(row["forward_runs_s"]) == 2
            runs = row["forward_runs_s"]
            assert min(runs) <= row["forward_s"] <= max(runs)
            assert row["first_call_s"] > 0 and row["peak_bytes"] > 0, row
            assert row["time_ratio"] > 0 and row["memory_ratio"] > 0, row
            assert row["floor_ratio"] >= 1 and row["flops"] > 0, row
        plain = rows[0]
        assert plain["time_ratio"] == plain["memory_ratio"] == plain["floor_ratio"] == 1
        # the output alone, (1, n, 32) float64, is counted in every peak
        assert min(r["peak_bytes"] for r in rows) >= n * 32 * 8


@pytest.mark.slow
def test_naive_stores_more_than_gather_at_the_longer_length(tiny):
    data, _, _ = tiny
    peak = {
        (r["scheme"], r["backend"], r["n"]): r["peak_bytes"] for r in data["results"]
    }
    for scheme in ("deberta", "shaw", "transformer_xl"):  # per-pair rows, n^2 * hidden
        assert peak[scheme, "naive", 32] > peak[scheme, "gather", 32]


def test_profiled_peak_counts_the_largest_live_tensor():
    def call() -> torch.Tensor:
        big = torch.ones(1000, 1000)  # 4 MB, freed before the end
        return big.sum().reshape(1)

    peak = costs.peak_bytes(call, "cpu")
    assert 4_000_000 <= peak < 4_200_000


def test_floor_arithmetic():
    n, hidden, heads, k = 2048, 768, 12, 256
    plain = roofline.plain_flops(n, hidden, heads)
    assert plain == 6 * n * hidden**2 + 4 * n * n * hidden
    added = roofline.position_flops("deberta", n, hidden, heads, span=k)
    c2c = roofline.flop_breakdown(n, hidden, heads, k)["c2c"]
    # c2p and p2c: 2 x n x 2k x d multiply-adds a head against c2c's n x n x d
    assert added["position_tables"] / c2c == pytest.approx(2 * 2 * k / n) == 0.5
    floor = roofline.cost_floor("deberta", n, hidden, heads, span=k)
    assert floor == pytest.approx((plain + sum(added.values())) / plain)
    assert 1.2 < floor < 1.25
    assert roofline.position_flops("deberta-buckets", n, hidden, heads, span=k) == added
    for scheme in ("plain", "t5", "alibi", "kerple", "rotary"):
        assert roofline.cost_floor(scheme, n, hidden, heads) == 1.0
    shaw = roofline.position_flops("shaw", n, hidden, heads, span=k)
    assert shaw == {"key_rows": 2 * n * (2 * k + 1) * hidden} | {
        "value_rows": 2 * n * (2 * k + 1) * hidden}
    assert roofline.position_flops("fire", 10, 8, 2, width=4) == {"mlp": 2 * 100 * 12}
    # Transformer-XL projects a sinusoid per distance: its floor tends to 2
    xl = [roofline.cost_floor("transformer_xl", m, hidden, heads)
          for m in (2**10, 2**16)]
    assert xl[0] < xl[1] < 2
    with pytest.raises(ValueError, match="scheme must be one of"):
        roofline.position_flops("nope", n, hidden, heads)


def _sdpa_flops(query, key, value, *args, out_shape=None, **kwargs) -> int:
    from torch.utils.flop_counter import sdpa_flop_count

    return sdpa_flop_count(query, key, value)


@pytest.mark.parametrize(
    "scheme", ["deberta", "deberta-buckets", "transformer_xl", "alibi", "rotary", "plain"]
)
def test_floor_is_the_counted_work_of_the_gather_formulation(scheme, monkeypatch):
    """The floor counts the paper's gather formulation: its general path, not the
    band and far fields or the strided view it takes at inference (their fused
    calls score more pairs than the band needs, and are timed, not floored)."""
    from torch.utils.flop_counter import FlopCounterMode

    from relpos.backends import gather

    monkeypatch.setattr(gather, "banded_applies", lambda *args: False)
    monkeypatch.setattr(gather, "strided_applies", lambda *args: False)

    n, hidden, heads, k = 64, 32, 4, 8
    shapes = cells.Shapes(hidden, heads, k, torch.float32, "cpu")
    projections = cells.plain_projections(shapes, 0)
    x = cells.make_hidden_states(n, shapes, 0, 1)
    module = None
    if scheme != "plain":
        module = cells.build_cell(scheme, "gather", shapes, projections, 0)
    # torch's counter has no entry for the CPU fused kernel: its own formula
    cpu_sdpa = {torch.ops.aten._scaled_dot_product_flash_attention_for_cpu: _sdpa_flops}
    with FlopCounterMode(display=False, custom_mapping=cpu_sdpa) as counter:
        cells.forward_of(module, projections, x)()
    added = roofline.position_flops(scheme, n, hidden, heads, span=k)
    assert counter.get_total_flops() == roofline.plain_flops(n, hidden, heads) + sum(
        added.values()
    )


def test_cells_share_plain_attentions_projections_and_agree_across_backends():
    shapes = cells.Shapes(16, 2, 4, torch.float64, "cpu")
    projections = cells.plain_projections(shapes, 0)
    x = cells.make_hidden_states(12, shapes, 0, 1)
    for scheme in ("deberta", "alibi"):
        outputs = []
        for backend in ("naive", "gather"):
            module = cells.build_cell(scheme, backend, shapes, projections, 0)
            assert torch.equal(module.query_proj.weight, projections.query_proj.weight)
            outputs.append(cells.forward_of(module, projections, x)())
        torch.testing.assert_close(outputs[0], outputs[1])
    plain = cells.forward_of(None, projections, x)()
    reference = relpos.SelfAttention(16, 2).double()
    reference.load_state_dict(projections.state_dict())
    with torch.no_grad():
        torch.testing.assert_close(plain, reference(x))


def test_skips_name_their_reason():
    config = CostsConfig(hidden=32, heads=4, max_memory_gb=1.0, max_forward_s=2.0,
                         budget_s=100.0)
    run = costs._Run(config, None)
    assert costs.estimate_cell_bytes("naive", 512, config) > costs.estimate_cell_bytes(
        "gather", 512, config)
    cell = ("deberta", "gather")
    assert run.skip_reason(cell, 64, 0.0) is None
    run.last[cell] = {"n": 64, "forward_s": 1.0, "peak_bytes": 2**20,
                      "first_call_s": 1.0}
    assert "max_forward_s" in run.skip_reason(cell, 128, 0.0)  # 4 s predicted
    run.last[cell]["forward_s"] = 0.1
    assert run.skip_reason(cell, 128, 0.0) is None
    assert "max_memory_gb" in run.skip_reason(cell, 64 * 64, 0.0)  # 4 GiB predicted
    assert "budget_s" in run.skip_reason(cell, 128, 99.5)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"hidden": 30, "heads": 4}, "hidden must be divisible by heads"),
        ({"budget_s": 0}, "budget_s must be a positive number"),
        ({"dtype": "int8"}, "dtype must be one of"),
        ({"threads": 0}, "threads"),
    ],
)
def test_bad_config_is_refused_naming_the_field(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message):
        CostsConfig(**kwargs)


def test_bad_schemes_are_refused_before_any_work():
    with pytest.raises(ValueError, match="schemes must be distinct names"):
        run_costs([16], ["deberta", "nope"], config=TINY, progress=None)


def test_command_line_rejects_a_bad_flag_in_one_line(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["costs", "--hidden", "30", "--heads", "4"])
    assert stop.value.code == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "--hidden" in error


def _synthetic() -> dict:
    def row(scheme, backend, n, time_ratio, memory_ratio, status="ok"):
        ok = status == "ok"
        return dict.fromkeys(costs.COST_KEYS) | {
            "scheme": scheme, "backend": backend, "n": n, "status": status,
            "forward_s": 0.1 * time_ratio if ok else None,
            "time_ratio": time_ratio if ok else None,
            "memory_ratio": memory_ratio if ok else None,
            "floor_ratio": roofline.cost_floor(
                scheme, n, 32, 4, span=8) if scheme in ("plain", "deberta") else 1.0,
            "note": None if ok else "predicted too much",
        }

    rows = []
    for n in (64, 128):
        rows += [row("plain", "sdpa", n, 1.0, 1.0),
                 row("deberta", "gather", n, 3.0, 8.0),
                 row("deberta", "flex", n, 2.0, 1.5),
                 row("alibi", "flex", n, 1.1, 1.2, "skipped" if n == 128 else "ok")]
    return {"schema": 1, "kind": costs.KIND, "command": "x",
            "machine": {"device": "cpu"},
            "config": {"dtype": "float32", "threads": 1, "batch": 1, "hidden": 32,
                       "heads": 4, "span": 8, "repeats": 3},
            "results": rows}


def test_series_and_figure_draw_the_ratios():
    data = _synthetic()
    series = costs_report.cost_series(data)
    assert series == {("deberta", "gather"): [(64, 3.0), (128, 3.0)],
                      ("deberta", "flex"): [(64, 2.0), (128, 2.0)],
                      ("alibi", "flex"): [(64, 1.1)]}
    fig = plot.position_costs(data)
    ax_time, ax_mem = fig.axes
    assert ax_time.get_xlabel() == ax_mem.get_xlabel() == "sequence length n"
    assert "plain" in ax_time.get_ylabel() and "memory" in ax_mem.get_ylabel()
    drawn = {line.get_label(): line.get_xydata().tolist() for line in ax_time.lines}
    assert drawn["deberta / gather"] == [[64, 3.0], [128, 3.0]]
    assert drawn["alibi / flex"] == [[64, 1.1]]
    floor = [roofline.cost_floor("deberta", n, 32, 4, span=8) for n in (64, 128)]
    assert drawn["deberta floor"] == [[64, floor[0]], [128, floor[1]]]
    memory = {line.get_label(): line.get_xydata().tolist() for line in ax_mem.lines}
    assert memory["deberta / gather"] == [[64, 8.0], [128, 8.0]]
    assert drawn["plain attention"][0][1] == 1.0


def test_table_shows_ratios_floors_and_skips():
    text = costs_report.cost_table(_synthetic())
    assert "3.00 / 8.0" in text and "2.00 / 1.5" in text
    floor = roofline.cost_floor("deberta", 128, 32, 4, span=8)
    assert re.search(rf"deberta\s+floor\s+\S+\s+{floor:.2f}", text)
    assert "n=128 alibi flex: predicted too much" in text
    assert max(len(line) for line in text.splitlines()) <= 88


def test_bounds_table_takes_each_schemes_fastest_kernel_at_the_longest_length():
    """At n = 128: DeBERTa's flex (2.00, within no bound of 1.5), ALiBi skipped
    there and so left out; lines of 88 at most."""
    text = costs_report.bounds_table(_synthetic())
    lines = text.splitlines()
    assert lines[0].startswith("n = 128:")
    deberta = next(line for line in lines if line.startswith("deberta "))
    floor = roofline.cost_floor("deberta", 128, 32, 4, span=8)
    assert deberta.split() == [
        "deberta", "1.5", "flex", "2.00", "1.5", f"{floor:.2f}", "no"]
    assert not any(line.startswith("alibi") for line in lines)
    assert max(len(line) for line in lines) <= 88
    best = costs_report.best_cells(_synthetic(), 64)
    assert best["deberta"]["backend"] == "flex" and best["alibi"]["time_ratio"] == 1.1


# -- the committed run and the appendix ------------------------------------------------


def _committed() -> dict:
    return costs_report.load_costs(results.path("bench_costs.json"))


def _cell(data: dict, scheme: str, backend: str, n: int) -> dict:
    return next(r for r in data["results"]
                if (r["scheme"], r["backend"], r["n"]) == (scheme, backend, n))


def test_committed_run_is_an_all_threads_cpu_run_of_every_cell():
    data = _committed()
    machine = data["machine"]
    assert machine["threads"] == machine["cpu_count"] and data["config"]["device"] == "cpu"
    assert (data["config"]["hidden"], data["config"]["heads"]) == (768, 12)
    assert data["config"]["schemes"] == cells.cost_schemes()
    cells_run = {(r["scheme"], r["backend"]) for r in data["results"]}
    assert cells_run == {("plain", "sdpa")} | {
        (s, b) for s in cells.cost_schemes() for b in relpos.BACKENDS}
    config = data["config"]
    for row in data["results"]:
        assert row["status"] in ("ok", "skipped"), row
        assert (row["status"] == "skipped") == (row["note"] is not None), row
        floor = roofline.cost_floor(row["scheme"], row["n"], config["hidden"],
                                    config["heads"], config["batch"],
                                    span=config["span"])
        assert row["floor_ratio"] == pytest.approx(floor), row


def test_appendix_shows_the_committed_table():
    text = APPENDIX.read_text()
    table = costs_report.cost_table(_committed())
    assert table in text


def test_appendix_quotes_the_committed_numbers():
    data = _committed()
    text = " ".join(APPENDIX.read_text().split())
    quoted = _quoted(data)
    missing = [phrase for phrase in quoted if phrase not in text]
    assert not missing, missing


def _quoted(data: dict) -> list[str]:
    """The appendix's sentences with numbers, rebuilt from the committed JSON."""
    from relpos.book.bench.roofline import cost_floor

    def ratio(scheme, backend, n, key="time_ratio"):
        return _cell(data, scheme, backend, n)[key]

    c2c_share = 2 * 512 / 2048
    note = _cell(data, "deberta", "naive", 1024)["note"]
    skipped_gib = float(re.match(r"predicted ([\d.]+) GiB", note).group(1))
    machine = data["machine"]
    loads = machine["load_before"][:1] + machine["load_after"][:1]
    best = costs_report.best_cells(data, 2048)
    profile = results.load("profile_cpu.json")["kernels_s"]
    return [
        f"about {1 + c2c_share:.1f} times the scores",
        f"{cost_floor('deberta', 2048, 768, 12):.2f} times plain attention's work",
        f"DeBERTa costs {ratio('deberta', 'gather', 1024):.1f} times plain attention "
        f"on `gather` and {ratio('deberta', 'flex', 1024):.1f} times on `flex`",
        f"{ratio('deberta', 'gather', 2048):.1f} and "
        f"{ratio('deberta', 'flex', 2048):.1f} at n = 2048",
        f"{ratio('deberta', 'naive', 256):.0f} times plain attention",
        f"(T5 {ratio('t5', 'gather', 2048):.2f} times at $n = 2048$)",
        f"ALiBi costs {ratio('alibi', 'flex', 1024):.2f} times plain attention",
        f"{ratio('fire', 'gather', 1024):.0f} times plain attention on `gather` "
        f"and {ratio('fire', 'flex', 1024):.1f} on `flex`",
        f"`flex` holds {ratio('deberta', 'flex', 2048, 'memory_ratio'):.0f} times "
        f"plain attention's memory at n = 2048 and `gather` "
        f"{ratio('deberta', 'gather', 2048, 'memory_ratio'):.0f}",
        f"and so does Shaw's ({ratio('shaw', 'gather', 2048, 'memory_ratio'):.1f} at",
        f"against a floor of {cost_floor('deberta', 1024, 768, 12):.2f}",
        f"floats ({skipped_gib:.0f} GiB at $n = 1024$)",
        " ".join(costs_report.bounds_table(data).split()),
        f"DeBERTa's clipped table costs {best['deberta']['time_ratio']:.2f} times",
        f"takes {profile['flex'] / profile['sdpa']:.2f} times the fused kernel's time",
        f"with c2p and p2c {profile['flex_c2p_p2c'] / profile['sdpa']:.2f} times",
        f"and {best['shaw']['time_ratio']:.2f} times plain attention's time",
        f"it costs {best['transformer_xl']['time_ratio']:.2f}.",
        f"of its forward: {best['fire']['time_ratio']:.2f} times plain attention",
        f"and {ratio('fire', 'gather', 2048):.0f} times on `gather`",
        f"twice as wide: {best['deberta-buckets']['time_ratio']:.2f}.",
        f"The stored run took {machine['wall_s'] / 60:.0f} minutes",
        f"under a load average of {min(loads):.1f} to {max(loads):.1f}",
    ]
