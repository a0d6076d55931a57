"""Chapter 8's landscape chart draws relpos's score_by_distance, scheme by scheme.

The chart is drawn by the browser's own Vega engine (``evaluate``): its points are
the values of ``relpos.schemes.score_by_distance`` rounded to 4 decimals, a
checkbox per scheme shows exactly that scheme's lines, the head selector keeps
one head, and the picked distance prints each panel's values.
"""

from __future__ import annotations

import json
import re

import pytest

from relpos.book.interactive import Interactive, evaluate
from relpos.book.interactive._evaluate import objects, with_params
from relpos.book.interactive.landscape import (
    chapter_landscape,
    landscape_chart,
    landscape_figure,
    scheme_label,
)

pytest.importorskip("vl_convert")

# the chapter's seven schemes (its settings, seed 0)
DISTANCES, LANDSCAPE = chapter_landscape()
NAMES = [scheme_label(name) for name in LANDSCAPE]
CHART = landscape_chart(DISTANCES, LANDSCAPE)


def _by_point(rows: list[dict]) -> dict[tuple[str, int, int], float]:
    return {
        (row["scheme"], int(row["head"]), int(row["i - j"])): row["value"]
        for row in rows
    }


def _axis_titles(scenegraph, text: str) -> int:
    """How many axis titles of a Vega scenegraph read ``text``."""
    return sum(
        item.get("text") == text
        for node in objects(scenegraph)
        if node.get("role") == "axis-title"
        for item in node.get("items", [])
    )


@pytest.mark.parametrize("ticked", [range(7), [0, 5, 6], [3]])
def test_a_panel_per_ticked_scheme_each_with_its_distance_axis(ticked):
    """A scheme not ticked has no panel, not an empty one; and every panel has its
    own x axis (seven panels in two columns: a shared axis, drawn once per column,
    would sit under the empty eighth place)."""
    import vl_convert

    boxes = {f"show{i}": i in ticked for i in range(len(NAMES))}
    spec = with_params(CHART.to_dict(), **boxes)
    scenegraph = vl_convert.vegalite_to_scenegraph(spec)
    assert _axis_titles(scenegraph, "distance i - j") == len(ticked)
    assert _axis_titles(scenegraph, "added to the logit") == len(ticked)


def test_the_points_are_score_by_distance_rounded():
    drawn = _by_point(evaluate(CHART)["points_marks"])
    expected = {
        (scheme_label(name), head, r): round(round(float(values[head, m]), 6), 4)
        for name, values in LANDSCAPE.items()
        for head in range(values.shape[0])
        for m, r in enumerate(DISTANCES.tolist())
    }
    assert drawn == pytest.approx(expected, abs=1e-12)
    assert len(LANDSCAPE) == 7 and len(expected) == 7 * 4 * 81


@pytest.mark.parametrize("off", [[0], [3], [1, 4, 5], list(range(7))])
def test_a_scheme_is_drawn_exactly_when_ticked(off):
    marks = evaluate(CHART, **{f"show{i}": False for i in off})
    kept = {NAMES[i] for i in range(len(NAMES)) if i not in off}
    assert {row["scheme"] for row in marks.get("points_marks", [])} == kept
    assert len(marks.get("lines_marks", [])) == len(kept) * 4 * 81
    assert len(marks.get("values_marks", [])) == len(kept)


def test_shown_sets_the_first_ticks():
    chart = landscape_chart(DISTANCES, LANDSCAPE, shown=["ALiBi", "DeBERTa ($k = 8$)"])
    drawn = {row["scheme"] for row in evaluate(chart)["points_marks"]}
    assert drawn == {"ALiBi", "DeBERTa (k = 8)"}


@pytest.mark.parametrize("head", [0, 3])
def test_the_head_selector_keeps_one_head(head):
    rows = evaluate(CHART, head=head)["points_marks"]
    assert {int(row["head"]) for row in rows} == {head}
    assert len(rows) == len(NAMES) * 81


@pytest.mark.parametrize("pick", [-40, -8, 0, 7, 40])
def test_the_picked_distance_prints_each_panels_values(pick):
    marks = evaluate(CHART, pick=pick)
    picked = _by_point(marks["picked_marks"])
    assert {r for _, _, r in picked} == {pick}
    assert len(picked) == len(NAMES) * 4
    texts = {
        row["scheme"]: row["at the picked distance"] for row in marks["values_marks"]
    }
    assert sorted(texts) == sorted(NAMES)
    m = DISTANCES.tolist().index(pick)
    for name, values in LANDSCAPE.items():
        text = texts[scheme_label(name)].replace("\u2212", "-")
        assert text.startswith(f"i - j = {pick},")
        head_values = re.findall(r"h(\d) (\S+?)(?:,|$)", text)
        assert [int(h) for h, _ in head_values] == [0, 1, 2, 3]
        printed = [float(v) for _, v in head_values]
        expected = [round(float(values[h, m]), 4) for h in range(4)]
        assert printed == pytest.approx(expected, rel=5e-3, abs=5e-5), text


def test_the_json_is_deterministic_and_small():
    first = json.dumps(CHART.to_dict(), sort_keys=True)
    again = json.dumps(landscape_chart(DISTANCES, LANDSCAPE).to_dict(), sort_keys=True)
    assert first == again
    assert not re.search(r"\b(param|view)_\d+", first)
    assert len(first) < 60_000


def test_the_figure_keeps_the_chapters_still():
    from relpos.book import plot

    still = plot.score_landscape(DISTANCES, LANDSCAPE)
    figure = landscape_figure(DISTANCES, LANDSCAPE, still=still)
    assert isinstance(figure, Interactive) and figure.name == "landscape"
    assert figure.png.startswith(b"\x89PNG")
    assert "ALiBi" in figure.alt and "checkbox" in figure.alt
    assert len(json.dumps(figure.spec)) < 60_000  # the still is the chapter's PNG


def test_bad_input_names_the_argument():
    with pytest.raises(TypeError, match="distances"):
        landscape_chart(DISTANCES.double(), LANDSCAPE)
    with pytest.raises(ValueError, match="increasing"):
        landscape_chart(DISTANCES.flip(0), LANDSCAPE)
    with pytest.raises(TypeError, match="contributions"):
        landscape_chart(DISTANCES, {})
    with pytest.raises(ValueError, match="contributions"):
        landscape_chart(DISTANCES, {"ALiBi": LANDSCAPE["ALiBi"][:, :5]})
    with pytest.raises(ValueError, match="shown"):
        landscape_chart(DISTANCES, LANDSCAPE, shown=["Sinusoidal"])
    with pytest.raises(ValueError, match="finite"):
        landscape_chart(DISTANCES, {"ALiBi": LANDSCAPE["ALiBi"] * float("nan")})
