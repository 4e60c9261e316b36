# The two commands: `make run` serves the scheduler locally, `make test` runs the whole suite.
# Both install what they need first (a virtual environment in .venv, Azurite in node_modules).

PYTHON ?= python3
# `VENV=.venv-3.13 PYTHON=python3.13 make test` runs the suite on another Python (.ci/run does, for the highest).
VENV ?= .venv
PY := $(VENV)/bin/python
# `make run PORT=7072` for one run; without PORT, Host.LocalHttpPort of local.settings.json (first written
# from PORT, else 7071), as for `func start`. AZURITE_PORTS are blob,queue,table.
PORT ?=
AZURITE_PORTS ?= 10000,10001,10002

.PHONY: install run test lint infra-check clean dashboard browser

# Installs say what they install and how long it took (pip and npm themselves stay quiet).
NOW = date +%s
SINCE = $$(( $$($(NOW)) - start )) s
PY_PACKAGES = $$(sed -e 's/\#.*//' -e 's/[[:space:]<>=!~;[].*//' -e '/^-/d' -e '/^$$/d' requirements.txt requirements-dev.txt | awk '!seen[$$0]++' | paste -sd, - | sed 's/,/, /g')
NODE_PACKAGES = $$(node -p "const p = require('./package.json'); Object.keys({...p.dependencies, ...p.devDependencies}).join(', ')")

$(VENV)/.installed: requirements.txt requirements-dev.txt
	@test -x $(PY) || { echo "==> Creating the virtual environment $(VENV)/ with $$($(PYTHON) --version)"; $(PYTHON) -m venv $(VENV); }
	@echo "==> Installing Python packages into $(VENV)/ with pip (about a minute the first time): $(PY_PACKAGES) and their dependencies"
	@start=$$($(NOW)); $(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt && \
	  echo "==> Python packages installed in $(SINCE)"
	@touch $@

node_modules/.installed: package.json package-lock.json
	@echo "==> Installing Node packages into node_modules/ with npm ci (half a minute the first time): $(NODE_PACKAGES) and their dependencies"
	@start=$$($(NOW)); npm ci --no-audit --no-fund --loglevel=error && echo "==> Node packages installed in $(SINCE)"
	@touch $@

install: $(VENV)/.installed node_modules/.installed

# The dashboard's built assets are committed (scheduler_core/dashboard/static/); `make run` rebuilds them when
# their sources changed. `make test` does not: tests/browser/test_assets.py must see stale committed assets.
DASHBOARD_BUILT := scheduler_core/dashboard/static/app.js
# node_modules is order-only: a first install is newer than every file of a fresh clone, yet changes no source.
$(DASHBOARD_BUILT): $(shell find dashboard -type f) | node_modules/.installed
	@echo "==> Building the dashboard into scheduler_core/dashboard/static/ (its sources are newer than the built assets)"
	@start=$$($(NOW)); npm run --silent build:dashboard && echo "==> Dashboard built in $(SINCE)"
dashboard: $(DASHBOARD_BUILT)

# Debian's Chromium (apt) for the browser tests, installed when missing.
browser: node_modules/.installed
	@bash scripts/install_browser.sh

run: install $(DASHBOARD_BUILT)
	@$(PY) -m local_host run --azurite --init $(if $(PORT),--port $(PORT)) --azurite-ports $(AZURITE_PORTS) --option-names make

# The suite runs on parallel workers (pytest-xdist), a test module whole on one worker; `auto` is five workers
# per CPU, at most 10 (tests/conftest.py). `make test TEST_WORKERS=0` runs it in one process.
TEST_WORKERS ?= auto
# Every worker collects the whole suite, and pytest rewrites each test module's asserts as it imports it: 13 s
# of CPU a worker, six times at once. The suite keeps compiled modules (__pycache__/, ignored by git) whatever
# PYTHONDONTWRITEBYTECODE says, and one collection first writes them, so the workers and the child processes
# the tests start read them instead (4 s a worker).
SUITE_PY = env -u PYTHONDONTWRITEBYTECODE $(PY)

test: install browser
	@echo "==> Compiling the suite's modules once (pytest --collect-only) before the workers start"
	@$(SUITE_PY) -m pytest --collect-only -q > /dev/null 2>&1 || true
	$(SUITE_PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder
	$(MAKE) lint

infra-check: $(VENV)/.installed
	$(PY) -m pytest tests/infra

lint: $(VENV)/.installed
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

clean:
	rm -rf $(VENV) .venv-3.13 .venv-infra node_modules .azurite .run .pytest_cache .mypy_cache .ruff_cache
