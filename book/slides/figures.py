"""The decks' figures, drawn at build time by the book's own plot functions.

Each recipe rebuilds, small and seeded, the tensors a chapter draws, and returns the
Figure of the same ``relpos.book.plot`` function the chapter calls, so a slide and
its chapter share one source of truth. A deck names a recipe in an image link,
``![what the figure shows](figure:NAME)``; ``tools/build_slides.py`` draws it into
``_build/slides/figures/NAME.svg``.
"""

from __future__ import annotations

from typing import Callable

import torch
from matplotlib.figure import Figure

import relpos
from relpos.book import bench, plot, results
from relpos.book.interactive.landscape import chapter_landscape


def distance_matrix() -> Figure:
    """Chapter 2: the raw distances i - j of six tokens."""
    return plot.relative_position_matrix(6)


def _three_ahead() -> tuple[torch.Tensor, torch.Tensor]:
    """Chapter 1: one content vector at every position, absolute against relative."""
    torch.manual_seed(0)
    n, hidden, k = 12, 16, 16
    x = torch.randn(hidden)  # one content vector, shared by every token
    p = torch.randn(n, hidden)  # absolute table
    table = torch.randn(2 * k, hidden)  # relative table: one row per distance
    w_q = torch.randn(hidden, hidden) / hidden**0.5
    w_k = torch.randn(hidden, hidden) / hidden**0.5
    absolute = ((x + p) @ w_q) @ ((x + p) @ w_k).T  # (i, j)
    index = relpos.relative_position_index(n, max_relative_positions=k)  # (i, j)
    relative = (table @ w_k)[index] @ (x @ w_q)  # (i, j, hidden) @ (hidden,) -> (i, j)
    return absolute, relative


def absolute_scores() -> Figure:
    absolute, relative = _three_ahead()
    bound = max(absolute.abs().max().item(), relative.abs().max().item())
    return plot.score_heatmap(
        absolute, title=r"absolute: $(x + p_i)W_q \cdot (x + p_j)W_k$", bound=bound
    )


def relative_scores() -> Figure:
    absolute, relative = _three_ahead()
    bound = max(absolute.abs().max().item(), relative.abs().max().item())
    return plot.score_heatmap(
        relative, title=r"relative: $xW_q \cdot P[\delta(i - j)]W_k$", bound=bound
    )


def delta_index() -> Figure:
    """Chapter 2: delta on eight tokens with k = 3."""
    return plot.index_heatmap(8, 3)


def _tables() -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    k, hidden = 512, 768
    normal = relpos.RelativePositionEmbedding(k, hidden, init="normal")
    sinusoidal = relpos.RelativePositionEmbedding(k, hidden, init="sinusoidal")
    return normal.weight.detach(), sinusoidal.weight.detach()  # (2k, hidden)


def rows_random() -> Figure:
    """Chapter 3: cosine similarity of the table's rows, random init."""
    weight = _tables()[0]
    title = "random (normal) init"
    return plot.row_similarity(weight, 512, range(-16, 16), title=title)


def rows_sinusoidal() -> Figure:
    weight = _tables()[1]
    return plot.row_similarity(weight, 512, range(-16, 16), title="sinusoidal init")


def streams() -> Figure:
    """Chapter 4: the pencil-and-paper example as a content and a position stream."""
    q = torch.tensor([[1, 0], [0, 1], [1, 1]])  # (i, d)
    k = torch.tensor([[1, 1], [0, 1], [1, 0]])  # (j, d)
    pos_query = torch.tensor([[1, 0], [0, 1], [-1, 0], [0, -1]])  # (r, d)
    pos_key = torch.tensor([[0, 1], [1, 0], [0, -1], [-1, 1]])  # (r, d)
    index = relpos.relative_position_index(3, max_relative_positions=2)  # (i, j)
    return plot.disentangled_streams(q, k, pos_query, pos_key, index)


def score_terms() -> Figure:
    """Chapter 4: the module's three score terms and probabilities, five tokens."""
    torch.manual_seed(0)
    n, d, k = 5, 4, 3
    hidden_states = torch.randn(n, d, dtype=torch.float64)
    table = torch.randn(2 * k, d, dtype=torch.float64)
    attention = relpos.DisentangledSelfAttention(
        d, 1, max_relative_positions=k, own_table=False
    )
    attention = attention.double()
    with torch.no_grad():
        _, scores = attention(
            hidden_states[None], rel_embeddings=table, return_scores=True
        )
    return plot.score_terms(scores)


def benchmark() -> Figure:
    """Chapter 5: the stored CPU benchmark, time and memory against length."""
    return plot.benchmark(bench.load_results(results.path("bench_cpu.json")))


def clipped_index() -> Figure:
    """Chapter 6: delta on twelve tokens with k = 4, the saturated corners."""
    return plot.index_heatmap(12, 4)


def log_buckets() -> Figure:
    """Chapter 6: DeBERTa-v3's log buckets (256 buckets, reach 512)."""
    return plot.log_buckets(256, 512)


def landscape() -> Figure:
    """Chapter 8: what each scheme adds to one logit, against the distance."""
    return plot.score_landscape(*chapter_landscape())


def sweep() -> Figure:
    """Chapter 9: the encoder sweep, 512 training sequences, every test length."""
    return plot.accuracy_grid(results.load("protocol/sweep.json"), train_size=512)


def ablation() -> Figure:
    """Chapter 10: the seeds of DeBERTa's ablation on the relative task (protocol)."""
    data = results.load("protocol/sweep_ablation.json")
    return plot.seed_points(data, task="relative", schemes=data["grid"]["scheme"])


def band() -> Figure:
    """Chapter 10: band profiles of random and sinusoidal tables (protocol)."""
    data = results.load("protocol/sweep_band.json")
    return plot.band_profiles(data, schemes=["deberta", "deberta-sinusoidal"])


def causal() -> Figure:
    """Chapter 10: the causal decoders' sweep (protocol)."""
    data = results.load("protocol/sweep_causal.json")
    return plot.accuracy_grid(data, train_size=512)


def text_lengths() -> Figure:
    """Chapter 11: the causal byte models' bits per byte against the window."""
    protocol = results.load("text_causal_protocol.json")  # ten seeds, to 8L
    return plot.bits_by_length({"causal": protocol})


def tasks() -> Figure:
    """Chapter 13: the tasks whose answers move away, per token (protocol)."""
    return plot.accuracy_grid(results.load("protocol/sweep_tasks.json"), columns=2)


FIGURES: dict[str, Callable[[], Figure]] = {
    "distance_matrix": distance_matrix,
    "absolute_scores": absolute_scores,
    "relative_scores": relative_scores,
    "delta_index": delta_index,
    "rows_random": rows_random,
    "rows_sinusoidal": rows_sinusoidal,
    "streams": streams,
    "score_terms": score_terms,
    "benchmark": benchmark,
    "clipped_index": clipped_index,
    "log_buckets": log_buckets,
    "landscape": landscape,
    "sweep": sweep,
    "ablation": ablation,
    "band": band,
    "causal": causal,
    "text_lengths": text_lengths,
    "tasks": tasks,
}
