"""The statements Splice's state runs: each one a sqlglot expression, rendered once for SQLite
and once for PostgreSQL.

A domain store (incidents, repairs, grants, the journal, the outbox, ...) declares its
statements as module constants with :func:`statement` (portable SQL parsed once, as SQLite
reads it) or builds one from sqlglot expressions with :class:`Statement` when its shape
depends on the call (an ``IN`` list, an optional filter). A :class:`Statement` *is* its SQLite
text (a ``str``), so a ``sqlite3`` connection runs it as it is; ``.postgres`` is the same tree
rendered for PostgreSQL with psycopg's placeholders, made the first time a PostgreSQL state
runs it and kept. The PostgreSQL connection (:mod:`splice.state.pg`) runs only statements:
text that was not declared here is refused, so no state SQL is rewritten while a command runs.

What each backend needs of the one tree (the rules of :func:`for_postgres`):

- placeholders ``?`` and ``:name`` become ``%s`` and ``%(name)s``; a literal ``%`` is doubled;
- ``INSERT OR REPLACE`` becomes an upsert on the table's primary key, ``INSERT OR IGNORE``
  ``ON CONFLICT DO NOTHING``; an ``INSERT`` into a table with an identity column returns it
  (that is ``cursor.lastrowid``);
- ``json_extract`` of a TEXT column reads its JSON cast; ``julianday`` counts days from the
  same epoch; ``a IS b`` compares with NULLs equal; ``SUM(a = b)`` counts trues;
  ``COLLATE NOCASE`` compares lowered text;
- DDL: REAL is DOUBLE PRECISION, INTEGER is BIGINT, and the tables read in insertion order
  get a ``rowid`` identity column.

>>> s = statement("INSERT OR IGNORE INTO notify_cursor(name, position) VALUES(:n, 0)")
>>> print(s)
INSERT OR IGNORE INTO notify_cursor (name, position) VALUES (:n, 0)
>>> print(s.postgres)
INSERT INTO notify_cursor (name, position) VALUES (%(n)s, 0) ON CONFLICT DO NOTHING
>>> print(statement("SELECT 1 FROM runs WHERE run_id IS ? AND pid IS NOT NULL").postgres)
SELECT 1 FROM runs WHERE run_id IS NOT DISTINCT FROM %s AND NOT pid IS NULL
>>> print(statement("SELECT SUM(status = 'open') FROM incidents").postgres)
SELECT SUM(CAST(status = 'open' AS INT)) FROM incidents
>>> q = select_where("incidents", ["incident_id"], target="prod", status=["open", "acked"])
>>> print(q)
SELECT incident_id FROM incidents WHERE target = ? AND status IN (?, ?)
>>> q.args
('prod', 'acked', 'open')
"""

from __future__ import annotations

import functools
import re
import sys
import weakref
from collections.abc import Iterable, Sequence
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

#: The backends a state lives on.
BACKENDS = ("sqlite", "postgres")

#: Every statement a module declared with :func:`statement` (tests render and run each one on
#: both backends).
DECLARED: weakref.WeakSet[Statement] = weakref.WeakSet()


def parse(sql: str) -> exp.Expr:
    """Portable state SQL as a sqlglot tree (read as SQLite reads it; the column ``exclude`` of
    ``runs`` is a keyword to the parser, so it is quoted).

    >>> parse("SELECT exclude FROM runs").sql("postgres")
    'SELECT "exclude" FROM runs'
    """
    return sqlglot.parse_one(re.sub(r'(?<!")\bexclude\b(?!")', '"exclude"', sql), read="sqlite")


class Statement(str):
    """One state statement: its SQLite text (the ``str`` itself), its tree, and its
    PostgreSQL rendering (``.postgres``, made once).

    ``args``: the parameters a statement built for one call carries with it (see
    :func:`select_where`); empty for a declared one.
    """

    tree: exp.Expr
    args: tuple[Any, ...]
    #: the backends this statement is for (a catalog query is one backend's own)
    backends: tuple[str, ...]
    #: the text a declared statement was written as (None: built from expressions)
    source: str | None = None
    #: the module that declared it
    module: str | None = None

    def __new__(
        cls, tree: exp.Expr, args: Sequence[Any] = (), *, backends: Sequence[str] = BACKENDS
    ) -> Statement:
        self = super().__new__(cls, render_sqlite(tree))
        self.tree = tree
        self.args = tuple(args)
        self.backends = tuple(backends)
        return self

    @functools.cached_property
    def _postgres(self) -> tuple[str, bool]:
        tree, returns_identity = for_postgres(self.tree.copy())
        return render_postgres(tree), returns_identity

    @property
    def postgres(self) -> str:
        """This statement in PostgreSQL's dialect, with psycopg's placeholders."""
        return self._postgres[0]

    @property
    def returns_identity(self) -> bool:
        """True when the PostgreSQL rendering returns an identity the SQLite text does not ask
        for (its value is the cursor's ``lastrowid``, not a row)."""
        return self._postgres[1]


def statement(sql: str, *, backends: Sequence[str] = BACKENDS) -> Statement:
    """A declared statement: ``sql`` (portable SQL, as SQLite reads it) parsed once;
    ``backends``: only these run it (a catalog query)."""
    s = Statement(parse(sql), backends=backends)
    s.source = sql
    s.module = sys._getframe(1).f_globals.get("__name__")
    DECLARED.add(s)
    return s


def script(sql: str) -> list[Statement]:
    """The statements of a ``;``-separated script (a migration), each declared."""
    return [statement(part) for part in sql.split(";") if part.strip()]


