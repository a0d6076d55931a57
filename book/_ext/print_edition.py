"""Let the single-page HTML build (``make pdf``) render what the site renders.

myst-nb registers its collapsed-code-cell node (cells tagged ``hide-input``) for
the ``html`` builder only; the ``singlehtml`` builder that the print edition
starts from then stops at the first such cell ("unknown node type"). This
extension registers the same HTML visitors for ``singlehtml``.
"""

from __future__ import annotations


def setup(app):
    from myst_nb.sphinx_ import (
        HideCodeCellNode,
        depart_HideCellInput,
        visit_HideCellInput,
    )

    visitors = (visit_HideCellInput, depart_HideCellInput)
    app.add_node(HideCodeCellNode, override=True, html=visitors, singlehtml=visitors)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
