"""Chapter 4's interactive streams: the maps equal relpos, the gather outlines delta."""

from __future__ import annotations

import json
import math
import re

import pytest
import torch

import relpos
from relpos.book.interactive import evaluate, gather_chart, gather_figure
from relpos.book.interactive.streams import stream_values


def pencil():
    """The pencil-and-paper example of chapter 4: n = 3, k = 2."""
    Q = torch.tensor([[1, 0], [0, 1], [1, 1]])
    K = torch.tensor([[1, 1], [0, 1], [1, 0]])
    Pq = torch.tensor([[1, 0], [0, 1], [-1, 0], [0, -1]])
    Pk = torch.tensor([[0, 1], [1, 0], [0, -1], [-1, 1]])
    return Q, K, Pq, Pk, relpos.relative_position_index(3, max_relative_positions=2), 2


def tiny():
    """The tiny example of chapter 4: n = 5, d = 4, k = 3, float64."""
    g = torch.Generator().manual_seed(0)
    n, d, k = 5, 4, 3
    H = torch.randn(n, d, dtype=torch.float64, generator=g)
    P = torch.randn(2 * k, d, dtype=torch.float64, generator=g)
    W_q, W_k = torch.randn(2, d, d, dtype=torch.float64, generator=g) / math.sqrt(d)
    index = relpos.relative_position_index(n, max_relative_positions=k)
    return H @ W_q, H @ W_k, P @ W_q, P @ W_k, index, k


EXAMPLES = {"pencil": pencil, "tiny": tiny}


@pytest.fixture(scope="module", params=list(EXAMPLES))
def example(request):
    Q, K, Pq, Pk, index, k = EXAMPLES[request.param]()
    return Q, K, Pq, Pk, index, k, gather_chart(Q, K, Pq, Pk, index)


def test_the_values_are_relpos_score_terms(example):
    Q, K, Pq, Pk, index, k, _ = example
    values = stream_values(Q, K, Pq, Pk, index)
    q, key, pq, pk = (m.double() for m in (Q, K, Pq, Pk))
    all_rows = q @ pk.T  # (i, r)
    key_rows = key @ pq.T  # (j, r)
    torch.testing.assert_close(values["c2c"], q @ key.T)
    torch.testing.assert_close(values["c2p"], all_rows.gather(1, index))
    torch.testing.assert_close(values["p2c"], key_rows.gather(1, index.T).T)
    torch.testing.assert_close(
        values["c2p"], relpos.content_to_position(q[None, None], pk[None], index)[0, 0]
    )
    torch.testing.assert_close(
        values["p2c"],
        relpos.position_to_content(key[None, None], pq[None], index)[0, 0],
    )


def test_every_drawn_cell_holds_its_relpos_value(example):
    Q, K, Pq, Pk, index, k, chart = example
    values = stream_values(Q, K, Pq, Pk, index)
    drawn = evaluate(chart)
    n, rows = index.shape[0], 2 * k
    for term in ("c2c", "c2p", "p2c"):
        cells = drawn[f"{term}_cells_marks"]
        assert len(cells) == n * n
        for cell in cells:
            i, j = int(cell["query i"]), int(cell["key j"])
            assert cell["table row r"] == index[i, j].item()
            assert cell["distance i - j"] == i - j
            assert cell[term] == pytest.approx(values[term][i, j].item(), abs=1e-4)
    for mark, full, label, who in (
        ("qpk_cells_marks", "query_rows", "Q Pkᵀ", "query i"),
        ("kpq_cells_marks", "key_rows", "K Pqᵀ", "key j"),
    ):
        cells = drawn[mark]
        assert len(cells) == n * rows
        for cell in cells:
            a, r = int(cell[who]), int(cell["table row r"])
            assert cell[label] == pytest.approx(values[full][a, r].item(), abs=1e-4)


def _picks(drawn):
    return {
        name: [(int(c["query i"]), int(c["key j"]), int(c["table row r"]))
               for c in drawn[f"{name}_pick_marks"]]
        for name in ("c2c", "c2p", "p2c", "qpk", "kpq")
    }


