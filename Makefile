# Splice: the two commands are `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
DEMO_DIR ?= demo-workspace
STAMP  := $(VENV)/.installed
# Airflow lives in an environment of its own: installed beside dlt it makes every pipeline
# import it (dlt reads Airflow's secrets when Airflow is importable). Splice talks to it over
# its REST API; the tests and `splice demo --orchestrator airflow` start `airflow standalone`.
AIRFLOW_VENV  ?= .venv-airflow
AIRFLOW_STAMP := $(AIRFLOW_VENV)/.installed
# Spark (pyspark with Spark Connect, dbt-spark) joins the main environment for the tests only.
SPARK_STAMP := $(VENV)/.spark-installed
export SPLICE_AIRFLOW ?= $(CURDIR)/$(AIRFLOW_VENV)/bin/airflow
# Apache Superset (the BI tool Splice reads dashboards from) pins SQLAlchemy 1.4: an
# environment of its own too; the tests start `superset run` from it on 127.0.0.1. Superset
# 6.1.0 imports rich (its CLI) and cachetools (an engine spec) without requiring them, and
# fails with Flask-Caching 2.4+ (constraints-superset.txt holds it at 2.3.1).
SUPERSET_VENV  ?= .venv-superset
SUPERSET_STAMP := $(SUPERSET_VENV)/.installed
export SPLICE_SUPERSET ?= $(CURDIR)/$(SUPERSET_VENV)/bin/superset

export RUNTIME__DLTHUB_TELEMETRY := false
export DO_NOT_TRACK := 1

.PHONY: demo test lint bench install airflow superset spark clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -c constraints.txt -e ".[dev]"
	touch $(STAMP)

$(AIRFLOW_STAMP): constraints-airflow.txt
	$(PYTHON) -m venv $(AIRFLOW_VENV)
	$(AIRFLOW_VENV)/bin/pip install -q --disable-pip-version-check -c constraints-airflow.txt apache-airflow
	touch $(AIRFLOW_STAMP)

$(SUPERSET_STAMP): constraints-superset.txt
	$(PYTHON) -m venv $(SUPERSET_VENV)
	$(SUPERSET_VENV)/bin/pip install -q --disable-pip-version-check -c constraints-superset.txt apache-superset duckdb-engine psycopg2-binary rich cachetools
	touch $(SUPERSET_STAMP)

$(SPARK_STAMP): $(STAMP)
	$(BIN)/pip install -q --disable-pip-version-check -c constraints.txt -e ".[dev,spark]"
	touch $(SPARK_STAMP)

install: $(STAMP)

airflow: $(AIRFLOW_STAMP)

superset: $(SUPERSET_STAMP)

spark: $(SPARK_STAMP)

demo: $(STAMP)
	$(BIN)/splice demo $(DEMO_DIR) --force --incident stale-rates

test: $(STAMP) $(AIRFLOW_STAMP) $(SUPERSET_STAMP) $(SPARK_STAMP)
	$(BIN)/python -m pytest -q --durations=25 -n 2 --dist loadfile

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
	$(BIN)/python bench/review.py
	$(BIN)/python bench/migrate.py

clean:
	rm -rf $(VENV) $(AIRFLOW_VENV) $(SUPERSET_VENV) $(DEMO_DIR)
