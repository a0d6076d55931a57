# Two commands on a fresh clone: `make book` and `make test`.
# Both create .venv (once) and install relpos with its pinned dependencies.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: book test unit notebooks site colab clean env student pdf

env: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[book,site,test]"
	touch $(STAMP)

book: $(STAMP)
	$(BIN)/jupyter-book build . --path-output . --keep-going

test: unit notebooks site colab

unit: $(STAMP)
	$(BIN)/python -m pytest tests --ignore=tests/site --ignore=tests/colab

# Builds the site offline with warnings as errors, then reads it in headless Chromium.
site: $(STAMP)
	$(BIN)/python -m pytest tests/site

notebooks: $(STAMP)
	$(BIN)/python -m pytest --nbval --nbval-current-env --nbval-sanitize-with book/sanitize.cfg book

# Each chapter alone, as Colab opens it: a separate Python (.venv-colab) with only
# torch, numpy, matplotlib and a kernel; the setup cell installs this clone's HEAD.
colab: $(STAMP)
	$(BIN)/python -m pytest tests/colab

# The student edition: every chapter without its solutions (the code between
# nbgrader's ### BEGIN/END SOLUTION markers becomes a stub; the check stays).
student: $(STAMP)
	$(BIN)/python tools/student_edition.py _build/student

# The print edition: the whole book as one PDF, printed by headless Chromium
# (Debian: apt-get install chromium) from the single-page build.
pdf: $(STAMP)
	$(BIN)/python tools/build_pdf.py _build/pdf/relpos-book.pdf

clean:
	rm -rf _build
