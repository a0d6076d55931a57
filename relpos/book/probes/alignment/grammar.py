"""A small byte-level language with two relations fixed by relative order.

Every symbol is one byte, so a distance in symbols is a distance in bytes.
A stream is a run of units, each one of two kinds (agreement three times in four:
at half and half, 1000 steps taught a pilot model the brackets but not the
agreement):

- **agreement**: ``.`` then a subject noun, then ``d - 1`` middle bytes, then a
  verb that agrees with the subject. Number is the case of a letter: subject
  nouns ``a`` .. ``e`` (singular) or ``A`` .. ``E`` (plural), verbs ``v`` ..
  ``z`` or ``V`` .. ``Z``; a middle byte is another noun, in the oblique case
  (``f`` .. ``j`` or ``F`` .. ``J``, as "the key *to the cabinets*"), of either
  number, with probability :data:`NOUN_SHARE`, else a digit. An oblique noun of
  the other number is an attractor. The verb agrees with the nearest subject
  before it, d bytes back, past the attractors; the subjects of earlier
  sentences are further back.
- **brackets** (Dyck-2): an opener ``(`` or ``[`` then ``d - 1`` bytes of
  balanced brackets and digits, then the closer of the opener's type.

In the stream ``d`` is log-uniform on :data:`TRAIN_DISTANCES`, and training windows
start anywhere, so every relation is seen at every distance and offset tested.

A test item (:func:`make_items`) is a minimal pair: the grammatical text up to
and including the decided byte (the verb, or the closer) and the same text with
that byte changed (the verb's number, the closer's type). Its core (from the
subject's ``.`` or the opener to the decided byte) ends with an attractor: the
byte before an item's verb is a noun of the other number, the two bytes before
an item's closer a closed pair of the other type, so neither the nearest noun
nor the nearest opener gives the answer (in the stream these carry no
information: a middle noun's number and a nested pair's type are drawn apart
from the subject's and the opener's). Each core is placed at every offset
(the index of the subject or the opener), after stream text cut as a training
window is; so (distance, offset) cells are balanced and paired by core.

Shapes:
    stream: ``(bytes,)`` uint8
"""

from __future__ import annotations

import random
from typing import Any

import torch

from relpos.checks import check_int

from ...experiments.config import derive_seed

#: The grammar's version: part of every seed and of the items' provenance.
GRAMMAR_VERSION = "1"
SINGULAR_NOUNS, PLURAL_NOUNS = "abcde", "ABCDE"
SINGULAR_OBLIQUE, PLURAL_OBLIQUE = "fghij", "FGHIJ"
SINGULAR_VERBS, PLURAL_VERBS = "vwxyz", "VWXYZ"
DIGITS = "0123456789"
#: The mark that opens a sentence (an agreement unit).
BOUNDARY = "."
#: Openers and their closers.
BRACKETS = {"(": ")", "[": "]"}
#: The two relations.
RELATIONS = ("agreement", "brackets")
#: The distances of the stream's units (log-uniform: :func:`train_distance`).
TRAIN_DISTANCES = range(2, 29)
#: The share of the stream's units that are agreement sentences (the brackets,
#: whose nested pairs teach their relation at every depth, need fewer).
AGREEMENT_SHARE = 0.75
#: The share of an agreement unit's middle bytes that are (oblique) nouns.
NOUN_SHARE = 0.35
#: The share of a bracket unit's inner steps that open a nested pair.
NEST_SHARE = 0.4
#: The items' distances and offsets (index of the subject or the opener).
DISTANCES = (3, 6, 12, 24)
OFFSETS = (2, 20, 38)
#: Cores per (relation, distance); each is placed at every offset.
CORES = 50


def noun(rng: random.Random, plural: bool) -> str:
    """A subject noun of that number."""
    return rng.choice(PLURAL_NOUNS if plural else SINGULAR_NOUNS)


def oblique(rng: random.Random, plural: bool) -> str:
    """A noun in the oblique case (a possible attractor) of that number."""
    return rng.choice(PLURAL_OBLIQUE if plural else SINGULAR_OBLIQUE)


def middle(rng: random.Random, length: int) -> str:
    """``length`` middle bytes of a sentence: oblique nouns of either number, or
    digits."""
    return "".join(
        oblique(rng, rng.random() < 0.5) if rng.random() < NOUN_SHARE
        else rng.choice(DIGITS)
        for _ in range(length)
    )


def agreement_unit(rng: random.Random, d: int) -> str:
    """``.`` subject, ``d - 1`` middle bytes, agreeing verb (``d + 2`` bytes)."""
    plural = rng.random() < 0.5
    verbs = PLURAL_VERBS if plural else SINGULAR_VERBS
    return BOUNDARY + noun(rng, plural) + middle(rng, d - 1) + rng.choice(verbs)


def balanced(rng: random.Random, length: int) -> str:
    """Exactly ``length`` bytes of balanced ``()[]`` with digits between."""
    out: list[str] = []
    while length > 0:
        if length >= 2 and rng.random() < NEST_SHARE:
            inner = rng.randrange(length - 1)  # 0 .. length - 2
            opener = rng.choice(tuple(BRACKETS))
            out.append(opener + balanced(rng, inner) + BRACKETS[opener])
            length -= inner + 2
        else:
            out.append(rng.choice(DIGITS))
            length -= 1
    return "".join(out)


