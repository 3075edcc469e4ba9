"""A relation's rows in a date range, as sqlglot expressions: how many, and their checksum
(each engine hashes rows its own way: ``splice/warehouse/<engine>/rows.py``).

Shared by the repair (row counts of a draft, the undo's copies and checksums), the plan memo
(a checksum of SQLMesh's state tables) and the source evidence (date literals).

>>> print(count_query("wh.raw.fx", "rate_date", date(2026, 9, 28), date(2026, 9, 29), "duckdb"))
SELECT COUNT(*) FROM "wh"."raw"."fx" WHERE CAST("rate_date" AS DATE) BETWEEN CAST('2026-09-28' AS DATE) AND CAST('2026-09-29' AS DATE)
>>> print(checksum_query("wh.raw.fx", None, None, None, "duckdb"))
SELECT COUNT(*), CAST(COALESCE(SUM(CAST(HASH("_row") AS INT128)), 0) AS TEXT) FROM "wh"."raw"."fx" AS "_row"
"""

from __future__ import annotations

from datetime import date
from typing import Any

from sqlglot import exp

from splice.graph.relations import parse_relation
from splice.warehouse.engines import engine_module

#: The alias every checksummed row is read under (its hash is the hash of the whole row).
ROW = "_row"


def table(relation: Any, dialect: str, alias: str | None = None) -> exp.Expr:
    """A quoted table for a relation key (``catalog.schema.name``) or a Relation."""
    rel = parse_relation(relation, dialect=dialect) if isinstance(relation, str) else relation
    t = exp.table_(rel.name, db=rel.schema, catalog=rel.catalog, quoted=True)
    return t.as_(alias, quoted=True) if alias else t


def date_literal(d: date) -> exp.Expr:
    return exp.cast(exp.Literal.string(d.isoformat()), exp.DataType.build("DATE"))


def in_range(time_column: str | None, start: date | None, end: date | None) -> exp.Expr | None:
    """``CAST(time_column AS DATE) BETWEEN start AND end``; None when there is no range."""
    if not (time_column and start and end):
        return None
    col = exp.cast(exp.column(time_column, quoted=True), exp.DataType.build("DATE"))
    return exp.Between(this=col, low=date_literal(start), high=date_literal(end))


def _where(q: exp.Select, where: exp.Expr | None) -> exp.Select:
    return q.where(where) if where is not None else q


def rows_query(source: exp.Expr, where: exp.Expr | None) -> exp.Select:
    return _where(exp.select(exp.Star()).from_(source), where)


def count_query(relation: str, time_column: str | None, start: date | None, end: date | None,
                dialect: str) -> str:  # fmt: skip
    """Rows of ``relation`` (in the range, when a time column is given), as SQL."""
    q = exp.select(exp.Count(this=exp.Star())).from_(table(relation, dialect))
    return _where(q, in_range(time_column, start, end)).sql(dialect=dialect)


def row_hash(dialect: str = "duckdb") -> exp.Expr:
    """A 64-bit hash of the whole row :data:`ROW`, widened so that summing never overflows: the
    engine's own (``row_hash`` of ``splice/warehouse/<engine>/rows.py``).

    DuckDB hashes the row itself; PostgreSQL has no row hash, so the row's text form is hashed
    (the first 64 bits of its MD5) and summed as NUMERIC; Spark hashes the row's columns
    (``XXHASH64``), summed as ``DECIMAL(38, 0)``.

    >>> print(row_hash("spark").sql("spark"))
    CAST(XXHASH64(`_row`.*) AS DECIMAL(38, 0))

    >>> print(row_hash("postgres").sql("postgres"))
    CAST(CAST(CAST('x' || SUBSTRING(MD5(CAST("_row" AS TEXT)) FROM 1 FOR 16) AS BIT(64)) AS BIGINT) AS DECIMAL)
    """
    hashed: exp.Expr = engine_module(dialect, "rows").row_hash(ROW)
    return hashed


def checksum_select(source: exp.Expr, where: exp.Expr | None = None,
                    dialect: str = "duckdb") -> exp.Select:  # fmt: skip
    """Row count and an order-independent checksum (the sum of the rows' hashes) of
    ``source``, which must be aliased :data:`ROW`."""
    h = row_hash(dialect)
    total = exp.func("COALESCE", exp.Sum(this=h), exp.Literal.number(0))
    q = exp.select(exp.Count(this=exp.Star()), exp.cast(total, exp.DataType.build("TEXT")))
    return _where(q.from_(source), where)


def checksum_query(relation: str, time_column: str | None, start: date | None, end: date | None,
                   dialect: str) -> str:  # fmt: skip
    """:func:`checksum_select` of ``relation``'s rows in the range, as SQL."""
    source = table(relation, dialect, ROW)
    return checksum_select(source, in_range(time_column, start, end), dialect).sql(dialect=dialect)


def plain(v: Any) -> Any:
    """A value as JSON holds it (numbers as numbers, dates and the rest as text).

    >>> from decimal import Decimal
    >>> plain(Decimal("1.5")), plain(None), plain(date(2026, 9, 25))
    (1.5, None, '2026-09-25')
    """
    from decimal import Decimal

    if v is None or isinstance(v, (int, float, str, bool)):
        return v
    if isinstance(v, Decimal):
        return float(v)
    return str(v)


#: Hashes of values are kept below 2**52, so that a sum of them (taken modulo the same) is held
#: exactly by a double: a stored checksum compares equal exactly when the values did.
HASH_MODULUS = 2**52


def value_hash(value: exp.Expr, dialect: str = "duckdb") -> exp.Expr:
    """A hash in ``[0, 2**52)`` of one value, as text (NULL hashes as a value of its own).

    >>> print(value_hash(exp.column("region", quoted=True)).sql("duckdb"))
    HASH(COALESCE(CAST("region" AS TEXT), '<null>')) % 4503599627370496
    >>> print(value_hash(exp.column("region"), "spark").sql("spark"))
    PMOD(XXHASH64(COALESCE(CAST(region AS STRING), '<null>')), 4503599627370496)
    """
    text = exp.func(
        "COALESCE", exp.cast(value, exp.DataType.build("TEXT")), exp.Literal.string("<null>")
    )
    hashed: exp.Expr = engine_module(dialect, "rows").value_hash(text, HASH_MODULUS)
    return hashed


def values_checksum(value: exp.Expr, dialect: str = "duckdb") -> exp.Expr:
    """An aggregate: the sum of :func:`value_hash` over the rows, modulo ``2**52`` (order does
    not matter; any changed value changes it but by a chance of one in ``2**52``)."""
    total = exp.func("COALESCE", exp.Sum(this=value_hash(value, dialect)), exp.Literal.number(0))
    return exp.Mod(this=exp.Paren(this=total), expression=exp.Literal.number(HASH_MODULUS))
