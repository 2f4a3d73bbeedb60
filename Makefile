# Two commands set everything up on a fresh machine: `make demo` and `make test`.
# Each creates .venv if missing and installs with the exact pins of constraints.txt; a second call reuses it.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.levante-installed
DEMO_DIR ?= demo-out
# pytest on 2 workers (pytest-xdist). loadfile runs each test file whole on one worker, so its module fixtures are
# built once; the session fixtures that several files use are built once per run (tests/built_once.py). Not
# loadgroup: with pytest 9.2, xdist 3.8 no longer tags the nodes with their group and it acts as plain `load`.
# --no-loadscope-reorder: files in collection order; xdist's default starts the files with most tests first, which
# leaves the slow files with few tests (test_compat_models.py, test_lmms_patches.py) to the end, one worker idle.
PYTEST_WORKERS := -n 2 --dist loadfile --no-loadscope-reorder

# The lmms-eval-dependent tests that `make test` also runs against lmms-eval 0.7.3 (the rest of the suite runs on
# the default 0.7.2 only): the patcher, each patch's bug and fix, two end-to-end task runs, and the whole model-class
# suite (every case: the code each class runs differs between the versions, in files we do not patch too).
LMMS_EVAL_073_TESTS := tests/test_patcher.py tests/test_lmms_patches.py \
	tests/test_tasks.py::test_cli_run_writes_results_and_samples_and_lists_tasks \
	tests/test_adapters_lmms.py::test_levante_clip_runs_levante_tasks_in_lmms_eval_and_batch_8_scores_as_batch_1 \
	tests/test_compat_models.py

.PHONY: venv test test-lmms-eval-0.7.2 test-lmms-eval-0.7.3 demo lint clean-venv

venv: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade "pip>=24"
	$(PY) -m pip install --quiet -c constraints.txt -e ".[dev,inspect,croissant,qwen,llava]"
	# the build leaves an egg-info here that would shadow the installed entry points when run from this folder
	rm -rf levante_tasks.egg-info
	$(PY) -m levante_tasks lmms-eval patch
	touch $(STAMP)

test: $(STAMP)
	bash scripts/ensure_r.sh
	bash scripts/ensure_slurm.sh
	$(PY) -m ruff check .
	$(PY) -m pytest -q $(PYTEST_WORKERS)
	$(MAKE) --no-print-directory test-lmms-eval-0.7.2 test-lmms-eval-0.7.3

# Each supported lmms-eval version in a throwaway venv layered on $(VENV) (no second full install): its pinned
# wheel plus levante-tasks installed as a plain wheel; patch, check, one task run (scripts/test_lmms_eval_version.sh).
test-lmms-eval-0.7.2: $(STAMP)
	VENV=$(VENV) bash scripts/test_lmms_eval_version.sh 0.7.2

test-lmms-eval-0.7.3: $(STAMP)
	VENV=$(VENV) bash scripts/test_lmms_eval_version.sh 0.7.3 -q $(PYTEST_WORKERS) $(LMMS_EVAL_073_TESTS)

demo: $(STAMP)
	$(VENV)/bin/levante-tasks demo --out $(DEMO_DIR)

lint: $(STAMP)
	$(PY) -m ruff check .

clean-venv:
	rm -rf $(VENV)
