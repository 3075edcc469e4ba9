"""Splice's state on PostgreSQL: a connection that speaks the sqlite3 surface Splice's state
modules use, so one set of statements serves both.

Each statement is translated once (cached by its text) from SQLite's dialect to PostgreSQL's
with sqlglot: placeholders (``?``, ``:name``) become psycopg's, ``INSERT OR REPLACE`` an upsert
on the table's primary key, ``INSERT OR IGNORE`` ``ON CONFLICT DO NOTHING``, ``json_extract``
on a TEXT column a JSON path on its cast, ``MAX(a, b)`` ``GREATEST``; an ``INSERT`` into a
table with an identity column returns it (``cursor.lastrowid``). ``BEGIN IMMEDIATE`` takes a
transaction-wide advisory lock, so writers take turns as SQLite's do (the audit log's chain
never forks). The schema's DDL maps SQLite's types to PostgreSQL's (REAL to DOUBLE PRECISION,
INTEGER to BIGINT) and gives the tables read in insertion order a ``rowid``.

Errors come back as sqlite3's exception types (``IntegrityError``, ``OperationalError``), so a
module catches the same exceptions on either backend.

>>> print(translate("SELECT value FROM splice_meta WHERE key=?"))
SELECT value FROM splice_meta WHERE key = %s
>>> print(translate("INSERT OR IGNORE INTO notify_cursor(name, position) VALUES(:n, 0)"))
INSERT INTO notify_cursor (name, position) VALUES (%(n)s, 0) ON CONFLICT DO NOTHING
>>> print(translate("SELECT 1 FROM runs WHERE run_id IS ? AND pid IS NOT NULL"))
SELECT 1 FROM runs WHERE run_id IS NOT DISTINCT FROM %s AND NOT pid IS NULL
>>> print(translate("SELECT SUM(status = 'open') FROM incidents"))
SELECT SUM(CAST(status = 'open' AS INT)) FROM incidents
"""

from __future__ import annotations

import functools
import re
import sqlite3
import threading
from typing import Any

import sqlglot
from sqlglot import exp

#: Tables whose rows are read in insertion order (``ORDER BY rowid``): PostgreSQL has no rowid.
ROWID_TABLES = (
    "incidents",
    "repair_proposals",
    "repair_decisions",
    "access_grants",
    "access_decisions",
)
#: The key every writer's transaction locks (one writer at a time, as SQLite).
WRITE_LOCK_KEY = 0x5B11CE


@functools.cache
def table_keys() -> tuple[dict[str, list[str]], dict[str, str]]:
    """(table -> primary key columns, table -> identity column) from the migrations."""
    from splice.state.migrations import MIGRATIONS

    keys: dict[str, list[str]] = {}
    identity: dict[str, str] = {}
    for _v, script in MIGRATIONS:
        for stmt in [s for s in script.split(";") if s.strip()]:
            tree = _parse(stmt)
            if not isinstance(tree, exp.Create) or tree.kind != "TABLE":
                continue
            schema = tree.this
            if not isinstance(schema, exp.Schema):
                continue
            name = schema.this.name
            for col in schema.expressions:
                if isinstance(col, exp.ColumnDef):
                    cons = [c.kind for c in col.constraints]
                    if any(isinstance(c, exp.PrimaryKeyColumnConstraint) for c in cons):
                        keys[name] = [col.name]
                    if any(isinstance(c, exp.AutoIncrementColumnConstraint) for c in cons):
                        identity[name] = col.name
                elif isinstance(col, exp.PrimaryKey):
                    keys[name] = [e.name for e in col.expressions]
    return keys, identity


def _parse(sql: str) -> exp.Expr:
    # `exclude` is a column of `runs` and a keyword to the parser: quote it
    return sqlglot.parse_one(re.sub(r"\bexclude\b", '"exclude"', sql), read="sqlite")


_TYPES = {
    exp.DataType.Type.DOUBLE: "DOUBLE PRECISION",
    exp.DataType.Type.FLOAT: "DOUBLE PRECISION",
    exp.DataType.Type.INT: "BIGINT",
}


def _ddl(tree: exp.Expr) -> exp.Expr:
    """SQLite's column types as PostgreSQL's (REAL is 4 bytes there; INTEGER 4, not 8)."""
    for dt in list(tree.find_all(exp.DataType)):
        if dt.this in _TYPES:
            dt.replace(exp.DataType.build(_TYPES[dt.this], dialect="postgres"))
    if (isinstance(tree, exp.Create) and isinstance(tree.this, exp.Schema)
            and tree.this.this.name in ROWID_TABLES):  # fmt: skip
        tree.this.append(
                "expressions",
                exp.ColumnDef(
                    this=exp.to_identifier("rowid"),
                    kind=exp.DataType.build("BIGINT"),
                    constraints=[exp.ColumnConstraint(
                        kind=exp.GeneratedAsIdentityColumnConstraint(this=False))],
                ),
            )  # fmt: skip
    return tree


