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
- ``positional``: whether the scheme gives attention any position information
  (``False`` for ``none``, content attention alone: relative and content-free
  only because it has no position part, and never one of the schemes a claim for
  relative positions is judged on, nor a cost the benchmark times apart from
  plain attention).
- ``variant_settings``: for a variant, more config fields it reads
  (``settings(config)`` of its own, applied after its fixed changes):
  ``deberta-buckets`` reads the book's bucket fields.
- ``shared``: an input the stack around the attention owns once and hands every
  layer (:class:`SharedInput`): DeBERTa's ``(2k, hidden)`` table and its
  LayerNorm, passed as ``rel_embeddings``. ``relpos.Transformer`` reads it; a
  scheme without one (``None``) needs nothing from its stack.
- ``model``: per name (the scheme's or a variant's), settings of the model
  around the attention rather than of the attention itself: ``table_norm``
  (the shared table's LayerNorm, a ``relpos.Transformer`` argument),
  ``table_start`` (``"sinusoidal"``: the shared table starts as sinusoids) and
  ``enhanced_mask_decoder`` (DeBERTa's decoder of absolute positions, which
  the book's experiments build). A stack refuses a setting it does not build.
- ``sized``: per name, the constructor arguments at one common table span
  ``k`` (``sized[name](k)``), for comparing schemes at one size (the
  benchmark); a name without one is built with its class's defaults, and only
  a variant with one is measured.
- ``arithmetic(sizes, arguments)``: the matrix-multiply FLOP the position terms
  add to plain attention (a multiply-add is 2 FLOP), part by part
  (``{"key_rows": ..., "value_rows": ...}``), in the scheme's least (row,
  gather) form for positions shared by the batch, at :class:`WorkSizes`
  (``n``, ``hidden``, ``heads``, ``batch``, the common span ``k`` and an MLP
  ``width``) for a name built with ``arguments`` (its variant's changes and its
  ``sized(k)``: :meth:`SchemeRegistration.arguments_at`). A scheme whose
  position part is element-wise work only (a bias read from a row or a
  formula, a rotation) adds nothing: :func:`element_wise`. ``None``: not
  counted; :func:`position_work` refuses the scheme. The benchmark's roofline
  (its floors) reads it.

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

from ..checks import check_int
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


@dataclass(frozen=True)
class SharedInput:
    """An input that a stack owns once and hands the attention of every layer.

    Attributes:
        keyword: the attention's ``forward`` keyword that takes it
            (``"rel_embeddings"``).
        build: ``build(attention)`` -> the stack's module holding it as
            ``.weight``, sized from a built attention (DeBERTa's
            ``RelativePositionEmbedding(span, hidden)``); its parameters are the
            stack's (``table.weight``).
        detached: constructor arguments of an attention whose stack owns the
            input (``{"own_table": False}``).
        norm: whether the stack puts it through a LayerNorm before use by
            default (``model``'s ``table_norm`` changes it per name).

    Shapes:
        build(attention).weight: ``(rows, hidden)``
    """

    keyword: str
    build: Callable[[Any], Any]
    detached: Mapping[str, Any] = field(default_factory=dict)
    norm: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.keyword, str) or not self.keyword.isidentifier():
            raise ValueError(
                f"keyword must be a forward keyword name, got {self.keyword!r}"
            )
        if not callable(self.build):
            raise TypeError(
                f"build must be callable as build(attention), got {self.build!r}"
            )
        if not isinstance(self.detached, Mapping):
            raise TypeError(
                "detached must map argument names to values, got "
                f"{type(self.detached).__name__}"
            )
        if not isinstance(self.norm, bool):
            raise TypeError(f"norm must be a bool, got {self.norm!r}")
        object.__setattr__(self, "detached", MappingProxyType(dict(self.detached)))


#: The model settings a registration's ``model`` may give, and their kinds.
MODEL_SETTINGS: dict[str, tuple[type, ...]] = {
    "table_norm": (bool,),
    "table_start": (str,),
    "enhanced_mask_decoder": (bool,),
}

