"""The demo on PostgreSQL: where the server is, and the tools' configs that point at it.

``splice demo DIR --warehouse postgres --warehouse-url postgresql://user:pw@host:port/db`` builds
into that database; without a URL, Splice starts a throwaway server whose data lives in the
workspace (``.splice/postgres``, ``[warehouse] local``) and stops it when the demo is built
(a later command that needs the warehouse starts it again: :func:`ensure_local`).

The password never goes into a file: every tool reads it from ``$SPLICE_DEMO_PG_PASSWORD``
(``[warehouse] password_env``, the dbt profile's ``env_var``, SQLMesh's config.py, dlt).

>>> t = PgTarget.from_url("postgresql://me:pw@db.example:5433/shop")
>>> (t.host, t.port, t.user, t.database, t.password)
('db.example', 5433, 'me', 'shop', 'pw')
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from splice.demo.layout import CONFIG_FILE, FINANCE_DIR, PRICING_DIR, DemoError

PASSWORD_ENV = "SPLICE_DEMO_PG_PASSWORD"
LOCAL_DIR = ".splice/postgres"
LOCAL_DATABASE = "travel"
DUCKDB_CATALOG = "warehouse"


@dataclass(frozen=True)
class PgTarget:
    host: str
    port: int
    user: str
    database: str
    password: str | None = None
    local: str | None = None  # the data directory (relative), for a server Splice starts

    @classmethod
    def from_url(cls, url: str) -> PgTarget:
        from urllib.parse import unquote, urlsplit

        u = urlsplit(url)
        if u.scheme.split("+", 1)[0] not in ("postgresql", "postgres"):
            raise DemoError(
                f"--warehouse-url {url!r} is not a postgresql:// URL.",
                fix="pass postgresql://USER[:PASSWORD]@HOST:PORT/DATABASE",
            )
        database = (u.path or "/").lstrip("/")
        if not database or not u.username:
            raise DemoError(
                f"--warehouse-url {url!r} names no user or no database.",
                fix="pass postgresql://USER[:PASSWORD]@HOST:PORT/DATABASE",
            )
        return cls(
            host=u.hostname or "127.0.0.1",
            port=u.port or 5432,
            user=unquote(u.username),
            database=database,
            password=unquote(u.password) if u.password else None,
        )

    def conninfo(self) -> dict[str, Any]:
        info: dict[str, Any] = {"host": self.host, "port": self.port, "user": self.user,
                                "dbname": self.database, "connect_timeout": 10}  # fmt: skip
        password = self.password or os.environ.get(PASSWORD_ENV)
        if password:
            info["password"] = password
        return info


def target_of(workspace: Path) -> PgTarget | None:
    """The PostgreSQL server a demo workspace's splice.toml names (None for DuckDB)."""
    from splice.api import workspace_config

    if not (Path(workspace) / CONFIG_FILE).exists():  # a bare directory: DuckDB, as ever
        return None
    wh = workspace_config(workspace).warehouse
    if wh.type != "postgres":
        return None
    f = wh.pg_fields()
    return PgTarget(host=f["host"], port=f["port"], user=f["user"] or "",
                    database=f["database"] or "postgres", local=wh.local)  # fmt: skip


def catalog_of(workspace: Path) -> str:
    """The catalog the demo's relations live in: the DuckDB file's stem, or the database."""
    t = target_of(workspace)
    return t.database if t is not None else DUCKDB_CATALOG


def connect(workspace: Path) -> Any:
    """A psycopg connection (autocommit) to a PostgreSQL demo workspace's database."""
    import psycopg

    t = target_of(workspace)
    if t is None:
        raise DemoError(f"{workspace} is not a PostgreSQL demo workspace.")
    ensure_local(workspace)
    try:
        return psycopg.connect(autocommit=True, **t.conninfo())
    except psycopg.OperationalError as e:
        detail = " ".join(str(e).split())
        raise DemoError(
            f"cannot connect to PostgreSQL {t.host}:{t.port}/{t.database}: {detail[:300]}",
            fix=f"start the server, or correct --warehouse-url (and ${PASSWORD_ENV})",
            retry="refused" in detail or "timeout" in detail,
        ) from None


def dlt_credentials(workspace: Path) -> str:
    """The connection string dlt's postgres destination is given (password from the env)."""
    from urllib.parse import quote

    t = target_of(workspace)
    assert t is not None
    # dlt insists on a password; a server that trusts 127.0.0.1 (the local one) ignores it
    password = os.environ.get(PASSWORD_ENV) or "unused"
    auth = quote(t.user, safe="") + f":{quote(password, safe='')}"
    return f"postgresql://{auth}@{t.host}:{t.port}/{t.database}"


