"""A real corpus everywhere the book runs: the running interpreter's standard library.

Nothing is downloaded and nothing is committed: :func:`build_corpus` reads the
``.py`` files of ``sysconfig.get_paths()["stdlib"]`` (or another ``root``) and
gives a :class:`Corpus` of one of two kinds:

- ``"docstrings"``: English technical prose. Each module's text is the
  docstrings of the module, its classes and its functions, in source order
  (``ast.get_docstring`` with ``clean=True``), separated by a blank line
  (about 1.8 MB on CPython 3.11).
- ``"source"``: the code itself, each file's text as UTF-8 (about 10 MB).

The modules (:func:`stdlib_modules`), the same on every run of one interpreter:

- every ``.py`` file under ``root`` whose path parts are Python identifiers,
  that is the importable modules; this leaves out ``site-packages`` (installed
  packages, not the standard library), ``lib-dynload``, ``config-3.x-*`` and the
  generated ``_sysconfigdata_*`` module;
- no test suites: no file inside a folder named ``test``, ``tests`` or
  ``idle_test``, and no file named ``test_*.py``; ``unittest`` itself stays (it is
  the testing library, not a test suite);
- not ``idlelib`` (an application, the IDLE editor, not a library: GUI code whose
  docstrings are notes on its widgets), ``turtledemo`` (demonstration scripts),
  ``__phello__`` (a fixture of the frozen-module tests) and ``pydoc_data``
  (generated: one string literal holding the HTML manual's topics, which would
  be a twelfth of the source corpus);
- sorted by their dotted name (``email.mime.text``).

Splits are by module, never by character offset (:func:`split_of`): a module
is in ``"valid"`` or ``"test"`` when the SHA-256 of its dotted name falls in the
first or the second tenth of the range, else in ``"train"``. A module keeps its
split on every interpreter version, and no text of a test module is seen in
training. :meth:`Corpus.stream` joins the texts of one split (in module order),
each followed by the byte ``0`` (which no module contains: the end of a
document), as a ``torch.uint8`` tensor: a byte-level model reads it directly
(:data:`VOCAB_BYTES` symbols; ``encode`` and ``decode`` convert text).

:attr:`Corpus.sha256` is the SHA-256 of every module's dotted name and text in
order; with ``size`` (bytes of text) and ``python`` (the interpreter version)
it is recorded in every result (:meth:`Corpus.about`), and a sweep refuses to
mix results of two corpora.

Licence: the corpus is the text of the Python standard library, distributed
under the PSF License Agreement (Python Software Foundation License Version 2,
https://docs.python.org/3/license.html). It is read from the interpreter that
runs the code and never redistributed by this project.

Shapes:
    stream: ``(bytes,)`` uint8
"""

from __future__ import annotations

import ast
import functools
import hashlib
import os
import platform
import sysconfig
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

import torch

from relpos.checks import check_choice

#: The two corpora: the docstrings (prose) or the source (code) of the modules.
KINDS = ("docstrings", "source")
#: The three splits, by module.
SPLITS = ("train", "valid", "test")
#: The share of the modules in the validation split and in the test split.
HELD_OUT = 0.1
#: Folders whose files are test suites, never in the corpus.
TEST_FOLDERS = frozenset({"test", "tests", "idle_test"})
#: Top-level packages left out: an application, demos, a test fixture, generated data.
LEFT_OUT = frozenset({"idlelib", "turtledemo", "__phello__", "pydoc_data"})
#: The byte that ends every document of a stream (no module text contains it).
END_OF_DOCUMENT = 0
#: Symbols of a byte-level model: the 256 byte values.
VOCAB_BYTES = 256


def stdlib_root() -> Path:
    """The folder of the running interpreter's standard library."""
    return Path(sysconfig.get_paths()["stdlib"])


def module_name(relative: Path) -> str | None:
    """The dotted name of a ``.py`` file (path relative to the root), or None.

    None when the file is not a module of the corpus (see the module docstring).
    """
    parts = relative.with_suffix("").parts
    if relative.suffix != ".py" or not parts or parts[0] in LEFT_OUT:
        return None
    if not _may_hold_modules(parts[:-1]):
        return None
    if not parts[-1].isidentifier() or parts[-1].startswith("test_"):
        return None
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) if parts else None


def stdlib_modules(root: str | Path | None = None) -> dict[str, Path]:
    """Every module of the corpus under ``root``: ``{dotted name: file}``, sorted.

    ``root`` defaults to :func:`stdlib_root`.
    """
    root = stdlib_root() if root is None else Path(root)
    if not root.is_dir():
        raise ValueError(f"root must be a folder, got {str(root)!r}")
    found = {}
    for folder, subfolders, files in os.walk(root):
        here = Path(folder)
        subfolders[:] = [
            s for s in subfolders
            if _may_hold_modules((here / s).relative_to(root).parts)
        ]
        for file in files:
            path = here / file
            name = module_name(path.relative_to(root))
            if name is not None and path.is_file():
                found[name] = path
    return dict(sorted(found.items()))


def _may_hold_modules(parts: tuple[str, ...]) -> bool:
    """Whether modules of the corpus lie in the folder of these path ``parts``
    (relative to the root): False for a part that is no identifier
    (``site-packages``), a test folder, or a package left out. The walk skips the
    folders it refuses, and :func:`module_name` applies it to a file's folders."""
    return (
        all(p.isidentifier() for p in parts)
        and (not parts or parts[0] not in LEFT_OUT)
        and not TEST_FOLDERS & set(parts)
    )


def read_source(path: Path) -> str:
    """The text of a Python file, decoded as its coding declaration says (PEP 263)."""
    with tokenize.open(path) as file:
        return file.read()


