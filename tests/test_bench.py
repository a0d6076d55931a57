"""The benchmark harness (relpos.book.bench) on tiny shapes: schema, statuses, ratios, table, CLI.

These tests check the harness, not the speed: speed and memory goals are
ratios measured by a full benchmark run, never asserted here. flex is left out
because each of its compiles (in this process and in the memory subprocess)
takes tens of seconds; the full benchmark run exercises it.
"""

from __future__ import annotations

import json
import math

import pytest
import torch

from relpos.book import bench, results
from relpos.book.bench.config import MIB

TINY = dict(
    hidden=32, heads=4, max_relative_positions=8, position_buckets=4, matmul_size=128
)
# One length, large enough that every forward grows the resident set by whole pages
# (each backend's memory is measured in a fresh process: the fixture's cost; how
# the work grows with n is test_roofline.py's)
LENGTHS = (128,)
BACKENDS = ("transformers", "naive", "gather")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    path = tmp_path_factory.mktemp("bench") / "results.json"
    data = bench.run_benchmark(
        LENGTHS, BACKENDS, repeats=2, device="cpu", output=path, progress=None, **TINY
    )
    return data, path


@pytest.mark.slow
def test_results_follow_the_schema(run):
    # Presence, types and ranges: the FLOP formula and the fraction are checked
    # against torch's own count and a synthetic run in test_roofline.py.
    data, _ = run
    assert data["schema"] == 2
    for key in ("platform", "processor", "cpu_count", "torch", "transformers",
                "device", "device_name"):
        assert key in data["machine"], key
    matmul = data["machine"]["matmul"]
    assert (matmul["size"], matmul["dtype"]) == (128, "float32")
    assert matmul["device"] == "cpu"
    assert matmul["threads"] == data["machine"]["threads"] == torch.get_num_threads()
    assert len(matmul["runs_s"]) == 4  # repeats before the timings and again after them
    product_s = 2 * matmul["size"] ** 3 / matmul["flop_per_s"]  # one run's time
    assert min(matmul["runs_s"]) <= product_s <= max(matmul["runs_s"])
    assert data["machine"]["device"] == "cpu"
    assert data["machine"]["torch"] == torch.__version__
    config = data["config"]
    assert {k: config[k] for k in TINY} == TINY
    assert (config["dtype"], config["batch"], config["repeats"]) == ("float32", 1, 2)
    expected = [(b, n) for n in LENGTHS for b in BACKENDS]
    assert [(r["backend"], r["n"]) for r in data["results"]] == expected
    for row in data["results"]:
        assert set(bench.RESULT_KEYS) <= set(row), row
        assert row["status"] == "ok", row
        assert row["error"] is None and row["compile_s"] is None
        assert row["backward_s"] is None and row["backward_peak_bytes"] is None
        assert isinstance(row["forward_s"], float) and row["forward_s"] > 0
        runs = row["forward_runs_s"]
        assert len(runs) == 2 and min(runs) <= row["forward_s"] <= max(runs)
        # A small forward may fit in memory the process holds already (what the
        # allocator kept from earlier work): no growth of the resident set, 0 bytes.
        assert isinstance(row["peak_bytes"], int) and row["peak_bytes"] >= 0, row
        assert isinstance(row["flops"], int) and row["flops"] > 0, row
        fraction = row["roofline_fraction"]
        assert isinstance(fraction, float) and 0 < fraction < math.inf, row
    flops = {(r["backend"], r["n"]): r["flops"] for r in data["results"]}
    for n in LENGTHS:  # the same work whatever the backend
        assert len({flops[b, n] for b in BACKENDS}) == 1


@pytest.mark.slow
def test_written_file_reads_back_identically(run):
    data, path = run
    assert bench.load_results(path) == json.loads(json.dumps(data))


@pytest.mark.slow
def test_naive_needs_more_memory_than_gather_at_the_longer_length(run):
    # The per-pair table is (n, n, hidden): 32 times a (b, h, n, n) score tensor here.
    # (gather against transformers is not ordered at these sizes: at inference gather
    # takes its band and far fields, whose fixed buffers outweigh 128 x 128 scores.)
    data, _ = run
    peak = {r["backend"]: r["peak_bytes"] for r in data["results"] if r["n"] == LENGTHS[-1]}
    assert peak["naive"] > 2 * max(peak["transformers"], peak["gather"])


def _row(backend: str, n: int, forward_s, peak_bytes, backward_s=None,
         status: str = "ok") -> dict:
    return dict(backend=backend, n=n, forward_s=forward_s, backward_s=backward_s,
                peak_bytes=peak_bytes, status=status)


