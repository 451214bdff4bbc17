# Two commands matter: `make run` (the local service) and `make test` (what CI runs, via .ci/run).
# `make check` is the quick loop before a commit: lint, types, import layers and unit tests.
# Every target builds .venv from the pinned requirements on first use (and again when they change).
PYTHON ?= python3.13
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat requirements/dev.txt | cksum | cut -d' ' -f1)
# pytest-xdist workers for the main pytest run: 2 fits the 2-core dev/CI machines; `PYTEST_WORKERS=0`
# runs in one process, `PYTEST_WORKERS=auto` uses every CPU. worksteal hands out single tests and
# rebalances when a worker runs dry, so the long e2e and webhook files do not end up on one side.
PYTEST_WORKERS ?= 2
XDIST := -n $(PYTEST_WORKERS) --dist worksteal
export SAM_CLI_TELEMETRY := 0
export AWS_DEFAULT_REGION ?= us-east-1

.PHONY: run test check lint typecheck lint-imports pytest unit integration e2e sam-check bench clean lock

$(STAMP): requirements/dev.txt
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements/dev.txt
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/python -m infra.local_runner

# Static checks first (seconds), then every test but the SAM CLI ones, then those on their own.
test: lint typecheck lint-imports pytest sam-check

check: lint typecheck lint-imports unit

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

# The layer package is found through its folder, as Lambda's layer path does.
lint-imports: $(STAMP)
	PYTHONPATH=layers/synapse $(BIN)/lint-imports

pytest: $(STAMP)
	$(BIN)/pytest -m "not sam" $(XDIST)

unit: $(STAMP)
	$(BIN)/pytest tests/unit
integration: $(STAMP)
	$(BIN)/pytest tests/integration -m "not sam" $(XDIST)
e2e: $(STAMP)
	$(BIN)/pytest tests/e2e $(XDIST)
# `sam validate --lint`, `sam build` and the built artifacts serving the sample events (slow: ~20 s).
sam-check: $(STAMP)
	$(BIN)/pytest -m sam

bench: $(STAMP)
	$(BIN)/python bench/cold_start.py

lock:
	rm -rf /tmp/synapse-lock && $(PYTHON) -m venv /tmp/synapse-lock && /tmp/synapse-lock/bin/pip install -q -e '.[dev]' \
	  && /tmp/synapse-lock/bin/pip freeze --exclude-editable > requirements/dev.txt

clean:
	rm -rf $(VENV) .aws-sam .pytest_cache .mypy_cache .ruff_cache .import_linter_cache

# ---------------------------------------------------------------- AWS: deploy, smoke, teardown
# docs/deploy.md walks through these. ENV names a samconfig.toml environment: `dev` (its [default])
# or `prod`. The venv's SAM CLI builds with the venv's python3.13, so its bin goes first on PATH.
# (Only a command-line ENV counts: some shells export ENV as their startup file.)
ifneq ($(origin ENV),command line)
ENV := dev
endif
SAM_ENV = $(if $(filter dev,$(ENV)),default,$(ENV))
SAM = PATH="$(abspath $(BIN)):$$PATH" $(BIN)/sam

.PHONY: deploy smoke teardown

deploy: $(STAMP)
	$(SAM) build --config-env $(SAM_ENV)
	$(SAM) deploy --config-env $(SAM_ENV)

# make smoke URL=https://… TOKEN=<a JWT>: create a mind, store, recall, search, delete it.
# The token goes through the environment, so make does not echo it.
smoke: $(STAMP)
	@echo '$(BIN)/python -m infra.smoke "$(URL)"   (TOKEN from the environment)'
	@TOKEN="$(TOKEN)" $(BIN)/python -m infra.smoke "$(URL)"

teardown: $(STAMP)
	$(SAM) delete --config-env $(SAM_ENV)

# ---------------------------------------------------------------- demo data and the runner benchmark
.PHONY: demo bench-runner

# `make run` plus SPEC §4's example mind for the dev user (infra/demo.py): prints its id and Mind Key.
demo:
	SYNAPSE_DEMO=1 $(MAKE) --no-print-directory run

# The local runner on DynamoDB Local and on moto, side by side (docs/benchmarks.md; minutes).
# BENCH_ARGS="--memories 2000" for a quicker run.
bench-runner: $(STAMP)
	nice $(BIN)/python bench/runner.py $(BENCH_ARGS)
