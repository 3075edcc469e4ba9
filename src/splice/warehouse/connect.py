"""One way to open the warehouse for Splice's own queries (metrics, diagnosis, diffs).

DuckDB allows one writer process: a connection is opened for one piece of work and closed at
once (see ../shared/STACK.md), and a lock held by another process becomes a clear
:class:`~splice.errors.WarehouseError` that says a retry can help.

Apache Spark (``[warehouse] type = "spark"``) is reached through Spark Connect: a
:class:`splice.warehouse.spark.connect.SparkConnection` answers ``execute(sql)`` as the others do.

PostgreSQL (``[warehouse] type = "postgres"``) is a server: a psycopg connection in autocommit
mode (``con.execute(sql).fetchall()`` reads as DuckDB's does; ``with con.transaction():`` groups
writes). An unreachable server, a wrong password or a missing database is a one-line
:class:`~splice.errors.WarehouseError` naming the setting to correct.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from splice.errors import WarehouseError


@contextmanager
def connect(ws: Any, what: str, *, read_only: bool = False) -> Iterator[Any]:
    """A DuckDB connection to the workspace's warehouse, closed when the block ends.

    ``what`` names the work in errors ("splice watch", "incident diagnosis").
    """
    if ws.config.warehouse.type == "postgres":
        with pg_connect(ws, what) as pcon:
            yield pcon
        return
    if ws.config.warehouse.type == "spark":
        from splice.warehouse.spark.connect import spark_connect

        with spark_connect(ws, what) as scon:
            yield scon
        return
    path = ws.warehouse_path
    if not path.exists():
        raise WarehouseError(
            f"the warehouse {path} does not exist, so {what} has nothing to read.",
            fix="build the workspace first (splice run), or correct [warehouse].path",
        )
    import duckdb

    from splice.support.faults_env import locked_error

    try:
        try:
            con = duckdb.connect(str(path), read_only=read_only)
        except duckdb.ConnectionException as e:
            # this process already holds the file read-write (a tool's connection): reading
            # through a connection of the same configuration is what DuckDB allows
            if not (read_only and "different configuration" in str(e)):
                raise
            con = duckdb.connect(str(path))
    except duckdb.Error as e:
        err = locked_error(e, f"{what}: warehouse {path}")
        if err is not None:
            raise err from None
        raise WarehouseError(
            f"the warehouse {path} cannot be opened: {e}.",
            fix="check the file is a DuckDB database this DuckDB version can read",
        ) from None
    try:
        yield con
    finally:
        con.close()


def pg_conninfo(ws: Any) -> dict[str, Any]:
    """The keyword arguments psycopg connects with, for a PostgreSQL ``[warehouse]``.

    The password comes from the environment variable ``password_env`` names (or the URL);
    a variable named but unset is an error that names it.
    """
    import os

    wh = ws.config.warehouse
    fields = wh.pg_fields()
    info: dict[str, Any] = {
        "host": fields["host"],
        "port": fields["port"],
        "dbname": fields["database"] or "postgres",
        "connect_timeout": 10,
        "application_name": "splice",
    }
    if fields["user"]:
        info["user"] = fields["user"]
    if wh.password_env:
        password = os.environ.get(wh.password_env)
        if password is None:
            raise WarehouseError(
                f"[warehouse] password_env names {wh.password_env}, which is not set.",
                fix=f"export {wh.password_env}=... (the warehouse user's password), or remove "
                "password_env if the server needs none",
            )
        info["password"] = password
    elif fields["url_password"]:
        info["password"] = fields["url_password"]
    return info


def pg_error(e: BaseException, ws: Any, what: str) -> WarehouseError:
    """A psycopg connection failure told as the setting to correct."""
    wh = ws.config.warehouse
    f = wh.pg_fields()
    where = f"PostgreSQL at {f['host']}:{f['port']}"
    key = "[warehouse] url" if wh.url else "[warehouse] host/port"
    text = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
    low = str(e).lower()
    if "password authentication failed" in low:
        src = f"the password in ${wh.password_env}" if wh.password_env else "the password"
        return WarehouseError(
            f"{what}: {where} refused {src} for user {f['user']!r}.",
            fix=f"correct {src} ([warehouse] password_env) or the user ({key})",
        )
    if "no password supplied" in low or "password is required" in low:
        return WarehouseError(
            f"{what}: {where} asks user {f['user']!r} for a password and none was given.",
            fix="set [warehouse] password_env to the name of an environment variable holding it",
        )
    if "does not exist" in low and "database" in low:
        dkey = "[warehouse] url (its path)" if wh.url else "[warehouse] database"
        return WarehouseError(
            f"{what}: {where} has no database {f['database'] or 'postgres'!r}.",
            fix=f"create it (createdb) or correct {dkey}",
        )
    if "role" in low and "does not exist" in low:
        return WarehouseError(
            f"{what}: {where} has no user {f['user']!r}.", fix=f"correct the user in {key}"
        )
    if any(w in low for w in ("connection refused", "could not connect", "timeout expired",
                              "name or service not known", "could not translate host",
                              "no route to host", "network is unreachable")):  # fmt: skip
        return WarehouseError(
            f"{what}: cannot reach {where} ({text}).",
            fix=f"start the server or correct {key}",
            retry=True,
        )
    return WarehouseError(f"{what}: {where} cannot be used: {text}.", fix=f"check {key}")


@contextmanager
def pg_connect(ws: Any, what: str, *, autocommit: bool = True) -> Iterator[Any]:
    """A psycopg connection to the workspace's PostgreSQL warehouse, closed when the block ends."""
    import psycopg

    info = pg_conninfo(ws)
    try:
        con = psycopg.connect(autocommit=autocommit, **info)
    except psycopg.OperationalError as e:
        raise pg_error(e, ws, what) from None
    try:
        yield con
    finally:
        con.close()


def ensure_local_server(root: Any, wh: Any) -> None:
    """Start the workspace's own PostgreSQL (``[warehouse] local``: a data directory in the
    workspace) when it is not running; the tools and Splice then find it on ``port``."""
    from pathlib import Path

    if wh.type == "spark":
        from splice.warehouse.spark.local_server import LocalSpark

        if LocalSpark.ensure_at(Path(root) / wh.local, str(wh.remote)):
            from splice.support.procs import announce_started

            announce_started(f"a local Spark Connect server on {wh.remote}", root)
        return
    from splice.warehouse.postgres.local_server import LocalPostgres

    data = Path(root) / wh.local
    if not (data / "PG_VERSION").exists():
        raise WarehouseError(
            f"[warehouse] local = {wh.local!r}: {data} holds no PostgreSQL data directory.",
            fix="rebuild the workspace (splice demo DIR --warehouse postgres --force), or point "
            "[warehouse] at a server (url)",
        )
    server = LocalPostgres(data, port=int(wh.port or 5432))
    if not server.running:
        server.start()
        from splice.support.procs import announce_started

        announce_started(
            f"a local PostgreSQL on 127.0.0.1:{server.port} (data in {wh.local})", root
        )
