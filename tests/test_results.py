"""Committed results ship as package data and read back the same way everywhere."""

from __future__ import annotations

import json
import tomllib
from fnmatch import fnmatch
from pathlib import Path, PurePosixPath

import pytest

from relpos.book import bench, results

ROOT = Path(__file__).resolve().parent.parent


def test_every_committed_file_is_listed_and_readable():
    folder = ROOT / "relpos" / "book" / "results"
    suffixes = (".json", ".png", ".svg")
    on_disk = sorted(
        p.relative_to(folder).as_posix()
        for p in [*folder.iterdir(), *(q for sub in results.SUBFOLDERS
                                       if (folder / sub).is_dir()
                                       for q in (folder / sub).iterdir())]
        if p.suffix in suffixes
    )
    assert {"protocol/sweep.json", "first_pass/sweep.json"} <= set(on_disk)
    assert results.names() == on_disk
    for name in on_disk:
        assert results.path(name).read_bytes() == (folder / name).read_bytes()


def test_the_benchmark_reads_its_committed_json():
    data = bench.load_results(results.path("bench_cpu.json"))
    raw = json.loads((ROOT / "relpos/book/results/bench_cpu.json").read_text())
    assert data == results.load("bench_cpu.json") == raw
    assert {"machine", "config", "results"} <= set(data)


def test_package_data_covers_every_committed_suffix():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["relpos.book.results"]
    def covers(pattern: str, name: str) -> bool:  # setuptools: "*" stops at a "/"
        pattern_, name_ = PurePosixPath(pattern), PurePosixPath(name)
        return pattern_.parent == name_.parent and fnmatch(name_.name, pattern_.name)

    for name in results.names():
        assert any(covers(p, name) for p in patterns), name


@pytest.mark.parametrize("name", ["", "../pyproject.toml", "a/b/c.json", "a//b.json", None])
def test_path_rejects_what_is_not_a_file_name(name):
    with pytest.raises(ValueError, match="name must be a file name"):
        results.path(name)


def test_missing_result_lists_what_exists():
    with pytest.raises(FileNotFoundError, match="bench_cpu.json"):
        results.path("no_such_result.json")


def test_load_takes_json_only():
    with pytest.raises(ValueError, match="name must name a .json file"):
        results.load("figure.png")
