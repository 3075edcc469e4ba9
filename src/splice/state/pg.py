"""Splice's state on PostgreSQL: a connection that speaks the sqlite3 surface Splice's state
modules use, so one set of statements serves both.

It runs :class:`splice.state.sql.Statement` s only (each rendered for PostgreSQL once, with
psycopg's placeholders): text that was not declared as a statement is refused with a
TypeError, so no state SQL is rewritten while a command runs. An ``INSERT`` into a table with
an identity column returns it (``cursor.lastrowid``). ``BEGIN IMMEDIATE`` takes a
transaction-wide advisory lock, so writers take turns as SQLite's do (the audit log's chain
never forks); ``PRAGMA`` is SQLite's alone and does nothing here.

Many rows of one plain ``INSERT`` (a watch writing a year of points) go through ``COPY`` into a
temporary table and one ``INSERT ... SELECT`` with the statement's own conflict clause
(:func:`copy_plan`), with the same meaning as row by row: when two rows of the batch share a
key, the later one wins an upsert and the earlier one an ``OR IGNORE``.

Errors come back as sqlite3's exception types (``IntegrityError``, ``OperationalError``), so a
module catches the same exceptions on either backend.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from splice.state.sql import ROWID_TABLES, Statement, table_keys

__all__ = ["ROWID_TABLES", "Connection", "table_keys"]

#: The key every writer's transaction locks (one writer at a time, as SQLite).
WRITE_LOCK_KEY = 0x5B11CE
#: From this many rows on, ``executemany`` of a plain INSERT goes through COPY.
COPY_ROWS = 1000
#: The temporary table a COPY fills (one per connection, dropped after each batch).
COPY_TABLE = "splice_copy_batch"


@dataclass(frozen=True)
class CopyPlan:
    """What a batch of one INSERT statement sends instead of row-by-row inserts."""

    drop: str
    create: str
    copy: str
    insert: str


@functools.lru_cache(maxsize=128)
def copy_plan(statement: Statement) -> CopyPlan | None:
    """The COPY form of an ``INSERT INTO t (cols) VALUES (?, ...)`` statement (with its ``OR
    REPLACE`` / ``OR IGNORE`` as PostgreSQL's ``ON CONFLICT``), or None for any other
    statement (one that returns rows, or inserts anything but one placeholder per column).

    >>> from splice.state.sql import statement
    >>> p = copy_plan(statement("INSERT OR REPLACE INTO watch_points (series_id, interval_start, "
    ...                         "value, measured_at, watch_id) VALUES (?, ?, ?, ?, ?)"))
    >>> print(p.copy)
    COPY splice_copy_batch (series_id, interval_start, value, measured_at, watch_id) FROM STDIN
    >>> p.insert.split(" SELECT ")[0]
    'INSERT INTO watch_points (series_id, interval_start, value, measured_at, watch_id)'
    >>> "DISTINCT ON (series_id, interval_start)" in p.insert, "ctid DESC" in p.insert
    (True, True)
    >>> p.insert.split(" ON CONFLICT")[1][:48]
    '(series_id, interval_start) DO UPDATE SET value '
    >>> copy_plan(statement("UPDATE watch_series SET spec = ? WHERE series_id = ?")) is None
    True
    """
    from splice.state.sql import for_postgres, render_postgres

    tree, added = for_postgres(statement.tree.copy())
    if not isinstance(tree, exp.Insert) or not isinstance(tree.this, exp.Schema):
        return None
    values = tree.expression
    cols = [c.name for c in tree.this.expressions]
    if (added is False and tree.args.get("returning")) or not isinstance(values, exp.Values):
        return None
    rows = values.expressions
    if (len(rows) != 1 or len(rows[0].expressions) != len(cols)
            or not all(isinstance(v, exp.Placeholder) for v in rows[0].expressions)):  # fmt: skip
        return None
    tree.set("returning", None)
    table = tree.this.this
    batch = exp.to_table(COPY_TABLE)
    select = exp.select(*[exp.column(c) for c in cols]).from_(batch)
    conflict = tree.args.get("conflict")
    keys = [k.name for k in (conflict.args.get("conflict_keys") or [])] if conflict else []
    if keys and conflict is not None:  # one row per key, as row by row leaves it: the last
        last = str(conflict.args.get("action") or "").upper().endswith("UPDATE")  # for an update
        select.set(
            "distinct", exp.Distinct(on=exp.Tuple(expressions=[exp.column(k) for k in keys]))
        )
        select = select.order_by(*[exp.column(k) for k in keys],
                                 exp.Ordered(this=exp.column("ctid"), desc=last))  # fmt: skip
    tree.set("expression", select)
    # the columns inserted, with their types and no constraint (an identity is left to the table)
    shape = exp.select(*[exp.column(c) for c in cols]).from_(table.copy()).limit(0)
    create = exp.Create(this=batch.copy(), kind="TABLE", expression=shape,
                        properties=exp.Properties(expressions=[exp.TemporaryProperty()]))  # fmt: skip
    drop = exp.Drop(this=batch.copy(), kind="TABLE", exists=True)
    copy = exp.Copy(this=exp.Schema(this=batch.copy(),
                                    expressions=[exp.to_identifier(c) for c in cols]),
                    kind=True, files=[exp.var("STDIN")])  # fmt: skip
    return CopyPlan(drop=drop.sql("postgres"), create=create.sql("postgres"),
                    copy=copy.sql("postgres"), insert=render_postgres(tree))  # fmt: skip


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
        """One statement over many rows, in one round trip batch (psycopg's pipeline); a plain
        INSERT of :data:`COPY_ROWS` rows or more through COPY (:func:`copy_plan`)."""
        import psycopg

        q = _postgres(sql)[0].encode()
        seq = seq if isinstance(seq, list) else list(seq)
        plan = copy_plan(sql) if len(seq) >= COPY_ROWS and isinstance(sql, Statement) else None
        if plan is not None and not isinstance(seq[0], dict):
            # a bool becomes 1/0, as the row-by-row path does (checked per row, in C)
            return self._copy(plan, [[_param(v) for v in p] if bool in map(type, p) else p
                                     for p in seq])  # fmt: skip
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

    def _copy(self, plan: CopyPlan, rows: list[Any]) -> Cursor:
        import psycopg

        with self._lock:
            try:
                with self._con.cursor() as cur:
                    cur.execute(plan.drop.encode())
                    cur.execute(plan.create.encode())
                    with cur.copy(plan.copy.encode()) as copy:
                        for r in rows:
                            copy.write_row(r)
                    cur.execute(plan.insert.encode())
                    count = cur.rowcount
                    cur.execute(plan.drop.encode())
                    return Cursor([], None, count, None)
            except psycopg.Error as e:
                raise _error(e) from e

    def commit(self) -> None:  # autocommit: nothing pending outside BEGIN .. COMMIT
        return None

    def close(self) -> None:
        with self._lock:
            self._con.close()
