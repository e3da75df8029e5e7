# privrec: the two set-up commands of the README are `make demo` and `make test`.
# Each creates .venv (if needed) and installs what it needs into it.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip
STAMP  := $(VENV)/.installed

.PHONY: demo test test-slow bench lint clean

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	# CPU PyTorch first: a bare `torch` requirement would pull a multi-GB CUDA build.
	# 1) the CPU wheel pip can see locally, 2) PyTorch's CPU index, 3) whatever PyPI offers.
	$(PIP) install -q "torch==2.13.0+cpu" \
	  || $(PIP) install -q torch --index-url https://download.pytorch.org/whl/cpu \
	  || $(PIP) install -q "torch>=2.3"
	$(PIP) install -q -e ".[text,dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/privrec demo

test: $(STAMP)
	$(BIN)/python -m pytest -q

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .benchmarks
