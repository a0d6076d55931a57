"""The figures of chapters 1 to 7 say what they show; the schematic draws its data.

Every axis has a label, every colour bar says what its colours mean, every
dashed or dotted line has a legend entry, and titles that hold math are mathtext.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

import relpos
from relpos.book import plot


def _scores() -> relpos.AttentionScores:
    module = relpos.DisentangledSelfAttention(8, 1, max_relative_positions=4)
    with torch.no_grad():
        return module(torch.randn(1, 5, 8), torch.randn(8, 8), return_scores=True)[1]


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


def _colorbar_axes(fig: Figure) -> list:
    return [
        image.colorbar.ax for ax in fig.axes for image in ax.images if image.colorbar
    ]


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_every_axis_and_colour_bar_is_labelled(name):
    fig = FIGURES[name]()
    bars = _colorbar_axes(fig)
    for bar in bars:
        assert bar.get_ylabel().strip(), f"{name}: a colour bar without a label"
    for ax in fig.axes:
        if ax in bars or not ax.axison:
            continue
        assert ax.get_xlabel().strip() and ax.get_ylabel().strip(), (
            name,
            ax.get_title(),
        )


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_every_dashed_or_dotted_line_is_in_the_legend(name):
    fig = FIGURES[name]()
    for ax in fig.axes:
        _, labels = ax.get_legend_handles_labels()
        for line in ax.lines:
            if line.get_linestyle() in ("--", ":", "-."):
                label = line.get_label()
                same = [
                    other.get_label()
                    for other in ax.lines
                    if other.get_linestyle() == line.get_linestyle()
                    and other.get_color() == line.get_color()
                ]
                assert any(entry in labels for entry in same + [label]), (name, label)
        if labels:
            assert ax.get_legend() is not None, f"{name}: labels but no legend drawn"


def test_math_in_titles_is_mathtext():
    for name in ("relative_position_matrix", "index_heatmap", "disentangled_streams"):
        fig = FIGURES[name]()
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
    drawn = [ax.images[0].get_array() for ax in fig.axes]
    c2p = relpos.content_to_position(query[None, None], pos_key[None], index)[0, 0]
    p2c = relpos.position_to_content(key[None, None], pos_query[None], index)[0, 0]
    expected = [
        query,
        key,
        query @ key.T,
        pos_key,
        query @ pos_key.T,
        c2p,
        pos_query,
        key @ pos_query.T,
        p2c,
    ]
    for got, want in zip(drawn, expected):
        assert np.array_equal(np.asarray(got), want.numpy())

    def framed(ax) -> set[tuple[int, int]]:
        return {(round(p.get_y() + 0.5), round(p.get_x() + 0.5)) for p in ax.patches}

    pairs = [(i, j) for i in range(3) for j in range(3)]
    assert framed(fig.axes[4]) == {(i, int(index[i, j])) for i, j in pairs}
    assert framed(fig.axes[7]) == {(j, int(index[i, j])) for i, j in pairs}
    texts = [t.get_text() for t in fig.axes[5].texts]
    assert texts == [f"{v:g}" for v in c2p.flatten().tolist()]


def test_streams_refuse_mismatched_input():
    query, key, pos_query, pos_key, index = _pencil()
    with pytest.raises(ValueError, match="index must have shape"):
        plot.disentangled_streams(query, key, pos_query, pos_key, index[:2])
    with pytest.raises(ValueError, match="index must hold table rows"):
        plot.disentangled_streams(query, key, pos_query, pos_key, index + 4)
    with pytest.raises(ValueError, match="share their width"):
        plot.disentangled_streams(query, key, pos_query[:, :1], pos_key, index)
