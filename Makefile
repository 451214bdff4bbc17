# Two commands matter: `make run` (the local service) and `make test` (what CI runs).
# Both build .venv from the pinned requirements on first use.
PYTHON ?= python3.13
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat requirements/dev.txt | cksum | cut -d' ' -f1)
export SAM_CLI_TELEMETRY := 0
export AWS_DEFAULT_REGION ?= us-east-1

.PHONY: run test lint typecheck unit integration e2e sam-check bench clean lock

$(STAMP): requirements/dev.txt
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements/dev.txt
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/python -m infra.local_runner

test: $(STAMP) lint typecheck
	$(BIN)/pytest

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest tests/unit
integration: $(STAMP)
	$(BIN)/pytest tests/integration
e2e: $(STAMP)
	$(BIN)/pytest tests/e2e
sam-check: $(STAMP)
	$(BIN)/pytest -m sam

bench: $(STAMP)
	$(BIN)/python bench/cold_start.py

lock:
	$(PYTHON) -m venv /tmp/synapse-lock && /tmp/synapse-lock/bin/pip install -q -e '.[dev]' \
	  && /tmp/synapse-lock/bin/pip freeze --exclude-editable > requirements/dev.txt

clean:
	rm -rf $(VENV) .aws-sam .pytest_cache .mypy_cache .ruff_cache
