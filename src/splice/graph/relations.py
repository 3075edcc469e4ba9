"""Relation names, normalised by the dialect's identifier rules.

``"warehouse"."marts"."x"`` (SQLMesh's fqn) and ``warehouse.marts.x`` (dbt's relation_name in
another spelling) are the same relation once normalised.

>>> parse_relation('"warehouse"."marts"."agg_gmv_daily"').key
'warehouse.marts.agg_gmv_daily'
>>> parse_relation("WAREHOUSE.Marts.X") == parse_relation('"warehouse"."marts"."x"')
True
>>> parse_relation("raw.fx_rates", default_catalog="warehouse").key
'warehouse.raw.fx_rates'
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect

from splice.graph.model import Relation

#: The schema an unqualified name resolves to, by dialect (DuckDB's "main" otherwise).
DEFAULT_SCHEMA = {"postgres": "public"}


def default_schema(dialect: str) -> str:
    """The schema an unqualified relation name is in.

    >>> default_schema("postgres"), default_schema("duckdb")
    ('public', 'main')
    """
    return DEFAULT_SCHEMA.get(dialect, "main")


#: A dotted name of one to three plain, unquoted identifiers.
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*){0,2}")
#: ... or with each part in double quotes (SQLMesh's fqn), where they quote identifiers
_PART = r'(?:[A-Za-z_][A-Za-z0-9_]*|"[A-Za-z_][A-Za-z0-9_]*")'
_QUOTED = re.compile(rf"{_PART}(?:\.{_PART}){{0,2}}")


def is_plain_name(text: str, dialect: str) -> bool:
    """Whether ``text`` is one to three dotted plain identifiers, each unquoted or in double
    quotes where ``dialect`` quotes identifiers with them: a relation's name that needs no
    parser (a table function or a quoted file path never is one).

    >>> is_plain_name('"wh"."main"."orders"', "duckdb"), is_plain_name("raw.orders", "duckdb")
    (True, True)
    >>> is_plain_name("read_csv_auto('x.csv')", "duckdb"), is_plain_name('"a"."b"', "bigquery")
    (False, False)
    """
    return bool(
        _PLAIN.fullmatch(text)
        or (
            _QUOTED.fullmatch(text)
            and '"' in Dialect.get_or_raise(dialect).tokenizer_class.IDENTIFIERS
        )
    )


@lru_cache(maxsize=65536)
def _parse(text: str, dialect: str, read: str | None = None) -> tuple[str | None, str, str]:
    d = Dialect.get_or_raise(dialect)
    if is_plain_name(
        text, read or dialect
    ):  # a.b.c of plain names, each quoted or not: no parser needed
        names = text.replace('"', "").split(".")
        idents: list[Any] = [None] * (3 - len(names)) + [exp.to_identifier(n) for n in names]
    else:
        table = exp.to_table(text, dialect=read or dialect)
        idents = [table.args.get("catalog"), table.args.get("db"), table.this]
    parts: list[str | None] = []
    for ident in idents:
        if ident is None or not ident.name:
            parts.append(None)
            continue
        ident = ident.copy() if isinstance(ident, exp.Identifier) else exp.to_identifier(ident.name)
        # DuckDB (and most dialects here) resolve quoted and unquoted names case-insensitively;
        # normalise both so a quoted fqn and an unquoted ref meet.
        ident.set("quoted", False)
        parts.append(d.normalize_identifier(ident).name)
    catalog, schema, name = parts
    if not name:
        raise ValueError(f"not a relation name: {text!r}")
    return catalog, schema or default_schema(dialect), name


def parse_relation(
    text: str,
    *,
    dialect: str = "duckdb",
    default_catalog: str | None = None,
    read: str | None = None,
) -> Relation:
    """Parse a 1-, 2- or 3-part name into a normalised :class:`Relation`.

    ``read`` is the dialect the name is written in (default: ``dialect``, whose case rules name
    the result): a BigQuery project's relation, in a workspace named by DuckDB's rules:

    >>> parse_relation("`Proj`.`Sales`.`Orders`", read="bigquery").key
    'proj.sales.orders'
    """
    catalog, schema, name = _parse(text.strip(), dialect, read)
    if catalog is None and default_catalog:
        catalog = normalise_identifier(default_catalog, dialect)
    return Relation(catalog, schema, name)


def normalise_identifier(name: str, dialect: str = "duckdb") -> str:
    """Normalise one identifier by the dialect's rules.

    >>> normalise_identifier("Warehouse")
    'warehouse'
    """
    ident = exp.to_identifier(name)
    ident.set("quoted", False)
    return Dialect.get_or_raise(dialect).normalize_identifier(ident).name


def relation_from_parts(
    catalog: str | None, schema: str | None, name: str, *, dialect: str = "duckdb"
) -> Relation:
    return Relation(
        normalise_identifier(catalog, dialect) if catalog else None,
        normalise_identifier(schema, dialect) if schema else default_schema(dialect),
        normalise_identifier(name, dialect),
    )