def test_ratios_are_one_for_the_reference():
    # Known numbers: forwards of 5, 1 and 2 s; peaks of 4, 8 and 1 MiB; fwd+bwd 10, 3 s.
    rows = [
        _row("transformers", 64, 5.0, 4 * MIB, backward_s=10.0),
        _row("gather", 64, 1.0, 8 * MIB, backward_s=3.0),
        _row("flex", 64, 2.0, 1 * MIB),
        _row("naive", 64, None, None, status="skipped"),
        _row("gather", 128, 4.0, 2 * MIB),  # no transformers row at this length
        _row("transformers", 256, None, 4 * MIB, status="oom"),  # failed timed
        _row("gather", 256, 4.0, 2 * MIB),  # its reference failed: no ratio
    ]
    table = bench.ratios({"results": rows})
    assert [(r["backend"], r["n"]) for r in table] == [(r["backend"], r["n"]) for r in rows]
    got = [(r["time_ratio"], r["memory_ratio"], r["backward_ratio"]) for r in table]
    assert got[:3] == [(1.0, 1.0, 1.0), (0.2, 2.0, 0.3), (0.4, 0.25, None)]
    assert got[3:] == [(None, None, None)] * 4


@pytest.mark.slow
def test_table_names_every_backend_and_length(run):
    data, _ = run
    text = bench.format_table(data)
    for backend in BACKENDS:
        assert backend in text
    lines = text.splitlines()
    assert all(len(line) <= 88 for line in lines)  # the book's column
    # the wrapped title, header, rule, then one line per result (a skip's reason
    # may wrap onto a further line)
    head = next(i for i, line in enumerate(lines) if line.split()[:2] == ["n", "backend"])
    rows = [line for line in lines[head + 2:] if line[:1] != " " or line.split()[0].isdigit()]
    assert len(rows) == len(data["results"])
    assert "roofline = GFLOP / forward s / matmul throughput" in " ".join(lines[:head])
    assert "roofline" in lines[head].split()
    for n in LENGTHS:
        assert any(line.split()[0] == str(n) for line in rows)
    assert "fwd+bwd" not in text  # no backward column when nothing was timed backward


def test_skips_are_recorded_with_their_reason():
    data = bench.run_benchmark(
        [32], ["transformers", "naive", "gather"], repeats=1, device="cpu", naive_max_length=16,
        max_memory_gb=1e-9, progress=None, **TINY,
    )
    rows = {r["backend"]: r for r in data["results"]}
    assert {r["status"] for r in rows.values()} == {"skipped"}
    assert "--naive-max-length 16" in rows["naive"]["note"]
    assert "--max-memory-gb" in rows["gather"]["note"]
    assert all(r["forward_s"] is None and r["peak_bytes"] is None for r in rows.values())
    assert all(v is None for r in bench.ratios(data) for k, v in r.items() if k.endswith("_ratio"))
    assert "--naive-max-length 16" in bench.format_table(data)


