"""Tasks whose needed distance grows with the length: their layouts and labels.

The tasks of ``tasks`` ask for one fixed offset (or a position modulo 4), so a
scheme that sees a few distances well can solve them at any length. The
literature's length-generalisation tasks (Delétang et al. 2023, Ruoss et al.
2023, Kazemnejad et al. 2023, Zhou et al. 2024, Arora et al. 2023) instead ask
for a token whose distance grows with the sequence. Each kind here lays out a
problem of size ``m`` (how many tokens it copies, pairs it recalls, digits it
adds) in a sequence of ``n`` tokens; ``m`` is the largest size that fits, and
the rest (at most two tokens) is ``PAD`` at the start. Only the *answer slots*
are scored; every other position has the label ``IGNORE``, which the training
loss skips (``torch.nn.functional.cross_entropy``'s default ``ignore_index``).
The answer slots come after everything they need, so a causal decoder can
solve each task too.

Token ids: the symbols the labels name come first (``0 .. vocab - 1``, so a
label is the id of the token it names), then the task's own tokens.

- ``copy`` (``m = (n - 1) // 2``): ``PAD? x_0 .. x_{m-1} SEP _ .. _``; the
  ``m`` blanks ``_`` are the answer slots and slot ``k`` is labelled ``x_k``.
  Each answer is ``m + 1`` tokens back: the distance is ``(n + 1) // 2``.
- ``reverse``: the same layout, slot ``k`` labelled ``x_{m-1-k}``; answer ``k``
  is ``2k + 2`` back, from 2 up to ``2m``, about ``n``.
- ``mqar`` (multi-query associative recall, Arora et al. 2023; ``m = n // 3``
  pairs): ``PAD* k_0 v_0 .. k_{m-1} v_{m-1} q_0 .. q_{m-1}``. Keys come from
  their own ``K = param`` symbols (``m`` distinct ones per sequence), values
  from the ``vocab`` label symbols (independent, uniform), and the queries are
  the ``m`` keys again in a random order. Query ``t`` is labelled the value
  paired with its key. Query ``t`` reads a value ``2m + t - 2s - 1`` back for
  pair ``s``: between ``t + 1`` and ``2m + t - 1``, up to ``n - 2``. ``m <= K``,
  so ``n <= 3K + 2``.
- ``addition`` (``m = (n - 2) // 3`` digits in base ``B = vocab``):
  ``PAD* a_{m-1} b_{m-1} .. a_1 b_1 a_0 b_0 = _ .. _``, the two numbers' digits
  interleaved from the most significant, then ``m + 1`` answer slots; slot
  ``k`` is labelled digit ``k`` of ``a + b`` (least significant first, as in
  Zhou et al. 2024's reversed answers; slot ``m`` the last carry). Slot ``k``
  needs ``a_k`` and ``b_k`` (``3k + 3`` and ``3k + 2`` back) and, through the
  carry, every lower digit (``a_j`` is ``k + 2j + 3`` back): from 2 (``b_0``
  for slot 0) up to ``3m + 1``, about ``n``. The interleaving puts every digit
  a slot needs at a distance set by ``k`` alone, as ``reverse`` does; with the
  two numbers one after the other, ``a_k`` would be ``2m + 2`` back, a distance
  set by the length, to be found anew at every length.

Chance per token is a uniform guess over the ``vocab`` label symbols,
``1 / vocab``; exact-match chance (every answer slot of a sequence right) is
``(1 / vocab) ** answers(n)``.

Shape legend:
    tokens, labels: ``(b, n)``, ``torch.long``
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from relpos.checks import check_int

#: The label of a position that is not scored (skipped by the loss).
IGNORE = -100


@dataclass(frozen=True)
class Layout:
    """How one kind lays out a problem of size ``m`` in ``n`` tokens.

    ``per_size`` tokens per unit of size plus ``extra``, after at most
    ``per_size - 1`` ``PAD`` tokens; ``specials`` own tokens after the
    ``vocab`` label symbols (and, for ``mqar``, the ``param`` keys).

    Shapes:
        (no tensors)
    """

    kind: str
    per_size: int
    extra: int
    specials: tuple[str, ...]

    @property
    def min_length(self) -> int:
        """The shortest sequence that holds a problem of size 1."""
        return self.per_size + self.extra

    def size(self, n: int) -> int:
        """``m``: the largest problem that fits in ``n`` tokens."""
        return (n - self.extra) // self.per_size

    def pad(self, n: int) -> int:
        """The ``PAD`` tokens at the start of a length-``n`` sequence."""
        return n - self.per_size * self.size(n) - self.extra

    def answers(self, n: int) -> int:
        """The answer slots (scored positions) of a length-``n`` sequence."""
        m = self.size(n)
        return m + 1 if self.kind == "addition" else m

    def token(self, name: str, vocab: int, param: int) -> int:
        """The id of the task's own token ``name`` (``"PAD"``, ``"SEP"``, ...)."""
        first = vocab + (param if self.kind == "mqar" else 0)
        return first + self.specials.index(name)

    def input_size(self, vocab: int, param: int) -> int:
        """Token ids in all: symbols, keys (``mqar``) and the task's own tokens."""
        return vocab + (param if self.kind == "mqar" else 0) + len(self.specials)

    def check_length(self, n: int, param: int) -> int:
        """``n`` if a problem fits in it (``ValueError`` naming ``length`` if not)."""
        n = check_int("length", n, minimum=1)
        if n < self.min_length:
            raise ValueError(
                f"length must be >= {self.min_length} for a {self.kind} task "
                f"(a problem of size 1), got {n}"
            )
        if self.kind == "mqar" and self.size(n) > param:
            raise ValueError(
                f"length must be <= {self.per_size * param + self.per_size - 1} for "
                f"an mqar task with {param} keys (one pair per key), got {n}"
            )
        return n


