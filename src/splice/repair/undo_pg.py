"""The undo on PostgreSQL: the rows copied aside through ``COPY ... TO STDOUT`` into a file
(PostgreSQL's binary format), and read back through a temporary table inside the restore's
transaction.

The capture runs in one REPEATABLE READ transaction, so the copied rows, their count and their
checksum are of the same snapshot. The restore loads every saved file into a temporary table
(gone with the connection), checks each against its recorded checksum, and only then deletes and
inserts, all in the caller's one transaction: a failure anywhere leaves the warehouse as it was.

>>> print(copy_out_sql("wh.raw.fx", "rate_date", date(2026, 9, 28), date(2026, 9, 29)))
COPY (SELECT * FROM "wh"."raw"."fx" WHERE CAST("rate_date" AS DATE) BETWEEN CAST('2026-09-28' AS DATE) AND CAST('2026-09-29' AS DATE)) TO STDOUT WITH (FORMAT BINARY)
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

from sqlglot import exp

from splice.errors import RepairError
from splice.graph.relations import parse_relation
from splice.warehouse.rows import ROW, in_range, rows_query, table

DIALECT = "postgres"
SUFFIX = ".pgcopy"


def _binary() -> list[exp.Expr]:
    return [exp.CopyParameter(this=exp.var("FORMAT"), expression=exp.var("BINARY"))]


def copy_out_sql(relation: str, time_column: str | None, start: date | None,
                 end: date | None) -> str:  # fmt: skip
    """``COPY (the rows in range) TO STDOUT (FORMAT BINARY)``."""
    query = rows_query(table(relation, DIALECT), in_range(time_column, start, end))
    copy = exp.Copy(this=exp.Subquery(this=query), kind=False, files=[exp.var("STDOUT")],
                    params=_binary())  # fmt: skip
    return copy.sql(dialect=DIALECT)


def typed_columns(con: Any, relation: str) -> list[tuple[str, str]]:
    """The relation's columns with their full types (``numeric(18,4)``), in order; [] when the
    relation does not exist."""
    rel = parse_relation(relation, dialect=DIALECT)
    qualified = exp.table_(rel.name, db=rel.schema, quoted=True).sql(dialect=DIALECT)
    attr = exp.table_("pg_attribute", db="pg_catalog")
    q = (
        exp.select(
            "attname", exp.func("format_type", exp.column("atttypid"), exp.column("atttypmod"))
        )  # fmt: skip
        .from_(attr)
        .where(
            exp.and_(
                exp.column("attrelid").eq(exp.func("to_regclass", exp.Placeholder())),
                exp.GT(this=exp.column("attnum"), expression=exp.Literal.number(0)),
                exp.not_(exp.column("attisdropped")),
            )
        )
        .order_by("attnum")
    )
    rows = con.execute(q.sql(dialect=DIALECT).replace("?", "%s"), (qualified,)).fetchall()
    return [(str(n), str(t)) for n, t in rows]


def capture_one(con: Any, relation: str, time_column: str | None, start: date | None,
                end: date | None, path: Path, checksum_sql: str) -> tuple[int, str]:  # fmt: skip
    """Copy the rows in range to ``path`` and checksum them, in one snapshot."""
    with con.transaction():
        con.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        sql = copy_out_sql(relation, time_column, start, end)
        with con.cursor() as cur, path.open("wb") as f, cur.copy(sql) as copy:
            for data in copy:
                f.write(data)
        n, s = con.execute(checksum_sql).fetchone()
    return int(n), f"{int(n)}:{s}"


def load_saved(con: Any, path: Path, columns: list[tuple[str, str]], index: int) -> exp.Expr:
    """Load a saved file into a temporary table (call inside the restore's
    transaction) and return it aliased :data:`ROW`, typed as the relation was at capture."""
    if not path.exists():
        raise RepairError(
            f"the undo file {path} was deleted.",
            fix="the saved rows cannot be recovered; propose the repair again to take a new undo",
        )
    name = f"_splice_undo_{index}"
    schema = exp.Schema(
        this=exp.to_table(name, quoted=True),
        expressions=[
            exp.ColumnDef(
                this=exp.to_identifier(c, quoted=True), kind=exp.DataType.build(t, dialect=DIALECT)
            )  # fmt: skip
            for c, t in columns
        ],
    )
    # a temporary table goes with the connection (each restore has its own), and with the
    # transaction when it rolls back
    create = exp.Create(
        this=schema,
        kind="TABLE",
        properties=exp.Properties(expressions=[exp.TemporaryProperty()]),
    )
    con.execute(create.sql(dialect=DIALECT))
    copy_in = exp.Copy(this=exp.to_table(name, quoted=True), kind=True,
                       files=[exp.var("STDIN")], params=_binary())  # fmt: skip
    sql = copy_in.sql(dialect=DIALECT)
    with con.cursor() as cur, path.open("rb") as f, cur.copy(sql) as copy:
        while chunk := f.read(1 << 20):
            copy.write(chunk)
    return exp.to_table(name, quoted=True).as_(ROW, quoted=True)
