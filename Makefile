# Two commands set everything up on a fresh machine: `make demo` and `make test`.
# Each creates .venv if missing and installs with the exact pins of constraints.txt; a second call reuses it.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.levante-installed
DEMO_DIR ?= demo-out

.PHONY: venv test demo lint clean-venv

venv: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade "pip>=24"
	$(PY) -m pip install --quiet -c constraints.txt -e ".[dev]"
	# the build leaves an egg-info here that would shadow the installed entry points when run from this folder
	rm -rf levante_tasks.egg-info
	$(PY) -m levante_tasks lmms-eval patch
	touch $(STAMP)

test: $(STAMP)
	bash scripts/ensure_r.sh
	$(PY) -m ruff check .
	$(PY) -m pytest -q

demo: $(STAMP)
	$(VENV)/bin/levante-tasks demo --out $(DEMO_DIR)

lint: $(STAMP)
	$(PY) -m ruff check .

clean-venv:
	rm -rf $(VENV)
