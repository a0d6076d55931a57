"""Attention masks: every convention users bring, read one way, or refused.

A mask says which keys a query may read. Libraries write it in several ways, and
reading one convention as another silently inverts the attention (an additive
``0 / -1e9`` mask read as ``0 / 1`` keeps exactly the padding). ``read_mask``
accepts these, and refuses anything else with an error that names them:

- ``(b, n)`` bool: True for a token, False for padding;
- ``(b, n)`` integer or float holding 0 and 1: 1 for a token, 0 for padding;
- ``(b, n)`` float holding 0 and large negatives: additive, 0 for a token, <= -1e4
  for padding;
- ``(b, n, n)`` in any of the three forms above: one entry per pair ``(query i,
  key j)``;
- ``(b, 1, 1, n)`` and ``(b, 1, n, n)`` float: ``transformers``' extended key and
  pair masks (additive);
- ``(b, 1, 1, n)`` and ``(b, 1, n, n)`` bool: True where attention is allowed (as
  torch's ``scaled_dot_product_attention``).

"Large negative" is any value ``<= -1e4`` (``-1e4``, ``-1e9``, the dtype's minimum
and ``-inf`` all qualify). The 4-D float masks are additive, as ``transformers``
writes them (``0`` attend, the dtype's minimum masked); a 4-D integer mask is
refused (``0`` would mean "attend" there and "padding" in the 2-D form).

A float mask of 2 or 3 dimensions is 0/1 when it holds a positive value and
additive otherwise. So a float mask of zeros alone means "no padding": it is
what ``transformers``' additive mask is for a batch without padding, while the
0/1 reading, "every token is padding", describes no batch worth attending over.

Two conventions cannot be told from the values, so each has a keyword of its
own (``read_key_padding_mask``, ``read_attn_mask``): ``nn.MultiheadAttention``'s
``key_padding_mask`` ``(b, n)`` (bool: True for *padding*) and
``nn.Transformer``'s ``attn_mask`` ``(n, n)`` or ``(b * h, n, n)`` (bool: True
where attention is *not* allowed); either may be additive float instead. A
square ``(n, n)`` mask passed as ``attention_mask`` is read as ``(b, n)`` when
``b == n``: pass it as ``attn_mask=``.

The checks read the mask's values once, at the edge. They are skipped under
``torch.compile`` and ``torch.export`` (where reading a value would break the
graph) and ``torch.jit.trace`` (which would keep the value read); the reading
itself is branch-free and gives the same answer for every valid mask, eager
or compiled.

Document ids ``(b, n)`` (``document_mask``) forbid attention across documents
packed into one row; they combine with any mask above.

Shape legend:
    b  batch      i  query position      j  key position      n  sequence length
"""

from __future__ import annotations

import numbers
from typing import NamedTuple

import torch

from .checks import check_device, check_int_tensor

#: A float mask entry at or below this is "masked" in the additive convention.
ADDITIVE_MASKED = -1e4

_CONVENTIONS = (
    "a (b, n) key mask or a (b, n, n) pair mask that is bool (True: attend), 0/1 "
    "(1: attend) or additive (0: attend, <= -1e4 or -inf: masked), or transformers' "
    "4-D extended mask (b, 1, 1, n) or (b, 1, n, n): additive float, or bool"
)


