"""Doctor checks of a PostgreSQL warehouse: does every tool's config name the server and
database splice.toml's ``[warehouse]`` names?

=======  ========  =================================================================
code     severity  what it finds
=======  ========  =================================================================
SPL406   error     a project's PostgreSQL connection differs from [warehouse] (host,
                   port or database): the key that differs, in which file, both values
SPL407   error     one workspace, two engines: a project builds into DuckDB while
                   [warehouse] is PostgreSQL, or the other way round
SPL408   error     a project's Spark Connect endpoint (dbt-spark's spark.remote,
                   SQLMesh's Spark gateway) is not [warehouse] remote
SPL409   error     a warehouse does not answer: one a SQLMesh Spark gateway names (the
                   graph cannot load; the configs' checks are still made) or
                   [warehouse] itself (the column lineage's checks are skipped)
=======  ========  =================================================================

>>> from types import SimpleNamespace
>>> loc = SimpleNamespace(kind="server", config_file="finance/profiles.yml",
...     key="finance.outputs.prod", server={"host": ["finance.outputs.prod.host", "db"],
...     "port": ["finance.outputs.prod.port", 5433], "database": ["finance.outputs.prod.dbname",
...     "wh"]})
>>> [c.message for c in server_checks({"finance": loc}, {"host": "db", "port": 5432,
...     "database": "wh"}, "splice.toml")]  # doctest: +NORMALIZE_WHITESPACE
["project 'finance' connects to another PostgreSQL than the workspace:
  finance/profiles.yml: finance.outputs.prod.port is 5433, splice.toml: [warehouse] port is 5432."]
"""

from __future__ import annotations

from typing import Any

from splice.doctor.checks import Check
from splice.providers.locations import SERVER_KEYS

CODES = {"SPL406": "server-mismatch", "SPL407": "mixed-warehouse-engines",
         "SPL408": "spark-endpoint-mismatch", "SPL409": "warehouse-unreachable"}  # fmt: skip

_LOOPBACK = {"localhost", "127.0.0.1", "::1"}


def _norm(key: str, value: Any) -> str:
    text = "" if value is None else str(value).strip()
    if key == "host" and text.lower() in _LOOPBACK:
        return "127.0.0.1"
    if key == "port" and not text:
        return "5432"
    return text if key != "host" else text.lower()


def server_checks(
    locations: dict[str, Any], workspace_server: dict[str, Any] | None, workspace_file: str
) -> list[Check]:
    """``workspace_server``: splice.toml's [warehouse] host/port/database (None when the
    warehouse is DuckDB); ``locations``: project -> WarehouseLocation (or None)."""
    checks: list[Check] = []
    for project in sorted(locations):
        loc = locations[project]
        if loc is None:
            continue
        if workspace_server is not None and loc.kind in ("file", "memory"):
            checks.append(Check(
                "SPL407", "error", None,
                f"project {project!r} builds into DuckDB ({loc.config_file}: {loc.key}), but "
                f"the workspace's [warehouse] is PostgreSQL ({workspace_file}): Splice's metrics, "
                "diffs and repairs would read another database than the one it writes.",
                f"point {loc.key} in {loc.config_file} at the PostgreSQL server "
                f"{workspace_server.get('host')}:{workspace_server.get('port')}/"
                f"{workspace_server.get('database')}",
            ))  # fmt: skip
            continue
        if loc.kind != "server" or not loc.server or "remote" in loc.server:
            continue  # a Spark endpoint: spark_checks
        if workspace_server is None:
            checks.append(Check(
                "SPL407", "error", None,
                f"project {project!r} builds into PostgreSQL ({loc.config_file}: {loc.key}), but "
                f"the workspace's [warehouse] is DuckDB ({workspace_file}).",
                f"set [warehouse] type = \"postgres\" and its server in {workspace_file}",
            ))  # fmt: skip
            continue
        differ = [
            f"{loc.config_file}: {loc.server[k][0]} is {loc.server[k][1]}, {workspace_file}: "
            f"[warehouse] {k} is {workspace_server.get(k)}"
            for k in SERVER_KEYS
            if k in loc.server and _norm(k, loc.server[k][1]) != _norm(k, workspace_server.get(k))
        ]
        if differ:
            checks.append(Check(
                "SPL406", "error", None,
                f"project {project!r} connects to another PostgreSQL than the workspace: "
                + "; ".join(differ) + ".",
                "make them name one server and database (correct the project's config, or "
                f"[warehouse] in {workspace_file})",
            ))  # fmt: skip
    return checks


def _endpoint(remote: Any) -> str:
    """``sc://HOST:PORT`` of a Spark Connect URL, loopback names as one, parameters dropped.

    >>> _endpoint("sc://localhost:15002/;session_id=x") == _endpoint("sc://127.0.0.1:15002")
    True
    """
    from urllib.parse import urlsplit

    text = str(remote or "").strip().split("/;", 1)[0]
    u = urlsplit(text.replace("sc://", "http://", 1))
    host = (u.hostname or "").lower()
    return f"sc://{'127.0.0.1' if host in _LOOPBACK else host}:{u.port or 15002}"


def spark_checks(locations: dict[str, Any], remote: str, workspace_file: str) -> list[Check]:
    """SPL408: each project's Spark Connect endpoint against ``[warehouse] remote``."""
    checks: list[Check] = []
    for project in sorted(locations):
        loc = locations[project]
        if loc is None or loc.kind != "server" or not loc.server or "remote" not in loc.server:
            continue
        where, value = loc.server["remote"]
        if value and _endpoint(value) != _endpoint(remote):
            checks.append(Check(
                "SPL408", "error", None,
                f"project {project!r} connects to another Spark than the workspace: "
                f"{loc.config_file}: {where} is {value}, {workspace_file}: [warehouse] remote is "
                f"{remote}.",
                "make them name one Spark Connect server (correct the project's config, or "
                f"[warehouse] remote in {workspace_file})",
            ))  # fmt: skip
    return checks
