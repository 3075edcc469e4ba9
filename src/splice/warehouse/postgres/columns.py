"""The columns PostgreSQL has: a relation's with their full types (``pg_attribute``), and every
column of the warehouse's own schemas (``information_schema``).

>>> print(all_columns_query())
SELECT table_catalog, table_schema, table_name, column_name, data_type FROM information_schema.columns WHERE NOT table_schema IN ('pg_catalog', 'information_schema') ORDER BY table_catalog NULLS FIRST, table_schema NULLS FIRST, table_name NULLS FIRST, ordinal_position NULLS FIRST
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlglot import exp

from splice.graph.relations import parse_relation

DIALECT = "postgres"


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


def all_columns_query() -> str:
    """Every column of the warehouse's own schemas (not the system's), in order."""
    system = [exp.Literal.string(s) for s in ("pg_catalog", "information_schema")]
    return (
        exp.select("table_catalog", "table_schema", "table_name", "column_name", "data_type")
        .from_(exp.table_("columns", db="information_schema"))
        .where(exp.not_(exp.column("table_schema").isin(*system)))
        .order_by("table_catalog", "table_schema", "table_name", "ordinal_position")
        .sql(dialect=DIALECT)
    )


def all_columns(con: Any, wanted: Callable[[], list[Any]]) -> list[Any]:
    """(catalog, schema, table, column, type) of every column of the warehouse's own schemas
    (``wanted()``: the relations wanted, for an engine that cannot list them all; PostgreSQL
    lists them all)."""
    return list(con.execute(all_columns_query()).fetchall())
