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

from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

from sqlglot import exp

from splice.errors import RepairError
from splice.warehouse.rows import ROW, in_range, rows_query, table
from splice.warehouse.saved import Current, Shown, checksum_of, in_one_transaction

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


def capture_one(con: Any, relation: str, time_column: str | None, start: date | None,
                end: date | None, path: Path, checksum_sql: str) -> tuple[int, str]:  # fmt: skip
    """Copy the rows in range to ``path`` and checksum them, in one snapshot."""
    with con.transaction():
        con.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        sql = copy_out_sql(relation, time_column, start, end)
        with con.cursor() as cur, path.open("wb") as f, cur.copy(sql) as copy:
            for data in copy:
                f.write(data)
        return checksum_of(con, checksum_sql)


def check_saved(path: Path, relation: str, columns: list[tuple[str, str]]) -> None:
    """Nothing to check before the warehouse is opened: PostgreSQL's binary ``COPY`` carries no
    column names, so a file of another relation's is refused as it loads (:func:`load_saved`)."""


def load_saved(con: Any, path: Path, relation: str, columns: list[tuple[str, str]],
               index: int) -> exp.Expr:  # fmt: skip
    """Load a saved file into a temporary table (call inside the restore's transaction) and
    return it aliased :data:`ROW`, typed as the relation was at capture; a file that is not
    ``relation``'s undo is refused by name."""
    import psycopg

    try:
        return _load(con, path, columns, index)
    except psycopg.errors.DataError as err:  # another relation's rows, or no COPY file
        raise RepairError(
            f"the saved rows in {path} do not match the columns of {relation} "
            f"({str(err).splitlines()[0]}): the file is not this relation's undo, so "
            "nothing was restored.",
            fix="the undo files were changed outside Splice; propose again to take a new undo",
        ) from None


def _load(con: Any, path: Path, columns: list[tuple[str, str]], index: int) -> exp.Expr:
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


def put_back(con: Any, entries: list[Any], load: Callable[[], list[exp.Expr]], current: Current,
             *, keep: bool, shown: Shown) -> list[str]:  # fmt: skip
    """Restore every entry in one transaction (rolled back unless ``keep``): see
    :func:`splice.warehouse.saved.in_one_transaction`; the saved files load into temporary
    tables inside it."""
    return in_one_transaction(con, entries, load, current, keep=keep, dialect=DIALECT,
                              shown=shown)  # fmt: skip
