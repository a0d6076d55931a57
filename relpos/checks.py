"""Argument checks shared by the public functions (public: the book layer uses them).

Every public function of ``relpos`` validates its input here, so that bad input
fails early with a ``ValueError`` or ``TypeError`` that names the argument and
the values it accepts, instead of an ``IndexError`` from deep inside torch.
"""

from __future__ import annotations

import numbers
from typing import Any

import torch


def check_int(name: str, value: object, *, minimum: int | None = None) -> int:
    """Return ``value`` as an ``int`` after checking its type and lower bound."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value}")
    return value


def check_rate(name: str, value: object) -> float:
    """A probability (a dropout rate) as a ``float``, checked to be in ``[0, 1)``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        got = f"{type(value).__name__} {value!r}"
        raise TypeError(f"{name} must be a float in [0, 1), got {got}")
    if not 0.0 <= float(value) < 1.0:
        raise ValueError(f"{name} must be a float in [0, 1), got {value!r}")
    return float(value)


def check_int_tensor(name: str, value: torch.Tensor) -> torch.Tensor:
    """Check that ``value`` is a tensor of an integer dtype (not float, not bool)."""
    if not isinstance(value, torch.Tensor):
        got = type(value).__name__
        raise TypeError(f"{name} must be an int or an integer tensor, got {got}")
    if value.is_floating_point() or value.is_complex() or value.dtype == torch.bool:
        raise TypeError(
            f"{name} must be an integer tensor (torch.int64, int32, ...), "
            f"got dtype {value.dtype}"
        )
    return value


def check_device(name: str, value: object) -> torch.device | None:
    """``value`` as a ``torch.device`` (a device, or a string such as ``"cpu"``,
    ``"cuda:0"``), or ``None`` where it is ``None``."""
    if value is None or isinstance(value, torch.device):
        return value
    if not isinstance(value, str):
        got = f"{type(value).__name__} {value!r}"
        raise TypeError(f"{name} must be a torch.device, a string or None, got {got}")
    try:
        return torch.device(value)
    except RuntimeError:
        raise ValueError(
            f"{name} must name a device torch knows ('cpu', 'cuda', 'cuda:0', "
            f"'mps', ...), got {value!r}"
        ) from None


def check_dtype(
    name: str, value: object, *, floating: bool = False
) -> torch.dtype | None:
    """``value`` if it is a ``torch.dtype`` (a floating one where ``floating``), or
    ``None``."""
    if value is None:
        return None
    if not isinstance(value, torch.dtype):
        got = f"{type(value).__name__} {value!r}"
        raise TypeError(f"{name} must be a torch.dtype or None, got {got}")
    if floating and not value.is_floating_point:
        raise TypeError(
            f"{name} must be a floating dtype (torch.float32, ...), got {value}"
        )
    return value


def check_choice(name: str, value: object, choices: tuple[str, ...]) -> str:
    """Check that ``value`` is one of the strings in ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def check_bool(name: str, value: object) -> bool:
    """Check that ``value`` is a ``bool`` (not a string, not a number)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__} {value!r}")
    return value


def check_float_tensor(
    name: str, value: object, shape: str, *, dim: int | None = None
) -> torch.Tensor:
    """Check that ``value`` is a floating-point tensor (of ``dim`` dimensions)."""
    if not isinstance(value, torch.Tensor) or not value.is_floating_point():
        got = getattr(value, "dtype", type(value).__name__)
        raise TypeError(
            f"{name} must be a floating-point tensor of shape {shape}, got {got}"
        )
    if dim is not None and value.dim() != dim:
        raise ValueError(f"{name} must have shape {shape}, got {tuple(value.shape)}")
    return value


def check_number_tensor(
    name: str, value: object, shape: str, *, dim: int
) -> torch.Tensor:
    """A real-valued tensor (integer or floating, not bool) of ``dim`` dimensions."""
    if (
        not isinstance(value, torch.Tensor)
        or value.dtype == torch.bool
        or value.is_complex()
    ):
        got = getattr(value, "dtype", type(value).__name__)
        raise TypeError(f"{name} must be a real tensor of shape {shape}, got {got}")
    if value.dim() != dim:
        raise ValueError(f"{name} must have shape {shape}, got {tuple(value.shape)}")
    return value


def check_same_dtype(
    name: str, value: torch.Tensor, other: str, dtype: torch.dtype
) -> None:
    """A ``TypeError`` naming ``name`` when its dtype is not ``dtype`` (``other``'s)."""
    if value.dtype != dtype:
        raise TypeError(
            f"{name} must have the dtype of {other} ({dtype}), got {value.dtype}; "
            f"convert one of them with .to({dtype}) or .to({value.dtype})"
        )


def check_same_device(
    name: str, value: torch.Tensor, other: str, device: torch.device
) -> None:
    """A ``ValueError`` naming ``name`` when it is not on ``other``'s device."""
    if value.device != device:
        raise ValueError(
            f"{name} must be on the device of {other} ({device}), got {value.device}"
        )


def check_index(name: str, index: object, rows: int, shape: str) -> torch.Tensor:
    """An integer tensor of row numbers, each in ``[0, rows)`` (reads the values)."""
    index = check_int_tensor(name, index)
    if index.numel() and (int(index.min()) < 0 or int(index.max()) >= rows):
        raise ValueError(
            f"{name} must hold rows in [0, {rows}) for a table of {rows} rows, "
            "got values "
            f"in [{int(index.min())}, {int(index.max())}] (shape {shape})"
        )
    return index


def check_no_removed_call(name: str, removed: tuple[Any, ...]) -> None:
    """Refuse relpos 0.2's call ``module(hidden_states, rel_embeddings, mask)``.

    ``removed`` holds the positional arguments after ``attention_mask``; the
    call was removed in 0.4 and the error names the one to write instead.
    """
    if removed:
        raise TypeError(
            f"{name} takes hidden_states and attention_mask positionally, got "
            f"{2 + len(removed)} positional arguments: relpos 0.2's call "
            "(hidden_states, rel_embeddings, attention_mask) was removed in 0.4; "
            "write module(hidden_states, attention_mask, rel_embeddings=table) "
            "and pass the others by keyword (positions=, cache=, ...)"
        )
