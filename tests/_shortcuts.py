"""The ``gather`` kernel's inference shortcuts, turned off or watched, for the tests
of ``relpos.backends.strided`` and ``relpos.backends.banded``.

``gather.attend`` asks ``strided_applies`` and then ``banded_applies`` whether a
call can take the shortcut; each helper here replaces one of those names for the
``with`` block: :func:`general_path` answers no, :func:`recorded` keeps every
answer, and :func:`outputs` gives a module's output both ways.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

from relpos.backends import gather


@contextmanager
def general_path(shortcut: str) -> Iterator[None]:
    """The ``gather`` kernel with ``shortcut`` (``"strided_applies"`` or
    ``"banded_applies"``) turned off."""
    taken = getattr(gather, shortcut)
    setattr(gather, shortcut, lambda *args: False)
    try:
        yield
    finally:
        setattr(gather, shortcut, taken)


@contextmanager
def recorded(shortcut: str) -> Iterator[list[bool]]:
    """Each answer of ``shortcut`` for the calls inside."""
    answers: list[bool] = []
    taken = getattr(gather, shortcut)

    def record(*args):
        answers.append(taken(*args))
        return answers[-1]

    setattr(gather, shortcut, record)
    try:
        yield answers
    finally:
        setattr(gather, shortcut, taken)


def outputs(shortcut: str, module, x, **kwargs):
    """The module's output through ``shortcut`` (where it applies) and without it,
    and the shortcut's answers.

    Shapes:
        x: ``(b, n, hidden)``; outputs: ``(b, n, hidden)`` each
    """
    with torch.no_grad(), recorded(shortcut) as answers:
        fast = module(x, **kwargs)
    with torch.no_grad(), general_path(shortcut):
        general = module(x, **kwargs)
    return fast, general, answers
