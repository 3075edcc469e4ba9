"""The demo with its rates feed in an orchestrator (``splice demo --orchestrator dagster|airflow``).

The workspace's ``orchestration/definitions.py`` is a Dagster code location whose job
``fx_rates_ingest`` runs the demo's dlt pipeline; ``orchestration/airflow/`` is a DAGs folder
whose DAG ``fx_rates_ingest`` does the same. This module points splice.toml's
``fx_rates_ingest`` at one of them (``runner = "dagster"`` or ``"airflow"``, its table with
``local``, so Splice serves it, with ``dagster-webserver`` or ``airflow standalone``, on a free
127.0.0.1 port the first time it is needed) and stops that server.
"""

from __future__ import annotations

import json
from pathlib import Path

from splice.demo.layout import DemoError

DEFINITIONS = "orchestration/definitions.py"
HOME = ".splice/dagster"
AIRFLOW_DAGS = "orchestration/airflow"
AIRFLOW_HOME = ".splice/airflow"
ORCHESTRATORS = ("dagster", "airflow")

_DLT_RUNNER = """[[ingestion]]
name = "fx_rates_ingest"
runner = "dlt"
"""


def _airflow_table(port: int) -> str:
    return f"""
# The rates feed runs in Airflow: a repair's reload is a run of this DAG (visible in Airflow's
# UI), the days in its conf, and `splice incident show` reads the DAG's runs. `local` lets
# Splice serve the DAGs folder itself (airflow standalone) when nothing answers at url.
[ingestion.airflow]
url = "http://127.0.0.1:{port}"
dag = "fx_rates_ingest"
days = "conf"
conf = {{ start = "{{start}}", end = "{{end}}" }}
timeout = "15m"
poll = 0.5
local = "{AIRFLOW_DAGS}"
home = "{AIRFLOW_HOME}"
"""


def _table(port: int) -> str:
    return f"""
# The rates feed runs in Dagster: a repair's reload is queued there as a run of this job (visible
# in Dagster's UI), and `splice incident show` reads the job's runs. `local` lets Splice serve the
# code location itself (dagster-webserver) when nothing answers at url.
[ingestion.dagster]
url = "http://127.0.0.1:{port}"
job = "fx_rates_ingest"
days = "run_config"
run_config = {{ ops = {{ raw__fx_rates = {{ config = {{ start = "{{start}}", end = "{{end}}" }} }} }} }}
timeout = "15m"
poll = 0.5
local = "{DEFINITIONS}"
home = "{HOME}"
"""


def use_orchestrator(workspace: Path, port: int | None = None, *, system: str = "dagster") -> str:
    """Make ``fx_rates_ingest`` a job of ``system`` (Dagster, or Airflow) in the workspace's
    splice.toml; its URL."""
    from splice.api import free_port

    port = port or free_port()
    toml = workspace / "splice.toml"
    text = toml.read_text()
    if _DLT_RUNNER not in text:
        raise DemoError("the demo's splice.toml has no dlt fx_rates_ingest to move to Dagster.",
                        fix="rebuild the demo with --force")  # fmt: skip
    head, tail = text.split(_DLT_RUNNER, 1)
    block, sep, rest = tail.partition("\n[[")
    table = _table(port) if system == "dagster" else _airflow_table(port)
    text = head + _DLT_RUNNER.replace('"dlt"', f'"{system}"') + block + table + sep + rest
    toml.write_text(text)
    return f"http://127.0.0.1:{port}"


def stop(workspace: Path) -> bool:
    """Stop the demo's local Dagster, if one runs. Whether one ran."""
    from splice import api

    return bool(api.stop_local_orchestrators(workspace))


def server(workspace: Path) -> dict[str, object] | None:
    """The local Dagster's record (pid, port), or None when none was started."""
    rec = workspace / HOME / "server.json"
    return json.loads(rec.read_text()) if rec.is_file() else None
