"""The students' edition's transform (book/_ext/editions.py), without building a site.

Every chapter loses every solution (code stubbed as nbgrader stubs it, worked
answers and their gates dropped) and keeps its exercises and check calls; the
Sphinx hooks change nothing in the instructors' edition and make Sphinx read
again the pages a change of edition changes. tests/site/test_students_site.py
reads the built students' site.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import editions  # noqa: E402
from _solutions import solution_passages  # noqa: E402

CHAPTERS = sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb"))
CHECK = re.compile(r"""check\(\s*["'](ch\d+-ex\d+)["']""")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_solution_goes_and_every_check_stays(chapter):
    original = nbformat.read(chapter, as_version=4)
    students = editions.without_solutions(original)
    text = "\n".join(cell.source for cell in students.cells)
    assert "SOLUTION" not in text and "{solution-" not in text
    source = "\n".join(cell.source for cell in original.cells)
    assert CHECK.findall(text) == CHECK.findall(source) != []
    assert text.count("{exercise}") == source.count("{exercise}") >= 2
    regions = source.count(editions.BEGIN)
    assert text.count("\n".join(editions.STUB)) == regions
    passages = solution_passages(original)
    assert len(passages["code"]) >= regions, "each solution has lines of its own"
    assert not [p for p in passages["code"] + passages["markdown"] if p in text]
    assert original.cells == nbformat.read(chapter, as_version=4).cells  # unchanged


def test_the_stub_is_the_one_nbgrader_writes():
    from nbgrader.preprocessors import ClearSolutions

    clear = ClearSolutions(enforce_metadata=False)
    compared = 0
    for chapter in CHAPTERS:
        for cell in nbformat.read(chapter, as_version=4).cells:
            if cell.cell_type == "code" and editions.BEGIN in cell.source:
                theirs, _ = clear.preprocess_cell(
                    nbformat.from_dict(cell), {"language": "python"}, 0
                )
                assert editions.stub_solutions(cell.source) == theirs.source
                compared += 1
    indented = "def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION"
    theirs, _ = clear.preprocess_cell(
        nbformat.v4.new_code_cell(indented), {"language": "python"}, 0
    )
    assert editions.stub_solutions(indented) == theirs.source
    assert "    raise NotImplementedError()" in theirs.source
    assert compared >= 30


def test_a_broken_solution_is_refused():
    with pytest.raises(ValueError, match="inside another"):
        editions.stub_solutions("### BEGIN SOLUTION\n### BEGIN SOLUTION\n")
    with pytest.raises(ValueError, match="without its END"):
        editions.stub_solutions("### BEGIN SOLUTION\nx = 1")
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell("```{solution-start} ch1-ex1\n```")]
    )
    with pytest.raises(ValueError, match="without its"):
        editions.without_solutions(notebook)
    notebook.cells[0].source = "```{solution-end}\n```"
    with pytest.raises(ValueError, match="out of order"):
        editions.without_solutions(notebook)


def test_the_edition_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(editions.EDITION_VARIABLE, raising=False)
    assert editions.edition() == "instructors" and not editions.students()
    monkeypatch.setenv(editions.EDITION_VARIABLE, "students")
    assert editions.students()
    monkeypatch.setenv(editions.EDITION_VARIABLE, "student")
    with pytest.raises(ValueError, match="RELPOS_EDITION must be one of"):
        editions.edition()


def fake_app(found: list[str]) -> SimpleNamespace:
    """What the hooks read of Sphinx: the pages and where their sources are."""

    def doc2path(name: str, base: bool = True) -> str:
        matches = sorted(ROOT.glob(f"{name}.*"))
        return str(matches[0])

    env = SimpleNamespace(found_docs=set(found), doc2path=doc2path)
    return SimpleNamespace(env=env)


def test_sphinx_reads_the_students_chapter_only_in_their_edition(monkeypatch):
    chapter = CHAPTERS[1]
    app = fake_app([f"book/{chapter.stem}"])
    text = chapter.read_text()
    monkeypatch.delenv(editions.EDITION_VARIABLE, raising=False)
    source = [text]
    editions._source_read(app, f"book/{chapter.stem}", source)
    assert source == [text]
    monkeypatch.setenv(editions.EDITION_VARIABLE, "students")
    editions._source_read(app, f"book/{chapter.stem}", source)
    assert "BEGIN SOLUTION" in text and "BEGIN SOLUTION" not in source[0]
    assert CHECK.findall(source[0]) == CHECK.findall(text)


def test_a_change_of_edition_reads_the_changed_pages_again(monkeypatch):
    pages = [f"book/{p.stem}" for p in CHAPTERS] + ["book/intro", "book/instructors"]
    pages += ["book/appendix_sweeps"]  # a notebook without exercises
    app = fake_app(pages)
    monkeypatch.setenv(editions.EDITION_VARIABLE, "students")
    changed = editions._outdated(app, app.env, set(), {"book/intro"}, set())
    expected = {f"book/{p.stem}" for p in CHAPTERS} | {"book/instructors"}
    assert set(changed) == expected  # intro is read anyway; the appendix unchanged
    assert editions._outdated(app, app.env, set(), set(), set()) == []
    monkeypatch.delenv(editions.EDITION_VARIABLE)
    # intro links to the instructors' page, a link the students' edition unlinks
    again = expected | {"book/intro"}
    assert set(editions._outdated(app, app.env, set(), set(), set())) == again


