"""The book's central figures as interactive Vega-Lite charts, with a still for print.

Each figure is an :class:`Interactive`: a Vega-Lite chart (written with Altair,
its data from ``relpos``) and the matplotlib figure of ``relpos.book.plot`` that
shows the same thing at the chapter's settings. A notebook cell that ends in one
stores both: the website draws the chart with the Vega libraries it ships
(``book/_ext/interactive.py``), the PDF and a reader without JavaScript get the
still, and on Colab the chart is drawn by Altair's own renderer.

The figures, one module each:

- ``delta``: chapter 2's distance and delta matrices (n, k, a cell);
- ``table``: chapter 3's row similarities (k; random, sinusoidal or trained);
- ``streams``: chapter 4's c2c, c2p and p2c and the gather (a pair i, j);
- ``buckets``: chapter 6's log buckets (bucket count, largest position);
- ``landscape``: chapter 8's position term of each scheme against i - j;
- ``results``: chapter 9's explorer of the trained sweeps.

Where the browser evaluates a formula itself (delta, the log buckets), the same
chart is evaluated outside the browser by the same Vega engine, through
``vl-convert`` (:func:`evaluate`), and the tests compare what it drew with
``relpos`` over a grid of settings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from relpos.book._lazy import lazy_names

# name -> the module that defines it, imported on first use: a notebook that
# imports this package and draws nothing (a problem set's imports cell) does not
# load Altair (about 2 s of CPU a kernel).
_WHERE = {
    "Interactive": "_figure",
    "buckets_chart": "buckets",
    "buckets_figure": "buckets",
    "checkbox": "_controls",
    "delta_chart": "delta",
    "delta_figure": "delta",
    "drawn": "_evaluate",
    "evaluate": "_evaluate",
    "gather_chart": "streams",
    "gather_figure": "streams",
    "landscape_chart": "landscape",
    "landscape_figure": "landscape",
    "parse_description": "_evaluate",
    "results_chart": "results",
    "results_figure": "results",
    "select": "_controls",
    "similarity_chart": "table",
    "similarity_figure": "table",
    "slider": "_controls",
}
_MODULES = {"buckets", "delta", "landscape", "results", "streams", "table"}

__all__ = sorted(_WHERE)

if TYPE_CHECKING:
    from ._controls import checkbox, select, slider
    from ._evaluate import drawn, evaluate, parse_description
    from ._figure import Interactive
    from .buckets import buckets_chart, buckets_figure
    from .delta import delta_chart, delta_figure
    from .landscape import landscape_chart, landscape_figure
    from .results import results_chart, results_figure
    from .streams import gather_chart, gather_figure
    from .table import similarity_chart, similarity_figure


__getattr__, __dir__ = lazy_names(__name__, _WHERE, _MODULES)