LAYOUTS: dict[str, Layout] = {
    "copy": Layout("copy", 2, 1, ("PAD", "SEP", "BLANK")),
    "reverse": Layout("reverse", 2, 1, ("PAD", "SEP", "BLANK")),
    "mqar": Layout("mqar", 3, 0, ("PAD",)),
    "addition": Layout("addition", 3, 2, ("PAD", "EQUALS", "BLANK")),
}


def _filled(b: int, count: int, token: int) -> torch.Tensor:
    return torch.full((b, count), token, dtype=torch.long)  # (b, count)


def sample_tokens(
    kind: str, b: int, n: int, vocab: int, param: int, generator: torch.Generator
) -> torch.Tensor:
    """``b`` random sequences of length ``n`` in the layout of ``kind``.

    Shapes:
        output: ``(b, n)``
    """
    layout = LAYOUTS[kind]
    n = layout.check_length(n, param)
    m, pad = layout.size(n), layout.pad(n)

    def token(name: str) -> int:
        return layout.token(name, vocab, param)

    start = _filled(b, pad, token("PAD"))  # (b, pad)
    if kind in ("copy", "reverse"):
        data = torch.randint(vocab, (b, m), generator=generator)  # (b, m)
        parts = [data, _filled(b, 1, token("SEP")), _filled(b, m, token("BLANK"))]
    elif kind == "mqar":
        keys = torch.rand(b, param, generator=generator).argsort(-1)[:, :m]  # (b, m)
        values = torch.randint(vocab, (b, m), generator=generator)  # (b, m)
        order = torch.rand(b, m, generator=generator).argsort(-1)  # (b, m)
        pairs = torch.stack([keys + vocab, values], dim=-1).flatten(1)  # (b, 2m)
        parts = [pairs, keys.gather(1, order) + vocab]
    else:
        a = torch.randint(vocab, (b, m), generator=generator)  # (b, m)
        c = torch.randint(vocab, (b, m), generator=generator)  # (b, m)
        digits = torch.stack([a, c], dim=-1).flip(1).flatten(1)  # (b, 2m): a_{m-1} ..
        parts = [
            digits,
            _filled(b, 1, token("EQUALS")),
            _filled(b, m + 1, token("BLANK")),
        ]
    return torch.cat([start, *parts], dim=1)  # (b, n)


def sum_digits(a: torch.Tensor, c: torch.Tensor, base: int) -> torch.Tensor:
    """The ``m + 1`` digits of ``a + c``, least significant first.

    Shapes:
        a, c: ``(b, m)`` digits, least significant first
        output: ``(b, m + 1)``
    """
    carry = torch.zeros_like(a[:, 0])  # (b,)
    digits = []
    for k in range(a.shape[1]):
        total = a[:, k] + c[:, k] + carry  # (b,)
        digits.append(total % base)
        carry = total // base
    return torch.stack([*digits, carry], dim=1)  # (b, m + 1)


