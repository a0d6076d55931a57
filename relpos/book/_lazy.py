"""A package's names imported on first use (PEP 562), for the book's figure packages.

A notebook that imports ``relpos.book.plot`` or ``relpos.book.interactive`` and draws
nothing (a problem set's imports cell) then loads neither SciPy nor Altair.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable, Iterable


def lazy_names(
    package: str, where: dict[str, str], modules: Iterable[str] = ()
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: ``where`` maps a name to the
    submodule that defines it; a name in ``modules`` is that submodule itself."""
    modules = frozenset(modules)

    def __getattr__(name: str) -> Any:
        if name in modules:
            return importlib.import_module(f".{name}", package)
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{where[name]}", package), name)
        setattr(sys.modules[package], name, value)  # the next lookup is plain
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *where, *modules})

    return __getattr__, __dir__