# -- the local, throwaway server --------------------------------------------------------------
def local_server(workspace: Path, port: int = 0) -> Any:
    from splice.api import LocalPostgres

    return LocalPostgres(Path(workspace) / LOCAL_DIR, port=port)


def ensure_local(workspace: Path) -> None:
    """Start the workspace's own server (``[warehouse] local``) when it is not running."""
    from splice.api import ensure_local_server, workspace_config

    if not (Path(workspace) / CONFIG_FILE).exists():
        return
    wh = workspace_config(workspace).warehouse
    if wh.type == "postgres" and wh.local:
        ensure_local_server(workspace, wh)


def start_local(workspace: Path) -> PgTarget:
    """A new server in the workspace (``.splice/postgres``) with the demo's database."""
    server = local_server(workspace).start()
    server.create_database(LOCAL_DATABASE)
    return PgTarget("127.0.0.1", server.port, server.user, LOCAL_DATABASE, local=LOCAL_DIR)


def stop_local(workspace: Path) -> None:
    t = target_of(workspace)
    if t is not None and t.local:
        local_server(workspace, t.port).stop()


# -- the tools' configs ----------------------------------------------------------------------
def _warehouse_toml(t: PgTarget) -> str:
    lines = [
        "[warehouse]",
        'type = "postgres"   # each project\'s own config (dbt profile, SQLMesh gateway) names the same server',
        f'host = "{t.host}"',
        f"port = {t.port}",
        f'user = "{t.user}"',
        f'database = "{t.database}"   # the catalog relations live in',
    ]
    if t.password:  # the server asks for one: every tool reads it from the environment
        lines.append(f'password_env = "{PASSWORD_ENV}"')
    if t.local:
        lines.append(
            f'local = "{t.local}"   # a server Splice starts itself (data in the workspace)'
        )
    return "\n".join(lines) + "\n"


def _profiles(t: PgTarget) -> str:
    def output(schema: str) -> str:
        return (
            f"    {schema.removeprefix('finance_') if '_' in schema else 'prod'}:\n"
            "      type: postgres\n"
            f"      host: {json.dumps(t.host)}\n"
            f"      port: {t.port}\n"
            f"      user: {json.dumps(t.user)}\n"
            f"      password: \"{{{{ env_var('{PASSWORD_ENV}', '') }}}}\"\n"
            f"      dbname: {json.dumps(t.database)}\n"
            f"      schema: {schema}\n"
            "      threads: 1\n"
        )

    return (
        "# The finance project on PostgreSQL: the password comes from the environment.\n"
        "finance:\n  target: prod\n  outputs:\n"
        + output("finance")
        + output("finance_dev")
        + output("finance_review")
    )


def _sqlmesh_config(text: str, t: PgTarget) -> str:
    text = text.replace("    DuckDBConnectionConfig,\n", "    PostgresConnectionConfig,\n").replace(
        'WAREHOUSE = Path(__file__).resolve().parent.parent / "warehouse.duckdb"\n',
        "import os\n",
    )
    connection = (
        f"PostgresConnectionConfig(host={t.host!r}, port={t.port}, user={t.user!r}, "
        f"password=os.environ.get({PASSWORD_ENV!r}, ''), database={t.database!r})"
    )
    text, n = re.subn(
        r"DuckDBConnectionConfig\(database=str\(WAREHOUSE\)\)", lambda _: connection, text
    )
    if n != 1:
        raise DemoError(f"{PRICING_DIR}/config.py: no DuckDB gateway to point at PostgreSQL.")
    return text


def write_configs(workspace: Path, t: PgTarget) -> None:
    """Point a freshly written demo workspace at PostgreSQL: splice.toml's [warehouse], the dbt
    profile, SQLMesh's gateway, and the catalog the external models and sources name."""
    ws = Path(workspace)
    cfg = ws / CONFIG_FILE
    text = cfg.read_text()
    text, n = re.subn(r"\[warehouse\]\n(?:[^\[\n][^\n]*\n)*", _warehouse_toml(t) + "\n", text)
    if n != 1:
        raise DemoError(f"{cfg}: no [warehouse] section to point at PostgreSQL.")
    cfg.write_text(text)
    (ws / FINANCE_DIR / "profiles.yml").write_text(_profiles(t))
    config_py = ws / PRICING_DIR / "config.py"
    config_py.write_text(_sqlmesh_config(config_py.read_text(), t))
    for path, old, new in (
        (ws / PRICING_DIR / "external_models.yaml", '"warehouse".', f'"{t.database}".'),
        (ws / FINANCE_DIR / "models" / "sources.yml", "database: warehouse",
         f"database: {t.database}"),
    ):  # fmt: skip
        path.write_text(path.read_text().replace(old, new))


