"""Splice's state on PostgreSQL: a connection that speaks the sqlite3 surface Splice's state
modules use, so one set of statements serves both.

It runs :class:`splice.state.sql.Statement` s only (each rendered for PostgreSQL once, with
psycopg's placeholders): text that was not declared as a statement is refused with a
TypeError, so no state SQL is rewritten while a command runs. An ``INSERT`` into a table with
an identity column returns it (``cursor.lastrowid``). ``BEGIN IMMEDIATE`` takes a
transaction-wide advisory lock, so writers take turns as SQLite's do (the audit log's chain
never forks); ``PRAGMA`` is SQLite's alone and does nothing here.

Errors come back as sqlite3's exception types (``IntegrityError``, ``OperationalError``), so a
module catches the same exceptions on either backend.
"""

from __future__ import annotations

import sqlite3
import threading
from typing import Any

from sqlglot import exp

from splice.state.sql import ROWID_TABLES, Statement, table_keys

__all__ = ["ROWID_TABLES", "Connection", "table_keys"]

#: The key every writer's transaction locks (one writer at a time, as SQLite).
WRITE_LOCK_KEY = 0x5B11CE


def _postgres(sql: str) -> tuple[str, bool]:
    """(PostgreSQL text, whether it returns an identity the statement did not ask for)."""
    if not isinstance(sql, Statement):
        raise TypeError(
            "the PostgreSQL state runs declared statements only (splice.state.sql.statement); "
            f"this is text: {sql.strip()[:200]}"
        )
    return sql.postgres, sql.returns_identity


class Cursor:
    """The result of one statement: rows, description, rowcount, lastrowid."""

    def __init__(self, rows: list[tuple[Any, ...]], description: Any, rowcount: int,
                 lastrowid: int | None) -> None:  # fmt: skip
        self._rows = rows
        self._i = 0
        self.description = description
        self.rowcount = rowcount
        self.lastrowid = lastrowid

    def fetchone(self) -> tuple[Any, ...] | None:
        if self._i >= len(self._rows):
            return None
        row = self._rows[self._i]
        self._i += 1
        return row

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows = self._rows[self._i :]
        self._i = len(self._rows)
        return rows

    def __iter__(self) -> Any:
        return iter(self.fetchall())


def _param(v: Any) -> Any:
    return int(v) if isinstance(v, bool) else v


def _error(e: Exception) -> Exception:
    import psycopg

    text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    if isinstance(e, psycopg.errors.IntegrityError):
        return sqlite3.IntegrityError(text)
    if isinstance(e, psycopg.OperationalError | psycopg.errors.UndefinedTable):
        return sqlite3.OperationalError(text)
    return sqlite3.DatabaseError(text)


class Connection:
    """A psycopg connection (autocommit; transactions as the statements say) with the sqlite3
    methods the state modules call."""

    def __init__(self, url: str, info: dict[str, Any]) -> None:
        import psycopg

        self.url = url
        self._lock = threading.RLock()
        self._con = psycopg.connect(autocommit=True, **info)
        self.in_transaction = False

    def _run(self, sql: str, params: Any) -> Cursor:
        word = sql.strip().split(None, 1)[0].upper() if sql.strip() else ""
        if word == "PRAGMA":
            return Cursor([], None, -1, None)
        if word == "BEGIN":
            self._con.execute(b"BEGIN")
            self.in_transaction = True
            lock = exp.select(exp.func("pg_advisory_xact_lock", exp.Literal.number(WRITE_LOCK_KEY)))
            self._con.execute(lock.sql("postgres").encode())
            return Cursor([], None, -1, None)
        if word in ("COMMIT", "ROLLBACK", "END"):
            self._con.execute(("ROLLBACK" if word == "ROLLBACK" else "COMMIT").encode())
            self.in_transaction = False
            return Cursor([], None, -1, None)
        q, added = _postgres(sql)
        if isinstance(params, dict):
            args: Any = {k: _param(v) for k, v in params.items()}
        else:
            args = [_param(v) for v in (params or ())]
        # always with parameters (maybe none): a literal % is then read as the %% it became
        cur = self._con.execute(q.encode(), args)
        rows = cur.fetchall() if cur.description else []
        lastrowid = None
        if added and rows:  # the identity column this statement did not ask for
            lastrowid = int(rows[0][0])
            rows = []
        return Cursor([tuple(r) for r in rows], cur.description, cur.rowcount, lastrowid)

    def execute(self, sql: str, params: Any = ()) -> Cursor:
        with self._lock:
            try:
                return self._run(sql, params)
            except sqlite3.Error:
                raise
            except Exception as e:
                import psycopg

                if isinstance(e, psycopg.Error):
                    raise _error(e) from e
                raise

    def executemany(self, sql: str, seq: Any) -> Cursor:
        """One statement over many rows, in one round trip batch (psycopg's pipeline)."""
        import psycopg

        q = _postgres(sql)[0].encode()
        rows = [
            {k: _param(v) for k, v in p.items()} if isinstance(p, dict) else [_param(v) for v in p]
            for p in seq
        ]
        with self._lock:
            try:
                with self._con.cursor() as cur:
                    cur.executemany(q, rows)
                    return Cursor([], None, cur.rowcount, None)
            except psycopg.Error as e:
                raise _error(e) from e

    def commit(self) -> None:  # autocommit: nothing pending outside BEGIN .. COMMIT
        return None

    def close(self) -> None:
        with self._lock:
            self._con.close()