def _upsert(tree: exp.Insert, ignore: bool) -> None:
    keys, _ = table_keys()
    table = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    name = table.name
    cols = [c.name for c in tree.this.expressions] if isinstance(tree.this, exp.Schema) else []
    if ignore or name not in keys:
        tree.set("conflict", exp.OnConflict(action=exp.var("DO NOTHING")))
    else:
        pk = keys[name]
        sets = [
            exp.EQ(this=exp.column(c), expression=exp.column(c, table="excluded"))
            for c in cols
            if c not in pk
        ]
        tree.set(
            "conflict",
            exp.OnConflict(
                conflict_keys=[exp.to_identifier(c) for c in pk],
                action=exp.var("DO UPDATE" if sets else "DO NOTHING"),
                expressions=sets,
            ),
        )
    tree.set("alternative", None)


_SQLITE_MASTER = re.compile(r"FROM\s+sqlite_master\s+WHERE\s+type\s*=\s*'table'", re.IGNORECASE)


@functools.lru_cache(maxsize=2048)
def translate(sql: str) -> str:
    """A state statement in PostgreSQL's dialect, with psycopg's placeholders."""
    text = _SQLITE_MASTER.sub(
        "FROM information_schema.tables WHERE table_schema = current_schema()", sql
    )
    if text is not sql:
        text = re.sub(r"\bname\b", "table_name", text)
    tree = _parse(text)
    if isinstance(tree, exp.Insert) and tree.args.get("alternative"):
        _upsert(tree, ignore=str(tree.args["alternative"]).upper() == "IGNORE")
    if isinstance(tree, exp.Create | exp.Alter):
        tree = _ddl(tree)
    if isinstance(tree, exp.Insert):
        _, identity = table_keys()
        table = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
        col = identity.get(table.name)
        if col and not tree.args.get("returning"):
            tree.set("returning", exp.Returning(expressions=[exp.column(col)]))
    for node in list(tree.find_all(exp.JSONExtract)):  # json_extract(text, '$.k') ->> 'k'
        path = node.expression
        node.replace(exp.JSONExtractScalar(
            this=exp.cast(node.this, exp.DataType.build("JSON")), expression=path))  # fmt: skip
    for fn in list(tree.find_all(exp.Anonymous)):  # julianday(x): days since -4713-11-24
        if fn.name.lower() == "julianday" and fn.expressions:
            epoch = exp.Extract(this=exp.var("EPOCH"),
                                expression=exp.cast(fn.expressions[0], "TIMESTAMP"))  # fmt: skip
            days = exp.Div(this=epoch, expression=exp.Literal.number("86400.0"))
            fn.replace(exp.Paren(this=exp.Add(this=days, expression=exp.Literal.number(2440587.5))))
    for is_ in list(tree.find_all(exp.Is)):  # SQLite's a IS b compares, NULLs equal
        if not isinstance(is_.expression, exp.Null | exp.Boolean):
            is_.replace(exp.NullSafeEQ(this=is_.this, expression=is_.expression))
    for agg in list(tree.find_all(exp.Sum)):  # SUM(a = b): SQLite counts a true as 1
        arg = agg.this
        if isinstance(arg, exp.Predicate | exp.Not | exp.And | exp.Or):
            arg.replace(exp.cast(arg.copy(), "INTEGER"))
    for coll in list(tree.find_all(exp.Collate)):  # a = b COLLATE NOCASE: lower(a) = lower(b)
        parent = coll.parent
        coll.replace(exp.Lower(this=coll.this))
        if isinstance(parent, exp.Binary) and not isinstance(parent.this, exp.Lower):
            parent.set("this", exp.Lower(this=parent.this))
    names: list[str] = []
    for i, ph in enumerate(tree.find_all(exp.Placeholder)):
        names.append("" if ph.name in ("", "?") else ph.name)
        ph.replace(exp.var(f"__splice_ph_{i}__"))
    out = tree.sql(dialect="postgres").replace("%", "%%")
    for i, name in enumerate(names):
        out = out.replace(f"__splice_ph_{i}__", f"%({name})s" if name else "%s", 1)
    return out


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
        q = translate(sql)
        if isinstance(params, dict):
            args: Any = {k: _param(v) for k, v in params.items()}
        else:
            args = [_param(v) for v in (params or ())]
        # always with parameters (maybe none): a literal % is then read as the %% it became
        cur = self._con.execute(q.encode(), args)
        rows = cur.fetchall() if cur.description else []
        lastrowid = None
        added = " RETURNING " in q.upper() and "RETURNING" not in sql.upper()
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

        q = translate(sql).encode()
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

    def executescript(self, script: str) -> None:
        for stmt in [s for s in script.split(";") if s.strip()]:
            self.execute(stmt)

    def commit(self) -> None:  # autocommit: nothing pending outside BEGIN .. COMMIT
        return None

    def close(self) -> None:
        with self._lock:
            self._con.close()
