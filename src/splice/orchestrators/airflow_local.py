"""A local Airflow for a workspace that asks for one (``[ingestion.airflow] local``).

The parts of ``airflow standalone`` that run DAGs (the metadata database migrated, then the API
server, the scheduler and the DAG processor; SQLite metadata and the local executor; no
triggerer, so a deferrable task would wait forever) on 127.0.0.1 at the port of
``[ingestion.airflow] url``, with ``AIRFLOW_HOME`` in the workspace (``home``) and the DAGs
folder ``local``, started and stopped as one process group as
:mod:`splice.orchestrators.local_server` says. Every local user is an admin (no sign-in): it is
a demo's and a test's Airflow, never a team's.

Airflow is not installed beside Splice (beside dlt it makes every pipeline import it): the
``airflow`` command is ``$SPLICE_AIRFLOW``, else ``airflow`` next to this Python, else on
``PATH`` (``make airflow`` builds ``.venv-airflow``). Its tasks find Splice's Python in
``$SPLICE_PYTHON`` (the demo's DAG runs the pipeline script with it).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from urllib.parse import urlsplit

from splice.config.orchestrators import AirflowDag
from splice.orchestrators.local_server import LocalServer
from splice.support import http


def _healthy(url: str) -> bool:
    """Whether the scheduler and the DAG processor report healthy (runs would start)."""
    try:
        health = http.request("GET", f"{url}/api/v2/monitor/health", timeout=5,
                              retry=http.ONCE).json()  # fmt: skip
    except (http.HTTPFailure, ValueError):
        return False
    return all((health.get(k) or {}).get("status") == "healthy"
               for k in ("metadatabase", "scheduler", "dag_processor"))  # fmt: skip


def airflow_command() -> Path:
    """Where the ``airflow`` command is (see the module docstring), or a one-line error."""
    from splice.errors import OrchestratorError
    from splice.orchestrators.local_server import find_command

    found, looked = find_command("airflow", "SPLICE_AIRFLOW", ".venv-airflow")
    if found is not None:
        return found
    raise OrchestratorError(
        "[ingestion.airflow] local serves Airflow with the `airflow` command, but no such "
        f"command was found (looked at {looked}).",
        fix="make airflow (builds .venv-airflow), or install apache-airflow in an environment "
        "of its own and set SPLICE_AIRFLOW to its bin/airflow",
    )


#: What runs (``sh``, with ``$AIRFLOW`` the command): what ``airflow standalone`` runs less the
#: triggerer (a process importing all of Airflow, a quarter of a minute of CPU at each start,
#: for deferrable tasks no Splice DAG has), in one process group that ``stop`` ends whole.
LAUNCH = (
    '"$AIRFLOW" db migrate && { "$AIRFLOW" api-server & "$AIRFLOW" scheduler & '
    '"$AIRFLOW" dag-processor & wait; }'
)


def server(cfg: AirflowDag, root: Path) -> LocalServer:
    """Airflow's API server, scheduler and DAG processor serving the DAGs folder ``cfg.local``
    on ``cfg.url``'s port (:data:`LAUNCH`)."""
    assert cfg.local is not None
    dags = (root / cfg.local).resolve()
    home = (root / cfg.home).resolve()
    port = urlsplit(cfg.url).port or 8080
    airflow = airflow_command()
    bindir = airflow.parent  # Airflow's parts start their own children as `airflow ...`
    env = {
        "AIRFLOW": str(airflow),
        "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
        "SPLICE_PYTHON": sys.executable,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
        "AIRFLOW__USAGE_DATA_COLLECTION__ENABLED": "False",
    }
    argv = ["sh", "-c", LAUNCH]
    return LocalServer("airflow", cfg.url, home, dags, argv, env=env,
                       probe="/api/v2/monitor/health", ready=_healthy)  # fmt: skip
