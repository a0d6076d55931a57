"""What a trained model is measured by: accuracy per length, and its learned positions.

- :func:`evaluate`: accuracy at every test length (length generalisation), on
  test sequences seeded by ``(seed, task, length)`` so every scheme of a sweep
  is tested on the same sequences; ``evaluate(..., metric=exact_match)`` the
  share of test sequences whose every scored position is right. A run with
  randomised positions is measured with them too (``evaluation_positions``).
- :func:`table_similarity` and :func:`band_profile`: the cosine similarity of
  the rows of a relative table (as the attention reads it, after its
  LayerNorm), and its mean along each diagonal: a *band* shows as similarity
  that falls with the distance between rows.
- :func:`mean_scores` and :func:`by_distance`: the first layer's c2c, c2p, p2c
  terms and probabilities averaged over a batch, and each term's mean at
  every distance ``i - j``: the learned position pattern.

Shape legend:
    tokens, labels: ``(b, n)``; similarity: ``(2 * span, 2 * span)``
    profiles by distance: ``(h, 2n - 1)``
"""

from __future__ import annotations

from typing import Callable

import torch

from relpos.attention import AttentionScores
from relpos.embedding import row_cosine_similarity
from .config import Config, data_seed
from .emd import EnhancedMaskDecoder
from .model import TinyModel
from .randomised import evaluation_positions
from .tasks import Task, get_task

Metric = Callable[[TinyModel, Task, torch.Tensor, torch.Tensor], float]


@torch.no_grad()
def predict(model: TinyModel, tokens: torch.Tensor) -> torch.Tensor:
    """The top class at every position, in evaluation mode.

    A model of a run with randomised positions reads the positions of
    ``evaluation_positions`` (seeded by the run's seed, task and ``n``).

    Shapes:
        tokens: ``(b, n)``
        output: ``(b, n)``
    """
    was_training = model.training
    model.eval()
    positions = evaluation_positions(model.config, *tokens.shape)  # (b, n) or None
    predicted = model(tokens, positions=positions).argmax(-1)  # (b, n)
    model.train(was_training)
    return predicted


def accuracy(
    model: TinyModel, task: Task, tokens: torch.Tensor, labels: torch.Tensor
) -> float:
    """Share of the scored positions (``task.scored``) where the top class is the label.

    Shapes:
        tokens, labels: ``(b, n)``
        output: a float in ``[0, 1]``
    """
    predicted = predict(model, tokens)  # (b, n)
    scored = task.scored(labels)  # (b, n)
    return ((predicted == labels) & scored).sum().item() / max(1, int(scored.sum()))


def exact_share(
    predicted: torch.Tensor, labels: torch.Tensor, scored: torch.Tensor
) -> float:
    """Share of the sequences (with a scored position) whose scored positions are right.

    0 when no sequence has a scored position (as ``accuracy`` gives then).

    Shapes:
        predicted, labels, scored: ``(b, n)``
        output: a float in ``[0, 1]``
    """
    wrong = (predicted != labels) & scored  # (b, n)
    counted = scored.any(-1)  # (b,)
    right = counted & ~wrong.any(-1)  # (b,)
    return int(right.sum()) / max(1, int(counted.sum()))


def exact_match(
    model: TinyModel, task: Task, tokens: torch.Tensor, labels: torch.Tensor
) -> float:
    """Share of the sequences whose every scored position the model gets right.

    Shapes:
        tokens, labels: ``(b, n)``
        output: a float in ``[0, 1]``
    """
    return exact_share(predict(model, tokens), labels, task.scored(labels))


