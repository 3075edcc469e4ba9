"""Schemas and identifiers for column lineage, normalised by the dialect's rules.

A schema is ``{catalog: {schema: {table: {column: type}}}}`` (types may be empty strings).  A
two-level mapping ``{schema: {table: {column: type}}}`` is accepted too and gets the default
catalog.  Tables with no columns are dropped: their columns are *unknown*, which is not the same as
having none (``SELECT *`` over them must not expand to nothing).

>>> normalise_schema({"WH": {"Raw": {"T": {"A": "INT", "b": ""}, "empty": {}}}}, "duckdb")
{'wh': {'raw': {'t': {'a': 'INT', 'b': ''}}}}
>>> normalise_schema({"raw": {"t": {"a": ""}}}, "duckdb", default_catalog="warehouse")
{'warehouse': {'raw': {'t': {'a': ''}}}}
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect

NestedSchema = dict[str, dict[str, dict[str, dict[str, str]]]]


@lru_cache(maxsize=262144)
def norm_ident(name: str, dialect: str) -> str:
    """One identifier, normalised as the dialect treats it unquoted.

    Quoted and unquoted spellings meet (the same rule as :mod:`splice.graph.relations`).

    >>> norm_ident("Amount", "duckdb"), norm_ident("Amount", "snowflake")
    ('amount', 'AMOUNT')
    """
    ident = exp.to_identifier(name)
    if ident is None:
        return name
    ident.set("quoted", False)
    return Dialect.get_or_raise(dialect).normalize_identifier(ident).name


def _depth(node: Any) -> int:
    """Levels of dicts above the column -> type mapping (3 for catalog.schema.table)."""
    d = 0
    while isinstance(node, dict) and node:
        first = next(iter(node.values()))
        if not isinstance(first, dict):
            return d
        node = first
        d += 1
    return d


def normalise_schema(
    schema: Any, dialect: str, *, default_catalog: str | None = None
) -> NestedSchema | dict[str, dict[str, dict[str, str]]]:
    """Normalise names, drop tables without columns, give 2-level entries the default catalog.

    The result is three levels deep when a catalog is known (given or present), else two.
    """
    if not schema:
        return {}
    if hasattr(schema, "mapping"):  # a sqlglot MappingSchema
        schema = schema.mapping
    cat_default = norm_ident(default_catalog, dialect) if default_catalog else None
    flat: list[tuple[str | None, str, str, dict[str, str]]] = []
    for k1, v1 in schema.items():
        if not isinstance(v1, dict):
            continue
        depth = _depth(v1) + 1
        if depth >= 3:
            for k2, v2 in v1.items():
                for k3, cols in (v2 or {}).items():
                    flat.append((k1, k2, k3, cols))
        elif depth == 2:
            for k2, cols in v1.items():
                flat.append((None, k1, k2, cols))
        elif depth == 1:  # {table: {col: type}}: no schema given
            flat.append((None, "main", k1, v1))
    has_catalog = cat_default is not None or any(c is not None for c, *_ in flat)
    out: dict[str, Any] = {}
    for cat, db, table, cols in flat:
        if not isinstance(cols, dict) or not cols:
            continue
        ncols = {norm_ident(str(c), dialect): "" if t is None else str(t) for c, t in cols.items()}
        db_n, table_n = norm_ident(db, dialect), norm_ident(table, dialect)
        if has_catalog:
            cat_n = norm_ident(cat, dialect) if cat else (cat_default or "")
            out.setdefault(cat_n, {}).setdefault(db_n, {})[table_n] = ncols
        else:
            out.setdefault(db_n, {})[table_n] = ncols
    return out


def iter_tables(schema: dict[str, Any]) -> list[tuple[str | None, str, str, dict[str, str]]]:
    """``(catalog, schema, table, columns)`` of a normalised schema (2 or 3 levels)."""
    rows: list[tuple[str | None, str, str, dict[str, str]]] = []
    depth = _depth(schema)
    for k1, v1 in schema.items():
        if depth >= 3:
            for k2, v2 in v1.items():
                for k3, cols in v2.items():
                    rows.append((k1 or None, k2, k3, cols))
        else:
            for k2, cols in v1.items():
                rows.append((None, k1, k2, cols))
    return rows


def for_sqlglot(schema: dict[str, Any]) -> dict[str, Any]:
    """The normalised schema with every type made parseable for sqlglot (empty -> UNKNOWN)."""
    depth = _depth(schema)

    def cols(c: dict[str, str]) -> dict[str, str]:
        return {k: (v or "UNKNOWN") for k, v in c.items()}

    if depth >= 3:
        return {
            a: {b: {t: cols(c) for t, c in tables.items()} for b, tables in v.items()}
            for a, v in schema.items()
        }
    return {b: {t: cols(c) for t, c in tables.items()} for b, tables in schema.items()}
