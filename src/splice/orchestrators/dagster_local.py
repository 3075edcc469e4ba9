"""A local Dagster for a workspace that asks for one (``[ingestion.dagster] local``).

``dagster-webserver`` (the webserver and its code server) on
127.0.0.1 at the port of ``[ingestion.dagster] url``, with ``DAGSTER_HOME`` in the workspace
(``home``), started and stopped as :mod:`splice.orchestrators.local_server` says
(:meth:`splice.orchestrators.base.Orchestrator.local_server`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import urlsplit

from splice.config.orchestrators import DagsterJob
from splice.orchestrators.local_server import LocalServer
from splice.support import http

INSTANCE_YAML = """\
# The local Dagster instance of a Splice workspace (written by Splice).
telemetry:
  enabled: false
run_coordinator:
  module: dagster.core.run_coordinator
  class: DefaultRunCoordinator
"""


def _loaded(url: str) -> bool:
    """Whether the webserver has loaded a code location (jobs can be submitted)."""
    query = {"query": "{ repositoriesOrError { __typename } }"}
    try:
        out = http.request("POST", f"{url}/graphql", json=query, timeout=5, retry=http.ONCE).json()
    except (http.HTTPFailure, ValueError):
        return False
    return (out.get("data") or {}).get("repositoriesOrError", {}).get(
        "__typename"
    ) == "RepositoryConnection"


def _instance(home: Path) -> None:
    if not (home / "dagster.yaml").exists():
        (home / "dagster.yaml").write_text(INSTANCE_YAML)


def server(cfg: DagsterJob, root: Path) -> LocalServer:
    """``dagster-webserver`` serving ``cfg.local`` on ``cfg.url``'s port: runs are launched
    as they are submitted (``DefaultRunCoordinator``), so no daemon is needed (``dagster dev``
    would start one, and its code server, for schedules and sensors Splice does not use)."""
    assert cfg.local is not None
    defs = (root / cfg.local).resolve()
    home = (root / cfg.home).resolve()
    port = urlsplit(cfg.url).port or 3000
    argv = [sys.executable, "-m", "dagster_webserver", "-f", str(defs),
            "-h", "127.0.0.1", "-p", str(port)]  # fmt: skip
    return LocalServer("dagster", cfg.url, home, defs, argv, env={"DAGSTER_HOME": str(home)},
                       probe="/server_info", ready=_loaded, setup=_instance)  # fmt: skip