#: ``settings(config) -> constructor keyword arguments``.
Settings = Callable[[Any], dict[str, Any]]
@dataclass(frozen=True)
class WorkSizes:
    """The sizes a scheme's ``arithmetic`` counts its work at.

    Attributes:
        n: the sequence length (queries and keys).
        hidden: the model width ``H`` (``heads`` divides it).
        heads: the number of heads.
        batch: the batch ``b``.
        span: the common table span ``k`` (DeBERTa's ``2k`` rows, Shaw's
            ``2k + 1``).
        width: an MLP's hidden width (FIRE's ``w``).
    """

    n: int
    hidden: int
    heads: int
    batch: int = 1
    span: int = 256
    width: int = 32

    def __post_init__(self) -> None:
        check_int("n", self.n, minimum=0)
        for argument in ("hidden", "heads", "batch", "span", "width"):
            check_int(argument, getattr(self, argument), minimum=1)
        if self.hidden % self.heads:
            raise ValueError(
                "hidden must be divisible by heads, got "
                f"hidden={self.hidden} and heads={self.heads}"
            )


#: ``arithmetic(sizes, arguments) -> {part: FLOP}``.
Arithmetic = Callable[[WorkSizes, Mapping[str, Any]], Mapping[str, int]]


def element_wise(sizes: WorkSizes, arguments: Mapping[str, Any]) -> dict[str, int]:
    """The ``arithmetic`` of a scheme whose position part adds no product: ``{}``.

    A bias read from a row or a formula, or a rotation of the queries and keys,
    is element-wise work (``O(b h n^2)`` or less), not a matrix product.
    """
    return {}


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
        positional: the scheme gives attention position information at all
            (``False``: ``none``).
        variant_settings: a variant's name -> its own ``settings(config)``,
            applied after its fixed changes.
        shared: the input the stack owns and hands every layer, or ``None``.
        model: a name (scheme or variant) -> the model's settings around the
            attention (keys of ``MODEL_SETTINGS``).
        sized: a name -> ``sized(k)``, the constructor arguments at span ``k``.
        arithmetic: ``arithmetic(sizes, arguments)`` -> the matrix-multiply
            FLOP the position terms add, part by part (module docstring);
            ``None``: not counted.
    """

    name: str
    attention: type[SchemeSelfAttention]
    settings: Settings | None = None
    entries: EntriesReader | None = None
    variants: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    relative: bool = True
    content_free: bool = False
    variant_settings: Mapping[str, Settings] = field(default_factory=dict)
    shared: SharedInput | None = None
    model: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    sized: Mapping[str, Callable[[int], Mapping[str, Any]]] = field(
        default_factory=dict
    )
    arithmetic: Arithmetic | None = None
    positional: bool = True

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
        for argument in ("settings", "entries", "arithmetic"):
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
        for argument in ("relative", "content_free", "positional"):
            if not isinstance(getattr(self, argument), bool):
                raise TypeError(
                    f"{argument} must be a bool, got {getattr(self, argument)!r}"
                )
        if self.shared is not None and not isinstance(self.shared, SharedInput):
            raise TypeError(
                f"shared must be a SharedInput or None, got {type(self.shared).__name__}"
            )
        names = {self.name, *self.variants}
        for argument in ("variant_settings", "model", "sized"):
            value = getattr(self, argument)
            if not isinstance(value, Mapping):
                raise TypeError(
                    f"{argument} must map scheme names to values, got "
                    f"{type(value).__name__}"
                )
            known = names if argument != "variant_settings" else set(self.variants)
            unknown = sorted(set(value) - known)
            if unknown:
                raise ValueError(
                    f"{argument} must name this scheme's variants ({sorted(known)}), "
                    f"got {unknown}"
                )
        for argument in ("variant_settings", "sized"):
            for name, value in getattr(self, argument).items():
                if not callable(value):
                    raise TypeError(
                        f"{argument}[{name!r}] must be callable, got {value!r}"
                    )
        for name, settings in self.model.items():
            if not isinstance(settings, Mapping):
                raise TypeError(f"model[{name!r}] must be a mapping, got {settings!r}")
            for key, value in settings.items():
                kinds = MODEL_SETTINGS.get(key)
                if kinds is None:
                    raise ValueError(
                        f"model[{name!r}] must use the settings {tuple(MODEL_SETTINGS)}"
                        f", got {key!r}"
                    )
                if not isinstance(value, kinds):
                    raise TypeError(
                        f"model[{name!r}][{key!r}] must be a {kinds[0].__name__}, "
                        f"got {value!r}"
                    )
            if settings and self.shared is None and (
                {"table_norm", "table_start"} & set(settings)
            ):
                raise ValueError(
                    f"model[{name!r}] sets the shared table, but shared is None"
                )
        # frozen: keep a read-only copy, so that no caller changes a registration
        frozen = {k: MappingProxyType(dict(v)) for k, v in self.variants.items()}
        object.__setattr__(self, "variants", MappingProxyType(frozen))
        for argument in ("variant_settings", "sized"):
            read_only = MappingProxyType(dict(getattr(self, argument)))
            object.__setattr__(self, argument, read_only)
        model = {k: MappingProxyType(dict(v)) for k, v in self.model.items()}
        object.__setattr__(self, "model", MappingProxyType(model))

    def model_settings(self, variant: str | None = None) -> dict[str, Any]:
        """The model's settings around the attention for this scheme or ``variant``.

        The scheme's own, then the variant's (``model``); the shared table's
        norm defaults to ``shared.norm``.
        """
        found: dict[str, Any] = {}
        if self.shared is not None:
            found["table_norm"] = self.shared.norm
        found.update(self.model.get(self.name, {}))
        if variant is not None:
            found.update(self.model.get(variant, {}))
        return found

    def arguments_at(self, name: str, span: int) -> dict[str, Any]:
        """The constructor arguments of ``name`` (this scheme or a variant) at the
        common span ``span``: the variant's changes, then ``sized[name](span)``."""
        if name != self.name and name not in self.variants:
            raise ValueError(
                f"name must be {self.name!r} or one of its variants "
                f"{tuple(self.variants)}, got {name!r}"
            )
        found = dict(self.variants.get(name, {}))
        sized = self.sized.get(name)
        if sized is not None:
            found.update(sized(span))
        return found

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
            if variant in self.variant_settings:
                found.update(self.variant_settings[variant](config))
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
    if not isinstance(name, str):
        raise TypeError(
            f"name must be a scheme name (a str, one of {tuple(scheme_names())}), "
            f"got {type(name).__name__} {name!r}"
        )
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
    registration, variant = resolve(name)  # a non-str name: TypeError naming it
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


