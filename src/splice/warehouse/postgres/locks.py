"""A run's lock on a PostgreSQL warehouse: a session advisory lock, held on a connection of its
own for the whole run.

The file lock (:mod:`splice.run.locks`) covers the processes of one machine; a team's runs
come from several, so on PostgreSQL the target's lock is also taken in the server, which frees
it the moment the holder's connection dies (a killed run included). The lock's key is a 64-bit
number derived from the database and the lock's name, the same in every process.

>>> advisory_key("wh", "target:prod") == advisory_key("wh", "target:prod")
True
>>> print(try_lock_sql(advisory_key("wh", "target:prod")))
SELECT PG_TRY_ADVISORY_LOCK(8639450935615235563)
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from sqlglot import exp

if TYPE_CHECKING:
    from splice.warehouse.host import WarehouseHost


def advisory_key(database: str, name: str) -> int:
    digest = hashlib.sha256(f"splice:{database}:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def try_lock_sql(key: int) -> str:
    return exp.select(exp.func("pg_try_advisory_lock", exp.Literal.number(key))).sql("postgres")


def try_lock(ws: WarehouseHost, name: str) -> Any | None:
    """A connection holding the advisory lock ``name`` (close it to release), or None when
    another session holds it."""
    import psycopg

    from splice.warehouse.postgres.connect import connection_error, conninfo

    database = str(ws.config.warehouse.pg_fields()["database"] or "postgres")
    try:
        con = psycopg.connect(autocommit=True, **conninfo(ws))
    except psycopg.OperationalError as e:
        raise connection_error(e, ws, "taking the run's lock") from None
    try:
        row = con.execute(try_lock_sql(advisory_key(database, name)).encode()).fetchone()
    except BaseException:
        con.close()
        raise
    if row and row[0]:
        return con
    con.close()
    return None
