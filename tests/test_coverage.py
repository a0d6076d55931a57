"""Coverage: the entries a test length reads that training never did, checked against
the gradients of the real model."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F

from relpos.book.experiments import (
    READERS,
    SCHEMES,
    Config,
    Entries,
    TinyModel,
    coverage,
    coverage_table,
    get_task,
    gradient_rows,
    register_reader,
)
from relpos.book.experiments.coverage import (
    COVERAGE_FIELDS,
    read_entries,
    read_pairs,
    scored_positions,
)
from relpos.schemes.t5 import t5_bucket

L = 32
TEST_LENGTH = 256
SETTINGS = ("encoder", "causal")
#: Schemes being added on other branches; each must have a reader already.
COMING = (
    "deberta-emd",
    "deberta-c2p",
    "deberta-p2c",
    "deberta-no-norm",
    "deberta-separate-keys",
    "deberta-sinusoidal",
    "shaw-keys",
)


def _config(scheme: str, setting: str = "encoder", **changes: object) -> Config:
    return Config(scheme=scheme, setting=setting, test_lengths=(L, TEST_LENGTH),
                  **changes)


def _model(config: Config) -> TinyModel:
    torch.manual_seed(0)
    return TinyModel(config)


def _is_causal(model: TinyModel, n: int = 8) -> bool:
    """Whether the model's output before the last position ignores the last token."""
    tokens = torch.randint(16, (2, n), generator=torch.Generator().manual_seed(1))
    changed = tokens.clone()
    changed[:, -1] = (changed[:, -1] + 1) % 16
    with torch.no_grad():
        return torch.equal(model(tokens)[:, :-1], model(changed)[:, :-1])


def _rows_with_gradient(config: Config, n: int) -> dict[str, set[int]]:
    """One forward/backward of the real model on 4 sequences of length n: per table,
    the rows with a nonzero gradient."""
    model = _model(config)
    if config.causal and not _is_causal(model):
        pytest.skip("TinyModel has no causal setting on this branch yet")
    task = get_task(config.task)
    tokens, labels = task.sample(4, n, seed=7)
    logits = model(tokens)  # (b, n, classes)
    F.cross_entropy(logits.flatten(0, 1), labels.flatten()).backward()
    tables = {e.table for e in read_entries(config, n).values() if e.learned}
    return {table: gradient_rows(model, table) for table in tables}


def test_every_registered_scheme_has_a_reader() -> None:
    missing = [name for name in SCHEMES if name not in READERS]
    assert not missing, f"schemes without a coverage reader: {missing}"
    assert all(name in READERS for name in COMING)


@pytest.mark.parametrize("setting", SETTINGS)
@pytest.mark.parametrize("scheme", list(SCHEMES) + [n for n in COMING
                                                   if n not in SCHEMES])
def test_trained_entries_are_the_rows_with_gradient(scheme: str, setting: str) -> None:
    """At L the rows with gradient are the trained ones; at a test length they are
    trained and unseen together. A scheme still to come fails here once it is
    registered, if its reader is wrong."""
    if scheme not in SCHEMES:
        assert scheme in READERS  # a reader waits for it
        return
    config = _config(scheme, setting)
    for n in (L, TEST_LENGTH):
        found = coverage(config, n)
        grads = _rows_with_gradient(config, n)
        entries = read_entries(config, n)
        for table, rows in grads.items():
            kinds = [k for k, e in entries.items() if e.learned and e.table == table]
            trained = set().union(*(found.kinds[k].trained for k in kinds))
            unseen = set().union(*(found.kinds[k].unseen for k in kinds))
            expected = trained if n == L else trained | unseen
            if config.position_range is not None:
                # randomised positions: training may read every row up to P; one
                # pass at positions 0 .. n - 1 reads some of them
                assert rows <= expected, (scheme, setting, n, table)
                continue
            assert rows == expected, (scheme, setting, n, table)
            if n == L:
                assert not unseen
        for kind, c in found.kinds.items():
            assert set(c.unseen) == set(c.read) - set(c.trained)
            assert c.learned == entries[kind].learned