@pytest.fixture
def one_thread():
    """One torch thread, restored after: these tiny shapes run some ten times faster
    so on a busy machine (two threads wait on each other)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_a_failing_measurement_is_recorded_and_the_run_goes_on(monkeypatch, one_thread):
    # Deterministic whatever ran before in the process: the memory step is a fixed
    # row (measured in this process it reads the resident set's high-water mark,
    # which a long test session has already raised), and the one failure is the
    # fake's, raised at gather's first timed call (the warm-up is its first call).
    real_forward_fn = bench.forward_fn
    calls = []

    def forward_fn(backend, module, inputs):
        forward = real_forward_fn(backend, module, inputs)
        if backend != "gather":
            return forward

        def second_call_fails():  # the warm-up passes, the first timed round fails
            calls.append(1)
            if len(calls) == 2:
                raise RuntimeError(
                    "DefaultCPUAllocator: can't allocate memory: you tried to allocate "
                    "8 GB"
                )
            return forward()

        return second_call_fails

    def fixed_memory(backend, n, config):
        return {"peak_bytes": 4096, "backward_peak_bytes": None}

    monkeypatch.setattr(bench.measure, "memory_in_subprocess", fixed_memory)
    monkeypatch.setattr(bench.models, "forward_fn", forward_fn)
    data = bench.run_benchmark(
        [16], ["gather", "transformers"], repeats=3, device="cpu", progress=None, **TINY
    )
    gather, transformers = data["results"]
    assert len(calls) == 2  # the warm-up, then the failing round: gather was dropped
    # relpos' own record: the status it classified and the exception's type it named
    assert (gather["status"], gather["error"]) == (
        "oom", "RuntimeError: DefaultCPUAllocator: can't allocate memory: you tried to "
        "allocate 8 GB"
    )
    assert gather["forward_s"] is None and gather["peak_bytes"] == 4096
    assert transformers["status"] == "ok" and transformers["forward_s"] > 0
    assert len(transformers["forward_runs_s"]) == 3
    assert "oom" in bench.format_table(data)


@pytest.mark.slow
def test_backward_is_timed_and_measured(monkeypatch):
    def memory_in_process(backend, n, config):
        return bench.measure_memory(backend, n, config)

    monkeypatch.setattr(bench.measure, "memory_in_subprocess", memory_in_process)
    data = bench.run_benchmark(
        [64], ["transformers", "gather"], repeats=3, device="cpu", backward=True,
        progress=None, **TINY,
    )
    assert data["config"]["backward"] is True
    for row in data["results"]:
        assert row["status"] == "ok", row
        backward, runs = row["backward_s"], row["backward_runs_s"]
        assert isinstance(backward, float) and math.isfinite(backward), row
        assert len(runs) == 3 and min(runs) <= backward <= max(runs), row
        # Measured in this process here, where the heap reuses freed blocks: its
        # size is not comparable with the forward's, only its presence is checked.
        assert isinstance(row["backward_peak_bytes"], int), row
    assert bench.ratios(data)[0]["backward_ratio"] == 1.0
    assert "fwd+bwd s" in bench.format_table(data)


def test_failures_are_classified():
    assert bench.failure(MemoryError())[0] == "oom"
    assert bench.failure(torch.OutOfMemoryError("CUDA out of memory"))[0] == "oom"
    assert bench.failure(ValueError("bad shape\nmore")) == ("error", "ValueError: bad shape")
    # torch's and the C library's other wordings of a failed allocation
    for text in ("Could not allocate memory for Tensor SizesAndStrides!",
                 "DefaultCPUAllocator: not enough memory: you tried to allocate 8",
                 "[Errno 12] Cannot allocate memory"):
        assert bench.failure(RuntimeError(text))[0] == "oom", text


def test_direct_build_matches_from_transformers():
    # The memory subprocess builds relpos modules without transformers; they must be the same.
    config = bench.BenchConfig(**TINY)
    weights = bench.random_weights(config)
    reference = bench.build_module("transformers", config, weights)
    inputs = bench.make_inputs(config, 12)
    expected = reference(inputs["hidden_states"], inputs["pair_mask"], rel_embeddings=inputs["table"])[0]
    for backend in ("naive", "gather"):
        copied = bench.build_module(backend, config, weights, reference)
        direct = bench.build_module(backend, config, weights)
        assert not direct.training
        for (name, a), (_, b) in zip(copied.state_dict().items(), direct.state_dict().items()):
            assert torch.equal(a, b), name
        out = direct(
            inputs["hidden_states"], inputs["mask"], rel_embeddings=inputs["table"]
        )
        torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)


def test_estimates_cover_the_recorded_peaks():
    # The estimate decides what is skipped, so it must not fall below a peak that
    # the benchmark measured (the CPU run stored with the book), nor be wildly above it.
    data = bench.load_results(results.path("bench_cpu.json"))
    shape = {k: data["config"][k] for k in ("hidden", "heads", "max_relative_positions", "position_buckets")}
    config = bench.BenchConfig(**shape, dtype=data["config"]["dtype"], batch=data["config"]["batch"])
    rows = [row for row in data["results"] if row["status"] == "ok"]
    assert {row["backend"] for row in rows} == set(bench.BENCH_BACKENDS)
    for row in rows:
        estimate = bench.estimate_peak_bytes(row["backend"], row["n"], config)
        assert row["peak_bytes"] <= estimate <= 2 * row["peak_bytes"], row
    backward = bench.BenchConfig(backward=True)
    for backend in ("gather", "transformers"):  # gather's n x n path at n = 1024
        forward_only = bench.estimate_peak_bytes(backend, 1024, bench.BenchConfig())
        assert bench.estimate_peak_bytes(backend, 1024, backward) == 2 * forward_only
    # beyond 1.5 band widths a forward's windows are linear in n, a backward's not
    windowed = bench.estimate_peak_bytes("gather", 16384, bench.BenchConfig())
    assert windowed < bench.estimate_peak_bytes("gather", 16384, backward) / 20
    assert 3.5 < windowed / bench.estimate_peak_bytes("gather", 4096, config) < 4.5


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(backends=["nope"]), "backends must be drawn from"),
        (dict(backends=["gather", "gather"]), "without repeats"),
        (dict(lengths=[0]), "lengths entries must be an int >= 1"),
        (dict(dtype="float8"), "dtype must be one of"),
        (dict(device="tpu"), "device must be 'cpu' or 'cuda'"),
        (dict(hidden=30, heads=4), "hidden must be divisible by heads"),
    ],
)
def test_bad_arguments_are_rejected(kwargs, message):
    arguments = dict(lengths=[16], backends=["gather"], device="cpu", progress=None)
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=message):
        bench.run_benchmark(**arguments)


def test_load_results_rejects_other_schemas(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"schema": 0, "results": []}))
    with pytest.raises(ValueError, match=r"schema must be one of \(1, 2\)"):
        bench.load_results(path)
    incomplete = {"schema": 1, "machine": {}, "config": {}, "results": [{"backend": "gather"}]}
    path.write_text(json.dumps(incomplete))
    with pytest.raises(ValueError, match="lacks"):
        bench.load_results(path)


def test_load_results_wants_the_roofline_from_schema_2_on(tmp_path):
    data = results.load("bench_cpu.json")  # the CPU run stored with the book, schema 2
    assert data["schema"] == 2 and bench.load_results(results.path("bench_cpu.json"))
    path = tmp_path / "edited.json"
    no_matmul = json.loads(json.dumps(data))
    del no_matmul["machine"]["matmul"]
    path.write_text(json.dumps(no_matmul))
    with pytest.raises(ValueError, match="machine.matmul lacks"):
        bench.load_results(path)
    no_fraction = json.loads(json.dumps(data))
    del no_fraction["results"][1]["roofline_fraction"]
    path.write_text(json.dumps(no_fraction))
    with pytest.raises(ValueError, match=r"results\[1\] lacks \['roofline_fraction'\]"):
        bench.load_results(path)


def test_command_line_help_exits_cleanly(capsys):
    # In-process; test_cli.py runs the module from the shell.
    with pytest.raises(SystemExit) as stop:
        bench.main(["--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    options = ("--lengths", "--backends", "--naive-max-length", "--max-memory-gb",
               "--backward", "--matmul-size")
    for option in options:
        assert option in out
    assert "--_measure-memory" not in out


def test_command_line_rejects_unknown_backend():
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--backends", "gather,fast"])
    assert exit_info.value.code == 2


@pytest.mark.parametrize(
    "field, value, error",
    [
        ("repeats", 0, ValueError),
        ("repeats", 1.5, TypeError),
        ("batch", 0, ValueError),
        ("hidden", 0, ValueError),
        ("heads", 0, ValueError),
        ("heads", 5, ValueError),  # 768 is not divisible by 5
        ("max_relative_positions", 0, ValueError),
        ("position_buckets", 1, ValueError),
        ("position_buckets", -2, ValueError),
        ("position_buckets", 1024, ValueError),  # more buckets than max_relative_positions
        ("position_buckets", True, TypeError),
        ("dtype", "float8", ValueError),
        ("device", "tpu", ValueError),
        ("backward", 1, TypeError),
        ("naive_max_length", 0, ValueError),
        ("max_memory_gb", 0.0, ValueError),
        ("max_memory_gb", float("nan"), ValueError),
        ("max_memory_gb", "20", TypeError),
        ("seed", 0.5, TypeError),
        ("matmul_size", 0, ValueError),
    ],
)
def test_bench_config_rejects_every_bad_value_naming_it(field, value, error):
    named = "hidden" if field == "heads" and value == 5 else field
    with pytest.raises(error, match=rf"^{named} must"):
        bench.BenchConfig(**{field: value})


def test_bench_config_accepts_no_buckets_and_stores_floats():
    assert bench.BenchConfig(position_buckets=-1).span == 512
    assert bench.BenchConfig(position_buckets=0).span == 512
    assert bench.BenchConfig(max_memory_gb=20).max_memory_gb == 20.0
    assert isinstance(bench.BenchConfig(max_memory_gb=20).to_json()["max_memory_gb"], float)


def test_bench_config_wants_a_gpu_for_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="device='cuda' was asked for"):
        bench.BenchConfig(device="cuda")


def test_an_unwritable_output_stops_the_run_before_it_starts(monkeypatch, tmp_path):
    def started(config):
        raise AssertionError("the run started")

    monkeypatch.setattr(bench.run, "random_weights", started)
    (tmp_path / "a_file").write_text("")
    for output in (tmp_path, tmp_path / "a_file" / "out.json"):
        with pytest.raises(ValueError, match="^output"):
            bench.run_benchmark([16], ["gather"], device="cpu", progress=None,
                                output=output, **TINY)
