"""One figure, three readers: the website's live chart, Colab's, and print's still.

An :class:`Interactive` ending a notebook cell stores one output holding

- ``text/html``: a ``<figure class="relpos-interactive">`` with the still picture
  (``<img>`` with its alt text) and the chart's Vega-Lite JSON in a
  ``<script type="application/json">``. The website's script
  (``book/_ext/interactive.py``) draws the chart in place of the picture; with
  JavaScript off, or in a plain Jupyter, the picture stays;
- ``image/png``: the same still, which the PDF prints;
- ``text/plain``: the text alternative.

On Colab (``google.colab`` imported) the cell shows Altair's own rendering of the
chart instead, which loads the Vega libraries the way Altair does there.
"""

from __future__ import annotations

import base64
import html
import io
import json
import sys
from typing import Any

import altair
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

OUTPUT_KEY = "relpos-interactive"

# The chart's look: a white panel (readable in dark mode too), the book's sizes,
# Vega's SVG renderer (whose marks carry aria-labels).
CONFIG: dict[str, Any] = {
    "background": "white",
    "font": "sans-serif",
    "axis": {"labelFontSize": 12, "titleFontSize": 13},
    "legend": {"labelFontSize": 12, "titleFontSize": 13},
    "title": {"fontSize": 14},
    "view": {"stroke": None},
}


def png_of(figure: Figure) -> bytes:
    """``figure`` as PNG bytes, as Jupyter's inline backend saves it."""
    buffer = io.BytesIO()
    figure.savefig(
        buffer, format="png", bbox_inches="tight", metadata={"Software": None}
    )
    return buffer.getvalue()


class Interactive:
    """An interactive chart and its still picture, shown as one figure.

    Args:
        chart: the Vega-Lite chart (Altair). Its parameters must be named.
        name: the figure's id on its page, a short slug (``"delta"``).
        alt: the text alternative: what the figure shows, in a sentence or two.
        still: the matplotlib figure print and readers without JavaScript get;
            it is closed here so the notebook shows it only once.
        hint: one line telling the reader what to move ("Move n and k; hover a
            cell for its values"), shown above the live chart.
    """

    def __init__(
        self,
        chart: altair.TopLevelMixin,
        *,
        name: str,
        alt: str,
        still: Figure,
        hint: str = "",
    ) -> None:
        if not isinstance(chart, altair.TopLevelMixin):
            raise TypeError(
                f"chart must be an Altair chart, got {type(chart).__name__}"
            )
        if not (name and name.replace("-", "").isalnum() and name.islower()):
            raise ValueError(
                f"name must be a lower-case slug like 'delta', got {name!r}"
            )
        if not alt.strip():
            raise ValueError("alt must describe the figure, got ''")
        if not isinstance(still, Figure):
            raise TypeError(
                f"still must be a matplotlib Figure, got {type(still).__name__}"
            )
        self.chart, self.name, self.alt, self.hint = (
            chart,
            name,
            alt.strip(),
            hint.strip(),
        )
        self.png = png_of(still)
        plt.close(still)
        self.spec = chart.to_dict()
        self.spec.setdefault("description", self.alt)
        self.spec["config"] = {**CONFIG, **self.spec.get("config", {})}

    def html(self) -> str:
        """The figure for the website: still picture, chart JSON, hint."""
        picture = base64.b64encode(self.png).decode("ascii")
        # "</" would end the script element early; JSON allows "<\/".
        data = json.dumps(self.spec, sort_keys=True, ensure_ascii=False)
        data = data.replace("</", "<\\/")
        hint = (
            f'<p class="relpos-hint" hidden>{html.escape(self.hint)}</p>'
            if self.hint
            else ""
        )
        return (
            f'<figure class="relpos-interactive" id="figure-{self.name}" '
            f'data-figure="{self.name}">{hint}'
            f'<img class="relpos-still" alt="{html.escape(self.alt)}" '
            f'src="data:image/png;base64,{picture}">'
            f'<script type="application/json" class="relpos-spec">{data}</script>'
            "</figure>"
        )

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        if "google.colab" in sys.modules:
            # Altair's active renderer, on the chart as the site draws it (with the
            # book's look and the text alternative).
            return altair.renderers.get()(self.spec), {OUTPUT_KEY: self.name}
        data = {
            "text/html": self.html(),
            "image/png": base64.b64encode(self.png).decode("ascii"),
            "text/plain": f"{self.alt}\n(Interactive on the website and on Colab.)",
        }
        return data, {OUTPUT_KEY: self.name}

    def __repr__(self) -> str:
        return f"Interactive(name={self.name!r})"
