"""One way to open the warehouse for Splice's own queries (metrics, diagnosis, diffs): the
engine's ``connect`` (``splice/warehouse/<engine>/connect.py``), chosen by ``[warehouse] type``.

- DuckDB (the default) is a file that allows one writer process: a connection is opened for
  one piece of work and closed at once (:mod:`splice.warehouse.duckdb.connect`).
- PostgreSQL (``[warehouse] type = "postgres"``) is a server: a psycopg connection in
  autocommit mode (:mod:`splice.warehouse.postgres.connect`).
- Apache Spark (``[warehouse] type = "spark"``) is reached through Spark Connect: a
  :class:`splice.warehouse.spark.connect.SparkConnection` answers ``execute(sql)`` as the
  others do.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from splice.errors import WarehouseError
from splice.warehouse.engines import capabilities, engine_module

if TYPE_CHECKING:
    from splice.warehouse.host import WarehouseHost


@contextmanager
def connect(ws: WarehouseHost, what: str, *, read_only: bool = False) -> Iterator[Any]:
    """A connection to the workspace's warehouse, closed when the block ends.

    ``what`` names the work in errors ("splice watch", "incident diagnosis").
    """
    ws.ensure_warehouse()  # a local server starts on the first connection, not before
    engine = engine_module(ws.config.warehouse.type, "connect")
    with engine.connect(ws, what, read_only=read_only) as con:
        yield con


def ensure_local_server(root: Any, wh: Any) -> None:
    """Start the workspace's own server (``[warehouse] local``: PostgreSQL's data directory in
    the workspace, or a Spark Connect server of Splice's) when it is not running; the tools and
    Splice then find it where ``[warehouse]`` says."""
    if not capabilities(wh.type).local_server:
        raise WarehouseError(
            f"[warehouse] local: Splice starts no local server for a {wh.type} warehouse.",
            fix="remove [warehouse] local",
        )
    engine_module(wh.type, "local_server").ensure(root, wh)
