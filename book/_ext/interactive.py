"""The interactive figures' JavaScript: Vega, Vega-Lite and Vega-Embed, from the site.

A notebook output of ``relpos.book.interactive.Interactive`` holds the still
picture and the chart's JSON (``<figure class="relpos-interactive">``). This
extension

- writes ``_static/relpos-vega.js`` once per build: ``vl_convert.javascript_bundle``
  bundles the Vega libraries vl-convert ships (the versions Altair's offline
  renderer uses) with ``interactive.js`` beside this file, which draws every such
  figure on its page. No CDN: the module is served with the site;
- adds that module only to the pages that hold such a figure.

A page without JavaScript, the PDF (the LaTeX builder picks the output's
``image/png``) and the student edition show the still.
"""

from __future__ import annotations

from pathlib import Path

BUNDLE = "relpos-vega.js"
DRAW = Path(__file__).with_name("interactive.js")
MARKER = 'class="relpos-interactive"'


def write_bundle(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    import vl_convert

    static = Path(app.outdir) / "_static"
    static.mkdir(parents=True, exist_ok=True)
    bundle = vl_convert.javascript_bundle(DRAW.read_text())
    (static / BUNDLE).write_text(bundle, encoding="utf-8")


def add_bundle(app, pagename, templatename, context, doctree) -> None:
    if MARKER in (context.get("body") or ""):
        app.add_js_file(BUNDLE, type="module")


def setup(app):
    app.connect("html-page-context", add_bundle)
    app.connect("build-finished", write_bundle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