def write_state(workspace: Path, url: str) -> None:
    """``[state] url`` in the workspace's splice.toml (the password, if the URL has one, goes
    to ``$SPLICE_DEMO_PG_PASSWORD``, never into the file)."""
    from urllib.parse import unquote, urlsplit

    from splice.api import redact_url as redact

    u = urlsplit(url)
    lines = ["", "[state]", "# Splice's own state, shared by the team: PostgreSQL",
             f'url = "{redact(url)}"']  # fmt: skip
    if u.password:
        os.environ[PASSWORD_ENV] = unquote(u.password)
        lines.append(f'password_env = "{PASSWORD_ENV}"')
    cfg = Path(workspace) / CONFIG_FILE
    cfg.write_text(cfg.read_text().rstrip("\n") + "\n" + "\n".join(lines) + "\n")


def add_pg_target(workspace: Path, url: str, name: str = "pg") -> str:
    """Give a DuckDB demo workspace a second target on PostgreSQL (the destination of
    ``splice migrate``): ``[targets.NAME]`` with a warehouse of its own, a dbt output ``NAME``
    and a SQLMesh gateway ``NAME``. The database must be named after the DuckDB catalog
    (``warehouse``): the projects name their sources by catalog. Returns the target's name."""
    t = PgTarget.from_url(url)
    if t.database != DUCKDB_CATALOG:
        raise DemoError(
            f"the database of {url!r} is {t.database!r}; the demo's sources name the catalog "
            f"{DUCKDB_CATALOG!r}.",
            fix=f"create and pass a database named {DUCKDB_CATALOG}",
        )
    ws = Path(workspace)
    if t.password:
        os.environ[PASSWORD_ENV] = t.password
    wh = _warehouse_toml(t).replace("[warehouse]", f"[targets.{name}.warehouse]")
    cfg = ws / CONFIG_FILE
    cfg.write_text(cfg.read_text().rstrip("\n") + "\n\n# the same projects on PostgreSQL: "
                   f"splice migrate plan --from prod --to {name}\n"
                   f"[targets.{name}]\nenvironments = {{ pricing = \"prod\", finance = \"{name}\" }}\n"
                   f"gateways = {{ pricing = \"{name}\" }}\n\n{wh}")  # fmt: skip
    prof = ws / FINANCE_DIR / "profiles.yml"
    output = _profiles(t).split("  outputs:\n", 1)[1].split("    dev:\n", 1)[0]
    prof.write_text(prof.read_text().replace("  outputs:\n", "  outputs:\n" + output.replace(
        "    prod:\n", f"    {name}:\n", 1), 1))  # fmt: skip
    config_py = ws / PRICING_DIR / "config.py"
    text = config_py.read_text()
    connection = (
        f"PostgresConnectionConfig(host={t.host!r}, port={t.port}, user={t.user!r}, "
        f"password=os.environ.get({PASSWORD_ENV!r}, ''), database={t.database!r})"
    )
    text = text.replace("from pathlib import Path\n", "import os\nfrom pathlib import Path\n", 1)
    text = text.replace(
        "    ModelDefaultsConfig,\n", "    ModelDefaultsConfig,\n    PostgresConnectionConfig,\n", 1
    )
    text, n = re.subn(r'(gateways=\{"local": GatewayConfig\(connection=DuckDBConnectionConfig\(database=str\(WAREHOUSE\)\)\))\}',
                      lambda m: str(m.group(1)) + f', "{name}": GatewayConfig(connection={connection})}}',
                      text)  # fmt: skip
    if n != 1:
        raise DemoError(f"{config_py}: no DuckDB gateway beside which to add {name!r}.")
    config_py.write_text(text)
    sources = ws / FINANCE_DIR / "models" / "sources.yml"  # pricing's prod views, there too
    old = "target.name == 'prod'"
    if old not in sources.read_text():
        raise DemoError(f"{sources}: no schema rule for the prod target to extend to {name!r}.")
    sources.write_text(sources.read_text().replace(old, f"target.name in ('prod', '{name}')"))
    return name
