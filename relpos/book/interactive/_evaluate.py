"""Draw a chart outside the browser, with the browser's own engine, and read it back.

``vl-convert`` runs Vega-Lite and Vega (the same JavaScript the site ships) in an
embedded JavaScript runtime and returns the scenegraph: every drawn item with its
``description``, the text Vega also writes into the SVG as the item's
``aria-label`` ("i: 3; j: 1; i - j: 2; delta: 6"). :func:`evaluate` sets the
chart's controls, draws it and returns those descriptions parsed; the tests
compare them with ``relpos``, and the browser test parses the same text from the
page with :func:`parse_description`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

import altair as alt

Row = dict[str, float | str]

# d3-format writes negative numbers with U+2212 and groups thousands with commas.
_MINUS = "\u2212"


def _number(text: str) -> float | str:
    cleaned = text.strip().replace(_MINUS, "-").replace(",", "")
    try:
        return float(cleaned)
    except ValueError:
        return text.strip()


def parse_description(description: str) -> Row:
    """``"i: 3; j: 1; delta: 6"`` as ``{"i": 3.0, "j": 1.0, "delta": 6.0}``.

    Numbers become floats (d3's minus sign and thousands commas undone); any
    other value stays a string.
    """
    if not isinstance(description, str):
        raise TypeError(f"description must be a str, got {type(description).__name__}")
    row: Row = {}
    for entry in description.split("; "):
        key, sep, value = entry.partition(": ")
        if not sep:
            raise ValueError(
                f"description entries must read 'field: value', got {entry!r}"
            )
        row[key.strip()] = _number(value)
    return row


def _spec(chart: alt.TopLevelMixin | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(chart, Mapping):
        return copy.deepcopy(dict(chart))
    if isinstance(chart, alt.TopLevelMixin):
        return chart.to_dict()
    raise TypeError(
        f"chart must be an Altair chart or a spec dict, got {type(chart).__name__}"
    )


def objects(node: Any) -> Iterator[dict[str, Any]]:
    """Every dict in a nested spec or scenegraph, each before the dicts inside it.

    A caller may change the values of a dict it is given (not add or remove keys
    of its parents); the walk then reads the changed values.
    """
    if isinstance(node, dict):
        yield node
        for child in node.values():
            yield from objects(child)
    elif isinstance(node, list):
        for child in node:
            yield from objects(child)


def with_params(spec: Mapping[str, Any], **values: Any) -> dict[str, Any]:
    """A copy of ``spec`` whose parameters named in ``values`` start there.

    Raises ValueError for a name the spec has no parameter of.
    """
    spec = copy.deepcopy(dict(spec))
    unset = set(values)
    for node in objects(spec):
        for param in node.get("params", []) or []:
            if isinstance(param, dict) and param.get("name") in values:
                param["value"] = values[param["name"]]
                unset.discard(param["name"])
    if unset:
        raise ValueError(f"the chart has no parameter {sorted(unset)}")
    return spec


def drawn(scenegraph: Mapping[str, Any]) -> dict[str, list[Row]]:
    """Every named mark of a Vega scenegraph and its items' parsed descriptions."""
    marks: dict[str, list[Row]] = {}
    for node in objects(scenegraph):
        if node.get("role") == "mark" and node.get("name"):
            rows = [
                parse_description(item["description"])
                for item in node.get("items", [])
                if isinstance(item, dict) and item.get("description")
            ]
            marks.setdefault(node["name"], []).extend(rows)
    return marks


def evaluate(
    chart: alt.TopLevelMixin | Mapping[str, Any], **params: Any
) -> dict[str, list[Row]]:
    """Draw ``chart`` with its controls at ``params``; what each mark drew.

    The keys are Vega's mark names: a view named ``"delta"`` (``.properties(
    name="delta")``) draws its mark as ``"delta_marks"``. Needs ``vl-convert-python``
    (the ``site`` and ``test`` extras).

    Returns:
        mark name -> one dict per drawn item, field title -> value.
    """
    try:
        import vl_convert
    except ModuleNotFoundError as missing:  # pragma: no cover - the extras bring it
        raise ModuleNotFoundError(
            "evaluate needs vl-convert-python: pip install 'relpos[site]'"
        ) from missing
    spec = with_params(_spec(chart), **params)
    return drawn(vl_convert.vegalite_to_scenegraph(spec))