def students_config(tmp_path):
    """A fake Sphinx app and config, as jupyter-book hands them to config-inited."""
    app = SimpleNamespace(srcdir=str(ROOT), doctreedir=str(tmp_path / "doctrees"))
    config = SimpleNamespace(
        html_theme_options={
            "repository_url": "https://github.com/relpos-book/relpos",
            "use_repository_button": True,
            "use_issues_button": True,
            "use_edit_page_button": True,
            "launch_buttons": {"colab_url": "https://colab.research.google.com"},
        },
        external_toc_path="_toc.yml",
        exclude_patterns=["_build/*"],
    )
    return app, config


def toc_files(toc: dict) -> list[str]:
    files = [toc["root"]] + [c["file"] for c in toc.get("chapters", [])]
    return files + [c["file"] for p in toc.get("parts", []) for c in p["chapters"]]


def test_the_students_site_has_no_instructors_page_and_no_repository_link(
    tmp_path, monkeypatch
):
    import yaml

    app, config = students_config(tmp_path)
    monkeypatch.delenv(editions.EDITION_VARIABLE, raising=False)
    editions._no_launch_buttons(app, config)
    assert config.external_toc_path == "_toc.yml"  # the instructors' edition: as is
    assert config.html_theme_options["use_repository_button"] is True

    monkeypatch.setenv(editions.EDITION_VARIABLE, "students")
    editions._no_launch_buttons(app, config)
    options = config.html_theme_options
    assert options["launch_buttons"] == {} and options["repository_url"] == ""
    assert not any(options[b] for b in editions.REPOSITORY_BUTTONS)
    assert "book/instructors.md" in config.exclude_patterns
    full = yaml.safe_load((ROOT / "_toc.yml").read_text())
    written = yaml.safe_load(Path(config.external_toc_path).read_text())
    assert Path(config.external_toc_path).is_absolute()
    assert "book/instructors" in toc_files(full)
    assert toc_files(written) == [f for f in toc_files(full) if f != "book/instructors"]
    assert {"book/syllabus", "book/objectives", "book/accessibility"} <= set(
        toc_files(written)
    )


def test_students_toc_drops_a_part_left_empty():
    toc = {
        "root": "book/intro",
        "parts": [
            {"caption": "A", "chapters": [{"file": "book/01_x"}]},
            {"caption": "B", "chapters": [{"file": "book/instructors"}]},
        ],
    }
    assert editions.students_toc(toc)["parts"] == [toc["parts"][0]]
    assert len(toc["parts"]) == 2  # the original is left alone


# A link (Markdown or HTML) to the repository, whose notebooks hold every solution.
REPOSITORY_LINK = re.compile(r"\]\(https?://github\.com/|href=\"https?://github\.com/")


def test_no_page_of_the_students_site_links_to_the_repository():
    import yaml

    toc = editions.students_toc(yaml.safe_load((ROOT / "_toc.yml").read_text()))
    for page in toc_files(toc):
        path = next(ROOT.glob(f"{page}.*"))
        text = path.read_text()
        if path.suffix == ".ipynb":
            cells = nbformat.reads(text, as_version=4).cells
            text = "\n".join(c.source for c in cells if c.cell_type == "markdown")
        assert not REPOSITORY_LINK.search(text), page


def test_links_to_the_instructors_page_become_their_words():
    text = "The [instructors' page](instructors.md) and [a part](instructors.md#x-y)."
    unlinked = "The instructors' page and a part."
    assert editions.without_instructor_links(text) == unlinked
    kept = "[the syllabus](syllabus.md) and [API](api.md)"
    assert editions.without_instructor_links(kept) == kept
    intro = (ROOT / "book" / "intro.md").read_text()
    assert "(instructors.md)" in intro
    assert "instructors.md" not in editions.without_instructor_links(intro)


def test_the_students_build_removes_an_instructors_page_left_in_its_folder(
    tmp_path, monkeypatch
):
    out = tmp_path / "html"
    (out / "book").mkdir(parents=True)
    (out / "_sources" / "book").mkdir(parents=True)
    left = [out / "book" / "instructors.html", out / "_sources/book/instructors.md"]
    for path in left + [out / "book" / "intro.html"]:
        path.write_text("x")
    app = fake_app([])
    app.outdir, app.builder = str(out), SimpleNamespace(format="html")
    app.config = SimpleNamespace(html_sourcelink_suffix=".txt")
    monkeypatch.setenv(editions.EDITION_VARIABLE, "instructors")
    editions._students_sources(app, None)
    assert all(path.exists() for path in left)
    monkeypatch.setenv(editions.EDITION_VARIABLE, "students")
    editions._students_sources(app, None)
    assert not any(path.exists() for path in left)
    assert (out / "book" / "intro.html").exists()


def test_the_pages_workflow_publishes_the_students_edition_by_default() -> None:
    import yaml

    workflow = yaml.safe_load(
        (Path(__file__).resolve().parents[1] / ".github/workflows/book.yml").read_text()
    )
    steps = workflow["jobs"]["test-and-build"]["steps"]
    uploads = [s for s in steps if "upload-pages-artifact" in s.get("uses", "")]
    # A push (no manual input: inputs.edition is empty) uploads the students' site.
    default = [s for s in uploads if "!= 'instructors'" in s.get("if", "")]
    assert [s["with"]["path"] for s in default] == ["_build/students/_build/html"]
    built = [s for s in steps if s.get("run") == "make student-site"]
    assert built and "!= 'instructors'" in built[0]["if"]
    # The instructors' site only on a manual run that asks for it.
    others = [s for s in uploads if s not in default]
    assert all("== 'instructors'" in s["if"] for s in others)
