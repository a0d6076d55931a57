"""Chapter 3's interactive row similarities: drawn by Vega, compared with relpos."""

from __future__ import annotations

import json
import re

import pytest
import torch

import relpos
from relpos import RelativePositionEmbedding, row_cosine_similarity
from relpos.book import results
from relpos.book.interactive import evaluate, similarity_chart, similarity_figure, table

FIRST, SECOND = "distance i - j of the first row", "distance i - j of the second row"


@pytest.fixture(scope="module")
def chart():
    return similarity_chart()


@pytest.mark.parametrize("init", table.INITS)
@pytest.mark.parametrize("k", table.SPANS)
def test_every_drawn_cell_is_relpos_similarity(chart, init, k):
    cells = evaluate(chart, init=init, k=k)["similarity_marks"]
    weight = table.table_weight(init, k)
    expected = row_cosine_similarity(weight, k, range(-k, k)).double()
    assert len(cells) == (2 * k) ** 2
    pairs = {(int(c[FIRST]), int(c[SECOND])) for c in cells}
    assert pairs == {(a, b) for a in range(-k, k) for b in range(-k, k)}
    for cell in cells:
        a, b = int(cell[FIRST]), int(cell[SECOND])
        want = round(expected[a + k, b + k].item(), 3)
        assert cell["cosine similarity"] == pytest.approx(want, abs=1e-9), (a, b)


@pytest.mark.parametrize("k", table.SPANS)
def test_the_sliders_choose_the_cell_of_the_rows_delta_reads(chart, k):
    weight = table.table_weight("trained", k)
    expected = row_cosine_similarity(weight, k, range(-k, k)).double()
    for a, b in [(-16, 15), (-3, 2), (0, 1), (5, -9), (15, -16), (1, 1)]:
        drawn = evaluate(chart, init="trained", k=k, first=a, second=b)
        # the row a distance reads, as a distance again: delta(a) - k
        row_a, row_b = relpos.delta(a, k), relpos.delta(b, k)
        (cell,) = drawn["chosen_marks"]
        assert (cell[FIRST], cell[SECOND]) == (row_a - k, row_b - k), (k, a, b)
        want = round(expected[row_a, row_b].item(), 3)
        assert cell["cosine similarity"] == pytest.approx(want, abs=1e-9)
        (line,) = drawn["chosen_line_marks"]
        # d3's format writes U+2212 for the minus sign
        assert line["chosen"].replace("\u2212", "-") == (
            f"rows of distances {row_a - k} and {row_b - k}, "
            f"cosine similarity {want:.3f}"
        )


def test_the_fillings_look_as_chapter_3_says(chart):
    def near_and_far(init: str) -> tuple[float, float]:
        cells = evaluate(chart, init=init, k=16)["similarity_marks"]
        gap = {c[FIRST] - c[SECOND]: [] for c in cells}
        for c in cells:
            gap[c[FIRST] - c[SECOND]].append(abs(c["cosine similarity"]))
        near = sum(gap[1.0]) / len(gap[1.0])
        far = [x for g, xs in gap.items() if abs(g) >= 8 for x in xs]
        return near, sum(far) / len(far)

    random_near, random_far = near_and_far("normal")
    sin_near, sin_far = near_and_far("sinusoidal")
    assert random_near < 0.1 and random_far < 0.1
    assert sin_near > 0.9 and sin_near - sin_far > 0.2


def test_random_and_sinusoidal_tables_are_relpos_tables_and_keep_the_seed():
    torch.manual_seed(123)
    state = torch.get_rng_state()
    built = table.table_weight("normal", 4, 16)
    assert torch.equal(torch.get_rng_state(), state)
    torch.manual_seed(0)
    expected = RelativePositionEmbedding(4, 16, init="normal").weight.detach()
    assert torch.equal(built, expected)
    sinusoidal = RelativePositionEmbedding(4, 16, init="sinusoidal").weight.detach()
    assert torch.equal(table.table_weight("sinusoidal", 4, 16), sinusoidal)


def test_the_trained_tables_come_from_the_committed_file():
    data = results.load(table.TRAINED_FILE)
    assert data["training"]["task"] == "relative"
    assert sorted(map(int, data["tables"])) == list(table.SPANS)
    for k in table.SPANS:
        weight = table.table_weight("trained", k)
        assert weight.shape == (2 * k, 32)
        assert torch.equal(weight, torch.tensor(data["tables"][str(k)]["weight"]))


@pytest.mark.slow
def test_the_committed_trained_tables_regenerate():
    """One span retrained (each is its own seeded run, so one stands for all)."""
    committed = results.load(table.TRAINED_FILE)
    again = table.trained_tables([8])
    assert again["training"] == committed["training"]
    for k in [8]:
        ours, theirs = again["tables"][str(k)], committed["tables"][str(k)]
        assert ours["accuracy"] == pytest.approx(theirs["accuracy"], abs=0.02)
        torch.testing.assert_close(
            torch.tensor(ours["weight"]), torch.tensor(theirs["weight"]),
            atol=2e-3, rtol=0,
        )


def test_json_is_deterministic_named_and_small(chart):
    spec = chart.to_dict()
    assert spec == similarity_chart().to_dict()
    text = json.dumps(spec)
    assert not re.search(r"\b(param|view)_\d+", text)
    assert len(json.dumps(spec, separators=(",", ":"))) < 60_000
    assert spec["vconcat"][0]["width"] == spec["vconcat"][0]["height"] == 360
    assert [p["name"] for p in spec["params"]] == ["init", "k", "first", "second"]


def test_the_figure_holds_the_chart_and_a_still_of_its_own():
    figure = similarity_figure()
    assert figure.name == "table" and figure.png.startswith(b"\x89PNG")
    assert "relative task" in figure.alt and "relative task" in figure.hint
    assert figure.spec["description"] == figure.alt


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(spans=()), "spans"),
        (dict(spans=(2, 2)), "spans"),
        (dict(spans=(0, 2), k=2), "spans"),
        (dict(k=3), "k must be one of"),
        (dict(init="uniform"), "init"),
        (dict(hidden_size=7), "hidden_size"),
        (dict(size=5000), "size"),
    ],
)
def test_bad_input_names_the_argument(kwargs, match):
    with pytest.raises(ValueError, match=match):
        similarity_chart(**kwargs)


def test_table_weight_rejects_unknown_choices():
    with pytest.raises(ValueError, match="init"):
        table.table_weight("learned", 4)
    with pytest.raises(ValueError, match="k must be one of"):
        table.table_weight("trained", 5)
