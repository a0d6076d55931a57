"""The one registry of attention schemes: each scheme registers itself, in its own file.

A scheme's registration (:class:`SchemeRegistration`) holds every fact the book's
experiments need, as core-level values that never mention ``relpos.book``:

- ``attention``: the self-attention class, built as
  ``attention(hidden_size, num_heads, **settings)`` (plus ``causal=True`` in a
  decoder).
- ``settings(config)``: which fields of a run's config become which constructor
  arguments. ``config`` is any object with the fields read (the book passes its
  ``relpos.book.experiments.Config``); ``None`` means the class's defaults.
- ``variants``: further scheme names, each the same class with some constructor
  arguments changed (``"shaw-keys"``: ``relative_values=False``).
- ``entries(attention, rel)``: the coverage reader, which entry of each kind
  every pair reads (:class:`PositionEntries`): which distances share a table row,
  a bucket or a fixed value. It reads the sizes from a built ``attention``, so a
  variant or a causal form is read as it was built.
- ``relative``: whether the position part of a logit depends on ``i - j`` alone
  (moving every position by the same amount changes nothing); FIRE also reads
  the query's position. Its landscape (``score_by_distance``, the query at ``r``
  and the key at 0) is then what every pair ``r`` apart gets.
- ``content_free``: whether the position part is a bias that ignores the
  contents (T5, ALiBi, KERPLE, FIRE): its landscape is the bias itself.

``ATTENTIONS`` (name -> class) is the view the chapters iterate over; its order
is the order of registration.

Shapes:
    rel: ``(i, j)`` distances ``i - j``; PositionEntries.index: ``(i, j)``
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import torch

from .attention import SchemeSelfAttention


@dataclass(frozen=True)
class PositionEntries:
    """The entry of one kind that every (query, key) pair reads.

    Attributes:
        index: ``(n, n)`` long tensor; ``index[i, j]`` is the entry pair ``(i, j)``
            reads, or ``none`` where the pair reads no entry of this kind.
        learned: a table row that gets a gradient only where read (``True``), or
            the value of a fixed formula (``False``).
        table: for a learned kind, the end of the name of the parameter(s) that
            hold its rows (``"key_table"``, ``"position_bias.embedding.weight"``;
            matched against the names in a whole model); ``None`` for a fixed kind.
        none: the value meaning "no entry" (``-1``), or ``None`` for kinds whose
            entries are signed distances (every pair reads one).

    Shapes:
        index: ``(n, n)``
    """

    index: torch.Tensor
    learned: bool
    table: str | None = None
    none: int | None = -1

    def __post_init__(self) -> None:
        index = self.index
        if (
            not isinstance(index, torch.Tensor)
            or index.dim() != 2
            or index.shape[0] != index.shape[1]
            or index.dtype != torch.long
        ):
            got = tuple(index.shape) if isinstance(index, torch.Tensor) else index
            raise ValueError(f"index must be an (n, n) long tensor, got {got!r}")
        if not isinstance(self.learned, bool):
            raise TypeError(f"learned must be a bool, got {self.learned!r}")
        if self.learned and not isinstance(self.table, str):
            raise TypeError(
                f"table must name a parameter for a learned kind, got {self.table!r}"
            )

    def read(self, pairs: torch.Tensor) -> torch.Tensor:
        """Which of ``pairs`` read an entry of this kind.

        Shapes:
            pairs: ``(n, n)`` bool
            output: ``(n, n)`` bool
        """
        if self.none is None:
            return pairs
        return pairs & (self.index != self.none)


#: ``settings(config) -> constructor keyword arguments``.
Settings = Callable[[Any], dict[str, Any]]
#: ``entries(attention, rel) -> {kind: PositionEntries}``.
EntriesReader = Callable[
    [SchemeSelfAttention, torch.Tensor], dict[str, PositionEntries]
]


def plain_name(argument: str, name: object) -> str:
    """``name`` if it is a scheme name: lowercase letters, digits, ``-`` and ``_``."""
    plain = isinstance(name, str) and name and all(
        c.isdigit() or c in "-_" or (c.isalpha() and c.islower()) for c in name
    )
    if not plain:
        raise ValueError(
            f"{argument} must be a non-empty lowercase name (letters, digits, '-', "
            f"'_'), got {name!r}"
        )
    return name


@dataclass(frozen=True)
class SchemeRegistration:
    """Everything the book's experiments know of one attention scheme.

    Attributes:
        name: the scheme's name (a plain lowercase name, also a command-line name).
        attention: a subclass of ``SchemeSelfAttention`` built as
            ``attention(hidden_size, num_heads, **settings)``; ``causal=True`` is
            added for a decoder.
        settings: ``settings(config)`` -> constructor keyword arguments from a
            run's config (the book's ``Config``: any object with the fields
            read); ``None``: the class's defaults.
        entries: ``entries(attention, rel)`` -> ``{kind: PositionEntries}``, the
            coverage reader (module docstring); ``None``: no reader.
        variants: more scheme names -> the constructor arguments they change.
        relative: the position part of a logit depends on ``i - j`` only.
        content_free: the position part is a bias that ignores the contents.
    """

    name: str
    attention: type[SchemeSelfAttention]
    settings: Settings | None = None
    entries: EntriesReader | None = None
    variants: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    relative: bool = True
    content_free: bool = False

    def __post_init__(self) -> None:
        plain_name("name", self.name)
        attention = self.attention
        subclass = isinstance(attention, type) and issubclass(
            attention, SchemeSelfAttention
        )
        if not subclass:
            raise TypeError(
                "attention must be a subclass of relpos.schemes.SchemeSelfAttention, "
                f"got {attention!r}"
            )
        for argument in ("settings", "entries"):
            value = getattr(self, argument)
            if value is not None and not callable(value):
                raise TypeError(
                    f"{argument} must be callable or None, got {type(value).__name__}"
                )
        if not isinstance(self.variants, Mapping):
            raise TypeError(
                "variants must map scheme names to constructor arguments, got "
                f"{type(self.variants).__name__}"
            )
        for variant, changes in self.variants.items():
            plain_name("variants' names", variant)
            if not isinstance(changes, Mapping) or not all(
                isinstance(key, str) for key in changes
            ):
                raise TypeError(
                    f"variants[{variant!r}] must map argument names to values, "
                    f"got {changes!r}"
                )
        for argument in ("relative", "content_free"):
            if not isinstance(getattr(self, argument), bool):
                raise TypeError(
                    f"{argument} must be a bool, got {getattr(self, argument)!r}"
                )
        # frozen: keep a read-only copy, so that no caller changes a registration
        frozen = {k: MappingProxyType(dict(v)) for k, v in self.variants.items()}
        object.__setattr__(self, "variants", MappingProxyType(frozen))

    def arguments(self, config: Any, variant: str | None = None) -> dict[str, Any]:
        """The constructor arguments of this scheme (or its ``variant``) for ``config``.

        ``causal=True`` is added when ``config.causal`` is true (the core's
        contract: ``causal`` is passed only for a decoder).
        """
        found = {} if self.settings is None else dict(self.settings(config))
        if variant is not None:
            if variant not in self.variants:
                raise ValueError(
                    f"variant must be one of {tuple(self.variants)} of scheme "
                    f"{self.name!r}, got {variant!r}"
                )
            found.update(self.variants[variant])
        if getattr(config, "causal", False):
            found["causal"] = True
        return found


#: Each registered scheme by name, in the order of registration.
REGISTRY: dict[str, SchemeRegistration] = {}
#: Each scheme's self-attention by name (a view of ``REGISTRY``, the same order).
ATTENTIONS: dict[str, type[SchemeSelfAttention]] = {}


def register(registration: SchemeRegistration, *, replace: bool = False) -> None:
    """Add ``registration`` (and its variants' names) to the registry.

    A taken name, of the scheme or of one of its variants, is a ``ValueError``
    unless ``replace=True`` (which replaces the scheme of the same name).
    """
    if not isinstance(registration, SchemeRegistration):
        raise TypeError(
            "registration must be a SchemeRegistration, got "
            f"{type(registration).__name__}"
        )
    name = registration.name
    if name in REGISTRY and not replace:
        raise ValueError(f"name {name!r} is already an attention; pass replace=True")
    others = {n: r for n, r in REGISTRY.items() if n != name}
    taken = set(others) | {v for r in others.values() for v in r.variants}
    clash = sorted(({name} | set(registration.variants)) & taken)
    if clash:
        raise ValueError(f"registration's names {clash} are already schemes")
    REGISTRY[name] = registration
    ATTENTIONS[name] = registration.attention


def scheme_names() -> list[str]:
    """Every registered scheme name: each scheme, then its variants, in order."""
    return [
        name
        for registration in REGISTRY.values()
        for name in (registration.name, *registration.variants)
    ]


def resolve(name: str) -> tuple[SchemeRegistration, str | None]:
    """The registration of scheme ``name`` and the variant it names (or ``None``)."""
    for registration in REGISTRY.values():
        if name == registration.name:
            return registration, None
        if name in registration.variants:
            return registration, name
    raise ValueError(f"name must be one of {tuple(scheme_names())}, got {name!r}")


def build_attention(
    name: str,
    config: Any,
    *,
    device: torch.device | str | None = None,
    backend: str | None = None,
) -> SchemeSelfAttention:
    """Scheme ``name``'s self-attention at the sizes and setting of ``config``.

    Reads ``config.hidden_size``, ``config.num_heads``, ``config.causal`` and the
    fields of the scheme's ``settings``; a field the scheme reads and ``config``
    lacks is a ``TypeError`` naming it. The kernel is ``backend``, else
    ``config.backend`` where the config has one, else the module's default
    (``"gather"``). ``device="meta"`` builds it without memory and without
    drawing random numbers (for reading its sizes).
    """
    registration, variant = resolve(name)
    try:
        arguments = registration.arguments(config, variant)
        sizes = (config.hidden_size, config.num_heads)
    except AttributeError as error:
        field = getattr(error, "name", None) or str(error)
        raise TypeError(
            f"config must have a field {field!r}: scheme {name!r} reads it "
            f"(got a {type(config).__name__} without it)"
        ) from None
    backend = getattr(config, "backend", None) if backend is None else backend
    if backend is not None:
        arguments["backend"] = backend
    place = nullcontext() if device is None else torch.device(device)
    with place:
        return registration.attention(*sizes, **arguments)


__all__ = [
    "ATTENTIONS",
    "EntriesReader",
    "PositionEntries",
    "REGISTRY",
    "SchemeRegistration",
    "Settings",
    "build_attention",
    "plain_name",
    "register",
    "resolve",
    "scheme_names",
]
