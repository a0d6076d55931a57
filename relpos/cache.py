"""A key/value cache for causal decoding: each layer's past keys and values.

Decoding one token at a time, a causal model need not recompute the keys and
values of the tokens it has seen: their keys and values do not change (a query
never reads a later key). ``KVCache`` keeps them, one entry per attention layer,
with what the keys need besides: their positions, their padding and their
document ids. A forward call with ``cache=`` attends from the new tokens to the
cached keys and the new ones, then appends the new ones::

    cache = relpos.KVCache()
    logits = model(prompt, cache=cache)          # fills the cache
    logits = model(next_token, cache=cache)      # one new query, all keys

The new tokens' positions continue the cached ones (``cache.length + 0, 1,
...``) unless given.

One cache serves a whole stack: each attention module reads and writes the
entry of its own ``cache_index``, and a stack numbers its layers (as
``relpos.Transformer`` and ``relpos.DisentangledEncoder`` do). Layers may also
be called one by one, in order, each with the same cache: every layer reads the
positions the cache held before this step's first layer ran, so the layers of
one step agree. What would be misread is refused instead: two modules writing
one entry (layers stacked by hand and left unnumbered), or a layer that falls
out of step with the others (a ``ValueError`` that says which).

What each scheme needs of the new rows alone follows from the positions: rotary
turns the new queries and keys by their own angles (the cached keys are stored
turned), ALiBi's and T5's biases and DeBERTa's rows are read at the new queries'
distances to every key.

Shapes:
    key, value: ``(b, h, t, d)`` per layer; positions: ``(b or 1, t)``
    keys: ``(b, t)`` bool or None; documents: ``(b, t)`` or None
"""

from __future__ import annotations

import weakref

import torch


class KVCache:
    """The past keys and values of every layer, and the keys' positions and masks.

    Attributes:
        length: ``t``, the number of cached positions.
        positions: ``(b or 1, t)`` the cached keys' positions (None when empty).
        keys: ``(b, t)`` bool, False for a cached padding token; None if none.
        documents: ``(b, t)`` the cached keys' document ids, or None.

    Shapes:
        layer entries: ``key, value (b, h, t, d)``
    """

    def __init__(self) -> None:
        self.length = 0
        self.positions: torch.Tensor | None = None
        self.keys: torch.Tensor | None = None
        self.documents: torch.Tensor | None = None
        self._layers: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        self._owners: dict[int, weakref.ref] = {}

    def __len__(self) -> int:
        return self.length

    def __repr__(self) -> str:
        return f"KVCache(length={self.length}, layers={len(self._layers)})"

    def layer(self, index: int) -> tuple[torch.Tensor, torch.Tensor] | None:
        """Layer ``index``'s cached ``(key, value)``, or None before its first call.

        Shapes:
            output: ``(b, h, t, d)`` each
        """
        return self._layers.get(index)

    def cached(self, index: int) -> int:
        """How many keys layer ``index`` holds (0 before its first call)."""
        past = self._layers.get(index)
        return 0 if past is None else past[0].shape[-2]

    def past(self, index: int, n: int) -> int:
        """The cached positions layer ``index`` reads before ``n`` new tokens.

        The first layer of a step finds the cache as the last step left it
        (``cached(index) == length``); a later layer of the same step finds it
        already advanced by ``n`` (``cached(index) + n == length``) and reads
        the same ``cached(index)`` positions as the first did. Anything else
        means the layers sharing this cache are out of step: refused.
        """
        cached = self.cached(index)
        if cached != self.length and cached + n != self.length:
            raise ValueError(
                f"cache entry {index} holds {cached} keys but the cache has "
                f"{self.length} positions, so {n} new tokens cannot follow them: "
                "the layers that share a KVCache must each run once per step, in "
                "order (or use one cache per layer)"
            )
        return cached

    def history(
        self, past: int
    ) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
        """The first ``past`` cached positions, key padding and document ids.

        Shapes:
            output: ``(b or 1, past)``, ``(b, past)`` or None, ``(b, past)`` or None
        """
        def head(x: torch.Tensor | None) -> torch.Tensor | None:
            return None if x is None else x[..., :past]

        return head(self.positions), head(self.keys), head(self.documents)

    def extend(
        self,
        index: int,
        key: torch.Tensor,
        value: torch.Tensor,
        *,
        owner: object = None,
        past: int | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Layer ``index``'s keys and values with the new ones after the cached ones.

        The new ones are kept for the next call once :meth:`advance` is called.
        ``owner`` (the attention module writing) must be the one that wrote this
        entry before: two modules on one entry would read each other's keys.
        ``past``, when given, is how many keys the entry must hold already (the
        positions the call was prepared with).

        Shapes:
            key, value: ``(b, h, n, d)``; output: ``(b, h, t + n, d)`` each
        """
        if owner is not None:
            self._claim(index, owner)
        if past is not None and self.cached(index) != past:
            raise ValueError(
                f"cache entry {index} holds {self.cached(index)} keys, but this call "
                f"was prepared for {past}: a stack that prepares the input once "
                "must run each of its layers once per step"
            )
        past = self._layers.get(index)
        if past is not None:
            if past[0].shape[:2] != key.shape[:2] or past[0].shape[-1] != key.shape[-1]:
                raise ValueError(
                    "cache holds keys of shape (b, h, t, d) = "
                    f"{tuple(past[0].shape)}, which the new keys "
                    f"{tuple(key.shape)} cannot follow; use one cache per model and "
                    "batch"
                )
            key = torch.cat([past[0], key], dim=-2)  # (b, h, t + n, d)
            value = torch.cat([past[1], value], dim=-2)  # (b, h, t + n, d)
        self._layers[index] = (key, value)
        return key, value

    def advance(
        self,
        positions: torch.Tensor,
        keys: torch.Tensor | None,
        documents: torch.Tensor | None,
    ) -> None:
        """Record the new tokens as keys: their full positions, padding and documents.

        Every layer of a step records the same (the first sets them).

        Shapes:
            positions: ``(b or 1, t + n)``; keys, documents: ``(b, t + n)`` or None
        """
        self.positions = positions
        self.keys = keys
        self.documents = documents
        self.length = positions.shape[-1]

    def _claim(self, index: int, owner: object) -> None:
        """Record ``owner`` as the writer of entry ``index``; refuse a second one."""
        ref = self._owners.get(index)
        writer = None if ref is None else ref()
        if writer is None:
            self._owners[index] = weakref.ref(owner)
        elif writer is not owner:
            raise ValueError(
                f"two attention modules write cache entry {index}: layers that "
                "share a KVCache need distinct cache_index values (relpos.Transformer "
                "and relpos.DisentangledEncoder number their layers; for layers "
                "stacked by hand set layer.attention.cache_index = i, or give each "
                "layer its own KVCache)"
            )

    def reset(self) -> None:
        """Forget everything (start a new sequence), the entries' writers too."""
        self.__init__()


__all__ = ["KVCache"]
