# The two commands: `make run` serves the scheduler locally, `make test` runs the whole suite.
# Both install what they need first (a virtual environment in .venv, Azurite in node_modules).

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 7071
AZURITE_PORTS ?= 10000,10001,10002

.PHONY: install run test lint infra-check clean

$(VENV)/.installed: requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

install: $(VENV)/.installed node_modules/.installed

run: install
	$(PY) -m local_host run --azurite --init --port $(PORT) --azurite-ports $(AZURITE_PORTS)

# The suite runs on parallel workers (pytest-xdist), a test module whole on one worker; `auto` is two workers
# per CPU, at most 8 (tests/conftest.py). `make test TEST_WORKERS=0` runs it in one process.
TEST_WORKERS ?= auto

test: install
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder
	$(MAKE) lint

infra-check: $(VENV)/.installed
	$(PY) -m pytest tests/infra

lint: $(VENV)/.installed
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

clean:
	rm -rf $(VENV) .venv-infra node_modules .azurite .run .pytest_cache .mypy_cache .ruff_cache
