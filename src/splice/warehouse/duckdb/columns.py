"""The columns DuckDB has, from its information_schema.

>>> print(all_columns_query())
SELECT table_catalog, table_schema, table_name, column_name, data_type FROM information_schema.columns ORDER BY table_catalog NULLS FIRST, table_schema NULLS FIRST, table_name NULLS FIRST, ordinal_position NULLS FIRST
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlglot import exp

from splice.graph.relations import parse_relation

DIALECT = "duckdb"


def typed_columns(con: Any, relation: str) -> list[tuple[str, str]]:
    """The relation's (column, type) pairs in order; [] when it does not exist."""
    rel = parse_relation(relation, dialect=DIALECT)
    q = exp.select("column_name", "data_type").from_(exp.table_("columns", db="information_schema"))
    conds = [exp.column("table_name").eq(exp.Literal.string(rel.name))]
    if rel.schema:
        conds.append(exp.column("table_schema").eq(exp.Literal.string(rel.schema)))
    if rel.catalog:
        conds.append(exp.column("table_catalog").eq(exp.Literal.string(rel.catalog)))
    q = q.where(exp.and_(*conds)).order_by("ordinal_position")
    return [(str(n), str(t)) for n, t in con.execute(q.sql(dialect=DIALECT)).fetchall()]


def all_columns_query() -> str:
    """Every column of every table and view, in order."""
    return (
        exp.select("table_catalog", "table_schema", "table_name", "column_name", "data_type")
        .from_(exp.table_("columns", db="information_schema"))
        .order_by("table_catalog", "table_schema", "table_name", "ordinal_position")
        .sql(dialect=DIALECT)
    )


def all_columns(con: Any, wanted: Callable[[], list[Any]]) -> list[Any]:
    """(catalog, schema, table, column, type) of every column the warehouse has (``wanted()``:
    the relations wanted, for an engine that cannot list them all; DuckDB lists them all)."""
    return list(con.execute(all_columns_query()).fetchall())
