"""Figures of attention scores: one matrix, the terms of one head, terms by distance.

Chapters 1, 4 and 9: a score matrix as a heatmap, the c2c, c2p and p2c terms
of one head next to its probabilities, and every term averaged at each
distance ``i - j`` (what a trained model's heads learnt).

Shape legend:
    matrices drawn are ``(i, j)``: query position down, key position across
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from matplotlib.figure import Figure

from relpos.attention import AttentionScores

from ..experiments.measure import by_distance
from ._style import heatmap, to_numpy


def score_heatmap(
    matrix: torch.Tensor | np.ndarray,
    *,
    title: str = "",
    annotate: bool = False,
    fmt: str = "{:.2f}",
    bound: float | None = None,
    colorbar_label: str = "score",
) -> Figure:
    """One score matrix as a heatmap (diverging colours centred on zero).

    The colours run from ``-bound`` to ``bound``, by default the largest
    ``|entry|``; pass one ``bound`` to heatmaps that are compared side by side.

    Shapes:
        matrix: ``(i, j)``
    """
    data = to_numpy(matrix)
    if bound is None:
        bound = float(np.abs(data).max()) or 1.0
    elif isinstance(bound, bool) or not isinstance(bound, (int, float)) or bound <= 0:
        raise ValueError(f"bound must be a positive number or None, got {bound!r}")
    fig = Figure(figsize=(4.6, 4.0))
    ax = fig.subplots()
    heatmap(
        ax, data, cmap="RdBu_r", annotate=annotate, fmt=fmt, vmin=-bound, vmax=bound,
        colorbar_label=colorbar_label,
    )
    ax.set_title(title)
    fig.tight_layout()
    return fig


def _check_scores(scores: object) -> AttentionScores:
    if not isinstance(scores, AttentionScores):
        got = type(scores).__name__
        raise TypeError(f"scores must be an AttentionScores, got {got}")
    return scores


def score_terms(scores: AttentionScores, *, batch: int = 0, head: int = 0) -> Figure:
    """The c2c, c2p and p2c terms and the probabilities of one head, side by side.

    The three terms share one colour scale, so their sizes can be compared.
    Unused terms are drawn as an empty panel titled "not used".

    Shapes:
        scores.c2c, .c2p, .p2c, .probs: ``(b, h, i, j)``; each panel ``(i, j)``
    """
    scores = _check_scores(scores)
    terms = {"c2c": scores.c2c, "c2p": scores.c2p, "p2c": scores.p2c}
    used = {
        name: to_numpy(t[batch, head]) for name, t in terms.items() if t is not None
    }
    bound = max(float(np.abs(m).max()) for m in used.values()) or 1.0
    fig = Figure(figsize=(16, 3.9))
    axes = fig.subplots(1, 4)
    for ax, name in zip(axes[:3], terms):
        if name in used:
            heatmap(
                ax, used[name], cmap="RdBu_r", annotate=False, vmin=-bound, vmax=bound,
                colorbar_label="score, scaled by $1/\\sqrt{d\\,s}$",
            )
            ax.set_title(f"{name} (scaled)")
        else:
            ax.set_title(f"{name}: not used")
            ax.set_axis_off()
    heatmap(
        axes[3], to_numpy(scores.probs[batch, head]), cmap="Greens", annotate=False,
        vmin=0, colorbar_label="attention probability",
    )
    axes[3].set_title("softmax probabilities")
    fig.tight_layout()
    return fig


def terms_by_distance(scores: AttentionScores, *, batch: int = 0) -> Figure:
    """Each score term and the probabilities averaged at every distance ``i - j``.

    One panel per term in use (c2c, c2p, p2c) and one for the probabilities;
    one line per head. A term that depends only on the distance is a function
    of ``i - j``, and its line shows it whole; a head that learnt "look 3 back"
    puts its probability at distance 3. Feed it
    ``relpos.book.experiments.mean_scores(model, tokens)`` for a trained model.
    (What a scheme adds to the logit at each distance, from its weights alone,
    is ``relpos.schemes.score_by_distance``, drawn by ``score_landscape``.)

    Shapes:
        scores.c2c, .c2p, .p2c, .probs: ``(b, h, n, n)``
        each line: ``2n - 1`` points, distances ``-(n - 1) .. n - 1``
    """
    scores = _check_scores(scores)
    names = ("c2c", "c2p", "p2c", "probs")
    terms = [(name, term) for name, term in zip(names, scores) if term is not None]
    fig = Figure(figsize=(3.6 * len(terms), 3.4))
    axes = fig.subplots(1, len(terms), squeeze=False)[0]
    for ax, (name, term) in zip(axes, terms):
        distances, means = by_distance(term[batch].detach().cpu().double())
        for head, line in enumerate(means.numpy()):  # (h, 2n - 1)
            ax.plot(distances, line, label=f"head {head}")
        ax.set_xlabel("distance i - j")
        ax.set_ylabel("mean probability" if name == "probs" else "mean scaled score")
        ax.set_title("softmax probabilities" if name == "probs" else name)
        ax.grid(True, alpha=0.3)
    axes[-1].legend(fontsize=7)
    fig.tight_layout()
    return fig


def score_by_distance(scores: AttentionScores, *, batch: int = 0) -> Figure:
    """Deprecated name of :func:`terms_by_distance` (goes in relpos 0.3).

    The name meant two things: ``relpos.schemes.score_by_distance`` is what a
    scheme adds to a logit against ``i - j``; this figure is a model's score
    terms averaged by distance, now ``terms_by_distance``.

    Shapes:
        as :func:`terms_by_distance`
    """
    warnings.warn(
        "relpos.book.plot.score_by_distance is now relpos.book.plot."
        "terms_by_distance (relpos.schemes.score_by_distance is what a scheme adds "
        "to a logit); the old name goes in 0.3",
        DeprecationWarning,
        stacklevel=2,
    )
    return terms_by_distance(scores, batch=batch)


__all__ = ["score_by_distance", "score_heatmap", "score_terms", "terms_by_distance"]
