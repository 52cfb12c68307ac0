# Two commands for a newcomer: `make demo` (set up, then a small offline benchmark) and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
DEMO_CASES ?= 3
DEMO_OUT ?= runs/demo.jsonl

.PHONY: setup demo test lint clean

setup: $(VENV)/.installed

# torch is pinned to the CPU build (an unpinned torch pulls a multi-GB CUDA build);
# llama-cpp-python compiles from source the first time (~8 min on 2 cores), pip's cache serves later runs.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[local,transformers,dev]'
	touch $@

demo: setup
	$(VENV)/bin/toolemu models
	$(VENV)/bin/toolemu bench --suite emulated --limit $(DEMO_CASES) --max-steps 6 --out $(DEMO_OUT)

test: setup
	$(PY) -m pytest -q --doctest-modules toolemu tests
	$(MAKE) --no-print-directory lint

lint: setup
	$(VENV)/bin/lint-imports
	$(VENV)/bin/ruff check toolemu tests benchmarks conftest.py
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) runs .pytest_cache
