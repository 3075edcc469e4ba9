"""Splice's own queries on Apache Spark, through Spark Connect (``[warehouse] remote``).

A :class:`SparkConnection` answers like the DuckDB and psycopg connections Splice uses
elsewhere: ``con.execute(sql)`` returns a cursor with ``fetchall``/``fetchone``/``fetchmany``
and ``description``; the SQL is Spark SQL (sqlglot writes it in the ``spark`` dialect). The
client session is opened for one piece of work and closed at once. A server that does not
answer is a one-line :class:`~splice.errors.WarehouseError` naming ``[warehouse] remote`` and
saying a retry can help; a query Spark refuses is one too, with Spark's own first line.

pyspark is imported only here, and only when a Spark warehouse is used.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from splice.errors import WarehouseError

if TYPE_CHECKING:
    from splice.warehouse.host import WarehouseHost


class SparkCursor:
    """The rows of one statement (Spark returns them whole)."""

    def __init__(self, rows: list[tuple[Any, ...]], columns: list[str]) -> None:
        self._rows = rows
        self._at = 0
        self.description = [(c, None, None, None, None, None, None) for c in columns]
        self.rowcount = len(rows)

    def fetchall(self) -> list[tuple[Any, ...]]:
        out, self._at = self._rows[self._at :], len(self._rows)
        return out

    def fetchone(self) -> tuple[Any, ...] | None:
        if self._at >= len(self._rows):
            return None
        self._at += 1
        return self._rows[self._at - 1]

    def fetchmany(self, size: int = 1000) -> list[tuple[Any, ...]]:
        out = self._rows[self._at : self._at + size]
        self._at += len(out)
        return out


class SparkConnection:
    """``execute(sql)`` over a Spark Connect session (``owned``: stopped by :meth:`close`)."""

    def __init__(self, session: Any, remote: str, *, owned: bool = True) -> None:
        self.session = session
        self.remote = remote
        self.owned = owned

    def execute(self, sql: str, params: Any = None) -> SparkCursor:
        if params:
            raise TypeError("Spark SQL is sent with its values in it (sqlglot literals)")
        from pyspark.errors import PySparkException

        try:
            df = self.session.sql(sql)
            rows = [tuple(r) for r in df.collect()]
            return SparkCursor(rows, list(df.columns))
        except PySparkException as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise WarehouseError(f"Spark refused a query of Splice's: {first}",
                                 fix="check that the relations it names are built in this target "
                                 "(splice run)") from None  # fmt: skip

    def close(self) -> None:
        if self.owned:
            self.session.stop()


def catalog(wh: Any) -> str:
    """The catalog relations live in: the session catalog (the Hive metastore's)."""
    return "spark_catalog"


def address(ws: WarehouseHost) -> str:
    """Where the warehouse is, as one comparable text: the Spark Connect server."""
    return str(ws.config.warehouse.remote)


#: The Spark Connect session of the run this process holds (:func:`run_spark_session`).
_RUN_SESSION: Any = None


def with_session_id(remote: str, session_id: str) -> str:
    """``remote`` naming the server-side session ``session_id``.

    >>> with_session_id("sc://127.0.0.1:15002", "8f0c")
    'sc://127.0.0.1:15002/;session_id=8f0c'
    >>> with_session_id("sc://h:1/;token=x", "8f0c")
    'sc://h:1/;token=x;session_id=8f0c'
    """
    if "/;" in remote:
        return f"{remote.rstrip(';')};session_id={session_id}"
    return f"{remote.rstrip('/')}/;session_id={session_id}"


#: The run this process holds, whose session is not open yet: (remote, session id).
_PENDING: tuple[str, str] | None = None
#: The process's default session before the run's replaced it (put back when the run ends).
_BEFORE: Any = None


@contextmanager
def run_spark_session(ws: WarehouseHost, *, lazy: bool = False) -> Iterator[str | None]:
    """Every Spark Connect client of this run (SQLMesh's Spark engine, dbt-spark's session,
    Splice's own queries) in one server-side session of a known id, which the run records
    (``splice.run.children``): a run killed mid-query leaves its query running on the
    server, and whoever takes over its lock interrupts that session (:func:`interrupt_session`)
    before touching the warehouse. Yields the id (None when the warehouse is not Spark).

    ``lazy``: the session opens on first use (:func:`open_run_session`: a tool's project
    loaded, a query of Splice's), not now; a run with nothing to do (a remembered no-op plan)
    opens none. Only for a run in which no tool is loaded yet: a tool loaded before would
    reconnect by itself, outside the run's session."""
    global _RUN_SESSION, _PENDING, _BEFORE
    if ws.config.warehouse.type != "spark" or _RUN_SESSION is not None or _PENDING is not None:
        yield None
        return
    import uuid

    remote = str(ws.config.warehouse.remote)
    session_id = str(uuid.uuid4())
    _PENDING = (remote, session_id)
    try:
        if not lazy:
            open_run_session()
        yield session_id
    finally:
        session, before = _RUN_SESSION, _BEFORE
        _RUN_SESSION, _PENDING, _BEFORE = None, None, None
        if session is not None:
            session.stop()
            cls: Any = type(session)
            with cls._lock:
                if before is not None and not before.is_stopped and cls._default_session is None:
                    cls._default_session = before


def open_run_session() -> None:
    """Open the session of the run this process holds, if it is not open yet (nothing when
    no run is held): called before a tool's project loads and before Splice's own queries,
    so that both are in it."""
    global _RUN_SESSION, _BEFORE
    if _PENDING is None or _RUN_SESSION is not None:
        return
    remote, session_id = _PENDING
    _quiet()
    _probe(remote, "splice run")
    from pyspark.sql import SparkSession

    session = SparkSession.builder.remote(with_session_id(remote, session_id)).create()
    # the process's default and active session for the run: the tools' getOrCreate() return
    # it (pyspark keeps an earlier session as the default otherwise, and a session's cached
    # file listings go stale when another process rewrites a table)
    cls: Any = type(session)  # pyspark.sql.connect's SparkSession: its session registry
    with cls._lock:
        _BEFORE = cls._default_session
        cls._default_session = session
        cls._active_session.session = session
    _RUN_SESSION = session


def stop_client_sessions() -> None:
    """Stop every Spark Connect session still open in this process (the tools' own:
    dbt-spark's and SQLMesh's ``getOrCreate()``), before their server stops: pyspark calls the
    server once more for each open client when the process exits, retrying for minutes when
    nothing answers."""
    import gc
    import sys

    mod = sys.modules.get("pyspark.sql.connect.session")
    if mod is None:
        return
    for obj in gc.get_objects():
        if isinstance(obj, mod.SparkSession) and not obj.is_stopped:
            obj.stop()


def interrupt_session(remote: str, session_id: str) -> list[str]:
    """Interrupt every operation of the server-side session ``session_id`` (a dead run's) and
    release it; the ids of the operations interrupted. Best effort: a server that does not
    answer, or a session already gone, interrupts nothing."""
    try:
        from pyspark.sql import SparkSession
    except ModuleNotFoundError:
        return []
    _quiet()
    try:
        _probe(remote, "interrupting a dead run's Spark work")
        session = SparkSession.builder.remote(with_session_id(remote, session_id)).create()
    except Exception:  # noqa: BLE001 - best effort: nothing answers, nothing to interrupt
        return []
    try:
        return [str(op) for op in session.interruptAll()]
    except Exception:  # noqa: BLE001 - the session expired with its operations
        return []
    finally:
        session.stop()


def _quiet() -> None:
    """pyspark's client logs every failed query, JVM stack and all, to the terminal: Splice
    says what failed in one line instead."""
    for name in ("pyspark", "py4j", "SQLQueryContextLogger"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def _probe(remote: str, what: str, fix: str | None = None) -> None:
    """A one-line error at once when nothing listens at ``remote`` (``sc://HOST:PORT/...``):
    pyspark's client retries an unreachable server for minutes before it gives up.

    >>> _probe("sc://127.0.0.1:1", "loading")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    splice.errors.WarehouseError: loading: cannot reach the Spark Connect server at sc://127.0.0.1:1 (...).
    """
    import socket
    from urllib.parse import urlsplit

    u = urlsplit(remote.replace("sc://", "http://", 1))
    host, port = u.hostname or "localhost", u.port or 15002
    try:
        socket.create_connection((host, port), timeout=5).close()
    except OSError as e:
        raise WarehouseError(
            f"{what}: cannot reach the Spark Connect server at {remote} ({e.strerror or e}).",
            fix=fix
            or "start the server (sbin/start-connect-server.sh) or correct [warehouse] remote",
            retry=True,
        ) from None


def probe_project_endpoint(location: Any, project: str) -> None:
    """Fail at once, naming the project's config file and key, when the Spark Connect server
    a project's config names (``location``: its WarehouseLocation) does not answer; nothing
    when the project is not on Spark Connect."""
    server = getattr(location, "server", None) or {}
    if "remote" not in server or not server["remote"][1]:
        return
    key, remote = server["remote"]
    _probe(str(remote), f"project {project!r} ({location.config_file}: {key})",
           fix=f"start that server, or correct {key} in {location.config_file}")  # fmt: skip


@contextmanager
def connect(ws: WarehouseHost, what: str, *, read_only: bool = False) -> Iterator[SparkConnection]:
    """A Spark Connect session to the workspace's warehouse, stopped when the block ends (the
    run's own session, left open, when this process holds a run: :func:`run_spark_session`;
    ``read_only`` is the server's business: the session is the same)."""
    remote = str(ws.config.warehouse.remote)
    open_run_session()  # the run's, if this process holds one whose session is not open yet
    if _RUN_SESSION is not None and not _RUN_SESSION.is_stopped:
        yield SparkConnection(_RUN_SESSION, remote, owned=False)
        return
    try:
        from pyspark.sql import SparkSession
    except ModuleNotFoundError:
        raise WarehouseError(
            f"{what}: the warehouse is Spark, and pyspark is not installed.",
            fix='pip install "splice[spark]" (pyspark with Spark Connect, dbt-spark)',
        ) from None
    _quiet()
    _probe(remote, what)  # pyspark retries an unreachable server for minutes: ask first
    try:
        session = SparkSession.builder.remote(remote).create()
        session.sql("SELECT 1").collect()
    except Exception as e:  # noqa: BLE001 - gRPC's errors have no common base worth naming
        text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise WarehouseError(
            f"{what}: cannot reach the Spark Connect server at {remote} ({text[:300]}).",
            fix="start the server (sbin/start-connect-server.sh) or correct [warehouse] remote",
            retry=True,
        ) from None
    con = SparkConnection(session, remote)
    try:
        yield con
    finally:
        con.close()
