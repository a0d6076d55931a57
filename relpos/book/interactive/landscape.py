"""What each scheme adds to a query-key logit against ``i - j``, schemes toggled.

The chart of chapter 8's landscape: one panel per scheme, one line per head, the
values those of ``relpos.schemes.score_by_distance`` (rounded to 4 decimals).
Each panel keeps its own vertical scale, as the still does: the shapes compare
across panels, the heights do not. A checkbox per scheme shows or hides its
panel, a selector keeps one head or all, and a slider picks one distance, whose
values each panel prints (the keyboard's way to what hovering a point shows).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import altair as alt
import numpy as np
import torch
from matplotlib.figure import Figure

from relpos.book.plot.landscape import _landscape_panels

from ._controls import checkbox, select, slider
from ._figure import Interactive

DIGITS = 4
#: Rounded first to this many digits, so that a value one float32 step either side
#: of a tie (ALiBi's -0.21875, computed on another processor) rounds the same way.
SETTLE = 6
PANEL_WIDTH, PANEL_HEIGHT = 228, 110


def _rounded(x: float) -> float:
    """``x`` to :data:`DIGITS` digits, float noise settled first; never ``-0.0``."""
    return round(round(x, SETTLE), DIGITS) + 0.0


def scheme_label(name: str) -> str:
    """A scheme's name without mathtext: ``"Shaw ($k = 8$)"`` -> ``"Shaw (k = 8)"``."""
    return " ".join(str(name).replace("$", "").split())