def test_choosing_a_pair_outlines_the_row_delta_reads(example):
    Q, K, Pq, Pk, index, k, chart = example
    values = stream_values(Q, K, Pq, Pk, index)
    n = index.shape[0]
    for i in range(n):
        for j in range(n):
            drawn = evaluate(chart, query=i, key=j)
            row = relpos.delta(i - j, k)
            # one outline per panel, on the pair and on table row delta(i, j)
            assert all(p == [(i, j, row)] for p in _picks(drawn).values()), (i, j)
            lines = [c["gather"] for c in drawn["gather_lines_marks"]]
            c2p = values["query_rows"][i, row].item()
            assert c2p == pytest.approx(values["c2p"][i, j].item())
            assert lines[1].startswith(f"c2p[{i}, {j}] = (Q Pkᵀ)[{i}, {row}] = ")
            assert float(lines[1].split(" = ")[2].split(",")[0]) == pytest.approx(
                c2p, abs=1e-4
            )
            assert f"r = delta({i}, {j}) = {row}" in lines[1]
            assert lines[2].startswith(f"p2c[{i}, {j}] = (K Pqᵀ)[{j}, {row}] = ")
            p2c = float(lines[2].split(" = ")[2].split(",")[0])
            assert p2c == pytest.approx(values["p2c"][i, j].item(), abs=1e-4)


def test_a_hovered_cell_wins_over_the_sliders(example):
    Q, K, Pq, Pk, index, k, chart = example
    drawn = evaluate(chart, query=0, key=0, pair=[{"i": 1, "j": 0}])
    row = relpos.delta(1, k)
    assert all(p == [(1, 0, row)] for p in _picks(drawn).values())
    # with nothing hovered, the sliders choose
    drawn = evaluate(chart, query=0, key=1)
    assert all(p == [(0, 1, relpos.delta(-1, k))] for p in _picks(drawn).values())


def test_json_is_deterministic_named_and_small(example):
    Q, K, Pq, Pk, index, k, chart = example
    spec = chart.to_dict()
    assert spec == gather_chart(Q, K, Pq, Pk, index).to_dict()
    text = json.dumps(spec)
    assert not re.search(r"\b(param|view)_\d+", text)
    assert len(json.dumps(spec, separators=(",", ":"))) < 40_000
    names = [p["name"] for p in spec["params"]]
    assert names == ["pair", "query", "key", "chosen_i", "chosen_j"]


def test_the_figure_keeps_the_streams_still():
    Q, K, Pq, Pk, index, _ = pencil()
    figure = gather_figure(Q, K, Pq, Pk, index)
    assert figure.name == "gather" and figure.png.startswith(b"\x89PNG")
    assert "delta(2, 0)" in figure.alt and "query i" in figure.hint


def test_numpy_inputs_are_accepted():
    Q, K, Pq, Pk, index, _ = pencil()
    chart = gather_chart(*(m.numpy() for m in (Q, K, Pq, Pk, index)))
    assert chart.to_dict() == gather_chart(Q, K, Pq, Pk, index).to_dict()


@pytest.mark.parametrize(
    "change, error, match",
    [
        (dict(query=[[1, 0]]), TypeError, "query must be a tensor"),
        (dict(key=torch.ones(2, 2)), ValueError, "same 1 ... 8 tokens"),
        (dict(pos_key=torch.ones(3, 2)), ValueError, "pos_query and pos_key"),
        (dict(pos_query=torch.ones(4, 3), pos_key=torch.ones(4, 3)), ValueError,
         "width"),
        (dict(index=torch.full((3, 3), 4)), ValueError, "index must be"),
        (dict(index=torch.zeros(3, 3)), ValueError, "integer"),
        (dict(index=torch.zeros(3)), ValueError, "index must be 2-D"),
    ],
)
def test_bad_input_names_the_argument(change, error, match):
    Q, K, Pq, Pk, index, _ = pencil()
    args = dict(query=Q, key=K, pos_query=Pq, pos_key=Pk, index=index) | change
    with pytest.raises(error, match=match):
        gather_chart(**args)


@pytest.mark.parametrize("pair", [(3, 0), (0, -1), (1,), [1, 1], (1.0, 0)])
def test_bad_starting_pair(pair):
    Q, K, Pq, Pk, index, _ = pencil()
    with pytest.raises(ValueError, match="pair must be"):
        gather_chart(Q, K, Pq, Pk, index, pair=pair)
