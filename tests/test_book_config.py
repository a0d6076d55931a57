"""The book's structure: contents, setup cells, stored outputs, exercises, packaging."""

from __future__ import annotations

import importlib.metadata
import json
import re
import sys
from pathlib import Path

import nbformat
import pytest
import tomllib
import yaml
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import set_repo_url  # noqa: E402

NOTEBOOKS = set_repo_url.notebooks()
# The numbered chapters (an appendix page has no objectives, exercises or session).
CHAPTERS = [path for path in NOTEBOOKS if path.name[:2].isdigit()]
MACHINE_PATH = re.compile(r"/(work|tmp|root|home)/")


def toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for chapter in toc.get("chapters", []):
        files.append(chapter["file"])
    for part in toc.get("parts", []):
        files.extend(chapter["file"] for chapter in part["chapters"])
    return files


def test_book_has_chapters():
    assert len(NOTEBOOKS) >= 7, [p.name for p in NOTEBOOKS]


def test_toc_lists_every_notebook_and_only_existing_pages():
    listed = toc_files()
    for entry in listed:
        assert any(
            (ROOT / f"{entry}{ext}").exists() for ext in ("", ".md", ".ipynb")
        ), entry
    listed_stems = {Path(entry).with_suffix("").as_posix() for entry in listed}
    for path in NOTEBOOKS:
        assert path.relative_to(ROOT).with_suffix("").as_posix() in listed_stems, (
            path.name
        )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_setup_cell_uses_the_configured_repository(path):
    notebook = nbformat.read(path, as_version=4)
    expected = set_repo_url.SETUP_CELL.format(url=set_repo_url.configured_url())
    cell = set_repo_url.first_code_cell(notebook)
    assert cell.source == expected
    # Boilerplate to a reader of the site: collapsed there, one click away.
    assert "hide-input" in cell.metadata.get("tags", []), path.name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stored_executed_and_clean(path):
    notebook = nbformat.read(path, as_version=4)
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code" or not cell.source.strip():
            continue
        where = f"{path.name} cell {index}"
        assert cell.execution_count is not None, (
            f"{where} stored without being executed"
        )
        last = [line for line in cell.source.rstrip().splitlines() if line.strip()][-1]
        assert last.lstrip().startswith("#") or not last.rstrip().endswith(";"), (
            f"{where} ends with ';'"
        )
        for output in cell.outputs:
            assert output.output_type != "error", f"{where} stored an error"
            text = json.dumps(output.get("text", "")) + json.dumps(
                output.get("data", {}).get("text/plain", "")
            )
            assert not MACHINE_PATH.search(text), (
                f"{where} shows a path of this machine"
            )


EXERCISE = re.compile(r"^```\{exercise\}[^\n]*\n:label: (?P<label>\S+)", re.MULTILINE)
SOLUTION_START = re.compile(
    r"^```\{solution-start\} (?P<label>\S+)\n(?P<options>(?::[^\n]*\n)*)```",
    re.MULTILINE,
)
SOLUTION_END = re.compile(r"^```\{solution-end\}\s*\n```", re.MULTILINE)
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"


