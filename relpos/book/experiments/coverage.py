"""Coverage: the position entries a test sequence reads that no training sequence read.

Every scheme turns a pair (query ``i``, key ``j``) into *entries* it reads: a row
of a learned table (DeBERTa's ``delta(i - j)``, Shaw's clipped row, T5's bucket,
BERT's row ``i``) or the value of a fixed formula (a sinusoid of ``i``, ALiBi's
slope times ``|i - j|``, RoPE's angle of ``i - j``). A learned row gets a gradient
only where some training pair reads it; a row that no pair of a training
sequence (length ``L``) reads keeps its initial value, and a test sequence that
reads it meets it for the first time. A fixed entry never gets a gradient, but
one met only at test is still a value the rest of the model never saw.

:func:`coverage` answers, for a configuration and a test length, which entries
of each kind are *unseen* (read at that length, never in training) and which
share of the scored query positions (and of their pairs) reads one.

Readers. ``READERS[scheme](config, n)`` returns, per entry kind, an
:class:`Entries`: an ``(n, n)`` long tensor whose ``[i, j]`` is the entry that pair
reads (``-1`` for none), whether the kind is learned and which parameter holds
its rows. The index maths is the library's own: ``relpos.positions`` for the
DeBERTa and absolute schemes here, and for every attention scheme of
``relpos.schemes`` its registration's ``entries`` (in the scheme's own file,
``t5_bucket``, ``shaw_index``, ...), read by :func:`registered_reader`. Kinds:

- ``"c2p row"``, ``"p2c row"``: DeBERTa's table row ``position_index(i - j)``; the
  released code's p2c reads the same row as c2p (``relpos.attention``).
- ``"shaw key row"``, ``"shaw value row"``: ``shaw_index(i - j) = clip(i - j, k) + k``.
- ``"bucket"``: T5's ``t5_bucket(i - j)``, one-sided in the causal setting.
- ``"query row"``, ``"key row"``: an absolute table's row of the query's position
  ``i`` and of the key's position ``j`` (BERT's table is added to every token, so
  a pair reads both; DeBERTa's enhanced mask decoder adds its table to the
  queries of the last layer only, so a pair reads ``"query row"`` alone).
- ``"query position"``, ``"key position"``: the same for the fixed sinusoid.
- ``"distance"``: the fixed formulas of ``i - j`` (Transformer-XL's sinusoid,
  RoPE's angle, causal ALiBi's bias, FIRE's input; FIRE's also reads the
  query's position past its threshold) or of ``|i - j|`` (bidirectional ALiBi,
  KERPLE).
  Distances are signed, so these kinds have no "none" value (every pair reads one).
- ``none`` reads no entry at all.

Pairs. In the encoder every pair is read; in the causal setting only ``j <= i``.

Shapes:
    Entries.index: ``(n, n)``, ``[i, j]`` the entry pair ``(i, j)`` reads
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Callable

import torch

from relpos.checks import check_int
from relpos.positions import relative_positions
from relpos.schemes.deberta import RELATIVE_TABLE as DEBERTA_TABLE
from relpos.schemes.registry import PositionEntries, build_attention, resolve
from .config import Config
from .schemes import RANDOMISED_SCHEMES, Registered
from .tasks import get_task


#: The entry of one kind that every pair reads: the core's ``PositionEntries``
#: (each attention scheme's registration returns them).
Entries = PositionEntries

Reader = Callable[[Config, int], dict[str, Entries]]

@functools.cache
def registered_reader(name: str) -> Reader | None:
    """The reader of the registered attention scheme ``name``, or ``None``.

    Builds the scheme's attention for the config on the ``meta`` device (no
    memory, no random numbers drawn) and asks its registration's ``entries``
    which entry each pair of distances ``i - j`` reads.
    """
    registration, _ = resolve(name)
    if registration.entries is None:
        return None

    def read(config: Config, n: int) -> dict[str, Entries]:
        found, variant = resolve(name)  # the registration of now, if replaced
        attention = build_attention(name, config, device="meta")
        entries = found.entries(attention, _rel(n))
        if found.model_settings(variant).get("enhanced_mask_decoder", False):
            # the decoder adds its absolute table to the last layer's queries
            entries.update(_absolute_rows(n, EMD_TABLE, keys=False))
        return entries

    read.__name__ = read.__qualname__ = f"registered_reader_{name}"
    return read


#: The reader of each scheme: ``reader(config, n) -> {kind: Entries}``; those of the
#: attention schemes come from their registrations (``registered_reader``).
READERS: MutableMapping[str, Reader] = Registered({}, registered_reader)


def register_reader(name: str, reader: Reader, *, replace: bool = False) -> None:
    """Add ``reader`` as the coverage reader of scheme ``name``.

    A taken ``name`` is a ``ValueError`` unless ``replace=True``; a reader that is
    not callable is a ``TypeError``.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty scheme name, got {name!r}")
    if not callable(reader):
        raise TypeError(
            f"reader must be callable as reader(config, n), got {type(reader).__name__}"
        )
    if name in READERS and not replace:
        raise ValueError(f"name {name!r} already has a reader; pass replace=True")
    READERS[name] = reader


