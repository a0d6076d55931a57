"""plot.score_landscape: the drawn lines are the schemes' contributions, by distance."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure
from transformers.models.t5.modeling_t5 import T5Attention

import relpos
from relpos import schemes
from relpos.book import plot

HIDDEN, HEADS, K = 32, 4, 8


def _contributions(distances: torch.Tensor) -> dict[str, torch.Tensor]:
    """Each scheme's contribution at ``distances`` (random weights, seeded)."""
    torch.manual_seed(0)
    attentions = {
        "Shaw": schemes.ShawSelfAttention(HIDDEN, HEADS, max_relative_positions=K),
        "Transformer-XL": schemes.TransformerXLSelfAttention(HIDDEN, HEADS),
        "T5": schemes.T5SelfAttention(HIDDEN, HEADS, num_buckets=16, max_distance=32),
        "ALiBi": schemes.AlibiSelfAttention(HIDDEN, HEADS),
        "RoPE": schemes.RotarySelfAttention(HIDDEN, HEADS),
    }
    query, key = torch.randn(HIDDEN), torch.randn(HIDDEN)
    out = {
        name: schemes.score_by_distance(attention, distances, query, key)
        for name, attention in attentions.items()
    }
    deberta = relpos.DisentangledSelfAttention(HIDDEN, HEADS, max_relative_positions=K)
    table = torch.randn(2 * K, HIDDEN)
    out["DeBERTa"] = schemes.score_by_distance(
        deberta, distances, query, key, rel_embeddings=table
    )
    return out


@pytest.fixture(scope="module")
def landscape():
    distances = torch.arange(-20, 21)
    contributions = _contributions(distances)
    return distances, contributions, plot.score_landscape(distances, contributions)


def test_every_head_of_every_scheme_is_drawn_at_its_distances(landscape) -> None:
    distances, contributions, fig = landscape
    for ax, (name, values) in zip(fig.axes, contributions.items()):
        assert ax.get_title() == name
        assert len(ax.lines) == HEADS
        for head, line in enumerate(ax.lines):
            np.testing.assert_array_equal(line.get_xdata(), distances.numpy())
            np.testing.assert_allclose(line.get_ydata(), values[head].double().numpy())


def test_axes_are_labelled_and_spare_panels_switched_off(landscape) -> None:
    _, contributions, fig = landscape
    used = fig.axes[: len(contributions)]
    for ax in used:
        assert ax.get_xlabel() == "distance $i - j$"
        assert ax.get_ylabel() == "added to the logit"
    assert len(fig.axes) == 8  # 6 schemes on a grid of 2 rows of 4
    assert all(not ax.axison for ax in fig.axes[len(contributions) :])
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == [f"head {h}" for h in range(HEADS)]


def test_drawn_data_show_each_scheme_shape(landscape) -> None:
    """What the figure is drawn to teach, read back from its lines."""
    distances, _, fig = landscape
    by_name = {ax.get_title(): np.array([ln.get_ydata() for ln in ax.lines])
               for ax in fig.axes if ax.lines}
    r = distances.numpy()
    slopes = np.array([1 / 4, 1 / 16, 1 / 64, 1 / 256])  # 2^(-8 m / 4), m = 1 .. 4
    alibi = -slopes[:, None] * np.abs(r)  # (h, m)
    np.testing.assert_allclose(by_name["ALiBi"], alibi, rtol=1e-6, atol=1e-6)
    # Clipped tables: flat beyond the window, different inside it.
    for name, ahead, behind in (("Shaw", -K, K), ("DeBERTa", -K, K - 1)):
        values = by_name[name]
        assert np.ptp(values[:, r <= ahead], axis=1).max() < 1e-6, name
        assert np.ptp(values[:, r >= behind], axis=1).max() < 1e-6, name
        inside = values[:, (r > ahead) & (r < behind)]
        assert np.abs(np.diff(inside, axis=1)).min() > 1e-6, name
    # T5: one value per bucket, T5's own buckets (it takes j - i, hence -r).
    buckets = T5Attention._relative_position_bucket(
        -distances, bidirectional=True, num_buckets=16, max_distance=32
    ).numpy()
    for bucket in np.unique(buckets):
        assert np.ptp(by_name["T5"][:, buckets == bucket], axis=1).max() < 1e-6
    assert len(np.unique(by_name["T5"][0].round(6))) == len(np.unique(buckets))
    # RoPE adds nothing at distance 0; Transformer-XL's sinusoid is never flat.
    np.testing.assert_allclose(by_name["RoPE"][:, r == 0], 0.0, atol=1e-6)
    assert np.abs(np.diff(by_name["Transformer-XL"], axis=1)).min() > 1e-6


def test_one_head_and_numpy_input() -> None:
    distances = np.arange(-3, 4)
    fig = plot.score_landscape(distances, {"ALiBi, head 0": -0.5 * np.abs(distances)},
                               columns=2)
    assert len(fig.axes) == 1
    np.testing.assert_array_equal(fig.axes[0].lines[0].get_ydata(),
                                  -0.5 * np.abs(distances))


def test_a_grid_of_columns() -> None:
    distances = torch.arange(5)
    values = {f"scheme {a}": torch.zeros(2, 5) for a in range(5)}
    fig = plot.score_landscape(distances, values, columns=2)
    assert len(fig.axes) == 6  # 3 rows of 2
    assert [ax.get_title() for ax in fig.axes[:5]] == list(values)


@pytest.mark.parametrize(
    ("distances", "contributions", "kwargs", "error", "match"),
    [
        (torch.arange(3.0), {"a": torch.zeros(1, 3)}, {}, TypeError, "distances"),
        (torch.tensor([2, 1, 0]), {"a": torch.zeros(1, 3)}, {}, ValueError,
         "increasing"),
        (torch.zeros(2, 2, dtype=torch.long), {"a": torch.zeros(1, 2)}, {}, ValueError,
         "1-D"),
        (torch.arange(3), {}, {}, TypeError, "contributions"),
        (torch.arange(3), [torch.zeros(1, 3)], {}, TypeError, "contributions"),
        (torch.arange(3), {"a": torch.zeros(1, 4)}, {}, ValueError,
         r"contributions\['a'\]"),
        (torch.arange(3), {"a": torch.zeros(1, 3)}, {"columns": 0}, ValueError,
         "columns"),
    ],
)
def test_bad_input_names_the_argument(distances, contributions, kwargs, error, match):
    with pytest.raises(error, match=match):
        plot.score_landscape(distances, contributions, **kwargs)


def test_all_lists_every_public_figure_function() -> None:
    """__all__ is the module's public functions, each annotated to return a Figure."""
    defined = {
        name
        for name, value in inspect.getmembers(plot, inspect.isfunction)
        if value.__module__.startswith(plot.__name__ + ".")  # its modules
        and not name.startswith("_")
    }
    assert "score_landscape" in defined
    assert sorted(plot.__all__) == sorted(defined)
    for name in plot.__all__:
        returns = inspect.signature(getattr(plot, name)).return_annotation
        assert returns in ("Figure", Figure), (name, returns)