#: The nodes with a docstring, and those a statement can lie in: a class or a
#: function is a statement, so the walk skips every expression.
_DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
_HOLDS_STATEMENTS = (ast.stmt, ast.excepthandler, ast.match_case)


def docstrings(source: str, *, name: str = "<module>") -> list[str]:
    """The docstrings of a module, its classes and functions, in source order.

    Empty docstrings are skipped. ``name`` names the module in a syntax error.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        raise ValueError(f"module {name!r} does not parse: {error}") from None
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, _DOCUMENTED):
            text = ast.get_docstring(node, clean=True)
            if text:
                found.append(text)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, _HOLDS_STATEMENTS):  # never inside an expression
                visit(child)

    visit(tree)
    return found


def split_of(name: str) -> str:
    """The split of a module: ``"valid"``, ``"test"`` or ``"train"``, from its name.

    The first 8 bytes of SHA-256 of the dotted name as a fraction ``u`` of
    ``[0, 1)``: ``u < HELD_OUT`` is validation, ``u < 2 * HELD_OUT`` test.
    """
    digest = hashlib.sha256(name.encode()).digest()[:8]
    u = int.from_bytes(digest, "big") / 2**64
    if u < HELD_OUT:
        return "valid"
    return "test" if u < 2 * HELD_OUT else "train"


@dataclass(frozen=True)
class Corpus:
    """The texts of the modules, by dotted name, and their fingerprint.

    Attributes:
        kind: ``"docstrings"`` or ``"source"``.
        python: the interpreter version the texts come from.
        texts: ``{dotted name: UTF-8 text}``, sorted by name.
        sha256: SHA-256 of every name and text, in order.
        size: bytes of text in all.
    """

    kind: str
    python: str
    texts: dict[str, bytes] = field(repr=False)
    sha256: str = field(init=False)
    size: int = field(init=False)

    def __post_init__(self) -> None:
        check_choice("kind", self.kind, KINDS)
        digest = hashlib.sha256()
        for name, text in self.texts.items():
            if bytes([END_OF_DOCUMENT]) in text:
                raise ValueError(f"texts[{name!r}] holds the end-of-document byte 0")
            digest.update(name.encode() + b"\n" + text + b"\0")
        object.__setattr__(self, "sha256", digest.hexdigest())
        object.__setattr__(self, "size", sum(len(t) for t in self.texts.values()))

    def modules(self, split: str | None = None) -> list[str]:
        """The dotted names of one split (all with None), in order."""
        if split is not None:
            check_choice("split", split, SPLITS)
        return [n for n in self.texts if split is None or split_of(n) == split]

    def stream(self, split: str) -> torch.Tensor:
        """The bytes of one split: each module's text, then ``END_OF_DOCUMENT``.

        Shapes:
            output: ``(bytes,)`` uint8
        """
        data = b"".join(self.texts[n] + b"\0" for n in self.modules(split))
        return torch.frombuffer(bytearray(data), dtype=torch.uint8)

    def about(self) -> dict[str, object]:
        """The record of the corpus in a result: kind, hash, size, Python, splits."""
        return {
            "kind": self.kind,
            "sha256": self.sha256,
            "bytes": self.size,
            "python": self.python,
            "modules": len(self.texts),
            "splits": {
                split: {
                    "modules": len(self.modules(split)),
                    "bytes": sum(len(self.texts[n]) + 1 for n in self.modules(split)),
                }
                for split in SPLITS
            },
        }


def build_corpus(kind: str = "docstrings", root: str | Path | None = None) -> Corpus:
    """Read the corpus of ``kind`` from the modules under ``root`` (default: stdlib).

    Deterministic: the same files give the same ``sha256``. A module without a
    docstring adds no text to ``"docstrings"`` but is still one of its modules.
    """
    check_choice("kind", kind, KINDS)
    texts = {}
    for name, path in stdlib_modules(root).items():
        source = read_source(path)
        if kind == "docstrings":
            source = "\n\n".join(docstrings(source, name=name))
        texts[name] = source.encode("utf-8")
    return Corpus(kind, platform.python_version(), texts)


@functools.cache
def stdlib_corpus(kind: str = "docstrings") -> Corpus:
    """:func:`build_corpus` of the running interpreter, built once per process."""
    return build_corpus(kind)


def encode(text: str) -> torch.Tensor:
    """The UTF-8 bytes of ``text``: what a byte-level model reads.

    Shapes:
        output: ``(bytes,)`` long
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return torch.tensor(list(text.encode("utf-8")), dtype=torch.long)


def decode(tokens: torch.Tensor) -> str:
    """The text of byte values (invalid UTF-8 becomes U+FFFD).

    Shapes:
        tokens: ``(bytes,)`` integer, each in ``0 .. 255``
    """
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 1:
        raise TypeError("tokens must be a 1-d integer tensor of byte values")
    if tokens.is_floating_point() or (
        tokens.numel() and not 0 <= int(tokens.min()) <= int(tokens.max()) < 256
    ):
        raise ValueError("tokens must hold integers in 0 .. 255")
    return bytes(tokens.tolist()).decode("utf-8", errors="replace")


__all__ = [
    "END_OF_DOCUMENT",
    "HELD_OUT",
    "KINDS",
    "LEFT_OUT",
    "SPLITS",
    "TEST_FOLDERS",
    "VOCAB_BYTES",
    "Corpus",
    "build_corpus",
    "decode",
    "docstrings",
    "encode",
    "module_name",
    "read_source",
    "split_of",
    "stdlib_corpus",
    "stdlib_modules",
    "stdlib_root",
]
