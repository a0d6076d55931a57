"""The controls of the interactive figures: named, labelled, keyboard-operable.

Every control is a Vega-Lite parameter bound to an HTML input. Vega-Embed writes
each as ``<label><span class="vega-bind-name">LABEL</span><input ...></label>``,
so the input has its label as its accessible name, and range, select and checkbox
inputs work from the keyboard as browsers make them. A parameter's name is fixed
(never Altair's counter ``param_3``), so a chart's JSON is the same on every run.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import altair as alt

from ._evaluate import objects


def _named(name: str, label: str) -> None:
    if not name.isidentifier():
        raise ValueError(f"name must be a JavaScript identifier, got {name!r}")
    if not label.strip():
        raise ValueError("label must name the control for a screen reader, got ''")


def slider(
    name: str,
    label: str,
    value: float,
    lo: float,
    hi: float,
    step: float = 1,
) -> alt.Parameter:
    """A range input from ``lo`` to ``hi`` starting at ``value``."""
    _named(name, label)
    if not lo <= value <= hi:
        raise ValueError(f"value must lie in [{lo}, {hi}], got {value}")
    return alt.param(
        name=name,
        value=value,
        bind=alt.binding_range(min=lo, max=hi, step=step, name=label),
    )


def select(
    name: str,
    label: str,
    options: Sequence[Any],
    value: Any = None,
    labels: Sequence[str] | None = None,
) -> alt.Parameter:
    """A drop-down of ``options`` (shown as ``labels``), starting at ``value``."""
    _named(name, label)
    options = list(options)
    if not options:
        raise ValueError("options must hold at least one choice, got []")
    value = options[0] if value is None else value
    if value not in options:
        raise ValueError(f"value must be one of {options}, got {value!r}")
    binding = alt.binding_select(
        options=options,
        name=label,
        **({"labels": list(labels)} if labels is not None else {}),
    )
    return alt.param(name=name, value=value, bind=binding)


def checkbox(name: str, label: str, value: bool = True) -> alt.Parameter:
    """A checkbox, ticked when ``value`` is true."""
    _named(name, label)
    return alt.param(
        name=name, value=bool(value), bind=alt.binding_checkbox(name=label)
    )


def hovered_or(field: int, fallback: str, *, selection: str = "hover") -> str:
    """A Vega expression: the ``field``-th field of the hovered item, else ``fallback``.

    This is how a figure lets both the pointer and the keyboard choose: hovering
    picks an item (the point selection ``selection``, stored by Vega-Lite as
    ``SELECTION_store``), and while nothing is hovered the sliders in ``fallback``
    decide. ``field`` counts the selection's ``fields`` from 0.
    """
    if not isinstance(field, int) or field < 0:
        raise ValueError(f"field must be an index >= 0, got {field!r}")
    store = f"data('{selection}_store')"
    return f"length({store}) > 0 ? {store}[0].values[{field}] : {fallback}"


def plain_names(node: Any) -> Any:
    """``node`` (a chart's dict) with Altair's position suffix (``_0``) taken off
    every view name, in place; returns it.

    Inside a concat chart Altair names each layer after its position
    (``similarity_0``); a figure whose views are named uniquely already keeps
    the names it gave, which its mark names (``similarity_marks``) follow.
    """
    for view in objects(node):
        if "mark" in view and isinstance(view.get("name"), str):
            view["name"] = re.sub(r"_\d+$", "", view["name"])
    return node
