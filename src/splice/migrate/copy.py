"""Copy a relation from one target's warehouse to another's, row for row, types transpiled.

Columns and types come from the source's catalog and are written in the destination's dialect
by sqlglot (DuckDB ``DOUBLE`` is PostgreSQL ``DOUBLE PRECISION``; ``HUGEINT`` becomes
``NUMERIC(38, 0)``). The destination table is dropped and created again, then filled: through
``COPY ... FROM STDIN`` on PostgreSQL (from DuckDB, the CSV DuckDB writes itself, through a
temporary file; otherwise row by row), batched inserts on DuckDB, in one transaction, so a
failed copy leaves the destination as it was.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlglot import exp

from splice.errors import WarehouseError

BATCH = 20_000
#: Types with no equivalent in the destination: written as this instead.
WIDE = {"INT128": "NUMERIC(38, 0)", "UINT128": "NUMERIC(39, 0)", "UBIGINT": "NUMERIC(20, 0)"}


def _table(relation: str) -> exp.Table:
    schema, name = relation.split(".", 1)
    return exp.table_(name, db=schema, quoted=True)


def columns(con: Any, relation: str, dialect: str) -> list[tuple[str, str]]:
    """The relation's columns and their types as the warehouse names them, in order (the
    engine's ``columns.typed_columns``)."""
    from splice.warehouse.engines import engine_module

    found: list[tuple[str, str]] = engine_module(dialect, "columns").typed_columns(con, relation)
    return found


def transpile_type(type_text: str, source: str, dest: str) -> exp.DataType:
    """
    >>> transpile_type("DOUBLE", "duckdb", "postgres").sql("postgres")
    'DOUBLE PRECISION'
    >>> transpile_type("HUGEINT", "duckdb", "postgres").sql("postgres")
    'DECIMAL(38, 0)'
    """
    dt = exp.DataType.build(type_text, dialect=source)
    text = dt.sql(dialect=dest)
    if text.upper() in WIDE:
        return exp.DataType.build(WIDE[text.upper()], dialect=dest)
    return dt


def stream(con: Any, sql: str, dialect: str, size: int = BATCH) -> Iterator[list[tuple[Any, ...]]]:
    """The rows of ``sql`` in batches, never all at once: on PostgreSQL through a server-side
    cursor (psycopg's ordinary cursor holds the whole result in memory), in a transaction of
    its own; DuckDB's result streams by itself."""
    if dialect == "postgres":
        with con.transaction(), con.cursor(name="splice_stream") as cur:
            cur.itersize = size
            cur.execute(sql)
            while batch := cur.fetchmany(size):
                yield batch
        return
    cur = con.execute(sql)
    while batch := cur.fetchmany(size):
        yield batch


def _rows(
    con: Any, relation: str, names: list[str], dialect: str
) -> Iterator[list[tuple[Any, ...]]]:
    q = exp.select(*[exp.column(c, quoted=True) for c in names]).from_(_table(relation))
    yield from stream(con, q.sql(dialect=dialect), dialect)


def _csv(header: bool | None = None) -> list[exp.Expr]:
    params: list[exp.Expr] = [exp.CopyParameter(this=exp.var("FORMAT"), expression=exp.var("CSV"))]
    if header is not None:
        params.append(exp.CopyParameter(this=exp.var("HEADER"),
                                        expression=exp.var("TRUE" if header else "FALSE")))  # fmt: skip
    return params


def _duckdb_csv(con: Any, relation: str, names: list[str], write: Any) -> int:
    """The relation's rows as CSV, written by DuckDB to a temporary file and handed to
    ``write`` in chunks (an empty string is quoted, NULL is not: PostgreSQL's COPY tells them
    apart); returns the rows."""
    import os
    import tempfile

    q = exp.select(*[exp.column(c, quoted=True) for c in names]).from_(_table(relation))
    fd, path = tempfile.mkstemp(prefix="splice-migrate-", suffix=".csv")
    os.close(fd)
    try:
        out = exp.Copy(this=exp.Subquery(this=q), kind=False, files=[exp.Literal.string(path)],
                       params=_csv(header=False))  # fmt: skip
        (rows,) = con.execute(out.sql(dialect="duckdb")).fetchone()  # COPY says how many
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                write(chunk)
        return int(rows)
    finally:
        os.unlink(path)


def copy_relation(src_con: Any, src_dialect: str, dest_con: Any, dest_dialect: str,
                  relation: str, dest_relation: str | None = None) -> int:  # fmt: skip
    """Copy ``relation`` (schema.name) from the source connection to the destination one;
    returns the rows copied."""
    target = dest_relation or relation
    cols = columns(src_con, relation, src_dialect)
    if not cols:
        raise WarehouseError(
            f"{relation} is not in the source warehouse, so it cannot be copied.",
            fix="build it in the source target first (splice run), or plan the migration again",
        )
    names = [c for c, _t in cols]
    schema = exp.Schema(this=_table(target), expressions=[
        exp.ColumnDef(this=exp.to_identifier(c, quoted=True),
                      kind=transpile_type(t, src_dialect, dest_dialect)) for c, t in cols])  # fmt: skip
    statements = [
        exp.Create(this=exp.to_identifier(target.split(".", 1)[0], quoted=True), kind="SCHEMA",
                   exists=True),
        exp.Drop(this=_table(target), kind="TABLE", exists=True),
        exp.Create(this=schema, kind="TABLE"),
    ]  # fmt: skip
    n = 0
    if dest_dialect == "postgres":
        csv = src_dialect == "duckdb"  # DuckDB writes CSV itself, far faster than row by row
        copy_in = exp.Copy(this=exp.Schema(this=_table(target), expressions=[
            exp.to_identifier(c, quoted=True) for c in names]), kind=True,
            files=[exp.var("STDIN")], params=_csv() if csv else []).sql(dialect=dest_dialect)  # fmt: skip
        with dest_con.transaction():
            for s in statements:
                dest_con.execute(s.sql(dialect=dest_dialect))
            with dest_con.cursor() as cur, cur.copy(copy_in) as copy:
                if csv:
                    n = _duckdb_csv(src_con, relation, names, copy.write)
                else:
                    for batch in _rows(src_con, relation, names, src_dialect):
                        for row in batch:
                            copy.write_row(row)
                        n += len(batch)
        return n
    insert = exp.insert(exp.values([tuple(exp.Placeholder() for _ in names)]), _table(target),
                        columns=[exp.to_identifier(c, quoted=True) for c in names])  # fmt: skip
    dest_con.begin()
    try:
        for s in statements:
            dest_con.execute(s.sql(dialect=dest_dialect))
        for batch in _rows(src_con, relation, names, src_dialect):
            dest_con.executemany(insert.sql(dialect=dest_dialect), batch)
            n += len(batch)
        dest_con.commit()
    except BaseException:
        dest_con.rollback()
        raise
    return n