def position_work(name: str, sizes: WorkSizes) -> dict[str, int]:
    """The matrix-multiply FLOP scheme ``name``'s position terms add, part by part.

    Its registration's ``arithmetic`` at ``sizes``, for ``name`` built with its
    arguments at ``sizes.span`` (:meth:`SchemeRegistration.arguments_at`). A
    scheme that declares no arithmetic is a ``ValueError``.

    Shapes:
        output: ``{part: FLOP}``, empty where the scheme adds no product
    """
    registration, _ = resolve(name)
    if not isinstance(sizes, WorkSizes):
        raise TypeError(f"sizes must be a WorkSizes, got {type(sizes).__name__}")
    if registration.arithmetic is None:
        raise ValueError(
            f"name must be a scheme that declares its arithmetic, got {name!r} "
            f"(scheme {registration.name!r} has arithmetic=None)"
        )
    arguments = registration.arguments_at(name, sizes.span)
    work = dict(registration.arithmetic(sizes, arguments))
    for part, flops in work.items():
        if not isinstance(part, str) or isinstance(flops, bool) or not isinstance(
            flops, int
        ) or flops < 0:
            raise ValueError(
                f"scheme {registration.name!r}'s arithmetic must give "
                f"{{part: FLOP}} with ints >= 0, got {part!r}: {flops!r}"
            )
    return work


__all__ = [
    "ATTENTIONS",
    "Arithmetic",
    "EntriesReader",
    "PositionEntries",
    "MODEL_SETTINGS",
    "REGISTRY",
    "SchemeRegistration",
    "Settings",
    "SharedInput",
    "WorkSizes",
    "build_attention",
    "element_wise",
    "plain_name",
    "position_work",
    "register",
    "resolve",
    "scheme_names",
]