def test_fixed_kinds_have_no_table_and_the_none_scheme_reads_nothing() -> None:
    assert read_entries(_config("none"), 8) == {}
    for scheme in ("sinusoidal", "transformer_xl", "alibi", "rotary"):
        entries = read_entries(_config(scheme), 8)
        assert entries and all(not e.learned and e.table is None
                               for e in entries.values())


def test_deberta_buckets_row_0_is_unseen_and_touches_queries_with_a_key_64_ahead(
) -> None:
    config = _config("deberta-buckets")
    assert all(not c.unseen for c in coverage(config, 64).kinds.values())
    found = coverage(config, TEST_LENGTH)
    scored = scored_positions(config, TEST_LENGTH)
    far_ahead = torch.arange(TEST_LENGTH) + 64 <= TEST_LENGTH - 1  # a key i - j <= -64
    expected = int((scored & far_ahead).sum()) / int(scored.sum())
    for kind in ("c2p row", "p2c row"):
        assert found.kinds[kind].unseen == (0,)
        assert found.kinds[kind].touched == pytest.approx(expected)
    assert found.untrained_touched == pytest.approx(expected)
    assert 0 < found.kinds["c2p row"].pair_fraction < expected


def test_t5_buckets_past_the_training_length_are_unseen_until_max_distance_is_L(
) -> None:
    wide = _config("t5", t5_max_distance=64)
    assert coverage(wide, L).kinds["bucket"].unseen == ()
    found = coverage(wide, TEST_LENGTH).kinds["bucket"]
    assert found.unseen == (7, 15) and found.learned and found.touched == 1.0
    # The retrained observation: buckets 7, 8 and 15 keep their start.
    assert _rows_with_gradient(wide, L)["position_bias.embedding.weight"] == (
        set(range(16)) - {7, 8, 15}
    )
    for setting in SETTINGS:
        fitted = _config("t5", setting)  # t5_max_distance = 32 = L
        for n in (64, 128, TEST_LENGTH):
            assert coverage(fitted, n).kinds["bucket"].unseen == ()


@pytest.mark.parametrize("setting", SETTINGS)
def test_clipped_tables_have_no_unseen_row_at_any_length(setting: str) -> None:
    for scheme in ("deberta", "shaw"):
        for n in (L, 64, 128, TEST_LENGTH, 300):
            found = coverage(_config(scheme, setting), n)
            assert all(not c.unseen for c in found.kinds.values()), (scheme, n)
            assert found.untrained_touched == 0 == found.unseen_touched


def test_absolute_rows_past_L_are_unseen_and_touch_every_query_in_an_encoder() -> None:
    found = coverage(_config("absolute"), TEST_LENGTH)
    for kind in ("query row", "key row"):
        assert found.kinds[kind].unseen == tuple(range(L, TEST_LENGTH))
    assert found.untrained_touched == 1.0  # every query has a key at L or beyond
    causal = coverage(_config("absolute", "causal"), TEST_LENGTH)
    scored = scored_positions(causal_config := _config("absolute", "causal"),
                              TEST_LENGTH)
    late = torch.arange(TEST_LENGTH) >= L
    assert causal_config.causal
    assert causal.untrained_touched == pytest.approx(
        int((scored & late).sum()) / int(scored.sum())
    )


def test_fixed_formulas_met_only_at_test_count_as_unseen_but_not_untrained() -> None:
    found = coverage(_config("alibi"), TEST_LENGTH)
    assert found.kinds["distance"].unseen == tuple(range(L, TEST_LENGTH))
    assert found.untrained_touched == 0.0 and found.unseen_touched == 1.0
    causal = coverage(_config("transformer_xl", "causal"), TEST_LENGTH)
    assert causal.kinds["distance"].trained == tuple(range(L))
    encoder = coverage(_config("rotary"), L)
    assert encoder.kinds["distance"].trained == tuple(range(1 - L, L))


