"""The site's accessibility fixes: the book's stylesheet and list markup screen readers accept.

- Adds book/_static/relpos.css to every page (contrast, widths, figures in dark mode).
- The bibliography: docutils writes its entries as ``<div role="list">`` holding
  ``<div role="doc-biblioentry">``; ``doc-biblioentry`` is deprecated in WAI-ARIA 1.3
  and is not a list item, so a list has no items for assistive technology
  (axe-core's ``aria-required-children``, critical). Each entry gets
  ``role="listitem"``: a list of works, read as a list.

tests/site/test_site.py audits every page with axe-core.
"""

from __future__ import annotations

from pathlib import Path

STATIC = Path(__file__).resolve().parent.parent / "_static"
STYLESHEET = "relpos.css"


def add_static_path(app, config) -> None:
    if str(STATIC) not in map(str, config.html_static_path):
        config.html_static_path.append(str(STATIC))


def entries_as_list_items(app, pagename, templatename, context, doctree) -> None:
    body = context.get("body")
    if body and 'role="doc-biblioentry"' in body:
        context["body"] = body.replace('role="doc-biblioentry"', 'role="listitem"')


def setup(app):
    app.connect("config-inited", add_static_path)
    app.add_css_file(STYLESHEET)
    app.connect("html-page-context", entries_as_list_items)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
