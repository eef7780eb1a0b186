# Two commands set Lumen up on a fresh machine:
#   make run    create .venv, install pinned packages, provision the embedded models, open the window
#   make test   the same set-up, then the whole test suite
#   make check  the quick lane for an edit-test loop: no test that starts a process (but those
#               marked quick: a few short ones) and none marked slow (pyproject.toml's markers)
# Installing compiles llama.cpp once (about 5 minutes on 2 cores); later runs reuse .venv.
# llama.cpp is compiled for a fixed CPU level (GGML_NATIVE=OFF), never for this machine's CPU
# (packaging/install_llama.sh; AMX kernels are left out at every level):
#   LLAMA_CPU=portable (default, AVX2), baseline (any x86-64) or native (this CPU only).
# For hospital IT, `make dist` builds the installable bundle (packaging/README.md).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.lumen-installed
PYTEST_ARGS ?=
# Test files run in parallel, one worker per core (pytest-xdist; each worker and the processes
# it starts are pinned to their own cores by tests/conftest.py); WORKERS=0 runs them in one.
WORKERS ?= auto
PYTEST_PARALLEL = -n $(WORKERS) --dist loadfile
DIST_ARGS ?=
LLAMA_CPU ?= portable
LLAMA_STAMP := $(VENV)/.llama-$(LLAMA_CPU)

.PHONY: run test check lint install provision bench bench-cpu lock clean dist screenshots examples

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Every pinned package but llama-cpp-python, then llama-cpp-python compiled for LLAMA_CPU
# (packaging/install_llama.sh), then Lumen itself.
DEPS_STAMP := $(VENV)/.deps-installed
$(DEPS_STAMP): requirements.lock | $(BIN)/python
	grep -v '^llama_cpp_python==' requirements.lock > $(VENV)/requirements-without-llama.txt
	$(BIN)/python -m pip install --disable-pip-version-check --no-deps -r $(VENV)/requirements-without-llama.txt
	touch $(DEPS_STAMP)

$(LLAMA_STAMP): requirements.lock packaging/install_llama.sh | $(DEPS_STAMP)
	rm -f $(VENV)/.llama-*
	packaging/install_llama.sh $(BIN)/python $(LLAMA_CPU)
	touch $(LLAMA_STAMP)

$(STAMP): pyproject.toml $(DEPS_STAMP) $(LLAMA_STAMP)
	$(BIN)/python -m pip install --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

install: $(STAMP)

provision: install
	$(BIN)/lumen models provision

run: provision
	$(BIN)/lumen

# Errors a reader would miss (pyproject.toml's [tool.ruff.lint]: unused and undefined names,
# mutable defaults, ...); a second or two.
lint: install
	$(BIN)/ruff check desktop_app tests bench packaging

test: provision lint
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest $(PYTEST_PARALLEL) $(PYTEST_ARGS)

check: provision lint
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest $(PYTEST_PARALLEL) -m "not slow and not subprocess" $(PYTEST_ARGS)

bench: provision
	$(BIN)/python bench/bench_runtime.py
	$(BIN)/python bench/bench_abort_callback.py
	$(BIN)/python bench/bench_glossary.py
	$(BIN)/python bench/bench_ask.py
	$(BIN)/python bench/bench_evaluation.py
	$(BIN)/python bench/bench_knowledge.py
	$(BIN)/python bench/bench_facts.py
	$(BIN)/python bench/bench_handouts.py

# The example handouts of docs/examples (three layouts, PDF and text; no model).
examples: provision
	$(BIN)/python bench/example_handouts.py --out docs/examples

# Screenshots of every tab at 1280x800 in docs/screenshots (the Help menu's guides show
# them), from a throw-away profile with the embedded models (a few minutes).
screenshots: provision
	$(BIN)/python -m desktop_app.gui.screenshots --out docs/screenshots

# The portable llama.cpp against native and baseline builds (compiles each once, ~5 min).
bench-cpu: provision
	$(BIN)/python bench/bench_cpu_builds.py --levels native,baseline

# The one-folder bundle dist/lumen/, its SHA256SUMS and the Linux tar.gz.
# llama.cpp is bundled at the level .venv has (portable); DIST_ARGS="--llama-cpu baseline"
# for CPUs without AVX2 (see packaging/README.md).
dist: install
	packaging/build.sh --python $(BIN)/python $(DIST_ARGS)

# Refresh requirements.lock from the current .venv after changing dependencies.
lock:
	{ sed -n '1,3p' requirements.lock; $(BIN)/python -m pip freeze --exclude-editable; } > requirements.lock.new
	mv requirements.lock.new requirements.lock

clean:
	rm -rf $(VENV) build dist *.egg-info
