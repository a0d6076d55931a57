"""A small Sphinx extension that keeps every page of the site self-contained.

Jupyter Book 1 always loads sphinx-thebe (live code cells through a remote
Jupyter server), which this book does not use: its launch buttons open Colab.
sphinx-thebe adds two scripts to every page: one names a CDN, and it is added
twice, so the browser reports "Identifier 'THEBE_JS_URL' has already been
declared". This extension drops both scripts from the pages it writes.
"""

from __future__ import annotations

from typing import Any


def _is_thebe(script: Any) -> bool:
    filename = getattr(script, "filename", None) or ""
    body = getattr(script, "attributes", {}).get("body", "") or ""
    return filename.endswith("sphinx-thebe.js") or "THEBE_JS_URL" in body


def drop_thebe_scripts(app, pagename, templatename, context, doctree) -> None:
    scripts = context.get("script_files")
    if scripts:
        context["script_files"] = [s for s in scripts if not _is_thebe(s)]


def setup(app):
    app.connect("html-page-context", drop_thebe_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