def chapter_landscape(
    seed: int = 0,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Chapter 8's seven schemes at the chapter's settings, drawn from ``seed``.

    Width 32, 4 heads, distances -40..40, one random query and key state; the
    modules and names the chapter builds (its slides and tests use this; the
    chapter writes it out).

    Shapes:
        returns: distances ``(m,)`` and scheme name -> ``(h, m)``
    """
    import relpos
    from relpos import schemes

    torch.manual_seed(seed)
    hidden, heads = 32, 4
    attentions = {
        "Shaw et al. ($k = 8$)": schemes.ShawSelfAttention(hidden, heads, 8),
        "Transformer-XL": schemes.TransformerXLSelfAttention(hidden, heads),
        "T5 (16 buckets, to 32)": schemes.T5SelfAttention(hidden, heads, 16, 32),
        "ALiBi": schemes.AlibiSelfAttention(hidden, heads),
        "RoPE": schemes.RotarySelfAttention(hidden, heads),
    }
    query_state, key_state = torch.randn(hidden), torch.randn(hidden)
    distances = torch.arange(-40, 41)
    found = {
        name: schemes.score_by_distance(attention, distances, query_state, key_state)
        for name, attention in attentions.items()
    }  # name -> (h, m)
    clipped = relpos.DisentangledSelfAttention(
        hidden, heads, max_relative_positions=8, own_table=False
    )
    bucketed = relpos.DisentangledSelfAttention(
        hidden, heads, max_relative_positions=32, position_buckets=8, own_table=False
    )
    for name, attention in (
        ("DeBERTa ($k = 8$)", clipped),
        ("DeBERTa (8 log buckets, to 32)", bucketed),
    ):
        table = relpos.RelativePositionEmbedding(attention.span, hidden).weight
        # table: (2k, hidden)
        found[name] = schemes.score_by_distance(
            attention, distances, query_state, key_state, rel_embeddings=table
        )
    return distances, found


def _rows(
    distances: torch.Tensor | Sequence[int],
    contributions: Mapping[str, torch.Tensor | np.ndarray],
) -> tuple[list[int], list[tuple[str, np.ndarray]]]:
    checked, found = _landscape_panels(distances, contributions)
    rel = [int(r) for r in checked]
    panels = []
    for name, values in found:
        if not np.isfinite(values).all():
            raise ValueError(f"contributions[{name!r}] must be finite")
        panels.append((scheme_label(name), values))
    labels = [label for label, _ in panels]
    if len(set(labels)) != len(labels):
        raise ValueError(f"contributions must name each scheme once, got {labels}")
    return rel, panels


def caption_expression(heads: int) -> str:
    """The Vega expression printing a panel's values at the picked distance.

    It reads the pivoted row (one field per head, ``"0"``, ``"1"``, ...): the
    distance, then ``, h0 0.123`` for each head the head selector keeps.
    """
    parts = ["'i - j = ' + pick"]
    for h in range(heads):
        field = f"datum['{h}']"
        parts.append(f"(isValid({field}) ? ', h{h} ' + format({field}, '.3~g') : '')")
    return " + ".join(parts)


def landscape_chart(
    distances: torch.Tensor | Sequence[int],
    contributions: Mapping[str, torch.Tensor | np.ndarray],
    *,
    shown: Sequence[str] | None = None,
) -> alt.FacetChart:
    """What each scheme adds to the logit against ``i - j``: a panel per scheme.

    Args:
        distances: the distances ``i - j``, increasing.
        contributions: scheme name -> ``(h, m)`` values, such as the output of
            ``relpos.schemes.score_by_distance``; mathtext ``$`` is dropped from
            the names.
        shown: the schemes ticked at first (their names, with or without ``$``);
            ``None`` ticks all.

    The controls: ``show0``, ``show1``, ... (one checkbox per scheme, in the
    order of ``contributions``), ``head`` (-1 for all heads) and ``pick``, the
    distance whose values each panel prints. Marks: ``lines_marks`` (one line
    per scheme and head), ``points_marks`` (one item per scheme, head and
    distance: scheme, head, i - j, value), ``picked_marks`` (the points at the
    picked distance) and ``values_marks`` (each panel's printed values).
    """
    rel, panels = _rows(distances, contributions)
    labels = [label for label, _ in panels]
    ticked = set(labels) if shown is None else {scheme_label(s) for s in shown}
    unknown = sorted(ticked - set(labels))
    if unknown:
        raise ValueError(f"shown must be drawn from {labels}, got {unknown}")
    heads = max(values.shape[0] for _, values in panels)
    rows = [
        {
            "scheme": label,
            "s": index,
            "head": head,
            "r": rel,
            "v": [_rounded(float(x)) for x in line],
        }
        for index, (label, values) in enumerate(panels)
        for head, line in enumerate(values)
    ]
    boxes = [
        checkbox(f"show{index}", label, label in ticked)
        for index, label in enumerate(labels)
    ]
    head = select(
        "head",
        "heads",
        [-1, *range(heads)],
        -1,
        labels=["all heads", *(f"head {h}" for h in range(heads))],
    )
    middle = rel[len(rel) // 2] if 0 not in rel else 0
    pick = slider("pick", "values at i - j", middle, rel[0], rel[-1])
    shown_expr = "[" + ", ".join(f"show{i}" for i in range(len(labels))) + "][datum.s]"
    head_expr = "head < 0 || datum.head == head"

    base = alt.Chart().transform_filter(head_expr).transform_flatten(["r", "v"])
    x = alt.X("r:Q", title="distance i - j", scale=alt.Scale(nice=False))
    y = alt.Y("v:Q", title="added to the logit")
    colour = alt.Color(
        "head:N",
        title="head",
        scale=alt.Scale(domain=list(range(heads)), scheme="category10"),
        legend=alt.Legend(orient="top", direction="horizontal"),
    )
    tooltip = [
        alt.Tooltip("scheme:N", title="scheme"),
        alt.Tooltip("head:Q", title="head"),
        alt.Tooltip("r:Q", title="i - j"),
        alt.Tooltip("v:Q", title="value", format=".4f"),
    ]
    lines = base.mark_line(strokeWidth=1.4).encode(x=x, y=y, color=colour).properties(
        name="lines"
    )
    points = (
        base.mark_circle(size=14, opacity=0.55)
        .encode(x=x, y=y, color=colour, tooltip=tooltip)
        .properties(name="points")
    )
    at_pick = base.transform_filter("datum.r == pick")
    picked = (
        at_pick.mark_point(size=70, strokeWidth=1.6, filled=False)
        .encode(x=x, y=y, color=colour, tooltip=tooltip)
        .properties(name="picked")
    )
    rule = (
        at_pick.transform_aggregate(count="count()", groupby=["r"])
        .mark_rule(color="#888", strokeDash=[3, 3])
        .encode(x=x)
        .properties(name="pickrule")
    )
    caption = (
        at_pick.transform_pivot("head", value="v", groupby=["scheme", "s"])
        .transform_calculate(text=caption_expression(heads))
        .mark_text(align="left", baseline="bottom", fontSize=10, dy=-3)
        .encode(
            x=alt.value(0),
            y=alt.value(0),
            text=alt.Text("text:N", title="at the picked distance"),
            tooltip=[alt.Tooltip("scheme:N", title="scheme")],
        )
        .properties(name="values")
    )
    layer = alt.layer(
        lines, points, rule, picked, caption, data=alt.Data(values=rows)
    ).properties(width=PANEL_WIDTH, height=PANEL_HEIGHT)
    return (
        layer.facet(
            facet=alt.Facet(
                "scheme:N",
                sort=labels,
                title=None,
                header=alt.Header(labelFontSize=12, labelPadding=16),
            ),
            columns=2,
        )
        # before the facet: a scheme not ticked has no panel (not an empty one)
        .transform_filter(shown_expr)
        .resolve_scale(y="independent")
        # every panel its own x axis (the scale stays shared): with seven panels in
        # two columns a shared axis would sit under the empty eighth place
        .resolve_axis(x="independent")
        .add_params(*boxes, head, pick)
        .properties(
            # resize: the figure shrinks and grows as panels are hidden and shown.
            autosize=alt.AutoSizeParams(type="pad", resize=True),
            title=alt.Title(
                "What position adds to one query-key logit",
                subtitle="one line per head; each panel its own vertical scale",
            )
        )
    )


def landscape_figure(
    distances: torch.Tensor | Sequence[int],
    contributions: Mapping[str, torch.Tensor | np.ndarray],
    *,
    still: Figure | None = None,
    shown: Sequence[str] | None = None,
    alt_text: str | None = None,
) -> Interactive:
    """The landscape chart with its still (``plot.score_landscape`` by default).

    ``still`` is the chapter's own matplotlib figure when it has one (a later
    check cell reads its lines); ``alt_text`` replaces the default text
    alternative.
    """
    chart = landscape_chart(distances, contributions, shown=shown)
    if still is None:
        from relpos.book import plot

        still = plot.score_landscape(distances, dict(contributions))
    names = ", ".join(scheme_label(name) for name in contributions)
    text = alt_text or (
        f"One panel per scheme ({names}) of what position adds to one query-key "
        "logit against the distance i - j, one line per head, each panel on its "
        "own vertical scale. A checkbox per scheme shows or hides its panel, a "
        "selector keeps one head, and a slider picks a distance whose values each "
        "panel prints."
    )
    return Interactive(
        chart,
        name="landscape",
        alt=text,
        still=still,
        hint=(
            "Tick the schemes to compare, choose a head, move the distance to read "
            "the values; hover a point for its scheme, head, i - j and value."
        ),
    )


__all__ = [
    "caption_expression",
    "chapter_landscape",
    "landscape_chart", "landscape_figure",
    "scheme_label",
]
