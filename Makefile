# Splice: the two commands are `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
DEMO_DIR ?= demo-workspace
STAMP  := $(VENV)/.installed

export RUNTIME__DLTHUB_TELEMETRY := false
export DO_NOT_TRACK := 1

.PHONY: demo test lint bench install clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -c constraints.txt -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/splice demo $(DEMO_DIR) --force --incident stale-rates

test: $(STAMP)
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python bench/lineage.py
	$(BIN)/python bench/plan_scale.py
	$(BIN)/python bench/run.py
	$(BIN)/python bench/run_federated.py
	$(BIN)/python bench/detect.py
	$(BIN)/python bench/repair.py
	$(BIN)/python bench/faults.py
	$(BIN)/python bench/cli_latency.py

clean:
	rm -rf $(VENV) $(DEMO_DIR)