def read_pairs(config: Config, n: int) -> torch.Tensor:
    """The pairs the model reads: all in the encoder, ``j <= i`` in the causal setting.

    Shapes:
        output: ``(n, n)`` bool
    """
    n = check_int("n", n, minimum=1)
    pairs = torch.ones(n, n, dtype=torch.bool)
    return pairs.tril() if config.causal else pairs


def scored_positions(config: Config, n: int) -> torch.Tensor:
    """The query positions the task scores at length ``n`` (its ``scored`` rule).

    Shift tasks score ``i >= shift``, ``window`` ``i >= width``, ``absolute`` every
    position, a layout (``copy``, ``mqar``, ...) its answer slots; read from the
    task's own rule on one sequence (``Task.scored_at``).

    Shapes:
        output: ``(n,)`` bool
    """
    n = check_int("n", n, minimum=1)
    return get_task(config.task).scored_at(n)  # (n,)


# -- the readers ---------------------------------------------------------------


def _rel(n: int) -> torch.Tensor:
    return relative_positions(n)  # (i, j): i - j


#: The DeBERTa schemes' shared relative table, wherever the encoder keeps it: the
#: ``weight`` of its ``RelativePositionEmbedding`` (the registration's name).
RELATIVE_TABLE = DEBERTA_TABLE


def _absolute_rows(n: int, table: str | None, *, keys: bool) -> dict[str, Entries]:
    positions = torch.arange(n)
    query = positions[:, None].expand(n, n).contiguous()  # (i, j): i
    key = positions[None, :].expand(n, n).contiguous()  # (i, j): j
    learned = table is not None
    names = ("query row", "key row") if learned else ("query position", "key position")
    found = {names[0]: Entries(query, learned, table)}
    if keys:
        found[names[1]] = Entries(key, learned, table)
    return found


#: ``deberta-emd``'s absolute table (added to the queries of the enhanced mask
#: decoder): the ``weight`` of the ``LearnedPositions`` inside the encoder.
EMD_TABLE = "encoder:LearnedPositions.weight"

for _name, _reader in {
    "absolute": lambda config, n: _absolute_rows(
        n, "input_positions.weight", keys=True
    ),
    "sinusoidal": lambda config, n: _absolute_rows(n, None, keys=True),
}.items():
    register_reader(_name, _reader)


def _reader_of(base: str) -> Reader:
    def read(config: Config, n: int) -> dict[str, Entries]:
        return READERS[base](config, n)

    read.__name__ = read.__qualname__ = f"reader_of_{base}"
    return read


# A scheme with randomised positions reads the entries of the scheme it builds.
for _name, _base in RANDOMISED_SCHEMES.items():
    register_reader(_name, _reader_of(_base))


