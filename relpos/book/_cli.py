"""What the book's command lines share: one-line errors, typed flags, early checks.

``python -m relpos.book.experiments`` and ``python -m relpos.book.bench`` (and
``python -m relpos.book.bench.profile``) parse with :class:`OneLineParser`: a
bad value stops the command with one line on stderr that names the flag, and
exit status 2, before any training or measurement starts. Its help shows every
default. The converters here parse text into the types the configurations
hold; the configurations themselves check ranges and cross-field rules
(``Config``, ``BenchConfig``), and :func:`config_or_exit` turns their
``ValueError``/``TypeError`` into the same one-line error naming the flag.
Where a command writes, :func:`check_writable` (and :func:`check_plot_format`
for a figure) runs before the work too, so that a run never ends in an
unwritable path.
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping, NoReturn, TypeVar

T = TypeVar("T")


def show_default(value: object) -> str:
    """How ``--help`` writes a default: lists comma-separated, None as ``none``."""
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    if value is None:
        return "none"
    return str(value)


class DefaultsFormatter(argparse.HelpFormatter):
    """Help that ends every option's text with its default (unless it says it)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.default is argparse.SUPPRESS or not action.option_strings:
            return text
        if "(default:" in text:
            return text
        default = show_default(action.default).replace("%", "%%")
        return f"{text} (default: {default})".strip()


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line naming the flag, exit status 2.

    Its help lists every option's default (:class:`DefaultsFormatter`).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", DefaultsFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        message = " ".join(str(message).split())  # one line, whatever it quotes
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")

    def fail(self, flag: str, message: str) -> NoReturn:
        """Stop with ``error: argument FLAG: MESSAGE``."""
        self.error(f"argument {flag}: {message}")


def config_or_exit(
    parser: argparse.ArgumentParser, build: Callable[[], T], flags: Mapping[str, str]
) -> T:
    """``build()``, or a one-line ``parser.error`` naming the flag of a bad field.

    ``flags`` maps field names to flags. The configurations name the field
    first in their errors (``"hidden must be divisible by heads, ..."``); the
    first field named gives the flag of the error, and every field named is
    written as its flag.
    """
    try:
        return build()
    except (TypeError, ValueError) as error:
        fields = "|".join(re.escape(f) for f in sorted(flags, key=len, reverse=True))
        word = re.compile(rf"\b({fields})\b")
        first = word.search(str(error))
        message = word.sub(lambda match: flags[match.group(1)], str(error))
        flag = flags[first.group(1)] if first else "/".join(flags.values())
        parser.error(f"argument {flag}: {message}")


# -- converters: text into values (argparse names the flag when they raise) ------------


def _type_error(message: str) -> argparse.ArgumentTypeError:
    return argparse.ArgumentTypeError(message)


#: The most torch threads a command takes (torch's count is a C int; more threads
#: than this are no machine's).
MAX_THREADS = 1024


def integer(
    minimum: int | None = None, maximum: int | None = None
) -> Callable[[str], int]:
    """A converter to an int (``>= minimum``, ``<= maximum`` when given)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise _type_error(f"expected an integer, got {text!r}") from None
        if minimum is not None and value < minimum:
            raise _type_error(f"expected an integer >= {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise _type_error(f"expected an integer <= {maximum}, got {value}")
        return value

    parse.__name__ = "integer"
    return parse


def integers(
    minimum: int | None = None, distinct: bool = True
) -> Callable[[str], list[int]]:
    """A converter of ``"8,16,32"`` to a non-empty list of ints."""

    def parse(text: str) -> list[int]:
        parts = [part.strip() for part in text.split(",")]
        try:
            values = [int(part) for part in parts]
        except ValueError:
            raise _type_error(
                f"expected comma-separated integers, got {text!r}"
            ) from None
        if minimum is not None and min(values) < minimum:
            raise _type_error(f"expected integers >= {minimum}, got {text!r}")
        if distinct and len(set(values)) != len(values):
            raise _type_error(f"expected distinct integers, got {text!r}")
        return values

    parse.__name__ = "integers"
    return parse


def number(
    minimum: float | None = None, *, above: bool = False
) -> Callable[[str], float]:
    """A converter to a finite float, ``>= minimum`` (``> minimum`` with ``above``)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise _type_error(f"expected a number, got {text!r}") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise _type_error(f"expected a finite number, got {text!r}")
        if minimum is not None and (value <= minimum if above else value < minimum):
            sign = ">" if above else ">="
            raise _type_error(f"expected a number {sign} {minimum:g}, got {text!r}")
        return value

    parse.__name__ = "number"
    return parse