def test_pairs_and_scored_positions_follow_the_setting_and_the_task() -> None:
    assert int(read_pairs(_config("deberta"), 5).sum()) == 25
    assert torch.equal(read_pairs(_config("deberta", "causal"), 5),
                       torch.ones(5, 5, dtype=torch.bool).tril())
    assert scored_positions(_config("deberta"), 8).tolist() == [False] * 3 + [True] * 5
    far = Config(task="far", test_lengths=(32,))
    assert int(scored_positions(far, 32).sum()) == 20
    absolute = Config(task="absolute", test_lengths=(32,))
    assert bool(scored_positions(absolute, 32).all())


def test_coverage_is_json_ready_and_the_table_has_the_sweep_fields() -> None:
    config = _config("deberta-buckets")
    text = json.dumps(coverage(config, TEST_LENGTH).to_dict())
    back = json.loads(text)
    assert back["kinds"]["c2p row"]["unseen"] == [0]
    rows = coverage_table(config)
    assert [tuple(row) for row in rows] == [COVERAGE_FIELDS] * 4
    assert [row["length"] for row in rows] == [L, L, TEST_LENGTH, TEST_LENGTH]
    assert rows[-1]["unseen"] == [0] and rows[0]["unseen"] == []
    json.dumps(rows)
    assert coverage_table(_config("none")) == []


def test_bad_input_names_the_argument() -> None:
    with pytest.raises(TypeError, match="config"):
        coverage("deberta", 32)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="length"):
        coverage(_config("deberta"), 0)
    with pytest.raises(ValueError, match="already has a reader"):
        register_reader("deberta", READERS["deberta"])
    with pytest.raises(TypeError, match="reader"):
        register_reader("my-scheme", "not a function")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="index"):
        Entries(torch.zeros(2, 3, dtype=torch.long), False)
    with pytest.raises(TypeError, match="table"):
        Entries(torch.zeros(2, 2, dtype=torch.long), True)
    model = _model(_config("deberta"))
    with pytest.raises(ValueError, match="table"):
        gradient_rows(model, "no_such_table")


def test_a_scheme_without_reader_is_an_error(monkeypatch) -> None:
    monkeypatch.delitem(READERS, "deberta")
    with pytest.raises(ValueError, match="coverage reader"):
        coverage(_config("deberta"), 32)


def test_a_table_is_found_by_name_or_by_module_class() -> None:
    from relpos.book.experiments.coverage import table_parameters

    model = _model(_config("absolute"))
    by_name = table_parameters(model, "input_positions.weight")
    by_class = table_parameters(model, ":LearnedPositions.weight")
    assert len(by_name) == 1 and by_name[0] is by_class[0]
    with pytest.raises(ValueError, match="table"):
        table_parameters(model, "encoder:LearnedPositions.weight")  # none there
    shaw = _model(_config("shaw", num_layers=2))
    assert len(table_parameters(shaw, "key_table")) == 2


@pytest.mark.parametrize("setting", SETTINGS)
def test_readers_index_every_pair_as_the_modules_do(setting: str) -> None:
    """Pair by pair, not only as sets: the reader's row of (i, j) is the module's."""
    n = 40
    positions = torch.arange(n)
    for scheme in ("deberta", "deberta-buckets", "shaw", "t5"):
        config = _config(scheme, setting, t5_max_distance=64)
        model = _model(config)
        if config.causal and not _is_causal(model):
            pytest.skip("TinyModel has no causal setting on this branch yet")
        entries = read_entries(config, n)
        attention = model.encoder.layers[0].attention
        if scheme.startswith("deberta"):
            module_rows = attention.position_index(n)
            kinds = ("c2p row", "p2c row")
        elif scheme == "shaw":
            module_rows = attention.table_index(positions, positions)
            kinds = ("shaw key row", "shaw value row")
        else:
            bias = attention.position_bias
            rel = positions[:, None] - positions[None, :]  # (i, j)
            module_rows = t5_bucket(
                rel,
                num_buckets=bias.num_buckets,
                max_distance=bias.max_distance,
                bidirectional=bias.bidirectional,
            )
            kinds = ("bucket",)
        pairs = read_pairs(config, n)
        for kind in kinds:
            assert torch.equal(entries[kind].index[pairs], module_rows[pairs]), (
                scheme, kind
            )
