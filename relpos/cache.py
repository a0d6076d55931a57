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
...``) unless given. What each scheme needs of the new rows alone follows from
the positions: rotary turns the new queries and keys by their own angles (the
cached keys are stored turned), ALiBi's and T5's biases and DeBERTa's rows are
read at the new queries' distances to every key.

Shapes:
    key, value: ``(b, h, t, d)`` per layer; positions: ``(b or 1, t)``
    keys: ``(b, t)`` bool or None; documents: ``(b, t)`` or None
"""

from __future__ import annotations

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

    def extend(
        self, index: int, key: torch.Tensor, value: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Layer ``index``'s keys and values with the new ones after the cached ones.

        The new ones are kept for the next call once :meth:`advance` is called.

        Shapes:
            key, value: ``(b, h, n, d)``; output: ``(b, h, t + n, d)`` each
        """
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

        Shapes:
            positions: ``(b or 1, t + n)``; keys, documents: ``(b, t + n)`` or None
        """
        self.positions = positions
        self.keys = keys
        self.documents = documents
        self.length = positions.shape[-1]

    def reset(self) -> None:
        """Forget everything (start a new sequence)."""
        self.__init__()


__all__ = ["KVCache"]
