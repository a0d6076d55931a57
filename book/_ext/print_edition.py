r"""The print edition (``make pdf``): what Sphinx's LaTeX builder adds to the site.

Only the LaTeX builder is touched; the site is built as before.

- Sphinx's manual class (chapters open a new page), not sphinx-jupyterbook-latex's
  jupyterBook class, which needs TeX packages the book has no use for.
- The title page names the version: ``release`` is ``relpos.__version__`` (the one
  version source, read from relpos/__init__.py without importing relpos).
- The root page's text opens with a "Preface" heading, in the contents.
- The setup cells (tag ``hide-input``, collapsed on the site) are left out.
- A code block of at most ``KEEP_WHOLE_LINES`` lines is never split across two
  pages: a ``\needspace`` before it asks for its height, and LaTeX turns the page
  first when less is left.
- The pages of the table of contents' "Appendix" part are typeset as LaTeX's
  appendix (lettered A, B, ... after the numbered chapters), their titles without
  the "Appendix: " the site's titles start with.
- Exercises are numbered by chapter, as on the site ("Exercise 4.2"), not by
  section ("Exercise 4.6.2", sphinx-jupyterbook-latex's numbering).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

# Blocks up to this many lines are kept on one page; longer ones may break.
KEEP_WHOLE_LINES = 20
# The toctree caption whose pages form the appendix (_toc.yml).
APPENDIX_CAPTION = "Appendix"

# The heading of the root page's text in print.
PREFACE = "Preface"

# How many levels of section numbers prefix an exercise's (or a figure's) number:
# 1, Sphinx's default, which the site keeps ("Exercise 4.2").
SITE_SECNUM_DEPTH = 1

ROOT = Path(__file__).resolve().parents[2]


def relpos_version() -> str:
    source = (ROOT / "relpos" / "__init__.py").read_text()
    found = re.search(r'^__version__ = "([^"]+)"', source, flags=re.MULTILINE)
    return found.group(1) if found else ""


def print_title(title: str) -> str:
    """A page's title as the print edition's appendix heads it."""
    prefix = f"{APPENDIX_CAPTION}: "
    if not title.startswith(prefix):
        return str(title)
    rest = title[len(prefix) :]
    return rest[:1].upper() + rest[1:]


def _hidden_input(node: nodes.Element) -> bool:
    return "tag_hide-input" in node.get("classes", []) or "hide-input" in node.get(
        "tags", []
    )


class LeaveOutSetupCells(SphinxPostTransform):
    """Drop the source of every code cell tagged ``hide-input``; its output stays."""

    default_priority = 150
    formats = ("latex",)

    def run(self, **kwargs: Any) -> None:
        for cell in list(self.document.findall(nodes.container)):
            if cell.get("nb_element") != "cell_code" or not _hidden_input(cell):
                continue
            for child in list(cell.children):
                if child.get("nb_element") == "cell_code_source":
                    cell.remove(child)
            if not cell.children:
                cell.parent.remove(cell)


class KeepShortBlocksWhole(SphinxPostTransform):
    r"""Put ``\needspace{height}`` before every code block of few lines."""

    default_priority = 900
    formats = ("latex",)

    def run(self, **kwargs: Any) -> None:
        for block in list(self.document.findall(nodes.literal_block)):
            lines = block.astext().rstrip("\n").count("\n") + 1
            if lines > KEEP_WHOLE_LINES or block.parent is None:
                continue
            # the frame and its padding take about two lines more
            need = nodes.raw(
                "", f"\\needspace{{{lines + 2}\\baselineskip}}\n", format="latex"
            )
            parent = block.parent
            parent.insert(parent.index(block), need)


class AppendixPart(SphinxPostTransform):
    r"""Start LaTeX's ``\appendix`` at the "Appendix" part of the book.

    sphinx-jupyterbook-latex turns each toctree caption into a part (a section
    whose ``docname`` is the caption); the chapters after ``\appendix`` are lettered.
    """

    default_priority = 800  # after sphinx-jupyterbook-latex's parts (700)
    formats = ("latex",)

    def run(self, **kwargs: Any) -> None:
        for section in self.document.findall(nodes.section):
            if section.get("docname") != APPENDIX_CAPTION:
                continue
            if section.children and isinstance(section.children[0], nodes.title):
                section.insert(1, nodes.raw("", "\\appendix\n", format="latex"))
            # "Appendix A: Appendix: how ..." reads twice: drop the page's own prefix
            for title in list(section.findall(nodes.title))[1:]:
                text = title.children[0] if title.children else None
                if isinstance(text, nodes.Text) and print_title(text) != text:
                    title.replace(text, nodes.Text(print_title(text)))
            return


class PrefaceChapter(SphinxPostTransform):
    r"""Give the root page's text (before the chapters) a heading of its own.

    sphinx-jupyterbook-latex prints the root page without its title (the book's
    title, on the title page); its text then runs under the contents' running
    head. ``\chapter*`` opens a page, lists it in the contents and sets the head.
    """

    default_priority = 800
    formats = ("latex",)

    def run(self, **kwargs: Any) -> None:
        root = self.config.root_doc
        for section in self.document.findall(nodes.section):
            if section.get("docname") != root:
                continue
            at = 1 if section.children and isinstance(section[0], nodes.title) else 0
            heading = (
                f"\\chapter*{{{PREFACE}}}\\addcontentsline{{toc}}{{chapter}}"
                f"{{{PREFACE}}}\\markboth{{{PREFACE}}}{{{PREFACE}}}\n"
            )
            section.insert(at, nodes.raw("", heading, format="latex"))
            return


def set_release(app) -> None:
    # The builder has read ``release`` into its context already. The config itself
    # stays as it is: a changed config would make the next site build read every
    # page again.
    if app.builder.format == "latex" and not app.config.release:
        app.builder.context["release"] = relpos_version()


def site_numbering(app) -> None:
    """Number exercises in print as the site does, by chapter.

    sphinx-jupyterbook-latex sets ``numfig_secnum_depth`` to 2 for a book in parts,
    so that sphinx-exercise titled the print edition's exercises "Exercise 4.6.2"
    (chapter 4, section 6) where the site says "Exercise 4.2". It does so when the
    LaTeX builder starts; this runs after it and restores the site's depth.
    """
    if app.builder.format == "latex":
        app.config.numfig_secnum_depth = SITE_SECNUM_DEPTH


def manual_class(app, config) -> None:
    # sphinx-jupyterbook-latex sets its own class, jupyterBook.cls, which loads
    # bbm.sty (texlive-fonts-extra, 1.4 GB) and tikz for macros the book never
    # uses; Sphinx's manual class is the same book without them. The two cell
    # environments the extension writes are defined in _config.yml's preamble.
    config.latex_theme = "manual"


def _with_reference_label(visit):
    """sphinx-exercise labels a LaTeX exercise ``exercise:LABEL`` only, while a
    ``{ref}`` to it (the instructors' page names exercises so) points at Sphinx's
    ``DOCNAME:LABEL``: write that label too, so the reference resolves in print."""

    def visit_with_label(self, node) -> None:
        label = node.get("label", "")
        entry = self.builder.env.sphinx_exercise_registry.get(label, {})
        if entry.get("docname"):  # before the admonition, as its own label is
            target = self.idescape(f"{entry['docname']}:{label}")
            self.body.append(f"\\phantomsection\\label{{{target}}}")
        visit(self, node)

    return visit_with_label


def label_exercises(app) -> None:
    from sphinx_exercise import nodes as exercise

    for node, visit, depart in (
        (exercise.exercise_node, exercise.visit_exercise_node,
         exercise.depart_exercise_node),
        (exercise.exercise_enumerable_node, exercise.visit_exercise_enumerable_node,
         exercise.depart_exercise_enumerable_node),
    ):
        app.add_node(node, override=True, latex=(_with_reference_label(visit), depart))


def setup(app):
    app.connect("config-inited", manual_class, priority=800)
    app.connect("builder-inited", label_exercises)
    # after sphinx-jupyterbook-latex's own builder-inited handler (priority 500)
    app.connect("builder-inited", site_numbering, priority=800)
    app.add_post_transform(LeaveOutSetupCells)
    app.add_post_transform(KeepShortBlocksWhole)
    app.add_post_transform(AppendixPart)
    app.add_post_transform(PrefaceChapter)
    app.connect("builder-inited", set_release)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
