"""Position schemes: a registry from a name to a builder of the model's position parts.

A scheme decides how the tiny model learns where its tokens are. The model
itself never asks which scheme it runs: it calls the scheme's builder once and
uses the two modules it returns.

The builder contract (what :func:`register_scheme` accepts)::

    builder(config: Config) -> (input_positions, encoder)

- ``input_positions``: ``None``, or a module called as ``input_positions(n)`` that
  returns an ``(n, hidden)`` tensor; the model adds it to the token embeddings of
  every sequence (before the embedding LayerNorm). Absolute schemes put their
  information here.
- ``encoder``: a module called as ``encoder(hidden_states, attention_mask)`` with
  ``hidden_states (b, n, hidden)`` and ``attention_mask (b, n)`` (1 for a token,
  0 for padding) or ``None``, returning ``(b, n, hidden)``. Relative schemes put
  their information here, inside attention.
- Randomised positions (``config.position_range``, Ruoss et al. 2023) reach
  both as ``positions=(b, n)``: ``input_positions(n, positions)`` returns
  ``(b, n, hidden)``, and ``encoder(hidden_states, attention_mask,
  positions=positions)``. A scheme whose modules take no ``positions`` cannot
  be randomised (:func:`check_randomisable`).
- Read the sizes from ``config`` (``hidden_size``, ``num_heads``, ``num_layers``,
  ``intermediate_size``, and ``table_length`` for a table of absolute positions)
  and create every parameter inside the builder: the caller seeds torch just
  before calling it, so a run's initial weights depend on its seed alone.
- For a fair comparison, build the encoder from the same block as the others:
  ``relpos.EncoderLayer`` around the scheme's attention module, stacked by
  :func:`attention_encoder` (a module whose ``forward(hidden_states,
  attention_mask=None)`` returns the context ``(b, n, hidden)`` before the output
  projection). The DeBERTa schemes use ``relpos.DisentangledEncoder``, which
  stacks the same block around ``DisentangledSelfAttention``.

Adding a scheme is one call, and nothing in the model, trainer or command line
changes::

    register_scheme("my-scheme", lambda config: (None, attention_encoder(config, make)))

A new *attention* scheme is registered once, in the core, at the end of its own
file, and is then a scheme here too, with its variants, and has a coverage
reader (``coverage.READERS``): built as ``attention(hidden_size, num_heads,
**settings)`` in the shared block, ``settings`` from its registration's
``settings(config)`` and variant, with ``causal=True`` added in the causal
setting (``relpos.schemes.registry``)::

    relpos.schemes.register(SchemeRegistration(
        "my-attention", MySelfAttention,
        settings=lambda config: {"span": config.max_relative_positions},
        entries=...,  # the coverage reader, or None
    ))

The schemes registered here:

- ``none`` (the core's registration, ``relpos.schemes.none``): no position
  information at all; in an encoder the model sees a bag of tokens.
- ``absolute``: a learned table of ``max_length`` rows added to the tokens, as
  BERT. Only the first ``train_length`` rows ever receive a gradient; a test
  sequence longer than that reads rows that kept their random initial values.
- ``sinusoidal``: the fixed sine/cosine features of the original Transformer,
  added to the tokens; defined at every position, trained at none.
- ``shaw``, ``transformer_xl``, ``t5``, ``alibi``, ``rotary``, ``fire``, ``kerple``
  and every other scheme of ``relpos.schemes.ATTENTIONS``: the self-attentions of
  ``relpos.schemes`` in the same block, sized by their registrations. Shaw
  clips at ``max_relative_positions`` (``2k + 1`` rows, relative values on); T5
  has ``2 * position_buckets`` buckets (as many as ``deberta-buckets`` has rows)
  up to ``t5_max_distance``; FIRE's threshold ``L`` starts at ``train_length``;
  Transformer-XL, ALiBi, rotary and KERPLE (log kernel; ``kerple-power`` the
  power kernel) have no size setting.
- ``deberta``: DeBERTa's relative table with c2p and p2c, distances clipped to
  ``[-k, k - 1]`` with ``k = max_relative_positions``; the table is projected
  with the content query/key projections (``share_att_key=True``, the default
  of ``relpos.AttentionConfig``, as DeBERTa-v3) and goes through a LayerNorm
  (``norm_rel_ebd``) before use.
- ``deberta-buckets``: the same with ``position_buckets`` log buckets per side
  (exact up to ``position_buckets // 2``, logarithmic up to ``bucket_max_position``);
  its table has as many rows (``2 * position_buckets``) as ``deberta``'s by default.
  With the defaults (``k = 8``; 8 buckets up to 64) ``deberta`` gives the
  distances ``-7 .. 6`` rows of their own, lumps ``7`` and beyond into one row
  and ``-8`` and every key further ahead into another, while
  ``deberta-buckets`` is exact for ``|i - j| <= 4`` and then lumps ``5 .. 10``,
  ``11 .. 25`` and ``26`` and beyond (mirrored for keys ahead, where ``-64`` and
  beyond get one more row).
- ``deberta-emd``: ``deberta`` whose last layer is DeBERTa's enhanced mask
  decoder: absolute positions added late, to the queries only
  (``relpos.book.experiments.emd``).
- ``deberta-sinusoidal``: ``deberta`` whose table starts as the sinusoids of the
  distances its rows hold (``relpos.embedding.sinusoidal_table``, row ``r`` at
  distance ``r - k``), scaled to the root mean square of the random start
  (``EMBEDDING_STD``); then trained as usual. The seed's claim that a band
  "emerges from sinusoidal initialization and persists through training" is
  tested on it.

The ablations of ``deberta`` (each differs from it in one setting):

- ``deberta-c2p``: the c2p term only (``pos_att_type=("c2p",)``);
- ``deberta-p2c``: the p2c term only (``pos_att_type=("p2c",)``); with one
  position term the scores are scaled by ``1 / sqrt(2d)`` instead of
  ``1 / sqrt(3d)``, DeBERTa's own rule;
- ``deberta-no-norm``: the table is read without its LayerNorm
  (``norm_rel_ebd=False``);
- ``deberta-separate-keys``: the table gets its own position key and query
  projections (``share_att_key=False``, DeBERTa-v1 and v2's ``pos_key_proj`` and
  ``pos_query_proj``) instead of the content ones;

and of ``shaw``: ``shaw-keys``, Shaw's relative keys without relative values
(``relative_values=False``).

Randomised positions (Ruoss et al. 2023), as schemes of their own so that one
sweep holds them beside the plain ones (``RANDOMISED_SCHEMES``):
``absolute-randomised`` and ``rotary-randomised`` build exactly ``absolute`` and
``rotary`` (the table holds ``P`` rows), and every sequence they train or are
evaluated on takes an ordered random subset of ``0 .. P - 1`` as its positions
(``config.position_range``; ``P = 256`` unless ``random_positions`` says
otherwise). ``random_positions`` does the same for any scheme that takes
positions; ``none`` has no positions to randomise and ``deberta-emd``'s decoder
table takes none, so both refuse it (``ValueError``).

The causal forms (``config.setting == "causal"``, ``config.causal``): every
scheme builds its attention causal, so a query gives no weight to the keys after
it, and nothing else in the model changes:

- ``none``, ``absolute``, ``sinusoidal``: the content attention with a causal
  mask; ``none`` is then no longer blind to order, since the mask itself tells
  a query how many keys precede it.
- ``shaw``, ``transformer_xl``, ``rotary``: the same scores with the keys after
  the query masked (the rows and sinusoids of negative distances are never
  read).
- ``t5``: the unidirectional buckets of T5's decoder (all ``2 *
  position_buckets`` buckets for ``i - j >= 0``).
- ``alibi``: the paper's causal bias ``-m (i - j)`` on the keys ``j <= i``.
- the DeBERTa schemes: c2c, c2p and p2c on the keys ``j <= i`` only; the rows of
  negative distances are never read. ``deberta-emd`` is causal in its encoder
  layers and in both decoder passes.

Shapes:
    input_positions(n): ``(n, hidden)``; with positions ``(b, n)``: ``(b, n, hidden)``
    encoder(hidden_states ``(b, n, hidden)``, attention_mask ``(b, n)``)
        -> ``(b, n, hidden)``
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Iterator, MutableMapping
from typing import Any, Callable, TypeVar

import torch
from torch import nn

from relpos.checks import check_index, check_int, check_int_tensor
from relpos.config import AttentionConfig
from relpos.core import SelfAttention
from relpos.embedding import sinusoidal_table
from relpos.schemes import REGISTRY
from relpos.schemes.registry import build_attention, resolve, scheme_names
from .config import RANDOMISED, Config

PositionParts = tuple["nn.Module | None", nn.Module]
SchemeBuilder = Callable[[Config], PositionParts]

# Initial standard deviation of every learned embedding (tokens, absolute
# positions), DeBERTa's and BERT's ``initializer_range``.
EMBEDDING_STD = 0.02


class LearnedPositions(nn.Module):
    """A learned table of absolute positions, one row per position (BERT).

    Rows are initialised like the token embeddings (normal, std
    ``EMBEDDING_STD``). A sequence longer than ``max_length`` is refused, and so
    is a position outside the table. ``positions`` (randomised positions) picks
    the rows of each sequence instead of ``0 .. n - 1``.

    Shapes:
        weight: ``(max_length, hidden)``
        forward(n) -> ``(n, hidden)``; forward(n, positions ``(b, n)``)
            -> ``(b, n, hidden)``
    """

    def __init__(self, max_length: int, hidden_size: int) -> None:
        super().__init__()
        self.max_length = check_int("max_length", max_length, minimum=1)
        hidden = check_int("hidden_size", hidden_size, minimum=1)
        self.weight = nn.Parameter(torch.randn(self.max_length, hidden) * EMBEDDING_STD)

    def forward(
        self, seq_len: int, positions: torch.Tensor | None = None
    ) -> torch.Tensor:
        seq_len = check_int("seq_len", seq_len, minimum=1)
        if seq_len > self.max_length:
            raise ValueError(
                f"seq_len must be <= max_length={self.max_length} for a learned "
                "absolute "
                f"table, got {seq_len}"
            )
        if positions is None:
            return self.weight[:seq_len]  # (n, hidden)
        check_positions(positions, seq_len, self.max_length)
        return self.weight[positions]  # (b, n, hidden)


def check_positions(
    positions: object, seq_len: int, rows: int | None = None
) -> torch.Tensor:
    """``positions``: an integer ``(b, seq_len)`` tensor of rows ``0 .. rows - 1``
    (of any row ``>= 0`` when ``rows`` is None).

    Shapes:
        positions: ``(b, n)``
    """
    positions = check_int_tensor("positions", positions)
    if positions.dim() != 2 or positions.shape[1] != seq_len:
        raise ValueError(
            f"positions must have shape (b, {seq_len}), got {tuple(positions.shape)}"
        )
    if rows is not None:
        return check_index("positions", positions, rows, "(b, n)")
    if positions.numel() and int(positions.min()) < 0:
        raise ValueError(f"positions must be >= 0, got {int(positions.min())}")
    return positions


class SinusoidalPositions(nn.Module):
    """Fixed sine/cosine features of the absolute position (Vaswani et al., 2017).

    Row ``i`` is ``sinusoidal_table``'s row of distance ``i``, scaled by
    ``EMBEDDING_STD * sqrt(2)`` so that its root mean square equals that of the
    token embeddings at initialisation. No parameters; any length works, and
    any positions (randomised positions) given as ``positions``.

    Shapes:
        forward(n) -> ``(n, hidden)``; forward(n, positions ``(b, n)``)
            -> ``(b, n, hidden)``
    """

    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.hidden_size = check_int("hidden_size", hidden_size, minimum=1)
        self.scale = EMBEDDING_STD * math.sqrt(2.0)

    def forward(
        self, seq_len: int, positions: torch.Tensor | None = None
    ) -> torch.Tensor:
        seq_len = check_int("seq_len", seq_len, minimum=1)
        if positions is None:
            table = sinusoidal_table(
                seq_len, self.hidden_size
            )  # (2n, hidden): distances -n..n-1
            return table[seq_len:] * self.scale  # (n, hidden): positions 0..n-1
        positions = check_positions(positions, seq_len)
        rows = int(positions.max()) + 1 if positions.numel() else 1
        table = sinusoidal_table(rows, self.hidden_size)[rows:]  # (rows, hidden)
        return table[positions] * self.scale  # (b, n, hidden)


class ContentSelfAttention(SelfAttention):
    """Plain multi-head self-attention: the bare ``relpos.core.SelfAttention``.

    The content-to-content score ``q_i . k_j / sqrt(d)`` alone, so the encoder is
    blind to order; the absolute schemes add their positions to the input. Run
    on the ``gather`` kernel (torch's fused attention). ``causal=True`` masks the
    keys after each query.

    Shapes:
        hidden_states: ``(b, n, hidden)``; attention_mask: ``(b, n)``
        output: ``(b, n, hidden)``, the context before the output projection
    """

    def __init__(self, hidden_size: int, num_heads: int, causal: bool = False) -> None:
        super().__init__(hidden_size, num_heads, backend="gather", causal=causal)


class AttentionEncoder(nn.Module):
    """``num_layers`` blocks of ``relpos.EncoderLayer``, each around its own attention.

    Shapes:
        forward: hidden_states ``(b, n, hidden)``, attention_mask ``(b, n)``
            -> ``(b, n, hidden)``
    """

    def __init__(self, layers: list[nn.Module]) -> None:
        super().__init__()
        self.layers = nn.ModuleList(layers)

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        positions: torch.Tensor | None = None,
    ) -> torch.Tensor:
        for layer in self.layers:
            hidden_states = layer(
                hidden_states, attention_mask, positions=positions
            )  # (b, n, hidden)
        return hidden_states


def attention_encoder(
    config: Config, make_attention: Callable[[], nn.Module]
) -> AttentionEncoder:
    """``config.num_layers`` ``relpos.EncoderLayer`` blocks around ``make_attention()``.

    ``make_attention`` is called once per layer and returns a self-attention
    module with ``forward(hidden_states, attention_mask=None) -> (b, n, hidden)``
    (the context, before the output projection, which the block owns).
    """
    from relpos.encoder import EncoderLayer

    layers = [
        EncoderLayer(make_attention(), config.hidden_size, config.intermediate_size)
        for _ in range(config.num_layers)
    ]
    return AttentionEncoder(layers)


def disentangled_encoder(
    config: Config, *, norm_rel_ebd: bool = True, **position_settings: Any
) -> nn.Module:
    """``relpos.DisentangledEncoder`` with the sizes of ``config``.

    ``position_settings`` are fields of ``relpos.AttentionConfig``; with the
    run's sizes and its setting (causal or not) they make the one attention
    config of every layer (``config.attention``). ``norm_rel_ebd`` is the
    encoder's: whether the table goes through a LayerNorm.

    Shapes:
        hidden_states: ``(b, n, hidden)``; attention_mask: ``(b, n)``
        output: ``(b, n, hidden)``
    """
    from relpos.transformer import DisentangledEncoder

    return DisentangledEncoder(
        config.num_layers,
        intermediate_size=config.intermediate_size,
        norm_rel_ebd=norm_rel_ebd,
        config=deberta_attention(config, **position_settings),
    )


def deberta_attention(config: Config, **position_settings: Any) -> AttentionConfig:
    """The attention config of the DeBERTa schemes: the run's sizes and setting.

    ``position_settings`` are fields of ``relpos.AttentionConfig``.
    """
    return config.attention(**position_settings, causal=config.causal)


def content_encoder(config: Config) -> AttentionEncoder:
    """The encoder of the schemes without relative positions: content attention only.
    """
    return attention_encoder(
        config,
        lambda: ContentSelfAttention(
            config.hidden_size, config.num_heads, causal=config.causal
        ),
    )


def _absolute(config: Config) -> PositionParts:
    positions = LearnedPositions(config.table_length, config.hidden_size)
    return positions, content_encoder(config)


def _sinusoidal(config: Config) -> PositionParts:
    return SinusoidalPositions(config.hidden_size), content_encoder(config)


def sinusoidal_start(rows: int, hidden_size: int) -> torch.Tensor:
    """The sinusoids of the distances ``-rows/2 .. rows/2 - 1``, at the table's scale.

    ``sinusoidal_table(rows // 2, hidden_size)`` (row ``r`` holds distance
    ``r - k``) times the factor that makes its root mean square
    ``EMBEDDING_STD``, the scale of the random start (``N(0, EMBEDDING_STD^2)``).

    Shapes:
        output: ``(rows, hidden_size)``
    """
    rows = check_int("rows", rows, minimum=2)
    if rows % 2:
        raise ValueError(f"rows must be even (a table of 2k rows), got {rows}")
    table = sinusoidal_table(rows // 2, hidden_size)  # (2k, hidden)
    return table * (EMBEDDING_STD / table.pow(2).mean().sqrt())


def shared_stack(config: Config, name: str) -> nn.Module:
    """The encoder of a registered scheme whose stack shares an input (DeBERTa's).

    Its attention's arguments come from the registration (``settings``, the
    variant's changes); the model's settings around it (``model_settings``) say
    whether the shared table is LayerNorm-ed (``table_norm``), starts as
    sinusoids (``table_start``) and whether the last layer is DeBERTa's enhanced
    mask decoder (``enhanced_mask_decoder``; :mod:`.emd`).

    Shapes:
        hidden_states: ``(b, n, hidden)``; attention_mask: ``(b, n)``
        output: ``(b, n, hidden)``
    """
    registration, variant = resolve(name)
    model = registration.model_settings(variant)
    settings = registration.arguments(config, variant)
    settings.pop("causal", None)  # deberta_attention adds the run's setting
    if model.get("enhanced_mask_decoder", False):
        from .emd import EnhancedMaskDecoder

        return EnhancedMaskDecoder(
            config.num_layers,
            LearnedPositions(config.max_length, config.hidden_size),
            intermediate_size=config.intermediate_size,
            norm_rel_ebd=model["table_norm"],
            config=deberta_attention(config, **settings),
        )
    encoder = disentangled_encoder(config, norm_rel_ebd=model["table_norm"], **settings)
    start = model.get("table_start", "normal")
    if start == "sinusoidal":
        weight = encoder.table.weight  # (2k, hidden)
        with torch.no_grad():
            weight.copy_(sinusoidal_start(weight.shape[0], weight.shape[1]))
    elif start != "normal":
        raise ValueError(
            f"scheme {name!r}: table_start must be 'normal' or 'sinusoidal', "
            f"got {start!r}"
        )
    return encoder


#: The kernel each trained experiment ran a scheme on, where it was not the
#: core's one default (``"gather"``): rotary ran on ``"naive"``, its default up
#: to relpos 0.3. Kept, so that every committed run is reproduced as it ran.
TRAINED_BACKENDS = {"rotary": "naive"}


@functools.cache
def attention_scheme(name: str) -> SchemeBuilder:
    """The builder of the registered attention scheme ``name`` in the shared block.

    Blocks around the scheme's attention, no input positions; its constructor
    arguments from its registration (``relpos.schemes.registry``): the config
    fields its ``settings`` read, its variant's changes, and ``causal=True`` in
    the causal setting. One builder per name (the same object each time).
    """

    backend = TRAINED_BACKENDS.get(name)
    shared = resolve(name)[0].shared is not None

    def build(config: Config) -> PositionParts:
        if shared:  # the stack owns an input every layer reads (DeBERTa's table)
            return None, shared_stack(config, name)

        def attention() -> nn.Module:
            return build_attention(name, config, backend=backend)

        return None, attention_encoder(config, attention)

    build.__name__ = build.__qualname__ = f"attention_scheme_{name}"
    return build


Value = TypeVar("Value")


class Registered(MutableMapping[str, Value]):
    """This package's own entries plus one per scheme of the core's registry.

    ``SCHEMES`` and ``coverage.READERS`` are two of these: a scheme registered in
    the core (``relpos.schemes.registry.register``, in the scheme's own file) is
    a scheme and has a coverage reader here too, with nothing edited in the book.
    ``derive(name)`` makes the entry of a registered scheme (``None``: it has
    none). Iteration follows insertion order, then the registry's.
    """

    def __init__(
        self, own: dict[str, Value], derive: Callable[[str], "Value | None"]
    ) -> None:
        self._own = dict(own)
        self._removed: set[str] = set()
        self._derive = derive

    def _late(self) -> dict[str, Value]:
        """Registered schemes not (yet) among the own entries, nor removed."""
        found = {}
        for name in scheme_names():
            if name not in self._own and name not in self._removed:
                value = self._derive(name)
                if value is not None:
                    found[name] = value
        return found

    def __getitem__(self, name: str) -> Value:
        if name in self._own:
            return self._own[name]
        late = self._late()
        if name in late:
            return late[name]
        raise KeyError(name)

    def __setitem__(self, name: str, value: Value) -> None:
        self._own[name] = value
        self._removed.discard(name)

    def __delitem__(self, name: str) -> None:
        if name not in self._own and name not in self._late():
            raise KeyError(name)
        self._own.pop(name, None)
        self._removed.add(name)

    def __iter__(self) -> Iterator[str]:
        return iter([*self._own, *self._late()])

    def __len__(self) -> int:
        return len(self._own) + len(self._late())

    def __repr__(self) -> str:
        return repr(dict(self))


def book_order() -> list[str]:
    """The registry's names in the book's order (its tables and lists).

    Each registered scheme whose stack shares no input, in the order of
    registration; then each scheme whose stack shares one (DeBERTa), each
    followed by its variants; then the other schemes' variants (``shaw-keys``,
    ``kerple-power``). It keeps the DeBERTa family together wherever the
    registry lists DeBERTa.
    """
    alone = [found for found in REGISTRY.values() if found.shared is None]
    shared = [found for found in REGISTRY.values() if found.shared is not None]
    return [
        *(found.name for found in alone),
        *(name for found in shared for name in (found.name, *found.variants)),
        *(name for found in alone for name in found.variants),
    ]


def _positional(name: str) -> bool:
    return resolve(name)[0].positional


SCHEMES: MutableMapping[str, SchemeBuilder] = Registered(
    {  # the registry's schemes without positions (none) first, the floor
        **{
            name: attention_scheme(name)
            for name in book_order() if not _positional(name)
        },
        "absolute": _absolute,
        "sinusoidal": _sinusoidal,
        **{name: attention_scheme(name) for name in book_order() if _positional(name)},
    },
    attention_scheme,
)


#: The schemes trained with randomised positions and the scheme each one builds
#: (with that scheme's own builder: the same modules, a table of ``P`` rows).
RANDOMISED_SCHEMES: dict[str, str] = {
    f"{base}{RANDOMISED}": base for base in ("absolute", "rotary")
}
for _variant, _base in RANDOMISED_SCHEMES.items():
    SCHEMES[_variant] = SCHEMES[_base]


def register_scheme(
    name: str, builder: SchemeBuilder, *, replace: bool = False
) -> None:
    """Add ``builder`` to ``SCHEMES`` as ``name`` (contract: the module docstring).

    Raises ``ValueError`` if ``name`` is taken (unless ``replace=True``) or is not
    a plain lowercase name (letters, digits, ``-`` and ``_``; no comma, since the
    command line takes comma-separated lists), ``TypeError`` if ``builder`` is
    not callable.
    """
    if (
        not isinstance(name, str)
        or not name
        or not all(
            c.isdigit() or c in "-_" or (c.isalpha() and c.islower()) for c in name
        )
    ):
        raise ValueError(
            "name must be a non-empty lowercase name (letters, digits, '-', '_'), "
            f"got {name!r}"
        )
    if not callable(builder):
        raise TypeError(
            f"builder must be callable as builder(config), got {type(builder).__name__}"
        )
    if name in SCHEMES and not replace:
        raise ValueError(
            f"name {name!r} is already a scheme; pass replace=True to replace it"
        )
    SCHEMES[name] = builder


def _takes_positions(module: nn.Module) -> bool:
    return "positions" in inspect.signature(module.forward).parameters


def _content_only(encoder: nn.Module) -> bool:
    """Whether ``encoder`` attends by content alone (no position inside attention):
    the book's ``ContentSelfAttention`` or a registered scheme without positions."""
    plain = {ContentSelfAttention}
    plain.update(found.attention for found in REGISTRY.values() if not found.positional)
    return isinstance(encoder, AttentionEncoder) and all(
        type(layer.attention) in plain for layer in encoder.layers
    )


def check_randomisable(name: str, parts: PositionParts) -> None:
    """Refuse randomised positions for a scheme that cannot take them.

    A scheme can when it has positions (input positions, or a position signal
    inside attention) and every module that holds them takes ``positions``.
    ``ValueError`` naming the scheme otherwise: ``none`` has no positions,
    ``deberta-emd``'s decoder reads its absolute table by ``n`` alone.
    """
    input_positions, encoder = parts
    inside = not _content_only(encoder)
    if input_positions is None and not inside:
        raise ValueError(
            f"scheme {name!r} has no positions to randomise; random_positions "
            "needs a scheme with positions (absolute, rotary, t5, ...)"
        )
    refusing = [
        module
        for module, used in ((input_positions, True), (encoder, inside))
        if module is not None and used and not _takes_positions(module)
    ]
    if refusing:
        raise ValueError(
            f"scheme {name!r} cannot take randomised positions (random_positions): "
            f"{type(refusing[0]).__name__} reads positions without a positions "
            "argument"
        )


def build_scheme(name: str, config: Config) -> PositionParts:
    """Call the builder registered as ``name`` and check what it returns.
    """
    if name not in SCHEMES:
        raise ValueError(f"scheme must be one of {tuple(SCHEMES)}, got {name!r}")
    parts = SCHEMES[name](config)
    if not (isinstance(parts, tuple) and len(parts) == 2):
        raise TypeError(
            f"scheme {name!r}: its builder must return "
            "(input_positions or None, encoder), "
            f"got {type(parts).__name__}"
        )
    input_positions, encoder = parts
    if input_positions is not None and not isinstance(input_positions, nn.Module):
        raise TypeError(
            f"scheme {name!r}: input_positions must be an nn.Module or None"
        )
    if not isinstance(encoder, nn.Module):
        raise TypeError(f"scheme {name!r}: encoder must be an nn.Module")
    if config.position_range is not None:
        check_randomisable(name, parts)
    return input_positions, encoder


__all__ = [
    "AttentionEncoder",
    "ContentSelfAttention",
    "EMBEDDING_STD",
    "LearnedPositions",
    "RANDOMISED_SCHEMES",
    "Registered",
    "SCHEMES",
    "SchemeBuilder",
    "SinusoidalPositions",
    "attention_encoder",
    "attention_scheme",
    "book_order",
    "build_scheme",
    "check_positions",
    "check_randomisable",
    "content_encoder",
    "deberta_attention",
    "disentangled_encoder",
    "register_scheme",
    "shared_stack",
    "sinusoidal_start",
]