def exercises(notebook: nbformat.NotebookNode) -> list[dict]:
    """Each exercise: its label, the cells of its gated solution, where it starts."""
    found, cells = [], notebook.cells
    for index, cell in enumerate(cells):
        match = EXERCISE.search(cell.source) if cell.cell_type == "markdown" else None
        if not match:
            continue
        start = cells[index + 1] if index + 1 < len(cells) else None
        gate = SOLUTION_START.search(start.source) if start is not None else None
        end = next(
            (
                k
                for k in range(index + 1, len(cells))
                if SOLUTION_END.search(cells[k].source)
            ),
            None,
        )
        found.append(
            {
                "label": match.group("label"),
                "index": index,
                "gate": gate,
                "cells": cells[index + 2 : end] if end is not None else None,
            }
        )
    return found


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_chapter_has_objectives_summary_and_exercises(path):
    notebook = nbformat.read(path, as_version=4)
    markdown = "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    assert "**Learning objectives**" in markdown, path.name
    assert "## Summary" in markdown and "## Exercises" in markdown, path.name
    assert 2 <= len(exercises(notebook)) <= 4, path.name


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_exercises_follow_the_book_convention(path):
    """Labels chN-exM in order, a gated dropdown solution right after each exercise,
    solution code between nbgrader's markers, and a check(...) on every coded answer."""
    notebook = nbformat.read(path, as_version=4)
    chapter = int(path.name[:2])
    found = exercises(notebook)
    assert [e["label"] for e in found] == [
        f"ch{chapter}-ex{m}" for m in range(1, len(found) + 1)
    ], path.name
    for exercise in found:
        label = exercise["label"]
        assert exercise["gate"] is not None, (
            f"{path.name} {label}: no solution-start next"
        )
        assert exercise["gate"].group("label") == label, f"{path.name} {label}"
        assert ":class: dropdown" in exercise["gate"].group("options"), (
            f"{path.name} {label}"
        )
        assert exercise["cells"], f"{path.name} {label}: no solution-end"
        code = [c for c in exercise["cells"] if c.cell_type == "code"]
        for cell in code:
            assert cell.source.startswith(BEGIN) and END in cell.source, (
                path.name,
                label,
            )
        if code:
            after = code[-1].source.split(END, 1)[1]
            assert re.search(rf"^check\(\s*\"{label}\"", after.strip(), re.M), (
                f"{path.name} {label}: the solution does not end with "
                f'check("{label}", ...)'
            )
    inside = {id(c) for e in found for c in (e["cells"] or [])}
    for cell in notebook.cells:
        if cell.cell_type == "code" and BEGIN in cell.source:
            assert id(cell) in inside, (
                f"{path.name}: solution markers outside a solution"
            )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_figure_data_checks_are_hidden_from_the_site(path):
    """A cell that reads a drawn figure back only checks it: the site hides it."""
    notebook = nbformat.read(path, as_version=4)
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        reads_figure = re.search(
            r"get_array\(\)|get_xydata\(\)|\.patches\b", cell.source
        )
        if reads_figure:
            tags = set(cell.metadata.get("tags", []))
            assert tags & {"remove-cell", "remove-input"}, f"{path.name} cell {index}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_displayed_figure_is_stored_as_an_image(path):
    """A Figure shown without `%matplotlib inline` stores only its text: no picture."""
    notebook = nbformat.read(path, as_version=4)
    for index, cell in enumerate(notebook.cells):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if str(data.get("text/plain", "")).startswith("<Figure"):
                assert "image/png" in data, (
                    f"{path.name} cell {index}: figure stored without its image"
                )


def test_gpu_chapter_asks_colab_for_a_gpu_and_only_it():
    gpu_chapters = [
        p for p in NOTEBOOKS if "torch.cuda.is_available()" in p.read_text()
    ]
    assert gpu_chapters, "no chapter has the GPU cell"
    for path in NOTEBOOKS:
        notebook = nbformat.read(path, as_version=4)
        asks = notebook.metadata.get("accelerator") == "GPU"
        assert asks == (path in gpu_chapters), path.name


def _requirement_name(requirement: str) -> str:
    return (
        re.split(r"[<>=!~\[ ;@]", requirement.strip(), maxsplit=1)[0]
        .lower()
        .replace("_", "-")
    )


def test_environment_yml_lists_the_same_packages_as_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {_requirement_name(r) for r in project["dependencies"]}
    for extra in project["optional-dependencies"].values():
        wanted |= {_requirement_name(r) for r in extra}
    wanted.discard(project["name"])  # an extra that pulls in another, relpos[book]
    environment = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(
        d["pip"] for d in environment["dependencies"] if isinstance(d, dict)
    )
    listed = {_requirement_name(r) for r in pip_section}
    assert listed == wanted