def evaluation_set(config: Config, length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``config.test_size`` test sequences of ``length``, seeded by seed, task, length.

    Shapes:
        output: tokens ``(test_size, length)``, labels ``(test_size, length)``
    """
    task = get_task(config.task)
    return task.sample(config.test_size, length, seed=data_seed(config, length, "test"))


def evaluate(
    model: TinyModel, config: Config, *, metric: Metric = accuracy
) -> dict[int, float]:
    """``metric`` (accuracy, or :func:`exact_match`) at every length of
    ``config.test_lengths``."""
    task = get_task(config.task)
    return {
        n: metric(model, task, *evaluation_set(config, n))
        for n in config.test_lengths
    }


def relative_table(model: TinyModel) -> tuple[torch.Tensor, int] | None:
    """The relative table the layers read (after its LayerNorm) and its span, or None.

    ``None`` for a model whose encoder has no relative table (the schemes that
    are not DeBERTa's).

    Shapes:
        output: ``((2 * span, hidden), span)``
    """
    encoder = model.encoder
    if not hasattr(encoder, "rel_embeddings") or not hasattr(encoder, "span"):
        return None
    with torch.no_grad():
        return encoder.rel_embeddings().detach().clone(), int(encoder.span)


def table_similarity(model: TinyModel) -> torch.Tensor | None:
    """Cosine similarity between every two rows of the model's relative table, or None.

    Row ``r`` holds distance (or bucket) ``r - span``; the result is
    ``row_cosine_similarity`` over all ``2 * span`` rows.

    Shapes:
        output: ``(2 * span, 2 * span)``
    """
    found = relative_table(model)
    if found is None:
        return None
    weight, span = found
    return row_cosine_similarity(weight, span, range(-span, span))


def band_profile(similarity: torch.Tensor) -> list[float]:
    """Mean of ``similarity[a, a + offset]`` for every offset ``0 .. m - 1``.

    A table with a band (neighbouring distances alike, far ones not) gives a
    profile that starts at 1 and falls; an untrained random table gives 1 then
    about 0 everywhere.

    Shapes:
        similarity: ``(m, m)``
        output: ``m`` floats
    """
    if similarity.dim() != 2 or similarity.shape[0] != similarity.shape[1]:
        raise ValueError(
            f"similarity must be a square matrix, got {tuple(similarity.shape)}"
        )
    m = similarity.shape[0]
    return [float(similarity.diagonal(offset).mean()) for offset in range(m)]


@torch.no_grad()
def mean_scores(model: TinyModel, tokens: torch.Tensor) -> AttentionScores:
    """The first layer's score terms and probabilities, averaged over the batch.

    For ``deberta-emd`` with one layer, that layer is the decoder: the scores
    are those of its first pass (queries from the hidden states plus the
    absolute positions).

    Only for the DeBERTa schemes (a ``DisentangledEncoder``); the average keeps
    a batch dimension of 1, so ``relpos.book.plot.score_terms`` draws it directly.

    Shapes:
        tokens: ``(b, n)``
        output: ``AttentionScores`` of ``(1, h, n, n)`` tensors
    """
    found = relative_table(model)
    if found is None:
        raise ValueError(
            "model must use a DeBERTa scheme (a relative table), got scheme "
            f"{model.config.scheme!r}"
        )
    table, _ = found
    model.eval()
    hidden = model.embed(tokens)  # (b, n, hidden)
    encoder, query_states = model.encoder, None
    if isinstance(encoder, EnhancedMaskDecoder) and len(encoder.layers) == 1:
        # the first layer is the decoder: its first pass reads absolute positions
        query_states = hidden + encoder.positions(hidden.shape[1])  # (b, n, hidden)
    _, scores = encoder.layers[0].attention(
        hidden, rel_embeddings=table, query_states=query_states, return_scores=True
    )
    return AttentionScores(
        *(None if term is None else term.mean(0, keepdim=True) for term in scores)
    )  # (1, h, n, n) each


def by_distance(matrix: torch.Tensor) -> tuple[list[int], torch.Tensor]:
    """The mean of an ``(i, j)`` matrix along each diagonal: at each distance ``i - j``.

    Returns the distances ``-(n - 1) .. n - 1`` and the means, per leading index.

    Shapes:
        matrix: ``(*, n, n)``
        output: distances ``2n - 1`` ints, means ``(*, 2n - 1)``
    """
    n = matrix.shape[-1]
    distances = list(range(-(n - 1), n))
    means = torch.stack(
        [matrix.diagonal(-d, dim1=-2, dim2=-1).mean(-1) for d in distances], dim=-1
    )  # (*, 2n - 1); diagonal -d holds the pairs with i - j = d
    return distances, means


def attention_peaks(model: TinyModel, config: Config) -> list[int] | None:
    """Each first-layer head's most attended distance ``i - j``, or ``None``.

    The attention probabilities are averaged over the test sequences of the
    training length, then along each diagonal (:func:`by_distance`); a head that
    learnt "look 3 back" peaks at 3. ``None`` for a scheme without a relative
    table.

    Shapes:
        output: ``h`` ints
    """
    if relative_table(model) is None:
        return None
    tokens, _ = evaluation_set(config, config.train_length)  # (test_size, L)
    distances, means = by_distance(mean_scores(model, tokens).probs[0])  # (h, 2L - 1)
    return [distances[int(k)] for k in means.argmax(-1)]


@torch.no_grad()
def attention_at_distance(model: TinyModel, tokens: torch.Tensor, distance: int) -> float:
    """The first layer's mean attention weight on the key ``distance`` back.

    The probabilities of every head (for the DeBERTa schemes, those of
    :func:`mean_scores`) averaged over the batch, over the queries that have
    such a key and over the heads: the share of a query's attention that lands
    on the pair with ``i - j = distance``. A head that reads "the token 3 back"
    puts nearly all its weight there at the training length; if the weight
    thins out on longer sequences, the same head is outvoted by the added keys.

    Shapes:
        tokens: ``(b, n)``
        output: a float in ``[0, 1]``
    """
    if not isinstance(distance, int) or not 0 <= distance < tokens.shape[-1]:
        raise ValueError(
            f"distance must be an int in 0 .. n - 1 = {tokens.shape[-1] - 1}, "
            f"got {distance!r}"
        )
    model.eval()
    if relative_table(model) is not None:
        probs = mean_scores(model, tokens).probs[0]  # (h, n, n)
    else:
        hidden = model.embed(tokens)  # (b, n, hidden)
        attention = model.encoder.layers[0].attention
        _, scores = attention(hidden, return_scores=True)
        probs = scores.probs.mean(0)  # (h, n, n)
    distances, means = by_distance(probs)  # (h, 2n - 1)
    return float(means[:, distances.index(distance)].mean())


@torch.no_grad()
def unseen_margin(
    model: TinyModel, tokens: torch.Tensor, distance: int, train_length: int
) -> list[float]:
    """Per first-layer head: the logit at ``distance`` above the best unseen distance.

    The logits (before masking) are averaged over the batch and along each
    diagonal (:func:`by_distance`); the result is, for every head, the mean
    logit of the pairs with ``i - j = distance`` minus the largest mean logit
    of a distance no training sequence contains (``|i - j| >= train_length``).
    A negative margin means that some distance met for the first time at test
    draws more attention than the one the rule needs.

    Shapes:
        tokens: ``(b, n)`` with ``n > train_length``
        output: ``h`` floats
    """
    n = tokens.shape[-1]
    if not isinstance(train_length, int) or not 0 < train_length < n:
        raise ValueError(
            f"train_length must be an int in 1 .. n - 1 = {n - 1}, got {train_length!r}"
        )
    if not isinstance(distance, int) or not abs(distance) < train_length:
        raise ValueError(
            f"distance must be an int with |distance| < train_length, got {distance!r}"
        )
    model.eval()
    if relative_table(model) is not None:
        logits = mean_scores(model, tokens).logits[0]  # (h, n, n)
    else:
        hidden = model.embed(tokens)  # (b, n, hidden)
        _, scores = model.encoder.layers[0].attention(hidden, return_scores=True)
        logits = scores.logits.mean(0)  # (h, n, n)
    distances, means = by_distance(logits)  # (h, 2n - 1)
    d = torch.tensor(distances)
    unseen = means[:, d.abs() >= train_length].max(-1).values  # (h,)
    return (means[:, d == distance][:, 0] - unseen).tolist()


__all__ = [
    "unseen_margin",
    "attention_at_distance",
    "attention_peaks",
    "accuracy",
    "band_profile",
    "by_distance",
    "evaluate",
    "exact_match",
    "exact_share",
    "mean_scores",
    "predict",
    "relative_table",
    "table_similarity",
    "evaluation_set",
]