def rate(text: str) -> float:
    """A converter to a rate in ``[0, 1)`` (a dropout probability)."""
    value = number(0.0)(text)
    if value >= 1.0:
        raise _type_error(f"expected a number in [0, 1), got {text!r}")
    return value


def names(kind: str, choices: Callable[[], Any] | Any) -> Callable[[str], list[str]]:
    """A converter of ``"a,b"`` (or ``"all"``) to distinct names drawn from ``choices``.

    ``choices`` is a collection or a function returning one (read when parsing,
    so that a registry filled later counts).
    """

    def parse(text: str) -> list[str]:
        known = list(choices() if callable(choices) else choices)
        if text == "all":
            return known
        values = [part.strip() for part in text.split(",")]
        unknown = [v for v in values if v not in known]
        if unknown or len(set(values)) != len(values):
            raise _type_error(
                f"expected 'all' or distinct {kind} from {','.join(known)}, "
                f"got {text!r}"
            )
        return values

    parse.__name__ = kind
    return parse


def device(text: str) -> str:
    """A converter to ``"cpu"``, or ``"cuda"`` where torch sees a GPU."""
    import torch

    if text not in ("cpu", "cuda"):
        raise _type_error(f"expected 'cpu' or 'cuda', got {text!r}")
    if text == "cuda" and not torch.cuda.is_available():
        raise _type_error("'cuda' was asked for but torch.cuda.is_available() is False")
    return text


# -- checks before the work: where the results go --------------------------------------


def check_writable(name: str, path: str | os.PathLike, *, make_parents: bool) -> Path:
    """``path`` as a Path, once a file can be written there; ValueError if not.

    The path must not be a folder; its folder must exist and take a new file
    (tried with a temporary file that is removed at once), or with
    ``make_parents`` the nearest existing folder above it must. Nothing is left
    behind.
    """
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise TypeError(f"{name} must be a file path, got {path!r}")
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{name} must be a file path, got the folder {str(path)!r}")
    if path.exists() and not os.access(path, os.W_OK):
        raise ValueError(f"{name}: {str(path)!r} exists and cannot be written")
    folder = path.parent
    if not make_parents and not folder.is_dir():
        raise ValueError(f"{name}: folder {str(folder)!r} does not exist")
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        raise ValueError(f"{name}: {str(folder)!r} is a file, not a folder")
    try:
        if not os.access(folder, os.W_OK | os.X_OK):
            raise PermissionError(folder)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError:
        raise ValueError(f"{name}: folder {str(folder)!r} cannot be written") from None
    return path


def check_plot_format(name: str, path: str | os.PathLike) -> str:
    """The image format of ``path`` (its suffix), checked against matplotlib's list.

    A path without a suffix is saved as matplotlib's default format. Raises
    ValueError naming ``name`` and the formats matplotlib writes.
    """
    from matplotlib import rcParams
    from matplotlib.backend_bases import FigureCanvasBase

    suffix = Path(path).suffix.lower().removeprefix(".")
    known = FigureCanvasBase.get_supported_filetypes()
    if not suffix:
        return rcParams["savefig.format"]
    if suffix not in known:
        raise ValueError(
            f"{name}: matplotlib cannot write {suffix!r} files; use one of "
            f"{','.join(sorted(known))}"
        )
    return suffix


def output_flag(
    parser: OneLineParser,
    flag: str,
    path: str | None,
    *,
    make_parents: bool,
    plot: bool = False,
) -> None:
    """Check the output path of ``flag`` before the work; a one-line error if bad."""
    if path is None:
        return
    try:
        check_writable(flag, path, make_parents=make_parents)
        if plot:
            check_plot_format(flag, path)
    except (TypeError, ValueError) as error:
        parser.fail(flag, str(error).removeprefix(f"{flag}: "))


__all__ = [
    "MAX_THREADS",
    "DefaultsFormatter",
    "OneLineParser",
    "check_plot_format",
    "check_writable",
    "config_or_exit",
    "device",
    "integer",
    "integers",
    "names",
    "number",
    "output_flag",
    "rate",
    "show_default",
]