class Mask(NamedTuple):
    """What a kernel may not attend to, in the forms it reads.

    ``keys[b, j]``: key ``j`` of row ``b`` may be read at all. ``pairs[b, i, j]``:
    query ``i`` may read key ``j``. ``query_documents``/``key_documents``: a
    query reads only the keys of its own document. ``causal``: query ``i`` reads
    the keys up to itself only, counted from the end when there are more keys
    than queries (the queries are the last ``i`` of the ``j`` positions, as when
    decoding with a cache). Every field may be ``None``/False.

    A query that may read no key at all spreads its weight evenly over its keys
    (the masked logits are the dtype's minimum, not ``-inf``); the causal mask
    alone uses ``-inf``, so such a query then spreads it over the keys up to
    itself.

    Shapes:
        keys: ``(b, j)`` bool; pairs: ``(b, i, j)`` or per head ``(b, h, i, j)`` bool
        query_documents: ``(b, i)``; key_documents: ``(b, j)`` integers
    """

    keys: torch.Tensor | None = None
    pairs: torch.Tensor | None = None
    query_documents: torch.Tensor | None = None
    key_documents: torch.Tensor | None = None
    causal: bool = False

    @property
    def empty(self) -> bool:
        """Whether nothing is masked (no field set)."""
        return (
            self.keys is None and self.pairs is None
            and self.query_documents is None and not self.causal
        )

    def allowed(self, query_len: int, key_len: int) -> torch.Tensor | None:
        """Every pair that may be read apart from the causal rule, or None if all.

        Shapes:
            output: ``(b or 1, 1 or h, i, j)`` bool, or None
        """
        allowed = None
        if self.keys is not None:
            allowed = self.keys[:, None, None, :]  # (b, 1, 1, j)
        if self.pairs is not None:
            pairs = self.pairs
            if pairs.dim() == 3:
                pairs = pairs[:, None]  # (b, 1, i, j)
            allowed = pairs if allowed is None else allowed & pairs
        if self.query_documents is not None:
            same = (
                self.query_documents[:, None, :, None]
                == self.key_documents[:, None, None, :]
            )  # (b, 1, i, j)
            allowed = same if allowed is None else allowed & same
        if allowed is not None:
            allowed = allowed.expand(-1, -1, query_len, key_len)
        return allowed

    def future(
        self, query_len: int, key_len: int, device: torch.device | None = None
    ) -> torch.Tensor | None:
        """The pairs the causal rule removes, or None when not causal.

        Shapes:
            output: ``(i, j)`` bool, True for a key after its query
        """
        if not self.causal:
            return None
        return future_keys(query_len, key_len, device)


def _check_length(name: str, value: object) -> int:
    """A length ``>= 0``: an int, or torch's symbolic int while compiling."""
    if isinstance(value, bool) or not isinstance(
        value, (numbers.Integral, torch.SymInt)
    ):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if isinstance(value, numbers.Integral) and value < 0:
        raise ValueError(f"{name} must be an int >= 0, got {value}")
    return value


def future_keys(
    query_len: int, key_len: int, device: torch.device | None = None
) -> torch.Tensor:
    """The pairs a causal mask removes: key ``j`` after query ``i``.

    Counted in the order of the sequence. With more keys than queries, the
    queries are the last ``query_len`` positions (decoding with a cache), so query
    ``i`` reads keys ``j <= i + key_len - query_len``.

    Shapes:
        output: ``(i, j)`` bool, True above the (shifted) diagonal
    """
    query_len = _check_length("query_len", query_len)
    key_len = _check_length("key_len", key_len)
    device = check_device("device", device)
    offset = key_len - query_len
    rows = torch.arange(query_len, device=device)[:, None]  # (i, 1)
    columns = torch.arange(key_len, device=device)[None, :]  # (1, j)
    return columns > rows + offset  # (i, j)


def apply(logits: torch.Tensor, mask: Mask | None) -> torch.Tensor:
    """The logits with masked pairs at the dtype's minimum and future keys at -inf.

    Shapes:
        logits: ``(b, h, i, j)``; output: ``(b, h, i, j)``
    """
    if not isinstance(logits, torch.Tensor):
        got = type(logits).__name__
        raise TypeError(f"logits must be a (b, h, i, j) tensor, got {got}")
    if logits.dim() != 4:
        got = tuple(logits.shape)
        raise ValueError(f"logits must have shape (b, h, i, j), got {got}")
    if mask is not None and not isinstance(mask, Mask):
        raise TypeError(
            f"mask must be a relpos.masks.Mask or None, got {type(mask).__name__}"
        )
    if mask is None:
        return logits
    i, j = logits.shape[-2:]
    allowed = mask.allowed(i, j)  # (b, 1, i, j)
    if allowed is not None:
        logits = logits.masked_fill(~allowed, torch.finfo(logits.dtype).min)
    future = mask.future(i, j, logits.device)  # (i, j)
    if future is not None:
        logits = logits.masked_fill(future, float("-inf"))
    return logits


# -- reading what users pass ---------------------------------------------------------


