# Two commands set Lumen up on a fresh machine:
#   make run    create .venv, install pinned packages, provision the embedded models, open the window
#   make test   the same set-up, then the whole test suite
# Installing compiles llama.cpp once (about 5 minutes on 2 cores); later runs reuse .venv.
# For hospital IT, `make dist` builds the installable bundle (packaging/README.md).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.lumen-installed
PYTEST_ARGS ?=
DIST_ARGS ?=

.PHONY: run test install provision bench lock clean dist

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): requirements.lock pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --disable-pip-version-check --no-deps -r requirements.lock
	$(BIN)/python -m pip install --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

install: $(STAMP)

provision: install
	$(BIN)/lumen models provision

run: provision
	$(BIN)/lumen

test: provision
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest $(PYTEST_ARGS)

bench: provision
	$(BIN)/python bench/bench_runtime.py
	$(BIN)/python bench/bench_glossary.py
	$(BIN)/python bench/bench_ask.py
	$(BIN)/python bench/bench_evaluation.py
	$(BIN)/python bench/bench_knowledge.py

# The one-folder bundle dist/lumen/, its SHA256SUMS and the Linux tar.gz.
# Releases: make dist DIST_ARGS=--portable-llama (see packaging/README.md).
dist: install
	packaging/build.sh --python $(BIN)/python $(DIST_ARGS)

# Refresh requirements.lock from the current .venv after changing dependencies.
lock:
	{ sed -n '1,3p' requirements.lock; $(BIN)/python -m pip freeze --exclude-editable; } > requirements.lock.new
	mv requirements.lock.new requirements.lock

clean:
	rm -rf $(VENV) build dist *.egg-info
