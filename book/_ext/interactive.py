"""The interactive figures' JavaScript: Vega, Vega-Lite and Vega-Embed, from the site.

A notebook output of ``relpos.book.interactive.Interactive`` holds the still
picture and the chart's JSON (``<figure class="relpos-interactive">``). This
extension

- writes ``_static/relpos-vega.js`` once per build: ``vl_convert.javascript_bundle``
  bundles the Vega libraries vl-convert ships (the versions Altair's offline
  renderer uses) with ``interactive.js`` beside this file, which draws every such
  figure on its page. No CDN: the script is served with the site;
- adds that script only to the pages that hold such a figure, as a classic
  script (deferred), not a module: Chromium refuses a module from ``file://``
  (its origin is null, so CORS blocks it), and the site is also read from disk.

A page without JavaScript, the PDF (the LaTeX builder picks the output's
``image/png``) and the student edition show the still.
"""

from __future__ import annotations

from pathlib import Path

BUNDLE = "relpos-vega.js"
DRAW = Path(__file__).with_name("interactive.js")
MARKER = 'class="relpos-interactive"'


def classic_script(bundle: str) -> str:
    """vl-convert's bundle as one strict function expression called at once.

    The bundle is module code with no import or export: vl-convert documents it
    for a plain ``<script>`` tag and its own ``vegalite_to_html(bundle=True)``
    inlines it so. Wrapped, its top-level names (``t``, ``n``, ...) stay out of
    the page's global scope, where the theme's scripts live, and it keeps the
    strict mode a module has. A module-only construct (``import.meta``, a
    top-level ``await``) would be a syntax error here, which the browser tests
    catch as a console error.
    """
    # The newline before the closing line ends a trailing line comment.
    return '(function () {\n"use strict";\n' + bundle + "\n})();\n"


def write_bundle(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    import vl_convert

    static = Path(app.outdir) / "_static"
    static.mkdir(parents=True, exist_ok=True)
    bundle = vl_convert.javascript_bundle(DRAW.read_text())
    (static / BUNDLE).write_text(classic_script(bundle), encoding="utf-8")


def add_bundle(app, pagename, templatename, context, doctree) -> None:
    if MARKER in (context.get("body") or ""):
        app.add_js_file(BUNDLE, loading_method="defer")


def setup(app):
    app.connect("html-page-context", add_bundle)
    app.connect("build-finished", write_bundle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