def _keep_from_numbers(mask: torch.Tensor, name: str, check: bool) -> torch.Tensor:
    """A 0/1 or additive (2-D or 3-D) mask as bool "may attend"."""
    if mask.is_floating_point():
        ones = (mask > 0).any()  # 0/1; otherwise additive (zeros alone: no padding)
        if check:
            if bool(ones):
                if not bool(((mask == 0) | (mask == 1)).all()):
                    _refuse(name, mask, "a 0/1 mask holds 0 and 1 only")
            else:
                _check_additive(name, mask)
        # Branch-free: 0/1 -> keep the nonzeros; additive -> keep the zeros.
        return torch.where(ones, mask != 0, mask == 0)
    if check and not bool(((mask == 0) | (mask == 1)).all()):
        _refuse(name, mask, "an integer mask holds 0 and 1 only")
    return mask != 0


def _check_additive(name: str, mask: torch.Tensor) -> None:
    if not bool(((mask == 0) | (mask <= ADDITIVE_MASKED)).all()):
        _refuse(name, mask, "an additive mask holds 0 and values <= -1e4")


def _keep_from_extended(mask: torch.Tensor, name: str, check: bool) -> torch.Tensor:
    """``transformers``' 4-D additive float mask as bool "may attend"."""
    if check and not bool(((mask == 0) | (mask <= ADDITIVE_MASKED)).all()):
        _refuse(name, mask, "a 4-D float mask is additive: 0 and values <= -1e4")
    return mask == 0


def _keep_from_torch(mask: object, name: str, device: torch.device) -> torch.Tensor:
    """A mask in torch's own convention (bool True: *not* allowed; float additive)
    as bool "may attend"."""
    if not isinstance(mask, torch.Tensor):
        raise TypeError(
            f"{name} must be a bool tensor (True: masked) or an additive float one, "
            f"as in torch.nn.MultiheadAttention; got {type(mask).__name__}"
        )
    mask = mask.to(device=device)
    if mask.dtype == torch.bool:
        return ~mask
    if not mask.is_floating_point():
        raise TypeError(
            f"{name} must be bool (True: masked) or additive float, as in "
            f"torch.nn.MultiheadAttention; got {mask.dtype}"
        )
    if not (torch.compiler.is_compiling() or torch.jit.is_tracing()):
        _check_additive(name, mask)
    return mask == 0


def read_key_padding_mask(
    key_padding_mask: object,
    batch: int,
    key_lens: tuple[int, ...],
    device: torch.device,
) -> torch.Tensor | None:
    """``nn.MultiheadAttention``'s ``key_padding_mask`` as a bool key mask.

    Bool: True for a *padding* key (the opposite of relpos's bool masks); float:
    additive (0 for a token, ``<= -1e4`` or ``-inf`` for padding). Its length is
    one of ``key_lens`` (with a cache: the new tokens', or every key's).

    Shapes:
        key_padding_mask: ``(b, j)``; output: ``(b, j)`` bool, True = attend
    """
    if key_padding_mask is None:
        return None
    name = "key_padding_mask"
    keep = _keep_from_torch(key_padding_mask, name, device)
    if keep.dim() != 2 or keep.shape[0] != batch or keep.shape[1] not in key_lens:
        lens = " or ".join(str(n) for n in key_lens)
        raise ValueError(
            f"{name} must have shape (b, j) with b = {batch} and j = {lens}, "
            f"got {tuple(key_padding_mask.shape)}"
        )
    return keep


def read_attn_mask(
    attn_mask: object,
    batch: int,
    heads: int,
    query_len: int,
    key_len: int,
    device: torch.device,
) -> torch.Tensor | None:
    """``nn.Transformer``'s ``attn_mask`` as a bool pair mask, per head if given so.

    Bool: True where attention is *not* allowed; float: additive (0 attend,
    ``<= -1e4`` or ``-inf`` masked; a mask, not a bias). ``(i, j)`` holds for
    every sequence and head, ``(b * h, i, j)`` per sequence and head (torch's
    layout: sequence-major).

    Shapes:
        attn_mask: ``(i, j)`` or ``(b * h, i, j)``
        output: ``(b, i, j)`` or ``(b, h, i, j)`` bool, True = attend
    """
    if attn_mask is None:
        return None
    name = "attn_mask"
    keep = _keep_from_torch(attn_mask, name, device)
    shape = tuple(keep.shape)
    if shape == (query_len, key_len):
        return keep.expand(batch, query_len, key_len)  # (b, i, j)
    if shape == (batch * heads, query_len, key_len):
        return keep.unflatten(0, (batch, heads))  # (b, h, i, j)
    raise ValueError(
        f"{name} must have shape (i, j) = {(query_len, key_len)} or "
        f"(b * h, i, j) = {(batch * heads, query_len, key_len)}, got {shape}"
    )


