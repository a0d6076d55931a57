"""The interactive figures' machinery: one output for three readers, drawn as a browser.

relpos.book.interactive: ``Interactive`` (chart, still, text alternative in one
notebook output), the named controls, and ``evaluate`` (the chart drawn by the
Vega engine outside the browser). The figures themselves have their own tests
(test_interactive_*.py); the browser's side is tests/site.
"""

from __future__ import annotations

import base64
import json
import re
import sys

import altair as alt
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from relpos.book import plot  # noqa: E402
from relpos.book.interactive import (  # noqa: E402
    Interactive,
    checkbox,
    evaluate,
    parse_description,
    select,
    slider,
)
from relpos.book.interactive._controls import hovered_or, plain_names  # noqa: E402
from relpos.book.interactive._evaluate import with_params  # noqa: E402
from relpos.book.interactive._figure import OUTPUT_KEY  # noqa: E402

N = 6


def squares_chart() -> alt.Chart:
    """A row of cells whose drawn value is a Vega expression of a slider."""
    scale = slider("scale", "scale", 2, 1, 5)
    shown = checkbox("shown", "show odd cells", True)
    return (
        alt.Chart(alt.sequence(0, N, as_="x"))
        .transform_filter("shown || datum.x % 2 == 0")
        .transform_calculate(value="datum.x * scale - 3")
        .mark_rect()
        .encode(x="x:O", color="value:Q", tooltip=["x:Q", "value:Q"])
        .add_params(scale, shown)
        .properties(name="squares")
    )


@pytest.fixture
def still():
    figure = plot.index_heatmap(4, 2)
    yield figure
    plt.close(figure)


def test_evaluate_draws_what_the_expression_gives():
    for scale in (1, 2, 5):
        rows = evaluate(squares_chart(), scale=scale)["squares_marks"]
        assert sorted((r["x"], r["value"]) for r in rows) == [
            (float(x), float(x * scale - 3)) for x in range(N)
        ]


def test_evaluate_follows_a_checkbox():
    rows = evaluate(squares_chart(), shown=False)["squares_marks"]
    assert sorted(r["x"] for r in rows) == [0.0, 2.0, 4.0]


def test_evaluate_refuses_an_unknown_parameter():
    with pytest.raises(ValueError, match="no parameter"):
        evaluate(squares_chart(), zoom=3)
    with pytest.raises(TypeError, match="chart must be"):
        evaluate([1, 2])


def test_with_params_leaves_the_spec_alone():
    spec = squares_chart().to_dict()
    changed = with_params(spec, scale=4)
    assert [p["value"] for p in changed["params"] if p["name"] == "scale"] == [4]
    assert [p["value"] for p in spec["params"] if p["name"] == "scale"] == [2]


@pytest.mark.parametrize(
    "text, row",
    [
        ("i: 3; j: 1; delta: 6", {"i": 3.0, "j": 1.0, "delta": 6.0}),
        # d3-format's minus sign and thousands separator
        ("i - j: \u22123; bucket: 1,024", {"i - j": -3.0, "bucket": 1024.0}),
        ("scheme: T5; value: 0.25", {"scheme": "T5", "value": 0.25}),
    ],
)
def test_parse_description_reads_vegas_labels(text, row):
    assert parse_description(text) == row


def test_parse_description_rejects_what_is_not_a_label():
    with pytest.raises(ValueError, match="field: value"):
        parse_description("just words")
    with pytest.raises(TypeError, match="description must be a str"):
        parse_description(3)


def test_controls_are_named_and_labelled():
    spec = squares_chart().to_dict()
    assert {p["name"] for p in spec["params"]} == {"scale", "shown"}
    assert {p["bind"]["name"] for p in spec["params"]} == {"scale", "show odd cells"}
    choice = select("task", "task", ["relative", "far"], labels=["Relative", "Far"])
    assert choice.param.bind.labels == ["Relative", "Far"]


def hover_chart() -> alt.VConcatChart:
    """Cells to hover, and a line with the chosen cell: hovered, else the slider's."""
    pick = slider("pick", "cell", 1, 0, N - 1)
    hover = alt.selection_point(
        name="hover", fields=["x"], on="pointerover", clear="pointerout"
    )
    cells = (
        alt.Chart(alt.sequence(0, N, as_="x"))
        .mark_rect()
        .encode(x="x:O")
        .add_params(hover)
        .properties(name="cells")
    )
    line = (
        alt.Chart(alt.sequence(0, 1, as_="row"))
        .transform_calculate(chosen=hovered_or(0, "pick"))
        .mark_text()
        .encode(text="chosen:Q", tooltip=["chosen:Q"])
        .properties(name="line")
    )
    return alt.vconcat(cells, line).add_params(pick)