def bracket_unit(rng: random.Random, d: int) -> str:
    """An opener, ``d - 1`` balanced bytes, its closer (``d + 1`` bytes)."""
    opener = rng.choice(tuple(BRACKETS))
    return opener + balanced(rng, d - 1) + BRACKETS[opener]


def train_distance(rng: random.Random) -> int:
    """A unit's ``d``: log-uniform over :data:`TRAIN_DISTANCES` (short relations,
    which teach the relation first, as often as long ones per octave)."""
    low, high = TRAIN_DISTANCES[0], TRAIN_DISTANCES[-1] + 1
    return min(int(low * (high / low) ** rng.random()), high - 1)


def unit(rng: random.Random) -> str:
    """One unit of the stream: either relation, ``d`` from :func:`train_distance`."""
    d = train_distance(rng)
    if rng.random() < AGREEMENT_SHARE:
        return agreement_unit(rng, d)
    return bracket_unit(rng, d)


def units_text(rng: random.Random, size: int) -> str:
    """Whole units until at least ``size`` bytes (ends at a unit's end)."""
    parts, total = [], 0
    while total < size:
        parts.append(unit(rng))
        total += len(parts[-1])
    return "".join(parts)


def stream_text(rng: random.Random, size: int) -> str:
    """Units until ``size`` bytes, cut to ``size``."""
    return units_text(rng, size)[:size]


def grammar_stream(name: str, seed: int, size: int) -> torch.Tensor:
    """``size`` bytes of the language, seeded by ``(name, seed)`` and the version.

    ``name`` keeps streams apart (``"train"``, ``"valid"``).

    Shapes:
        output: ``(size,)`` uint8
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty str, got {name!r}")
    check_int("seed", seed, minimum=0)
    check_int("size", size, minimum=1)
    rng = random.Random(derive_seed("alignment-stream", GRAMMAR_VERSION, name, seed))
    text = stream_text(rng, size)
    return torch.tensor(list(text.encode("ascii")), dtype=torch.uint8)


def agreement_core(rng: random.Random, d: int) -> tuple[str, str]:
    """A test sentence ``.`` .. verb whose last middle byte is an attractor.

    Returns the grammatical core and the verb of the other number.
    """
    plural = rng.random() < 0.5
    stem = rng.randrange(len(SINGULAR_VERBS))
    verb, wrong = (PLURAL_VERBS, SINGULAR_VERBS) if plural else (
        SINGULAR_VERBS, PLURAL_VERBS)
    text = BOUNDARY + noun(rng, plural) + middle(rng, d - 2) + oblique(rng, not plural)
    return text + verb[stem], wrong[stem]


def bracket_core(rng: random.Random, d: int) -> tuple[str, str]:
    """A test bracket whose last two inner bytes close a pair of the other type.

    Returns the grammatical core and the closer of the other type.
    """
    opener = rng.choice(tuple(BRACKETS))
    other = next(o for o in BRACKETS if o != opener)
    inner = balanced(rng, d - 3) + other + BRACKETS[other]
    return opener + inner + BRACKETS[opener], BRACKETS[other]


def make_items(
    seed: int = 0,
    distances: tuple[int, ...] = DISTANCES,
    offsets: tuple[int, ...] = OFFSETS,
    cores: int = CORES,
) -> list[dict[str, Any]]:
    """The test items: every relation x distance x core, at every offset.

    Each item: ``id``, ``relation``, ``distance`` (``d``: decided byte minus
    subject or opener), ``offset`` (index of the subject or opener), ``core``
    (items sharing it differ only in the text before), ``target`` (index of the
    decided byte, ``offset + distance``), ``text`` (grammatical, ending at the
    decided byte), ``wrong`` (the other byte there).
    """
    check_int("seed", seed, minimum=0)
    check_int("cores", cores, minimum=1)
    if not distances or min(distances) < 3:
        raise ValueError(f"distances must be ints >= 3, got {distances!r}")
    if not offsets or min(offsets) < 1:
        raise ValueError(f"offsets must be ints >= 1, got {offsets!r}")
    rng = random.Random(derive_seed("alignment-items", GRAMMAR_VERSION, seed))
    items = []
    for relation in RELATIONS:
        for d in distances:
            for core in range(cores):
                make = agreement_core if relation == "agreement" else bracket_core
                text, wrong = make(rng, d)
                start = 1 if relation == "agreement" else 0  # the subject or opener
                for offset in offsets:
                    before = offset - start
                    prefix = units_text(rng, before)[-before:] if before else ""
                    items.append({
                        "id": len(items),
                        "relation": relation,
                        "distance": d,
                        "offset": offset,
                        "core": f"{relation}-{d}-{core}",
                        "target": offset + d,
                        "text": prefix + text,
                        "wrong": wrong,
                    })
    return items


__all__ = [
    "BOUNDARY",
    "BRACKETS",
    "CORES",
    "DISTANCES",
    "GRAMMAR_VERSION",
    "OFFSETS",
    "RELATIONS",
    "TRAIN_DISTANCES",
    "agreement_core",
    "agreement_unit",
    "balanced",
    "bracket_core",
    "bracket_unit",
    "oblique",
    "grammar_stream",
    "make_items",
    "stream_text",
    "train_distance",
    "unit",
    "units_text",
]
