"""``python -m relpos.book.text``: the JSON records its corpus, resumes, refuses a mix.

In-process runs of the command on this interpreter's corpus (built once per
process), with tiny models: width 16, one layer, 5 steps, L = 8.
"""

from __future__ import annotations

import json
import platform

import pytest

from relpos.book.text.cli import main
from relpos.book.text.corpus import stdlib_corpus

TINY = [
    "--train-length", "8", "--eval-lengths", "8,32", "--eval-bytes", "97",
    "--steps", "5", "--batch-size", "4", "--hidden-size", "16", "--num-heads", "2",
    "--num-layers", "1", "--max-relative-positions", "4", "--position-buckets", "4",
    "--bucket-max-position", "16", "--t5-max-distance", "16", "--workers", "1",
    "--quiet",
]  # fmt: skip


def command(tmp_path, *extra):
    return [
        *TINY,
        "--output", str(tmp_path / "text.json"),
        "--runs-dir", str(tmp_path / "runs"),
        *extra,
    ]  # fmt: skip


@pytest.mark.slow
def test_the_json_records_the_corpus_and_a_rerun_trains_nothing(tmp_path, capsys):
    argv = command(
        tmp_path,
        "--setting", "causal,masked", "--schemes", "alibi", "--seeds", "0",
        "--learning-rates", "1e-3,1e-2", "--max-rates", "3",
    )  # fmt: skip
    result = main(argv)
    corpus = stdlib_corpus("docstrings")
    written = json.loads((tmp_path / "text.json").read_text())
    assert written["corpus"]["sha256"] == corpus.sha256
    assert written["corpus"]["bytes"] == corpus.size
    assert written["corpus"]["python"] == platform.python_version()
    assert written["config"]["corpus_sha256"] == corpus.sha256
    assert written["commands"][0].startswith("python -m relpos.book.text --train")
    assert {"processor", "cpu_count", "platform"} <= set(written["machine"])
    assert [(r["setting"], r["scheme"]) for r in written["runs"]] == [
        ("causal", "alibi"),
        ("masked", "alibi"),
    ]
    for run in written["runs"]:
        assert set(run["eval"]) == {"8", "32"}
        assert len(run["eval"]["32"]["per_position"]) == 32
    for cell in written["tuning"]["cells"]:
        assert 2 <= len(cell["rates"]) <= 3 and cell["chosen"] in cell["rates"]
        assert len(cell["valid_bpb"]) == len(cell["rates"])
    records = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert len(records) == 2 + len(written["tuning"]["runs"])
    assert "bits per byte" in capsys.readouterr().out

    again = main(argv)  # every record read back: the same numbers, no new record
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == records
    assert again["runs"] == result["runs"]
    assert again["summary"] == result["summary"]


@pytest.mark.slow
def test_a_second_scheme_is_added_and_another_corpus_is_refused(tmp_path, capsys):
    once = ["--seeds", "0", "--learning-rates", "1e-2"]
    main(command(tmp_path, "--schemes", "none", *once))
    added = main(command(tmp_path, "--schemes", "rotary", *once))
    assert added["grid"]["scheme"] == ["none", "rotary"]
    assert [r["scheme"] for r in added["runs"]] == ["none", "rotary"]
    assert len(added["commands"]) == 2
    assert {r["scheme"] for r in added["summary"]} == {"none", "rotary"}

    path = tmp_path / "text.json"
    mine = path.read_text()
    other = json.loads(mine)
    other["corpus"]["sha256"] = "0" * 64
    path.write_text(json.dumps(other))
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit:
        main(command(tmp_path, "--schemes", "alibi", "--learning-rates", "1e-2"))
    assert exit.value.code == 2
    error = capsys.readouterr().err
    assert "argument --output" in error and "another corpus" in error
    assert json.loads(path.read_text()) == other  # left as it was

    path.write_text(mine)
    with pytest.raises(SystemExit):  # the same corpus, another config
        main(command(tmp_path, "--schemes", "none", "--steps", "6"))
    error = capsys.readouterr().err
    assert "another config" in error and "steps" in error


def test_bad_flags_stop_before_training(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(command(tmp_path, "--setting", "encoder"))
    assert "--setting" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(command(tmp_path, "--hidden-size", "10", "--num-heads", "4"))
    assert "--hidden-size" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(command(tmp_path, "--seeds", "0", "--tune-seeds", "0"))
    assert "--tune-seeds" in capsys.readouterr().err
    assert not (tmp_path / "text.json").exists()