def layout_labels(
    kind: str, tokens: torch.Tensor, vocab: int, param: int
) -> torch.Tensor:
    """The label of every position: the answer at each slot, ``IGNORE`` elsewhere.

    A pure function of ``tokens`` (the layout follows from the length). An
    ``mqar`` query whose key is not among the pairs (not a sequence of the
    layout) is ``IGNORE`` too.

    Shapes:
        tokens: ``(b, n)``
        output: ``(b, n)``
    """
    layout = LAYOUTS[kind]
    b, n = tokens.shape
    layout.check_length(n, param)
    m, pad = layout.size(n), layout.pad(n)
    labels = torch.full_like(tokens, IGNORE)  # (b, n)
    if kind in ("copy", "reverse"):
        data = tokens[:, pad : pad + m]  # (b, m)
        labels[:, pad + m + 1 :] = data if kind == "copy" else data.flip(1)
    elif kind == "mqar":
        pairs = tokens[:, pad : pad + 2 * m].reshape(b, m, 2)  # (b, m, 2): key, value
        queries = tokens[:, pad + 2 * m :]  # (b, m)
        match = queries[:, :, None] == pairs[:, None, :, 0]  # (b, query t, pair s)
        found = match.any(-1)  # (b, m); the last matching pair if several
        last = m - 1 - match.flip(-1).long().argmax(-1)  # (b, m)
        answer = pairs[:, :, 1].gather(1, last)  # (b, m)
        labels[:, pad + 2 * m :] = torch.where(found, answer, IGNORE)
    else:
        digits = tokens[:, pad : pad + 2 * m].reshape(b, m, 2).flip(1)  # (b, m, 2)
        labels[:, pad + 2 * m + 1 :] = sum_digits(digits[..., 0], digits[..., 1], vocab)
    return labels


def answer_slots(kind: str, n: int) -> torch.Tensor:
    """The positions of the answer slots of a length-``n`` sequence of ``kind``.

    The last ``answers(n)`` positions: every layout ends with its answer slots.

    Shapes:
        output: ``(answers(n),)``, ``torch.long``
    """
    layout = _layout(kind)
    n = _length(layout, n)
    return torch.arange(n - layout.answers(n), n)  # (answers,)


def needed_distances(kind: str, n: int) -> torch.Tensor:
    """For each answer slot ``i``, the largest ``i - j`` of a token ``j`` it needs.

    A slot *needs* token ``j`` when two sequences of the layout that differ at
    ``j`` alone can have different labels there. Only the label symbols are
    such tokens (a ``PAD``, ``SEP``, ``EQUALS`` or blank is the same in every
    sequence of length ``n``, and an ``mqar`` key cannot change alone: the
    queries are the same keys again). Read from the layout, slot by slot:

    - ``copy``: slot ``k`` needs ``x_k``; ``reverse``: ``x_{m-1-k}``.
    - ``mqar``: query ``t`` needs every value (its key may be any pair's), the
      farthest ``v_0``.
    - ``addition``: slot ``k`` needs ``a_j`` and ``b_j`` for every ``j <= k``
      (``j <= m - 1`` for the last carry), the farthest ``a_{min(k, m-1)}``.

    Shapes:
        output: ``(answers(n),)``, ``torch.long``
    """
    layout = _layout(kind)
    n = _length(layout, n)
    m, pad = layout.size(n), layout.pad(n)
    slots = answer_slots(kind, n)  # (answers,)
    k = torch.arange(len(slots))  # (answers,): the slot's index
    if kind == "copy":
        source = pad + k  # x_k
    elif kind == "reverse":
        source = pad + m - 1 - k  # x_{m-1-k}
    elif kind == "mqar":
        source = torch.full_like(k, pad + 1)  # v_0, the first pair's value
    else:
        # a_j sits at pad + 2 (m - 1 - j): the higher the digit, the farther
        source = pad + 2 * (m - 1 - k.clamp(max=m - 1))  # a_{min(k, m-1)}
    return slots - source  # (answers,)


def farthest_source(kind: str, n: int) -> int:
    """The largest distance ``i - j`` between an answer slot and a token it needs.

    ``copy``: ``(n + 1) // 2``; ``reverse``: ``2m``; ``mqar``: ``3m - 2``;
    ``addition``: ``3m + 1`` (``m`` the problem size at length ``n``); the
    maximum of :func:`needed_distances`.

    Shapes:
        (no tensors)
    """
    return int(needed_distances(kind, n).max())


def _layout(kind: str) -> Layout:
    if not isinstance(kind, str):
        raise TypeError(f"kind must be a str, got {type(kind).__name__}")
    if kind not in LAYOUTS:
        raise ValueError(f"kind must be one of {', '.join(LAYOUTS)}, got {kind!r}")
    return LAYOUTS[kind]


def _length(layout: Layout, n: int) -> int:
    """``n`` if it holds a problem of size 1 (``param`` plays no part here)."""
    n = check_int("n", n, minimum=1)
    if n < layout.min_length:
        raise ValueError(
            f"n must be >= {layout.min_length} for a {layout.kind} task "
            f"(a problem of size 1), got {n}"
        )
    return n


__all__ = [
    "IGNORE",
    "LAYOUTS",
    "Layout",
    "answer_slots",
    "farthest_source",
    "layout_labels",
    "needed_distances",
    "sample_tokens",
    "sum_digits",
]
