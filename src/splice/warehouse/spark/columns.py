"""The columns Spark has, from ``DESCRIBE TABLE`` (Spark has no information_schema for its
session catalog): a relation's with its partition columns, and those of the relations wanted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlglot import exp

from splice.errors import WarehouseError
from splice.graph.relations import parse_relation

DIALECT = "spark"


def layout(con: Any, relation: str) -> tuple[list[tuple[str, str]], list[str]]:
    """The relation's (column, type) pairs in order, and its partition columns, from
    ``DESCRIBE TABLE``; ``([], [])`` when Spark does not have it."""
    rel = parse_relation(relation, dialect=DIALECT)
    target = exp.table_(rel.name, db=rel.schema, catalog=rel.catalog, quoted=True)
    try:
        rows = con.execute(exp.Describe(this=target).sql(dialect=DIALECT)).fetchall()
    except WarehouseError:
        return [], []
    columns: list[tuple[str, str]] = []
    partitions: list[str] = []
    section = "columns"
    for name, dtype, *_rest in rows:
        name = str(name or "").strip()
        if name == "# Partition Information":
            section = "partitions"
        elif name == "# col_name" and section == "partitions":
            continue
        elif not name or name.startswith("#"):
            section = "other"  # the detailed sections follow
        elif section == "columns":
            columns.append((name, str(dtype)))
        elif section == "partitions":
            partitions.append(name)
    return columns, partitions


def typed_columns(con: Any, relation: str) -> list[tuple[str, str]]:
    """The relation's (column, type) pairs in order; [] when Spark does not have it."""
    return layout(con, relation)[0]


def all_columns(con: Any, wanted: Callable[[], list[Any]]
                ) -> list[tuple[str, str, str, str, str]]:  # fmt: skip
    """(catalog, schema, table, column, type) of each relation ``wanted()`` names that Spark
    has (relations it does not have are left out): Spark cannot list every column at once."""
    out = []
    for rel in wanted():
        table = exp.table_(rel.name, db=rel.schema, quoted=True)
        try:
            rows = con.execute(exp.Describe(this=table).sql(dialect=DIALECT)).fetchall()
        except WarehouseError:
            continue  # not built (yet)
        for name, dtype, *_rest in rows:
            if not name or str(name).startswith("#"):
                break  # the partitioning and detailed sections follow
            out.append((rel.catalog, rel.schema, rel.name, str(name), str(dtype)))
    return out
