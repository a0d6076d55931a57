"""Solutions as a reader sees them: nbgrader's markers left out of the site and the PDF.

A solution's code sits between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` in
the notebooks, because nbgrader (``make student``, tools/student_edition.py)
cuts out what lies between them. To a reader of the site or the print edition
the two lines are noise: every builder drops them from the code cells it
renders, and the notebooks keep them.

tests/test_solution_markers.py checks the transform; the site and PDF tests check
that no page shows a marker.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")


def without_markers(code: str) -> str:
    """``code`` without the lines that are nbgrader's solution markers alone."""
    kept = [line for line in code.split("\n") if line.strip() not in MARKERS]
    return "\n".join(kept)


def _cell_source(block: nodes.literal_block) -> bool:
    parent = block.parent
    return parent is not None and parent.get("nb_element") == "cell_code_source"


class LeaveOutSolutionMarkers(SphinxPostTransform):
    """Drop the marker lines from the source of every notebook code cell."""

    default_priority = 100  # before print_edition counts the lines of a block
    formats = ()  # every builder: the site and the print edition

    def run(self, **kwargs: Any) -> None:
        for block in list(self.document.findall(nodes.literal_block)):
            if not _cell_source(block):
                continue
            code = block.astext()
            kept = without_markers(code)
            if kept == code:
                continue
            # HTML highlights ``rawsource`` and treats a block whose text differs
            # from it as a parsed literal: both change together.
            block.rawsource = kept
            block[:] = [nodes.Text(kept)]


def setup(app):
    app.add_post_transform(LeaveOutSolutionMarkers)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