def test_hovered_or_takes_the_hovered_cell_else_the_slider():
    for value in (0, 4):
        (row,) = evaluate(hover_chart(), pick=value)["line_marks"]
        assert row["chosen"] == value
    # Vega-Lite fills the selection's store from its value: a cell hovered
    (row,) = evaluate(hover_chart(), pick=0, hover=[{"x": 3}])["line_marks"]
    assert row["chosen"] == 3
    assert hovered_or(1, "r0", selection="pair") == (
        "length(data('pair_store')) > 0 ? data('pair_store')[0].values[1] : r0"
    )
    with pytest.raises(ValueError, match="field must be"):
        hovered_or(-1, "r0")


def test_plain_names_takes_off_altairs_position_suffix():
    layer = alt.layer(
        squares_chart().properties(name="first"),
        squares_chart().mark_text().properties(name="second"),
    )
    spec = alt.vconcat(layer, layer.properties(title="again")).to_dict()
    suffixed = re.findall(r'"name": "(first|second)_\d+"', json.dumps(spec))
    assert suffixed, "Altair no longer suffixes the names in a concat"
    plain = json.dumps(plain_names(spec))
    assert not re.search(r'"name": "(first|second)_\d+"', plain)
    assert '"name": "first"' in plain and '"name": "second"' in plain
    assert '"name": "scale"' in plain  # parameters keep their names


@pytest.mark.parametrize(
    "make, error, match",
    [
        (lambda: slider("n n", "n", 1, 0, 2), ValueError, "identifier"),
        (lambda: slider("n", " ", 1, 0, 2), ValueError, "label"),
        (lambda: slider("n", "n", 5, 0, 2), ValueError, r"value must lie in \[0, 2\]"),
        (lambda: select("t", "task", []), ValueError, "at least one"),
        (lambda: select("t", "task", ["a"], "b"), ValueError, "one of"),
        (lambda: checkbox("2x", "x"), ValueError, "identifier"),
    ],
)
def test_controls_refuse_bad_input(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_one_output_holds_chart_still_and_text(still):
    figure = Interactive(
        squares_chart(),
        name="squares",
        alt="Six cells in a row.",
        still=still,
        hint="Move the scale.",
    )
    # not left open in pyplot, where the inline backend would show it a second time
    open_figures = [plt.figure(number) for number in plt.get_fignums()]
    assert all(figure is not still for figure in open_figures)
    data, metadata = figure._repr_mimebundle_()
    assert metadata == {OUTPUT_KEY: "squares"}
    assert set(data) == {"text/html", "image/png", "text/plain"}
    assert base64.b64decode(data["image/png"])[:8] == b"\x89PNG\r\n\x1a\n"
    assert data["text/plain"].startswith("Six cells in a row.")
    page = data["text/html"]
    assert 'id="figure-squares"' in page and 'data-figure="squares"' in page
    assert f'src="data:image/png;base64,{data["image/png"]}"' in page
    assert 'alt="Six cells in a row."' in page
    assert '<p class="relpos-hint" hidden>Move the scale.</p>' in page
    spec = json.loads(
        re.search(r'class="relpos-spec">(.*?)</script>', page, re.S).group(1)
    )
    assert spec["description"] == "Six cells in a row."
    assert spec["config"]["background"] == "white"
    assert spec["params"] == figure.spec["params"]


def test_the_chart_json_cannot_end_its_script_early(still):
    chart = squares_chart().properties(title="a </script> in a title")
    page = Interactive(chart, name="squares", alt="Six cells.", still=still).html()
    assert page.count("</script>") == 1
    assert "<\\/script>" in page


def test_the_output_is_the_same_on_every_run(still):
    first = Interactive(squares_chart(), name="squares", alt="Cells.", still=still)
    again = Interactive(
        squares_chart(), name="squares", alt="Cells.", still=plot.index_heatmap(4, 2)
    )
    assert first.html() == again.html()


def test_on_colab_the_cell_shows_altairs_rendering(still, monkeypatch):
    figure = Interactive(squares_chart(), name="squares", alt="Cells.", still=still)
    monkeypatch.setitem(sys.modules, "google.colab", object())
    data, _ = figure._repr_mimebundle_()
    page = data["text/html"]
    assert 'class="relpos-interactive"' not in page  # not the site's form
    assert "vegaEmbed" in page and "Cells." in page  # Altair's, with the description


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"chart": "not a chart"}, TypeError, "chart must be an Altair chart"),
        ({"name": "Delta Map"}, ValueError, "slug"),
        ({"alt": "  "}, ValueError, "alt must describe"),
        ({"still": "picture.png"}, TypeError, "still must be a matplotlib Figure"),
    ],
)
def test_interactive_refuses_bad_input(still, kwargs, error, match):
    arguments = {"chart": squares_chart(), "name": "squares", "alt": "Cells."}
    arguments["still"] = still
    arguments.update(kwargs)
    chart = arguments.pop("chart")
    with pytest.raises(error, match=match):
        Interactive(chart, **arguments)


def test_a_pyplot_still_is_closed_so_the_cell_shows_it_once():
    still, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    number = still.number
    Interactive(squares_chart(), name="squares", alt="Cells.", still=still)
    assert number not in plt.get_fignums()
