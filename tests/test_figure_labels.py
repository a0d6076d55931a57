"""The figures of chapters 1 to 7 say what they show; the schematic draws its data.

Every axis has a label, every colour bar says what its colours mean, every
dashed or dotted line has a legend entry, and titles that hold math are mathtext.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

import relpos
from relpos.book import plot


def _scores() -> relpos.AttentionScores:
    module = relpos.DisentangledSelfAttention(8, 1, max_relative_positions=4)
    with torch.no_grad():
        x, table = torch.randn(1, 5, 8), torch.randn(8, 8)
        return module(x, rel_embeddings=table, return_scores=True)[1]


def _pencil() -> tuple[torch.Tensor, ...]:
    query = torch.tensor([[1, 0], [0, 1], [1, 1]])
    key = torch.tensor([[1, 1], [0, 1], [1, 0]])
    pos_query = torch.tensor([[1, 0], [0, 1], [-1, 0], [0, -1]])
    pos_key = torch.tensor([[0, 1], [1, 0], [0, -1], [-1, 1]])
    index = relpos.relative_position_index(3, max_relative_positions=2)
    return query, key, pos_query, pos_key, index


FIGURES = {
    "relative_position_matrix": lambda: plot.relative_position_matrix(6),
    "index_heatmap": lambda: plot.index_heatmap(8, 3),
    "row_similarity": lambda: plot.row_similarity(torch.randn(64, 16), 32),
    "score_heatmap": lambda: plot.score_heatmap(torch.randn(5, 5), title="$x W_q$"),
    "score_terms": lambda: plot.score_terms(_scores()),
    "log_buckets": lambda: plot.log_buckets(256, 512),
    "disentangled_streams": lambda: plot.disentangled_streams(*_pencil()),
}


@functools.cache
def drawn(name: str) -> Figure:
    """Each figure drawn once per session: the rules below only read it."""
    return FIGURES[name]()


def _colorbar_axes(fig: Figure) -> list:
    return [
        image.colorbar.ax for ax in fig.axes for image in ax.images if image.colorbar
    ]


def unlabelled(fig: Figure) -> list[str]:
    """What breaks the labelling rule: a colour bar or a drawn axis without a label."""
    bars = _colorbar_axes(fig)
    found = [
        f"colour bar {i}" for i, bar in enumerate(bars) if not bar.get_ylabel().strip()
    ]
    for i, ax in enumerate(fig.axes):
        if ax in bars or not ax.axison:
            continue
        if not (ax.get_xlabel().strip() and ax.get_ylabel().strip()):
            found.append(f"axes {i} {ax.get_title()!r}")
    return found


def dashed_lines_outside_the_legend(fig: Figure) -> list[str]:
    """Dashed or dotted lines with no legend entry (theirs or a same-styled line's)."""
    found = []
    for ax in fig.axes:
        _, labels = ax.get_legend_handles_labels()
        if labels and ax.get_legend() is None:
            found.append(f"{ax.get_title()!r}: labels but no legend drawn")
        for line in ax.lines:
            if line.get_linestyle() not in ("--", ":", "-."):
                continue
            same = [
                other.get_label()
                for other in ax.lines
                if other.get_linestyle() == line.get_linestyle()
                and other.get_color() == line.get_color()
            ]
            if not any(entry in labels for entry in same):
                found.append(f"{ax.get_title()!r}: {line.get_label()}")
    return found


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_every_axis_and_colour_bar_is_labelled(name):
    assert unlabelled(drawn(name)) == []


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_every_dashed_or_dotted_line_is_in_the_legend(name):
    assert dashed_lines_outside_the_legend(drawn(name)) == []


def test_the_rules_see_what_they_check():
    """Both rules find a planted fault, and the figures give them work to do."""
    fig = Figure()
    ax = fig.subplots()
    ax.imshow(np.eye(2))
    fig.colorbar(ax.images[0], ax=ax)
    ax.plot([0, 1], [0, 1], "--", label="a bound")
    ax.plot([0, 1], [1, 0], ":", label="_hidden")  # "_": kept out of any legend
    assert unlabelled(fig) == ["colour bar 0", "axes 0 ''"]
    assert dashed_lines_outside_the_legend(fig) == [
        "'': labels but no legend drawn", "'': _hidden"
    ]
    ax.legend()
    assert dashed_lines_outside_the_legend(fig) == ["'': _hidden"]
    figures = [drawn(name) for name in FIGURES]
    assert sum(len(_colorbar_axes(fig)) for fig in figures) >= 5
    dashed = [
        line
        for fig in figures
        for ax in fig.axes
        for line in ax.lines
        if line.get_linestyle() in ("--", ":", "-.")
    ]
    assert len(dashed) >= 1  # log_buckets marks its regions with dashed lines


def test_math_in_titles_is_mathtext():
    for name in ("relative_position_matrix", "index_heatmap", "disentangled_streams"):
        fig = drawn(name)
        titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
        assert any("$" in title for title in titles), (name, titles)
        for title in titles:
            assert "delta(" not in title.replace(r"\delta(", ""), (name, title)


def test_score_heatmap_shares_a_colour_scale_on_request():
    small, large = torch.ones(3, 3), 4 * torch.ones(3, 3)
    for matrix in (small, large):
        image = plot.score_heatmap(matrix, bound=5.0).axes[0].images[0]
        assert image.get_clim() == (-5.0, 5.0)
    assert plot.score_heatmap(large).axes[0].images[0].get_clim() == (-4.0, 4.0)
    with pytest.raises(ValueError, match="bound must be a positive number"):
        plot.score_heatmap(small, bound=0)


def test_streams_draw_the_pencil_example_and_frame_the_gathered_cells():
    query, key, pos_query, pos_key, index = _pencil()
    fig = plot.disentangled_streams(query, key, pos_query, pos_key, index)
    drawn = [np.asarray(ax.images[0].get_array()) for ax in fig.axes]
    # Worked by hand: k = 2, delta(i, j) = clamp(i - j, -2, 1) + 2;
    # c2p[i, j] = Q_i . Pk[delta(i, j)] and p2c[i, j] = K_j . Pq[delta(i, j)].
    assert index.tolist() == [[2, 1, 0], [3, 2, 1], [3, 3, 2]]
    query_rows = [[0, 1, 0, -1], [1, 0, -1, 1], [1, 1, -1, 0]]  # Q Pk^T, (i, r)
    key_rows = [[1, 1, -1, -1], [0, 1, 0, -1], [1, 0, -1, 0]]  # K Pq^T, (j, r)
    c2p = [[0, 1, 0], [1, -1, 0], [0, 0, -1]]
    p2c = [[-1, 1, 1], [-1, 0, 0], [-1, -1, -1]]
    c2c = [[1, 0, 1], [1, 1, 0], [2, 1, 1]]  # Q K^T
    expected = [query, key, c2c, pos_key, query_rows, c2p, pos_query, key_rows, p2c]
    assert len(drawn) == len(expected)
    for got, want in zip(drawn, expected):
        assert np.array_equal(got, np.asarray(want))

    def framed(ax) -> set[tuple[int, int]]:
        return {(round(p.get_y() + 0.5), round(p.get_x() + 0.5)) for p in ax.patches}

    # c2p reads row i at column delta(i, j); p2c reads row j at column delta(i, j).
    assert framed(fig.axes[4]) == {(0, 2), (0, 1), (0, 0), (1, 3), (1, 2), (1, 1),
                                   (2, 3), (2, 2)}
    assert framed(fig.axes[7]) == {(0, 2), (1, 1), (2, 0), (0, 3), (1, 2), (2, 1),
                                   (1, 3), (2, 2)}
    texts = [t.get_text() for t in fig.axes[5].texts]
    assert texts == ["0", "1", "0", "1", "-1", "0", "0", "0", "-1"]


def test_streams_refuse_mismatched_input():
    query, key, pos_query, pos_key, index = _pencil()
    with pytest.raises(ValueError, match="index must have shape"):
        plot.disentangled_streams(query, key, pos_query, pos_key, index[:2])
    with pytest.raises(ValueError, match="index must hold table rows"):
        plot.disentangled_streams(query, key, pos_query, pos_key, index + 4)
    with pytest.raises(ValueError, match="share their width"):
        plot.disentangled_streams(query, key, pos_query[:, :1], pos_key, index)
