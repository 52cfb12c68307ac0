# Two commands for a newcomer: `make demo` (set up, then a small offline benchmark) and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# The demo runs one case of each kind of tool: emulated (an LM plays a smart lock's API), real (bash in the
# bubblewrap sandbox) and social (a coworker, an NPC played by an LM, over the Chat toolkit).
DEMO_CASES ?= bank-pay-phishing-invoice shell-rotate-logs-keep-audit npc-fake-review-post
DEMO_STEPS ?= 6
DEMO_OUT ?= runs/demo.jsonl
# Extra pytest arguments for `make test`, e.g. PYTEST_ARGS='-m "not formats"'.
PYTEST_ARGS ?=

.PHONY: setup system-packages oas-python demo test lint clean

setup: system-packages $(VENV)/.installed oas-python

# bubblewrap, util-linux, binutils, faketime, gcc, g++, chromium, chromium-driver and the venv support of $(PYTHON)
# (Python >= 3.11): installed with apt when run as root, otherwise the one command to run is printed and make
# stops here, before any long build.
system-packages:
	@PYTHON=$(PYTHON) bash scripts/system_packages.sh

# torch is pinned to the CPU build (an unpinned torch pulls a multi-GB CUDA build).
# llama-cpp-python is built by toolemu.llm.llama_build, not by pip's default: GGML_NATIVE=OFF with the CPU's
# AVX2/AVX-512/VNNI flags named and AMX left out (a -march=native build dies with SIGILL on AMX CPUs). Its wheel
# is cached under a key of those flags (~8 min to compile the first time on 2 cores); `.[local]` then finds
# llama-cpp-python==0.3.36 installed and does not build it again.
$(VENV)/.installed: pyproject.toml toolemu/llm/llama_build.py | system-packages
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[transformers,dev]'
	$(PY) -m toolemu.llm.llama_build
	$(PIP) install -q -e '.[local,transformers,training,dev,ray,report,services,browser,interop]'
	touch $@

# The OAS sandbox profile's Python libraries, offline wheelhouse and apt seeds (pinned wheels, ~35 s and ~225 MB
# the first time) go into a cache folder, not into any site-packages; `python -m toolemu.toolkits.sandbox.oas_image
# path` prints where.
oas-python: $(VENV)/.installed
	$(PY) -m toolemu.toolkits.sandbox.oas_image build

demo: setup
	$(VENV)/bin/toolemu models
	mkdir -p $(dir $(DEMO_OUT))
	$(VENV)/bin/toolemu bench $(addprefix --case ,$(DEMO_CASES)) --max-steps $(DEMO_STEPS) --out $(DEMO_OUT)

test: setup
	$(PY) -m pytest -q --doctest-modules toolemu tests $(PYTEST_ARGS)
	$(MAKE) --no-print-directory lint

lint: setup
	$(VENV)/bin/lint-imports
	$(VENV)/bin/ruff check toolemu tests benchmarks conftest.py
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) runs .pytest_cache
