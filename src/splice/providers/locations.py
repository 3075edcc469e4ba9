"""Where each project's warehouse is, resolved as its tool resolves it when run by hand.

SQLMesh and dbt-duckdb both resolve a relative DuckDB path against the working directory, and
Splice runs each tool in its project directory (splice.support.capture): so ``database: db.duckdb`` in a
SQLMesh gateway and ``path: db.duckdb`` in a dbt-duckdb profile mean a file in that project's
directory (SQLMesh projects of a multi-repo setup that share a state only from the workspace's
directory run there: :func:`shared_run_dirs`). Two projects meant to
share one warehouse but configured with relative paths can
silently use two files; an in-memory warehouse (``:memory:``, or no path at all) keeps nothing
between runs. This module reads the tools' configs (never the warehouse) and says where each
project writes, naming the config file and key, for ``splice doctor``.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal

Kind = Literal["file", "memory", "server", "other"]


@dataclass(frozen=True)
class WarehouseLocation:
    """One project's warehouse as its tool resolves it.

    ``kind``: "file" (a DuckDB file, ``path`` absolute), "memory" (an in-memory DuckDB: nothing
    survives the process) or "other" (a server or a connection Splice cannot place on disk;
    ``path`` is then the connection type). ``config_file`` and ``key`` name where it is set;
    ``value`` is the text written there (None when the key is absent).
    """

    project: str
    tool: str
    kind: Kind
    path: str | None
    config_file: str
    key: str
    value: str | None
    # SQLMesh only: its state ("FILE#SCHEMA" when on a DuckDB file, else None) and `project:`
    state: str | None = None
    sqlmesh_project: str | None = None
    # kind "server" (PostgreSQL): key -> [where it is set (config key), its value]
    server: dict[str, list[Any]] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def where(self) -> str:
        return f"{self.config_file}: {self.key}"


def resolve_duckdb(value: str | None, cwd: Path) -> tuple[Kind, str | None]:
    """A DuckDB path as DuckDB opens it from ``cwd``.

    >>> resolve_duckdb(None, Path("/w/p")), resolve_duckdb(":memory:", Path("/w/p"))
    (('memory', None), ('memory', None))
    >>> resolve_duckdb("../db.duckdb", Path("/w/p"))
    ('file', '/w/db.duckdb')
    >>> resolve_duckdb("md:shop", Path("/w/p"))
    ('other', 'md:shop')
    """
    if value is None or not str(value).strip() or str(value).strip().startswith(":memory:"):
        return "memory", None
    text = os.path.expanduser(str(value).strip())
    if text.startswith(("md:", "motherduck:")) or "://" in text:
        return "other", text
    return "file", os.path.normpath(str(cwd / text))


def sqlmesh_location(
    project: str, config: Any, project_path: Path, gateway: str | None, *, cwd: Path | None = None
) -> WarehouseLocation:
    """The warehouse of a SQLMesh project from its loaded ``Config`` (SQLMesh's own loader, so
    config.yaml, config.py and env vars are read as SQLMesh reads them), its relative paths
    resolved against ``cwd`` (where SQLMesh runs; default: the project directory)."""
    cfg_file = str(sqlmesh_config_file(project_path) or project_path / "config.yaml")
    gateways = config.gateways
    if isinstance(gateways, dict):
        name = (gateway or config.default_gateway or next(iter(gateways), "")).lower()
        prefix = f"gateways.{name}" if name else "gateways"
    else:
        prefix = "gateways"
    gw = config.get_gateway(gateway)
    run_dir = cwd or project_path
    loc = _sqlmesh_connection(project, config, gw, run_dir, prefix, cfg_file)
    state_kind, state_path = loc.kind, loc.path
    if gw.state_connection is not None:
        sc = gw.state_connection
        if str(getattr(sc, "type_", "")) == "duckdb":
            state_kind, state_path = resolve_duckdb(getattr(sc, "database", None), run_dir)
        else:
            state_kind, state_path = "other", None
    state = (
        f"{state_path}#{(gw.state_schema or 'sqlmesh').lower()}"
        if state_kind == "file" and state_path
        else None
    )
    return replace(loc, state=state, sqlmesh_project=config.project or None)


#: The keys of a PostgreSQL connection compared across the tools (the user may differ: one
#: login per tool is common; the password is never read or shown).
SERVER_KEYS = ("host", "port", "database")


def _sqlmesh_connection(
    project: str, config: Any, gw: Any, project_path: Path, prefix: str, cfg_file: str
) -> WarehouseLocation:
    conn = gw.connection
    if conn is None:
        conn, prefix = config.default_connection, "default_connection"
    else:
        prefix += ".connection"
    if conn is None:
        return WarehouseLocation(project, "sqlmesh", "memory", None, cfg_file, prefix, None)
    ctype = str(getattr(conn, "type_", "") or "")
    if ctype == "postgres":
        server = {k: [f"{prefix}.{k}", getattr(conn, k, None)] for k in ("user", *SERVER_KEYS)}
        return WarehouseLocation(project, "sqlmesh", "server", ctype, cfg_file, prefix, None,
                                 server=server)  # fmt: skip
    if ctype == "spark":
        remote = (getattr(conn, "config", None) or {}).get("spark.remote")
        return WarehouseLocation(project, "sqlmesh", "server", ctype, cfg_file, prefix, None,
                                 server={"remote": [f"{prefix}.config.spark.remote", remote]})  # fmt: skip
    if ctype != "duckdb":
        return WarehouseLocation(project, "sqlmesh", "other", ctype, cfg_file, prefix, None)
    database = getattr(conn, "database", None)
    catalogs = getattr(conn, "catalogs", None) or {}
    if not database and catalogs:
        # the first catalog is the default one (SQLMesh's DuckDB get_catalog)
        alias, spec = next(iter(catalogs.items()))
        value = spec if isinstance(spec, str) else getattr(spec, "path", None)
        kind, path = resolve_duckdb(value, project_path)
        return WarehouseLocation(
            project, "sqlmesh", kind, path, cfg_file, f"{prefix}.catalogs.{alias}", value
        )
    kind, path = resolve_duckdb(database, project_path)
    return WarehouseLocation(
        project, "sqlmesh", kind, path, cfg_file, f"{prefix}.database", database
    )


def dbt_location(
    project: str, project_path: Path, profiles_dir: Path, target: str
) -> WarehouseLocation | None:
    """The warehouse of a dbt project from its profile (None when the profile can't be read:
    dbt itself reports that when the project loads)."""
    import yaml

    prof_file = profiles_dir / "profiles.yml"
    try:
        proj = yaml.safe_load((project_path / "dbt_project.yml").read_text()) or {}
        profiles = yaml.safe_load(prof_file.read_text()) or {}
        name = str(proj.get("profile") or "")
        outputs = (profiles.get(name) or {}).get("outputs") or {}
        out = outputs.get(target)
    except Exception:  # noqa: BLE001 - dbt names the broken file itself
        return None
    if not isinstance(out, dict):
        return None
    key = f"{name}.outputs.{target}"
    if out.get("type") == "postgres":
        server: dict[str, list[Any]] = {}
        for k, names in (("user", ("user",)), ("host", ("host",)), ("port", ("port",)),
                         ("database", ("dbname", "database"))):  # fmt: skip
            name_set = next((n for n in names if n in out), names[0])
            raw_value = out.get(name_set)
            value = _render_env(str(raw_value)) if raw_value is not None else None
            server[k] = [f"{key}.{name_set}", value]
        return WarehouseLocation(project, "dbt", "server", "postgres", str(prof_file), key, None,
                                 server=server)  # fmt: skip
    if out.get("type") == "spark" and str(out.get("method") or "") == "session":
        raw_remote = (out.get("server_side_parameters") or {}).get("spark.remote")
        remote = _render_env(str(raw_remote)) if raw_remote is not None else None
        return WarehouseLocation(project, "dbt", "server", "spark", str(prof_file), key, None,
                                 server={"remote": [f"{key}.server_side_parameters.spark.remote",
                                                    remote]})  # fmt: skip
    if out.get("type") != "duckdb":
        return WarehouseLocation(
            project, "dbt", "other", str(out.get("type")), str(prof_file), key, None
        )
    raw = out.get("path")
    value = _render_env(str(raw)) if raw is not None else None
    kind, path = resolve_duckdb(value, project_path)
    return WarehouseLocation(project, "dbt", kind, path, str(prof_file), f"{key}.path", raw)


def _render_env(text: str) -> str:
    """``{{ env_var('X', 'default') }}`` in a profile value, as dbt renders it."""
    if "{{" not in text:
        return text
    import jinja2

    def env_var(name: str, default: str | None = None) -> str:
        v = os.environ.get(name, default)
        return "" if v is None else v

    try:
        return jinja2.Environment().from_string(text).render(env_var=env_var)
    except Exception:  # noqa: BLE001 - left as written; dbt reports it
        return text


def shares_sqlmesh_state(a: Any, b: Any) -> bool:
    """True when nodes ``a`` and ``b`` are models of two SQLMesh projects in SQLMesh's multi-repo
    setup (each with its own `project:` name): joined by a binding, they share one warehouse
    and so one SQLMesh state (doctor's SPL401 reports them otherwise), and SQLMesh's plan of
    one re-evaluates the other's models downstream of a breaking change."""
    return (
        a.tool == "sqlmesh"
        and b.tool == "sqlmesh"
        and bool(a.meta.get("sqlmesh_project"))
        and bool(b.meta.get("sqlmesh_project"))
        and a.meta.get("sqlmesh_project") != b.meta.get("sqlmesh_project")
    )


def sqlmesh_config_file(project: Path) -> Path | None:
    """The config file of a SQLMesh project (config.yaml, config.yml or config.py), if any.

    >>> sqlmesh_config_file(Path("/nowhere")) is None
    True
    """
    return next(
        (project / f for f in ("config.yaml", "config.yml", "config.py") if (project / f).exists()),
        None,
    )


def load_sqlmesh_config(project_path: Path) -> Any:
    """A SQLMesh project's ``Config``, read by SQLMesh's own loader (config.yaml, config.py,
    environment variables); loads no model and opens no connection."""
    from splice.support.sqlmesh_import import import_sqlmesh

    import_sqlmesh()
    from sqlmesh.core.config import Config
    from sqlmesh.core.config.loader import load_configs

    return load_configs("config", Config, [project_path])[project_path.absolute()]


def shared_run_dirs(
    root: Path, projects: list[tuple[str, Path, str | None]], log_path: Path | None = None
) -> dict[str, Path]:
    """SQLMesh's multi-repo setup as SQLMesh's own CLI runs it: ``projects`` (name, directory,
    gateway) -> the directory to run each in, for those that need ``root``.

    Projects with `project:` names whose relative state paths (``database: db.duckdb``) point
    at different files from their own directories but at one file from ``root`` are the
    multi-repo example run as ``sqlmesh -p repo_1 -p repo_2`` from ``root``: SQLMesh resolves
    them against the working directory, so they share one state there. Splice runs them there
    too (otherwise each would find an empty state: "sqlmesh._environments does not exist").
    Empty when they share a state from their own directories already, or in no directory."""
    from splice.support.capture import captured

    own: dict[str, str | None] = {}
    from_root: dict[str, str | None] = {}
    for name, path, gateway in projects:
        try:
            with captured(log_path, f"sqlmesh config ({name})", cwd=path):
                config = load_sqlmesh_config(path)
        except Exception:  # noqa: BLE001 - the project's own load says what is wrong
            return {}
        if not config.project:
            continue
        own[name] = sqlmesh_location(name, config, path, gateway).state
        from_root[name] = sqlmesh_location(name, config, path, gateway, cwd=root).state
    shared_here = len(set(own.values())) == 1 and None not in own.values()
    shared_there = len(set(from_root.values())) == 1 and None not in from_root.values()
    if len(from_root) < 2 or shared_here or not shared_there:
        return {}
    return {name: root for name in from_root}