# -- building a statement for one call ---------------------------------------------------------
def placeholders(n: int) -> list[exp.Placeholder]:
    """``n`` positional placeholders (``?`` on SQLite, ``%s`` on PostgreSQL)."""
    return [exp.Placeholder() for _ in range(n)]


def in_list(column: str, n: int) -> exp.Expr:
    """``column IN (?, ..., ?)`` with ``n`` placeholders (``column`` may name its table).

    >>> in_list("s.spec", 2).sql()
    's.spec IN (?, ?)'
    """
    return exp.to_column(column).isin(*placeholders(n))


def where_equal(**filters: Any) -> tuple[exp.Expr | None, list[Any]]:
    """A ``WHERE`` condition and its arguments: ``column = ?`` for a value, ``column IN (...)``
    for a list or set (sorted), nothing for None; an empty list matches no row.

    >>> cond, args = where_equal(target="prod", status={"open"}, kind=None)
    >>> cond.sql(), args
    ('target = ? AND status IN (?)', ['prod', 'open'])
    >>> where_equal(status=[])[0].sql()
    '1 = 0'
    """
    parts: list[exp.Expr] = []
    args: list[Any] = []
    for name, value in filters.items():
        if value is None:
            continue
        if isinstance(value, list | tuple | set | frozenset):
            wanted = sorted(value)
            if not wanted:
                parts.append(exp.EQ(this=exp.Literal.number(1), expression=exp.Literal.number(0)))
                continue
            parts.append(exp.column(name).isin(*placeholders(len(wanted))))
            args.extend(wanted)
        else:
            parts.append(exp.column(name).eq(exp.Placeholder()))
            args.append(value)
    return (exp.and_(*parts) if parts else None), args


def select_where(
    table: str,
    columns: Iterable[str | exp.Expr],
    *,
    order_by: str | None = None,
    limit: int | None = None,
    **filters: Any,
) -> Statement:
    """``SELECT columns FROM table WHERE ...`` (see :func:`where_equal`) for one call; its
    arguments are the statement's ``args``."""
    q = exp.select(*columns).from_(table)
    cond, args = where_equal(**filters)
    if cond is not None:
        q = q.where(cond)
    if order_by:
        q = q.order_by(order_by)
    if limit is not None:
        q = q.limit(limit)
    return Statement(q, args)


def render_sqlite(tree: exp.Expr) -> str:
    """``tree`` as SQLite text, SQLite's own functions kept as they were written: sqlglot writes
    ``json_extract`` as ``->`` (whose value is JSON: a string comes back quoted, where
    ``json_extract`` gives the SQL value) and ``substr`` as ``SUBSTRING`` (SQLite 3.34 and
    later only). ``tests/state/test_statements.py`` holds every declared statement to the
    program SQLite compiles from its source text.

    >>> render_sqlite(parse("SELECT json_extract(data, '$.since') FROM watch_anomalies"))
    "SELECT JSON_EXTRACT(data, '$.since') FROM watch_anomalies"
    >>> render_sqlite(parse("SELECT substr(incident_id, 5) FROM incidents"))
    'SELECT SUBSTR(incident_id, 5) FROM incidents'
    """
    if tree.find(exp.JSONExtract, exp.Substring) is None:
        return tree.sql(dialect="sqlite")
    tree = tree.copy()
    for node in list(tree.find_all(exp.JSONExtract)):
        node.replace(exp.Anonymous(this="json_extract", expressions=[node.this, node.expression]))
    for sub in list(tree.find_all(exp.Substring)):
        args = [a for a in (sub.this, sub.args.get("start"), sub.args.get("length")) if a]
        sub.replace(exp.Anonymous(this="substr", expressions=args))
    return tree.sql(dialect="sqlite")


# -- the PostgreSQL rendering ------------------------------------------------------------------
@functools.cache
def table_keys() -> tuple[dict[str, list[str]], dict[str, str]]:
    """(table -> primary key columns, table -> identity column) from the migrations."""
    from splice.state.migrations import MIGRATIONS

    keys: dict[str, list[str]] = {}
    identity: dict[str, str] = {}
    for _v, text in MIGRATIONS:
        for part in [s for s in text.split(";") if s.strip()]:
            tree = parse(part)
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


def for_postgres(tree: exp.Expr) -> tuple[exp.Expr, bool]:
    """``tree`` (a copy: it is changed) with PostgreSQL's meaning of what it says on SQLite,
    and whether an identity column was added to its ``RETURNING``."""
    if isinstance(tree, exp.Insert) and tree.args.get("alternative"):
        _upsert(tree, ignore=str(tree.args["alternative"]).upper() == "IGNORE")
    if isinstance(tree, exp.Create | exp.Alter):
        tree = _ddl(tree)
    added = False
    if isinstance(tree, exp.Insert):
        _, identity = table_keys()
        table = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
        col = identity.get(table.name)
        if col and not tree.args.get("returning"):
            tree.set("returning", exp.Returning(expressions=[exp.column(col)]))
            added = True
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
    return tree, added


def render_postgres(tree: exp.Expr) -> str:
    """``tree`` as PostgreSQL text with psycopg's placeholders (a literal ``%`` doubled)."""
    tree = tree.copy()
    names: list[str] = []
    for i, ph in enumerate(tree.find_all(exp.Placeholder)):
        names.append("" if ph.name in ("", "?") else ph.name)
        ph.replace(exp.var(f"__splice_ph_{i}__"))
    out = tree.sql(dialect="postgres").replace("%", "%%")
    for i, name in enumerate(names):
        out = out.replace(f"__splice_ph_{i}__", f"%({name})s" if name else "%s", 1)
    return out