def read_entries(config: Config, n: int) -> dict[str, Entries]:
    """``READERS[config.scheme](config, n)``, checked; a scheme without one is an error.

    Shapes:
        output: ``{kind: Entries}`` with ``(n, n)`` indices
    """
    n = check_int("n", n, minimum=1)
    if config.scheme not in READERS:
        raise ValueError(
            f"scheme must have a coverage reader (one of {tuple(READERS)}), got "
            f"{config.scheme!r}; add one with register_reader"
        )
    found = READERS[config.scheme](config, n)
    for kind, entries in found.items():
        if not isinstance(entries, Entries) or tuple(entries.index.shape) != (n, n):
            raise ValueError(
                f"scheme {config.scheme!r}: reader's kind {kind!r} must be Entries "
                f"of shape ({n}, {n})"
            )
    return found


def entries_read(config: Config, n: int) -> dict[str, set[int]]:
    """Per kind, the set of entries the pairs of one length-``n`` sequence read."""
    pairs = read_pairs(config, n)  # (n, n)
    return {
        kind: set(entries.index[entries.read(pairs)].tolist())
        for kind, entries in read_entries(config, n).items()
    }


# -- coverage ------------------------------------------------------------------


@dataclass(frozen=True)
class KindCoverage:
    """One kind of entry at one test length.

    Attributes:
        kind: the entry kind (``"bucket"``, ``"c2p row"``, ...).
        learned: a learned table row, or a fixed formula.
        trained: sorted entries some training pair reads.
        read: sorted entries a sequence of the test length reads.
        unseen: ``read`` minus ``trained``, sorted.
        touched: the share of scored query positions with at least one pair
            reading an unseen entry.
        pair_fraction: the share of scored pairs (pairs read whose query is
            scored) that read an unseen entry.
    """

    kind: str
    learned: bool
    trained: tuple[int, ...]
    read: tuple[int, ...]
    unseen: tuple[int, ...]
    touched: float
    pair_fraction: float

    def to_dict(self) -> dict[str, object]:
        """JSON-ready (tuples become lists)."""
        return {
            k: list(v) if isinstance(v, tuple) else v
            for k, v in dataclasses.asdict(self).items()
        }


@dataclass(frozen=True)
class Coverage:
    """What a sequence of ``length`` reads that no training sequence read.

    Attributes:
        scheme, setting, task: from the config.
        train_length: ``L``, the length of the longest training sequence.
        length: the test length.
        kinds: one :class:`KindCoverage` per entry kind of the scheme.
        untrained_touched: share of scored query positions that read an unseen
            entry of a *learned* kind (a row still at its initial value).
        unseen_touched: the same over every kind, fixed ones included.
    """

    scheme: str
    setting: str
    task: str
    train_length: int
    length: int
    kinds: dict[str, KindCoverage]
    untrained_touched: float
    unseen_touched: float

    def to_dict(self) -> dict[str, object]:
        """JSON-ready: kinds become a dict of dicts, tuples lists."""
        out = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name != "kinds"
        }
        out["kinds"] = {kind: c.to_dict() for kind, c in self.kinds.items()}
        return out


def _share(part: torch.Tensor, whole: torch.Tensor) -> float:
    total = int(whole.sum())
    return 0.0 if total == 0 else int((part & whole).sum()) / total


def coverage(config: Config, length: int) -> Coverage:
    """The entries a length-``length`` sequence reads that training never read.

    Training sequences have at most ``config.train_length`` tokens (a shorter
    sequence reads no entry a longer one does not); the pairs read are those of
    ``config.setting``. Scored positions follow the task's rule. With
    randomised positions (``config.position_range = P``) a training sequence
    may sit anywhere in ``0 .. P - 1``, so the trained entries are those of a
    sequence of ``P`` tokens, and a test sequence (its positions drawn from the
    same range) reads none that is unseen.
    """
    if not isinstance(config, Config):
        raise TypeError(f"config must be a Config, got {type(config).__name__}")
    length = check_int("length", length, minimum=1)
    spread = config.position_range
    trained = entries_read(config, config.train_length if spread is None else spread)
    pairs = read_pairs(config, length)  # (n, n)
    scored = scored_positions(config, length)  # (n,)
    scored_pairs = pairs & scored[:, None]  # (n, n)
    kinds: dict[str, KindCoverage] = {}
    learned_hit = torch.zeros(length, length, dtype=torch.bool)
    any_hit = torch.zeros(length, length, dtype=torch.bool)
    for kind, entries in read_entries(config, length).items():
        read = entries.read(pairs)  # (n, n)
        values = set(entries.index[read].tolist())
        unseen = sorted(values - trained[kind])
        hit = read & torch.isin(entries.index, torch.tensor(unseen, dtype=torch.long))
        kinds[kind] = KindCoverage(
            kind=kind,
            learned=entries.learned,
            trained=tuple(sorted(trained[kind])),
            read=tuple(sorted(values)),
            unseen=tuple(unseen),
            touched=_share(hit.any(-1), scored),
            pair_fraction=_share(hit, scored_pairs),
        )
        any_hit |= hit
        if entries.learned:
            learned_hit |= hit
    return Coverage(
        scheme=config.scheme,
        setting=config.setting,
        task=config.task,
        train_length=config.train_length,
        length=length,
        kinds=kinds,
        untrained_touched=_share(learned_hit.any(-1), scored),
        unseen_touched=_share(any_hit.any(-1), scored),
    )


