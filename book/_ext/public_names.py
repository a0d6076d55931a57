"""The API reference, written from each package's ``__all__``.

``.. public-names:: relpos`` documents every name listed in ``relpos.__all__``
under its public name (``relpos.delta``, not ``relpos.positions.delta``), with
autodoc. ``:from: relpos.positions`` keeps only the names that module defines, so
that a page can group the names by idea; ``:rest:`` documents the names of that
``__all__`` that no earlier directive on the page took, so that a name added to
``__all__`` is documented even before a section claims it (a section left with
nothing to show is dropped). A module without ``__all__`` is an error: its
public names are not stated anywhere.
"""

from __future__ import annotations

import importlib
import inspect
import re

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.pycode import ModuleAnalyzer
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

FIELD_ALIAS = re.compile(r"Alias for field number \d+")


def public_names(package: str) -> list[str]:
    module = importlib.import_module(package)
    names = getattr(module, "__all__", None)
    if names is None:
        raise ValueError(f"{package} has no __all__: its public names are not stated")
    return list(names)


def home(package: str, name: str) -> str:
    """The module that defines ``package.name``: for a constant, the submodule of
    ``package`` whose ``__all__`` lists it, else one that holds the same object."""
    module = importlib.import_module(package)
    value = getattr(module, name)
    defined = getattr(value, "__module__", None)
    if isinstance(defined, str) and (inspect.isclass(value) or callable(value)):
        return defined
    holders = [
        sub
        for sub in vars(module).values()
        if inspect.ismodule(sub)
        and sub.__name__.startswith(package + ".")
        and getattr(sub, name, None) is value
    ]
    holders.sort(key=lambda sub: name not in getattr(sub, "__all__", ()))
    return holders[0].__name__ if holders else package


def autodoc_lines(package: str, name: str) -> list[str]:
    value = getattr(importlib.import_module(package), name)
    if inspect.isclass(value) and value.__name__ != name:
        # The same class under a second name (an alias): a class entry that says
        # so, rather than autodoc's attribute "alias of ...".
        public = _public_name(value)
        return [
            f".. py:class:: {name}",
            f"   :module: {package}",
            "",
            f"   The same class as :class:`{public}`, under the name {package} uses.",
            "",
        ]
    if inspect.isclass(value):
        return [f".. autoclass:: {package}.{name}", "   :members:", ""]
    if callable(value):
        return [f".. autofunction:: {package}.{name}", ""]
    # A constant: its value and the ``#:`` comment where it is defined, never the
    # docstring of its type ("Built-in immutable sequence.").
    lines = [f".. py:data:: {name}", f"   :module: {package}"]
    shown = repr(value)
    if len(shown) <= 80:
        lines.append(f"   :value: {shown}")
    lines.append("")
    origin = home(package, name)
    docs = ModuleAnalyzer.for_module(origin).find_attr_docs()
    lines += ["   " + line for line in docs.get(("", name), [])]
    return lines + [""]


def reexport_lines(package: str, name: str) -> list[str]:
    """An entry for ``package.name``, documented in full under another name."""
    value = getattr(importlib.import_module(package), name)
    kind = "class" if inspect.isclass(value) else "function"
    return [
        f".. py:{kind}:: {name}",
        f"   :module: {package}",
        "",
        f"   The same {kind} as :py:{'class' if kind == 'class' else 'func'}:"
        f"`{_public_name(value)}`, under the name {package} uses.",
        "",
    ]


def _public_name(value: type) -> str:
    """``relpos.X`` where the top-level package exports ``value`` as ``X``."""
    top = importlib.import_module(value.__module__.split(".")[0])
    for exported in getattr(top, "__all__", ()):
        if getattr(top, exported, None) is value:
            return f"{top.__name__}.{exported}"
    return f"{value.__module__}.{value.__qualname__}"


def drop_field_aliases(app, what, name, obj, options, lines: list[str]) -> None:
    """A named tuple's fields say "Alias for field number 0": say nothing instead."""
    if len(lines) <= 2 and lines and FIELD_ALIAS.fullmatch(lines[0]):
        lines.clear()


class PublicNames(SphinxDirective):
    required_arguments = 1
    option_spec = {"from": directives.unchanged, "rest": directives.flag}

    def run(self) -> list[nodes.Node]:
        package = self.arguments[0]
        taken = self.env.temp_data.setdefault("public_names_taken", {})
        done = taken.setdefault((self.env.docname, package), set())
        names = [n for n in public_names(package) if n not in done]
        if "from" in self.options:
            origins = self.options["from"].split()
            names = [n for n in names if home(package, n) in origins]
            names.sort(key=lambda n: _position(n, home(package, n)))
        # A class or function re-exported by two packages (relpos and relpos.schemes
        # both export DeBERTa's attention) is documented in full once a page, where
        # the page first lists it (autodoc's canonical name, its defining module's,
        # would otherwise be described twice); the second package's name gets an
        # entry that points to it.
        shown = self.env.temp_data.setdefault("public_objects_shown", {})
        objects = shown.setdefault(self.env.docname, set())
        done.update(names)
        if not names:
            return [no_names()]
        lines: list[str] = []
        for name in names:
            identity = _identity(package, name)
            if identity in objects:
                lines += reexport_lines(package, name)
            else:
                objects.add(identity)
                lines += autodoc_lines(package, name)
        container = nodes.section()
        container.document = self.state.document
        content = StringList(lines, source=self.get_source_info()[0])
        nested_parse_with_titles(self.state, content, container)
        return container.children


def _identity(package: str, name: str) -> tuple[str, ...]:
    """Where ``package.name`` is defined and the name it goes by, for a class or
    function (the same object under one name in two packages gives one identity;
    an alias keeps its own); the public name itself otherwise."""
    value = getattr(importlib.import_module(package), name)
    if inspect.isclass(value) or inspect.isfunction(value):
        return (value.__module__, value.__qualname__, name)
    return (package, name)


def _position(name: str, origin: str) -> int:
    order = list(getattr(importlib.import_module(origin), "__all__", []))
    return order.index(name) if name in order else len(order)


class no_names(nodes.General, nodes.Element):
    """Where a directive found nothing to document: removed, with its section
    when the section holds nothing else."""


def drop_empty_sections(app, doctree: nodes.document) -> None:
    for marker in list(doctree.findall(no_names)):
        parent = marker.parent
        parent.remove(marker)
        rest = [c for c in parent.children if not isinstance(c, nodes.title)]
        if isinstance(parent, nodes.section) and not rest and parent.parent:
            parent.parent.remove(parent)


def setup(app):
    app.setup_extension("sphinx.ext.autodoc")
    app.add_directive("public-names", PublicNames)
    app.connect("autodoc-process-docstring", drop_field_aliases)
    # before napoleon (priority 500) reads the sections
    # before the table of contents is read from the page
    app.connect("doctree-read", drop_empty_sections, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
