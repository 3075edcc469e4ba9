"""A connection to a PostgreSQL warehouse: a psycopg connection in autocommit mode.

``con.execute(sql).fetchall()`` reads as DuckDB's does; ``with con.transaction():`` groups
writes. An unreachable server, a wrong password or a missing database is a one-line
:class:`~splice.errors.WarehouseError` naming the setting to correct.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from splice.errors import WarehouseError

if TYPE_CHECKING:
    from splice.warehouse.host import WarehouseHost


def catalog(wh: Any) -> str:
    """The catalog relations live in: the database connected to."""
    return str(wh.pg_fields()["database"] or "postgres")


def address(ws: WarehouseHost) -> str:
    """Where the warehouse is, as one comparable text: the server and database."""
    f = ws.config.warehouse.pg_fields()
    return f"postgres://{f['host']}:{f['port']}/{f['database'] or 'postgres'}"


def conninfo(ws: WarehouseHost) -> dict[str, Any]:
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


def connection_error(e: BaseException, ws: WarehouseHost, what: str) -> WarehouseError:
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
def connect(ws: WarehouseHost, what: str, *, read_only: bool = False) -> Iterator[Any]:
    """A psycopg connection (autocommit) to the workspace's PostgreSQL warehouse, closed when
    the block ends (``read_only`` is the user's grants' business on a server: the connection is
    the same)."""
    import psycopg

    info = conninfo(ws)
    try:
        con = psycopg.connect(autocommit=True, **info)
    except psycopg.OperationalError as e:
        raise connection_error(e, ws, what) from None
    try:
        yield con
    finally:
        con.close()
