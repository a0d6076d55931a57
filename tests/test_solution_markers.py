"""What readers see of a solution and of a cell's output; how print numbers exercises.

- book/_ext/solution_markers.py leaves nbgrader's ``### BEGIN SOLUTION`` and
  ``### END SOLUTION`` lines out of the code cells the site and the PDF render;
  the notebooks keep them (the student edition needs them).
- _config.yml merges a cell's stream outputs into one box (``nb_merge_streams``).
- book/_ext/print_edition.py numbers exercises in print by chapter, as the site.

The built site and PDF are checked in tests/site (test_site.py, test_pdf.py).
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import nbformat
import yaml
from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import print_edition  # noqa: E402
import solution_markers  # noqa: E402

SOLUTION = """### BEGIN SOLUTION
def rows_read(n: int, k: int) -> int:
    return min(2 * n - 1, 2 * k)
### END SOLUTION
check("ch3-ex1", rows_read)"""


def test_the_markers_go_and_the_code_stays():
    kept = solution_markers.without_markers(SOLUTION)
    assert "SOLUTION" not in kept
    assert kept.splitlines() == SOLUTION.splitlines()[1:3] + SOLUTION.splitlines()[4:]
    # a marker's words inside a line of code are code, not a marker
    code = 'print("### BEGIN SOLUTION")\nx = 1  # ### END SOLUTION'
    assert solution_markers.without_markers(code) == code


def _cell(code: str, element: str = "cell_code_source") -> nodes.document:
    document = new_document("page", get_default_settings(Parser))
    cell = nodes.container(nb_element="cell_code")
    source = nodes.container(nb_element=element)
    source += nodes.literal_block(code, code)
    cell += source
    document += cell
    return document


def test_the_transform_cleans_cell_sources_only():
    document = _cell(SOLUTION)
    solution_markers.LeaveOutSolutionMarkers(document).run()
    (block,) = document.findall(nodes.literal_block)
    kept = solution_markers.without_markers(SOLUTION)
    assert block.astext() == block.rawsource == kept
    assert block.children[0].parent is block
    # an output (or a page's own code block) is shown as it is
    output = _cell(SOLUTION, element="cell_code_output")
    solution_markers.LeaveOutSolutionMarkers(output).run()
    (block,) = output.findall(nodes.literal_block)
    assert block.astext() == SOLUTION


def test_the_notebooks_keep_the_markers_for_nbgrader():
    chapters = sorted((ROOT / "book").glob("[01][0-9]_*.ipynb"))
    marked = [
        path.name
        for path in chapters
        if any(
            cell.cell_type == "code" and "### BEGIN SOLUTION" in cell.source
            for cell in nbformat.read(path, as_version=4).cells
        )
    ]
    assert marked == [path.name for path in chapters]


def test_the_book_renders_with_the_extension_and_merged_streams():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]
    assert config["local_extensions"]["solution_markers"] == "book/_ext"
    assert config["config"]["nb_merge_streams"] is True


def test_print_numbers_exercises_as_the_site():
    def started(builder_format: str) -> SimpleNamespace:
        config = SimpleNamespace(numfig_secnum_depth=2)  # sphinx-jupyterbook-latex's
        builder = SimpleNamespace(format=builder_format)
        app = SimpleNamespace(builder=builder, config=config)
        print_edition.site_numbering(app)
        return config

    assert started("latex").numfig_secnum_depth == print_edition.SITE_SECNUM_DEPTH == 1
    assert started("html").numfig_secnum_depth == 2  # the site is left alone