#: The fields of one row of :func:`coverage_table`, in order.
COVERAGE_FIELDS = (
    "setting",
    "task",
    "scheme",
    "length",
    "kind",
    "learned",
    "unseen",
    "touched",
    "pair_fraction",
)


def coverage_table(
    config: Config, lengths: tuple[int, ...] | list[int] | None = None
) -> list[dict[str, object]]:
    """One row per (length, kind) for the sweep's JSON (fields ``COVERAGE_FIELDS``).

    ``lengths`` defaults to ``config.test_lengths``. A scheme that reads no
    entry (``none``) gets no rows.
    """
    lengths = config.test_lengths if lengths is None else tuple(lengths)
    rows = []
    for length in lengths:
        found = coverage(config, length)
        for kind, c in found.kinds.items():
            rows.append(
                {
                    "setting": found.setting,
                    "task": found.task,
                    "scheme": found.scheme,
                    "length": length,
                    "kind": kind,
                    "learned": c.learned,
                    "unseen": list(c.unseen),
                    "touched": c.touched,
                    "pair_fraction": c.pair_fraction,
                }
            )
    return rows


def table_parameters(model: torch.nn.Module, table: str) -> list[torch.nn.Parameter]:
    """The parameters that hold the rows of ``table`` (an ``Entries.table``).

    ``table`` is the end of the parameters' names (``"key_table"`` matches every
    layer's), or ``"PATH:Class.name"``: parameter ``name`` of every module of class
    ``Class`` under the submodule ``PATH``. A table that matches no parameter is a
    ``ValueError``.

    Shapes:
        output: parameters of shape ``(rows, *)``
    """
    if not isinstance(table, str) or not table:
        raise ValueError(f"table must be a non-empty parameter name, got {table!r}")
    if ":" in table:
        path, _, rest = table.partition(":")
        kind, _, name = rest.rpartition(".")
        root = model.get_submodule(path) if path else model
        params = [
            getattr(module, name)
            for module in root.modules()
            if type(module).__name__ == kind and hasattr(module, name)
        ]
    else:
        params = [p for n, p in model.named_parameters() if n.endswith(table)]
    if not params:
        raise ValueError(f"table must name a parameter of the model, got {table!r}")
    return params


def gradient_rows(model: torch.nn.Module, table: str) -> set[int]:
    """The rows of ``table``'s parameters with a nonzero gradient (after a backward).

    The union over every parameter of the table (one per layer for Shaw's).
    """
    rows: set[int] = set()
    for p in table_parameters(model, table):
        if p.grad is not None:
            nonzero = p.grad.reshape(p.shape[0], -1).ne(0).any(-1)  # (rows,)
            rows |= set(torch.nonzero(nonzero).flatten().tolist())
    return rows


__all__ = [
    "COVERAGE_FIELDS",
    "Coverage",
    "EMD_TABLE",
    "Entries",
    "KindCoverage",
    "READERS",
    "RELATIVE_TABLE",
    "Reader",
    "coverage",
    "coverage_table",
    "entries_read",
    "gradient_rows",
    "read_entries",
    "read_pairs",
    "register_reader",
    "registered_reader",
    "scored_positions",
    "table_parameters",
]
