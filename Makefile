# Two commands on a fresh clone: `make book` and `make test`.
# Both create .venv (once) and install relpos with its pinned dependencies.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: book test unit notebooks clean env

env: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[book,test]"
	touch $(STAMP)

book: $(STAMP)
	$(BIN)/jupyter-book build . --path-output . --keep-going

test: unit notebooks

unit: $(STAMP)
	$(BIN)/python -m pytest tests

notebooks: $(STAMP)
	$(BIN)/python -m pytest --nbval --nbval-current-env --nbval-sanitize-with book/sanitize.cfg book

clean:
	rm -rf _build
