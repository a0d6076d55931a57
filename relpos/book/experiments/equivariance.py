"""What a scheme cannot represent: symmetries of the whole model, the bounds they set.

Permutation (``none``, encoder). Content attention scores ``q_i . k_j`` and sums
``sum_j p_ij v_j`` over all keys; LayerNorm, the feed-forward block and the
classifier act on each position alone; ``none`` adds nothing that depends on an
index. Each of these commutes with reordering the positions, so the model ``f``
is *permutation-equivariant*: ``f(x[pi])_i = f(x)_{pi(i)}`` for every
permutation ``pi``. Hence ``f(x)_i = g(x_i, M)`` with ``M`` the bag (multiset)
of the tokens: a permutation that fixes ``i`` leaves ``f(x)_i`` unchanged, and
one that moves ``i`` to ``i'`` with ``x_i = x_{i'}`` shows that the index plays no
part.

- Shift tasks (the token ``s`` back). Tokens are i.i.d., so given ``x_i`` and
  ``M`` the other ``n - 1`` tokens are in a uniformly random order, and ``x_{i-s}``
  is a uniformly random one of them. No ``g`` beats the commonest of them:
  accuracy ``<= E[max_t c_t] / (n - 1)`` with ``c`` the counts of ``n - 1`` i.i.d.
  uniform tokens (:func:`expected_max_share` exactly, :func:`permutation_bound`
  by Monte Carlo). With 16 tokens and ``n = 32`` this is about 0.16.
- Why ``none`` scores about that on ``relative`` but 0 on ``far``. Training scores
  every label, ``NO_TOKEN`` included, and ``g`` cannot tell the first ``s``
  positions from the others: for a given ``(x_i, M)`` the label is ``NO_TOKEN``
  with probability ``s / n`` and token ``t`` with ``(n - s) / n * c_t / (n - 1)``.
  The loss prefers ``NO_TOKEN`` everywhere when ``s (n - 1) > (n - s) max_t c_t``
  (:func:`no_token_preferred`): at ``n = 32`` that is ``max_t c_t <= 3`` for
  ``s = 3`` (almost never) and always for ``s = 12``. A model that answers
  ``NO_TOKEN`` everywhere scores 0 on the scored positions.
- ``absolute`` (``i mod 4``): the label is a function of ``i`` alone and, given
  ``(x_i, M)``, ``i`` is spread over the positions like a uniformly random one,
  so no ``g`` beats the commonest residue: ``ceil(n / 4) / n``, exactly chance
  when ``4`` divides ``n``.
- ``window`` (the largest of the 6 tokens before): those 6 are a random 6-subset
  of the other ``n - 1`` tokens; the bound is the best guess of their maximum,
  averaged over bags (Monte Carlo over bags, exact inside each).

Reversal (bidirectional ``alibi``, encoder). The bias ``-m |i - j|`` is the same
for ``(i, j)`` and ``(n-1-i, n-1-j)``, so reversing the sequence reverses every
layer's output: ``f(reverse(x)) = reverse(f(x))``. Position ``m`` of ``x`` and
position ``n-1-m`` of ``reverse(x)`` (an equally likely sequence) get the same
prediction, while their labels are ``x[m-s]`` and ``x[m+s]``. When both are
scored the two together score at most ``1 + 1[x[m-s] = x[m+s]]``, so accuracy
``<= (1 + 1/V) / 2`` there (``V`` tokens); a position whose mirror is not
scored can score 1. On ``absolute`` the labels ``m mod 4`` and ``(n-1-m) mod 4``
agree only where ``2m = n - 1 (mod 4)``; with ``4 | n`` never, so ``<= 1/2``.
:func:`reversal_bound` is exact.

The causal mask breaks permutation symmetry: query ``i`` attends to the
``i + 1`` keys at or before it, and a model with no positions can count them.
With uniform attention the attended mean of ``i + 1`` random token vectors has
a variance ``1 / (i + 1)`` times theirs, a signal of the position
(:func:`causal_mean_spread`); this is the mechanism by which causal models
without position encoding learn positions (Haviv et al. 2022; Chi et al. 2023).

Shapes:
    tokens: ``(b, n)``; logits: ``(b, n, classes)``
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from relpos.checks import check_int
from .tasks import Task, get_task


@dataclass(frozen=True)
class Bound:
    """An accuracy bound and its Monte Carlo standard error (0 when exact).

    ``float(bound)`` is its value.
    """

    value: float
    stderr: float = 0.0

    def __float__(self) -> float:
        return self.value


def _task(task: Task | str) -> Task:
    if isinstance(task, Task):
        return task
    if isinstance(task, str):
        return get_task(task)
    raise TypeError(f"task must be a Task or a task name, got {type(task).__name__}")


def _binomial_pmf(trials: int, p: float) -> torch.Tensor:
    """``P(C = c | j trials)`` for every ``j <= trials`` and ``c <= j``: ``[j, c]``."""
    j = torch.arange(trials + 1, dtype=torch.float64)[:, None]  # (j, 1)
    c = torch.arange(trials + 1, dtype=torch.float64)[None, :]  # (1, c)
    valid = c <= j
    jc = torch.where(valid, j - c, torch.zeros_like(j - c))
    log = (
        torch.lgamma(j + 1) - torch.lgamma(c + 1) - torch.lgamma(jc + 1)
        + c * math.log(p) + jc * (math.log1p(-p) if p < 1 else 0.0)
    )
    if p == 1:
        log = torch.where(jc == 0, log, torch.full_like(log, -math.inf))
    return torch.where(valid, log.exp(), torch.zeros_like(log))  # (j, c)


def _all_counts_at_most(
    m: int, draws: int, pmfs: list[torch.Tensor], behind: torch.Tensor
) -> torch.Tensor:
    """``P(every token appears <= m times)`` among ``j`` i.i.d. uniform tokens.

    One value for every ``j = 0 .. draws``. ``pmfs[v - 2]`` is
    ``_binomial_pmf(draws, 1 / v)``; ``behind[j, c] = j - c``.

    Shapes:
        output: ``(draws + 1,)``
    """
    keep = (torch.arange(draws + 1) <= m).double()  # (c,)
    ways = keep.clone()  # one token value: j draws all of it, allowed if j <= m
    index = behind.clamp(min=0)  # (j, c): j - c where it is a count
    allowed = (behind >= 0).double() * keep[None, :]  # (j, c)
    for pmf in pmfs:  # token values 2 .. V: c draws of the new value
        ways = (pmf * allowed * ways[index]).sum(-1)  # (j,): ways[j - c] summed
    return ways


def expected_max_shares(draws: int, vocab: int) -> torch.Tensor:
    """``E[max_t c_t] / j`` for every number of draws ``j = 1 .. draws`` at once.

    Exact (up to float64), as :func:`expected_max_share`: ``E[max] = sum_m
    P(max > m)``, where one recursion over the token values gives ``P(max <= m)``
    for every ``j`` together. Entry 0 (no draws) is 0.

    Shapes:
        output: ``(draws + 1,)``, float64
    """
    draws = check_int("draws", draws, minimum=1)
    vocab = check_int("vocab", vocab, minimum=1)
    pmfs = [_binomial_pmf(draws, 1.0 / v) for v in range(2, vocab + 1)]
    rows = torch.arange(draws + 1)
    behind = rows[:, None] - rows[None, :]  # (j, c)
    total = torch.zeros(draws + 1, dtype=torch.float64)  # (j,)
    for m in range(draws):
        above = 1.0 - _all_counts_at_most(m, draws, pmfs, behind)  # (j,)
        above = torch.where(rows > m, above, torch.zeros_like(above))  # max <= j
        total += above.clamp(min=0.0)
        if float(above.max()) < 1e-15:
            break
    return torch.where(rows > 0, total / rows.clamp(min=1), torch.zeros_like(total))


def expected_max_share(draws: int, vocab: int) -> float:
    """``E[max_t c_t] / draws``: the share of the commonest of ``draws`` uniform tokens.

    Exact (up to float64): ``E[max] = sum_m P(max > m)``, each term from the
    multinomial counts by a recursion over the token values (``P(max > m) = 1``
    for ``m < draws / vocab``).
    """
    draws = check_int("draws", draws, minimum=1)
    vocab = check_int("vocab", vocab, minimum=1)
    pmfs = [_binomial_pmf(draws, 1.0 / v) for v in range(2, vocab + 1)]
    rows = torch.arange(draws + 1)
    behind = rows[:, None] - rows[None, :]  # (j, c)
    start = math.ceil(draws / vocab)  # below it some token must appear more often
    total = float(start)
    for m in range(start, draws):
        above = 1.0 - float(_all_counts_at_most(m, draws, pmfs, behind)[draws])
        total += above
        if above < 1e-15:
            break
    return total / draws


def _bag_counts(draws: int, vocab: int, samples: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.randint(vocab, (samples, draws), generator=generator)  # (s, n - 1)
    counts = torch.zeros(samples, vocab, dtype=torch.long)  # (s, V)
    return counts.scatter_add_(1, tokens, torch.ones_like(tokens))


def _window_best(counts: torch.Tensor, width: int) -> torch.Tensor:
    """Per bag, the best chance of naming the max of a random ``width``-subset."""
    draws = int(counts[0].sum())
    below = counts.cumsum(-1)  # (s, V): tokens <= t
    total = math.comb(draws, width)
    at_most = torch.tensor(
        [[math.comb(int(c), width) / total for c in row] for row in below.tolist()],
        dtype=torch.float64,
    )  # (s, V): P(max <= t)
    exact = torch.diff(at_most, dim=-1, prepend=torch.zeros_like(at_most[:, :1]))
    return exact.max(-1).values  # (s,)


def permutation_bound(
    task: Task | str, n: int, *, samples: int = 20000, seed: int = 0
) -> Bound:
    """The best scored accuracy of a permutation-equivariant model at length ``n``.

    Shift tasks: ``E[max_t c_t] / (n - 1)`` by Monte Carlo over ``samples`` bags
    (seeded; :func:`expected_max_share` is the exact value). ``window``: the
    best guess of the max of a random 6-subset, Monte Carlo over bags. Position
    tasks: ``ceil(n / modulus) / n``, exact. The derivations: the module docstring.
    """
    task = _task(task)
    n = check_int("n", n, minimum=2)
    samples = check_int("samples", samples, minimum=2)
    seed = check_int("seed", seed, minimum=0)
    if task.kind == "position":
        return Bound(math.ceil(n / task.param) / n)
    if n <= task.param:
        raise ValueError(f"n must be > {task.param} so that some position is scored")
    counts = _bag_counts(n - 1, task.vocab_size, samples, seed)  # (s, V)
    if task.kind == "shift":
        share = counts.max(-1).values.double() / (n - 1)  # (s,)
    elif task.kind == "window":
        share = _window_best(counts, task.param)
    else:
        raise ValueError(f"task must be of kind shift, window or position, got "
                         f"{task.kind!r}")
    return Bound(float(share.mean()), float(share.std() / math.sqrt(samples)))


def no_token_preferred(task: Task | str, n: int, max_count: int) -> bool:
    """Whether the training loss prefers ``NO_TOKEN`` to the commonest other token.

    For a permutation-equivariant model on a shift task: ``s (n - 1) > (n - s) *
    max_count``, with ``max_count`` the count of the commonest token among the
    other ``n - 1`` (the module docstring).
    """
    task = _task(task)
    if task.kind != "shift":
        raise ValueError(f"task must be a shift task, got kind {task.kind!r}")
    n = check_int("n", n, minimum=2)
    max_count = check_int("max_count", max_count, minimum=1)
    s = task.param
    return s * (n - 1) > (n - s) * max_count


def loss_optimal_accuracy(
    task: Task | str, n: int, *, samples: int = 20000, seed: int = 0
) -> Bound:
    """The scored accuracy of the permutation-equivariant rule the training loss picks.

    On a shift task, for each bag it answers the most likely label given
    ``(x_i, M)``: ``NO_TOKEN`` where :func:`no_token_preferred` (scoring 0), else
    the commonest other token (scoring ``max_t c_t / (n - 1)``). Monte Carlo over
    ``samples`` bags, seeded; at ``n = 32`` about the bound on ``relative`` and 0
    on ``far``.
    """
    task = _task(task)
    if task.kind != "shift":
        raise ValueError(f"task must be a shift task, got kind {task.kind!r}")
    n = check_int("n", n, minimum=2)
    samples = check_int("samples", samples, minimum=2)
    if n <= task.param:
        raise ValueError(f"n must be > {task.param} so that some position is scored")
    seed = check_int("seed", seed, minimum=0)
    counts = _bag_counts(n - 1, task.vocab_size, samples, seed)  # (s, V)
    top = counts.max(-1).values  # (samples,)
    shift = task.param
    answers_token = shift * (n - 1) <= (n - shift) * top  # a token at least as likely
    share = torch.where(answers_token, top.double() / (n - 1), 0.0)  # (samples,)
    return Bound(float(share.mean()), float(share.std() / math.sqrt(samples)))


def reversal_bound(task: Task | str, n: int) -> float:
    """The best scored accuracy of a reversal-equivariant model at length ``n``, exact.

    Shift tasks (shift ``s``, ``V`` tokens): each of the ``max(0, n - 2s)`` scored
    positions whose mirror is scored scores ``(1 + 1/V) / 2`` at best, the
    others 1. ``window`` (width ``w``): the same with ``P(two disjoint windows have
    the same max)`` for ``1/V``. Position tasks: 1 where ``m`` and ``n - 1 - m`` have
    the same residue, 1/2 elsewhere.
    """
    task = _task(task)
    n = check_int("n", n, minimum=1)
    if task.kind == "position":
        r = task.param
        same = sum(1 for m in range(n) if m % r == (n - 1 - m) % r)
        return (same + (n - same) / 2) / n
    s, vocab = task.param, task.vocab_size
    if n <= s:
        raise ValueError(f"n must be > {s} so that some position is scored")
    if task.kind == "shift":
        agree = 1.0 / vocab
    elif task.kind == "window":
        at_most = [((t + 1) / vocab) ** s for t in range(vocab)]
        exact = [b - a for a, b in zip([0.0, *at_most[:-1]], at_most)]
        agree = sum(p * p for p in exact)
    else:
        raise ValueError(f"task must be of kind shift, window or position, got "
                         f"{task.kind!r}")
    paired = max(0, n - 2 * s)
    return (paired * (1 + agree) / 2 + (n - s - paired)) / (n - s)


def permutation_gap(
    model: torch.nn.Module, tokens: torch.Tensor, permutation: torch.Tensor
) -> float:
    """``max |f(x[:, pi]) - f(x)[:, pi]|``: 0 (up to rounding) for an equivariant model.

    Shapes:
        tokens: ``(b, n)``; permutation: ``(n,)``, a permutation of ``0 .. n-1``
    """
    n = tokens.shape[-1]
    if sorted(permutation.tolist()) != list(range(n)):
        raise ValueError(f"permutation must be a permutation of 0..{n - 1}")
    with torch.no_grad():
        moved = model(tokens[:, permutation])  # (b, n, classes)
        then = model(tokens)[:, permutation]  # (b, n, classes)
    return float((moved - then).abs().max())


def reversal_gap(model: torch.nn.Module, tokens: torch.Tensor) -> float:
    """``max |f(reverse(x)) - reverse(f(x))|``: 0 (up to rounding) when equivariant.

    Shapes:
        tokens: ``(b, n)``
    """
    n = tokens.shape[-1]
    return permutation_gap(model, tokens, torch.arange(n - 1, -1, -1))


@dataclass(frozen=True)
class MeanSpread:
    """The spread of a causal uniform average, per query position.

    Attributes:
        measured: per position ``i``, the variance (over sequences and
            coordinates) of the mean of the first ``i + 1`` token vectors.
        predicted: ``1 / (i + 1)`` (token vectors of unit variance).

    Shapes:
        measured, predicted: ``(n,)``
    """

    measured: torch.Tensor
    predicted: torch.Tensor


def causal_mean_spread(
    n: int, hidden: int, *, samples: int = 512, seed: int = 0
) -> MeanSpread:
    """How a causal model with no positions can count: the spread of its averages.

    Draws ``samples`` sequences of ``n`` token vectors (i.i.d. standard normal,
    ``hidden`` wide), attends uniformly over the ``i + 1`` visible keys, and
    measures the variance of the result at every ``i``: it falls like
    ``1 / (i + 1)``, so its size (before a LayerNorm rescales it) tells the
    position.

    Shapes:
        output: ``MeanSpread`` of two ``(n,)`` tensors
    """
    n = check_int("n", n, minimum=1)
    hidden = check_int("hidden", hidden, minimum=1)
    samples = check_int("samples", samples, minimum=2)
    generator = torch.Generator().manual_seed(check_int("seed", seed, minimum=0))
    values = torch.randn(samples, n, hidden, generator=generator, dtype=torch.float64)
    weights = torch.ones(n, n, dtype=torch.float64).tril()  # (i, j): j <= i
    weights = weights / weights.sum(-1, keepdim=True)  # uniform over i + 1 keys
    mean = torch.einsum("ij,sjd->sid", weights, values)  # (s, n, hidden)
    measured = mean.transpose(0, 1).reshape(n, -1).var(-1)  # (n,)
    predicted = 1.0 / torch.arange(1, n + 1, dtype=torch.float64)  # (n,)
    return MeanSpread(measured, predicted)


__all__ = [
    "Bound",
    "MeanSpread",
    "causal_mean_spread",
    "expected_max_share",
    "expected_max_shares",
    "loss_optimal_accuracy",
    "no_token_preferred",
    "permutation_bound",
    "permutation_gap",
    "reversal_bound",
    "reversal_gap",
]