def test_constraints_pin_every_direct_dependency():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {_requirement_name(r) for r in project["dependencies"]}
    for extra in project["optional-dependencies"].values():
        names |= {_requirement_name(r) for r in extra}
    names.discard(project["name"])  # relpos[book] inside another extra
    pinned = {
        _requirement_name(line): line.split("==", 1)[1].strip()
        for line in (ROOT / "constraints.txt").read_text().splitlines()
        if "==" in line and not line.startswith("#")
    }
    assert names <= set(pinned), names - set(pinned)
    # What is installed here is what is pinned (torch's +cpu label aside).
    installed = {}
    for name in pinned:
        try:
            installed[name] = Version(importlib.metadata.version(name)).public
        except importlib.metadata.PackageNotFoundError:
            continue
    assert {"torch", "transformers", "numpy"} <= set(installed)
    wrong = {
        name: (pinned[name], version)
        for name, version in installed.items()
        if Version(version) != Version(pinned[name])
    }
    assert not wrong, f"pinned, installed: {wrong}"


# uv's annotations: "    # via name", or "    # via" then "    #   name" lines
_VIA = re.compile(
    r"^\s+#\s+(?!via\s*$)(?:via\s+)?(?P<name>[A-Za-z0-9][\w.-]*)(?: \(|\s*$)"
)


def _pins_and_reasons() -> dict[str, set[str]]:
    """constraints.txt as ``package -> the packages it is there for`` (uv's "# via")."""
    reasons: dict[str, set[str]] = {}
    current = None
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            current = _requirement_name(line)
            reasons[current] = set()
        elif current and (via := _VIA.match(line)):
            reasons[current].add(_requirement_name(via.group("name")))
    return reasons


def test_every_pin_says_why_it_is_there():
    reasons = _pins_and_reasons()
    assert len(reasons) > 50
    unexplained = sorted(name for name, why in reasons.items() if not why)
    assert not unexplained, f"pinned without a '# via': {unexplained}"
    header = (ROOT / "constraints.txt").read_text().split("\n", 8)[:8]
    assert any("make lock" in line for line in header), "no regeneration command"


def test_jupyterlab_comes_only_with_the_student_edition():
    """nbgrader is in the student extra alone, and the book's site does not need the
    jupyterlab/notebook stack it brings: in the pins, nothing else leads to it."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for extra, requirements in project["optional-dependencies"].items():
        names = {_requirement_name(r) for r in requirements}
        assert ("nbgrader" in names) == (extra == "student"), extra
        assert not any("student" in r for r in requirements if "relpos[" in r), extra
    reasons = _pins_and_reasons()
    needed, frontier = set(), {"relpos"}
    while frontier:  # everything that relpos needs without going through nbgrader
        needed |= frontier
        frontier = {
            name
            for name, why in reasons.items()
            if name not in needed and name != "nbgrader" and why & needed
        }
    for stack in ("jupyterlab", "notebook", "jupyter-server"):
        assert stack in reasons, stack
        assert stack not in needed, f"{stack} is needed by more than nbgrader"


def test_make_book_installs_the_site_without_the_student_edition():
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.compile(r"^\$\((\w+)_ENV\):.*\n\t.*-e \"\.\[([\w,]+)\]\"", re.M)
    installs = dict(recipe.findall(makefile))
    assert installs["SITE"] == "site" and installs["STUDENT"] == "student"
    # the suite builds the site and the student edition (tests/test_student_edition.py)
    assert {"site", "student", "test"} <= set(installs["TEST"].split(","))
    targets = dict(re.findall(r"^([a-z]+): \$\((\w+)_ENV\)", makefile, re.M))
    assert targets["book"] == targets["pdf"] == "SITE"
    assert targets["student"] == "STUDENT"
    assert targets["unit"] == targets["site"] == targets["notebooks"] == "TEST"


# -- the documents ------------------------------------------------------------------
# (the course plan on the instructors' page: tests/test_course_plan.py)


def test_every_make_target_the_docs_mention_exists():
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([\w-]+):", makefile, flags=re.MULTILINE))
    documents = ["book/instructors.md", "book/intro.md", "README.md", "_config.yml"]
    for name in documents:
        text = (ROOT / name).read_text()
        for target in re.findall(r"\bmake ([a-z][\w-]*)", text):
            assert target in targets, f"{name} mentions make {target}"
