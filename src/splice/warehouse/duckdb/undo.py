"""The undo on DuckDB: the rows copied aside with ``COPY ... TO`` a Parquet file, read back with
``read_parquet`` and put back in one transaction (:func:`splice.warehouse.saved.in_one_transaction`).

>>> print(copy_out_sql("wh.raw.fx", "rate_date", date(2026, 9, 28), date(2026, 9, 29),
...                    "/u/1.parquet"))
COPY (SELECT * FROM "wh"."raw"."fx" WHERE CAST("rate_date" AS DATE) BETWEEN CAST('2026-09-28' AS DATE) AND CAST('2026-09-29' AS DATE)) TO '/u/1.parquet' WITH (FORMAT PARQUET)
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

from sqlglot import exp

from splice.warehouse.rows import ROW, in_range, rows_query, table
from splice.warehouse.saved import Current, Shown, check_parquet, checksum_of, in_one_transaction

DIALECT = "duckdb"
SUFFIX = ".parquet"


def copy_out_sql(relation: str, time_column: str | None, start: date | None, end: date | None,
                 path: str) -> str:  # fmt: skip
    """``COPY (the rows in range) TO path (FORMAT PARQUET)``."""
    query = rows_query(table(relation, DIALECT), in_range(time_column, start, end))
    copy = exp.Copy(
        this=exp.Subquery(this=query),
        kind=False,
        files=[exp.Literal.string(path)],
        params=[exp.CopyParameter(this=exp.var("FORMAT"), expression=exp.var("PARQUET"))],
    )
    return copy.sql(dialect=DIALECT)


def capture_one(con: Any, relation: str, time_column: str | None, start: date | None,
                end: date | None, path: Path, checksum_sql: str) -> tuple[int, str]:  # fmt: skip
    """Copy the rows in range to ``path`` (Parquet) and checksum them."""
    con.execute(copy_out_sql(relation, time_column, start, end, str(path)))
    return checksum_of(con, checksum_sql)


def check_saved(path: Path, relation: str, columns: list[tuple[str, str]]) -> None:
    """Before any warehouse is opened: the saved file holds ``relation``'s columns."""
    check_parquet(path, relation, columns)


def load_saved(con: Any, path: Path, relation: str, columns: list[tuple[str, str]],
               index: int) -> exp.Expr:  # fmt: skip
    """The saved rows, typed as the relation's columns were at capture, aliased :data:`ROW`."""
    reader = exp.Table(this=exp.func("read_parquet", exp.Literal.string(str(path))))
    cols = [
        exp.cast(exp.column(n, quoted=True), exp.DataType.build(t, dialect=DIALECT)).as_(
            n, quoted=True
        )
        for n, t in columns
    ]
    return exp.Subquery(
        this=exp.select(*cols).from_(reader),
        alias=exp.TableAlias(this=exp.to_identifier(ROW, quoted=True)),
    )


def put_back(con: Any, entries: list[Any], load: Callable[[], list[exp.Expr]], current: Current,
             *, keep: bool, shown: Shown) -> list[str]:  # fmt: skip
    """Restore every entry in one transaction (rolled back unless ``keep``): see
    :func:`splice.warehouse.saved.in_one_transaction`."""
    return in_one_transaction(con, entries, load, current, keep=keep, dialect=DIALECT,
                              shown=shown)  # fmt: skip
