# privrec: the two set-up commands of the README are `make demo` and `make test`.
# Each creates .venv (if needed) and installs into it exactly what requirements/lock.txt pins
# (hashes checked), never whatever the package index serves that day.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip
STAMP  := $(VENV)/.installed
LOCK   := requirements/lock.txt
PIPTOOLS := pip-tools==7.6.2
EXTRAS := $(shell $(PYTHON) -c "import tomllib; print(','.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']))")

.PHONY: install demo test test-integration test-slow bench lint lock lock-check latest clean

$(STAMP): $(LOCK) pyproject.toml Makefile
	@$(PYTHON) requirements/check_lock.py
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	# every package pinned with its hashes, CPU PyTorch included (see requirements/constraints.txt)
	$(PIP) install -q --require-hashes --no-deps -r $(LOCK)
	# privrec itself, built with the locked setuptools
	$(PIP) install -q --no-deps --no-build-isolation -e .
	@$(BIN)/python requirements/check_lock.py --installed
	touch $(STAMP)

install: $(STAMP)   # the locked environment only (e.g. on each node of a Ray cluster, docs/cluster.md)

demo: $(STAMP)
	$(BIN)/privrec demo

test: $(STAMP) lint         # the README's test command, between two edits: unit and fast integration tests (~3 min)
	$(BIN)/python -m pytest -q -m "not slow and not integration"

test-integration: $(STAMP)  # real CLI processes, real data, Flower, every documented command, every committed report
	$(BIN)/python -m pytest -q -m integration

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

lint: $(STAMP)
	$(BIN)/ruff check privrec tests benchmarks requirements

lock-check:
	@$(PYTHON) requirements/check_lock.py && echo "$(LOCK) is in sync with pyproject.toml"

# Re-resolve the lock: after changing dependencies in pyproject.toml (CI fails until you do), and
# deliberately now and then to move to newer releases (`make latest` shows whether they pass).
# Existing pins are kept where they still satisfy the ranges; `make lock UPGRADE=1` takes the newest of
# everything, `make lock UPGRADE_PACKAGE=name` (or "name==version") moves one package and what it needs.
lock:
	$(PYTHON) -m venv .lockenv && .lockenv/bin/python -m pip install -q $(PIPTOOLS)
	.lockenv/bin/pip-compile --quiet --generate-hashes --allow-unsafe --all-extras --strip-extras \
	  --no-emit-find-links --no-emit-index-url $(if $(UPGRADE),--upgrade) $(foreach p,$(UPGRADE_PACKAGE),--upgrade-package '$(p)') \
	  -c requirements/constraints.txt --output-file $(LOCK) pyproject.toml requirements/build.in
	echo "# inputs-sha256: $$($(PYTHON) -c 'import sys; sys.path.insert(0, "requirements"); import check_lock; print(check_lock.inputs_digest())')" >> $(LOCK)
	@$(PYTHON) requirements/check_lock.py && echo "wrote $(LOCK)"

# Drift check (does not gate landing): a throw-away venv from pyproject's ranges only (every extra), i.e. the
# releases of today, and the whole suite on it. Run it before `make lock UPGRADE=1`.
latest:
	rm -rf .venv-latest
	$(PYTHON) -m venv .venv-latest
	.venv-latest/bin/python -m pip install -q "torch==2.13.0+cpu" || .venv-latest/bin/python -m pip install -q torch
	.venv-latest/bin/python -m pip install -q -e ".[$(EXTRAS)]"
	.venv-latest/bin/python -m pip freeze --exclude-editable > .venv-latest/freeze.txt
	.venv-latest/bin/python -m pytest -q -p no:cacheprovider

clean:
	rm -rf $(VENV) .venv-latest .lockenv .pytest_cache .benchmarks