def _refuse(name: str, mask: torch.Tensor, rule: str) -> None:
    odd = torch.unique(mask.detach().flatten().float())[:4].tolist()
    raise ValueError(f"{name} must be {_CONVENTIONS}; {rule}, got values {odd}")


def read_mask(
    attention_mask: object,
    batch: int,
    query_len: int,
    key_len: int,
    device: torch.device,
    *,
    name: str = "attention_mask",
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """Read ``attention_mask`` in any accepted convention (module docstring).

    Returns ``(keys, pairs)``: a bool key mask ``(b, j)`` or a bool pair mask
    ``(b, i, j)`` (the other one None), True where attention is allowed. On the
    CPU in eager mode a key mask without padding comes back as None (it changes
    nothing). Anything else is a ``TypeError``/``ValueError`` naming ``name``.

    Shapes:
        attention_mask: ``(b, j)``, ``(b, i, j)``, ``(b, 1, 1, j)`` or ``(b, 1, i, j)``
        output: ``keys (b, j)`` or ``pairs (b, i, j)`` bool
    """
    if attention_mask is None:
        return None, None
    if not isinstance(attention_mask, torch.Tensor) or attention_mask.is_complex():
        got = type(attention_mask).__name__
        raise TypeError(f"{name} must be a tensor, {_CONVENTIONS}; got {got}")
    mask = attention_mask.to(device=device)
    shape = tuple(mask.shape)
    keys_shape, pairs_shape = (batch, key_len), (batch, query_len, key_len)
    # No value reads while compiling (a graph break) or tracing (torch.jit.trace
    # would keep the value of the traced call for every later one).
    check = not (torch.compiler.is_compiling() or torch.jit.is_tracing())
    if shape in ((batch, 1, 1, key_len), (batch, 1, query_len, key_len)):
        if mask.dtype == torch.bool:
            keep = mask
        elif mask.is_floating_point():
            keep = _keep_from_extended(mask, name, check)
        else:
            raise TypeError(
                f"{name} of 4 dimensions must be additive float (transformers' "
                f"extended mask) or bool, got {mask.dtype}: in 4-D, 0 means 'attend'"
            )
        keep = keep[:, 0]  # (b, 1 or i, j)
        if shape[2] == 1:
            return _drop_if_full(keep[:, 0], check), None  # (b, j)
        return None, keep
    if shape not in (keys_shape, pairs_shape):
        raise ValueError(
            f"{name} must have shape (b, n) = {keys_shape}, (b, i, j) = {pairs_shape}, "
            f"(b, 1, 1, j) or (b, 1, i, j); got {shape}"
        )
    keep = mask if mask.dtype == torch.bool else _keep_from_numbers(mask, name, check)
    if shape == keys_shape:
        return _drop_if_full(keep, check), None
    return None, keep


def _drop_if_full(keys: torch.Tensor, check: bool) -> torch.Tensor | None:
    # Reading the mask is free on the CPU; on an accelerator it would wait for the
    # device, and under torch.compile it would break the graph: keep the mask there.
    if check and keys.device.type == "cpu" and bool(keys.all()):
        return None
    return keys


def read_documents(
    document_ids: object, batch: int, length: int, device: torch.device
) -> torch.Tensor | None:
    """Check ``document_ids``: ``(b, n)`` integers, one id per document in a row.

    Shapes:
        document_ids: ``(b, n)``; output: ``(b, n)`` long
    """
    if document_ids is None:
        return None
    ids = check_int_tensor("document_ids", document_ids)
    if tuple(ids.shape) != (batch, length):
        raise ValueError(
            f"document_ids must have shape (b, n) = {(batch, length)}, "
            f"got {tuple(ids.shape)}"
        )
    return ids.to(device=device, dtype=torch.long)


__all__ = [
    "ADDITIVE_MASKED",
    "Mask",
    "apply",
    "future_keys",
    "read_attn_mask",
    "read_documents",
    "read_key_padding_mask",
    "read_mask",
]
