"""Column lineage of one query in one pass: parse and qualify once, then walk the scopes once.

For every output column the walk collects the upstream ``(relation, column, kind)`` refs:

- ``direct``: the value flows into the column, possibly transformed (``amount * rate`` is direct
  from both), with OpenLineage subtype IDENTITY, TRANSFORMATION or AGGREGATION;
- ``indirect``: the column only affects it.  Per column: window PARTITION BY / ORDER BY (WINDOW),
  CASE / IF conditions (CONDITIONAL).  Per query (stored once, they apply to every output column):
  WHERE / HAVING / QUALIFY (FILTER), JOIN ON (JOIN), GROUP BY (GROUP_BY), ORDER BY (SORT), and
  the same edges of every CTE or derived table the query reads.

Nothing raises: what cannot be analysed is *opaque* with a reason a person can act on.

>>> ml = analyse_model(
...     "SELECT o.id, o.amount * r.rate AS amount_usd FROM raw.orders o "
...     "JOIN raw.rates r ON o.ccy = r.ccy WHERE o.status = 'paid'",
...     dialect="duckdb", default_catalog="warehouse",
...     schema={"warehouse": {"raw": {"orders": {"id": "", "amount": "", "ccy": "", "status": ""},
...                                   "rates": {"ccy": "", "rate": ""}}}})
>>> [r.text for r in ml.columns["amount_usd"].sources]
['warehouse.raw.orders.amount:direct', 'warehouse.raw.rates.rate:direct']
>>> sorted(r.text for r in ml.query_indirect)  # doctest: +NORMALIZE_WHITESPACE
['warehouse.raw.orders.ccy:indirect', 'warehouse.raw.orders.status:indirect',
 'warehouse.raw.rates.ccy:indirect']
>>> analyse_model("SELECT (1 FROM t", dialect="duckdb").opaque_reason
'could not parse: Expecting ). Line 1, Col: 14.'
"""

from __future__ import annotations

from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import traverse_scope
from sqlglot.schema import MappingSchema

from splice.graph.model import Relation
from splice.lineage.joins import join_keys
from splice.lineage.schema import for_sqlglot, iter_tables, norm_ident, normalise_schema
from splice.lineage.scopes import MASKED, Refs, Walker
from splice.lineage.types import ColumnLineage, ColumnRef, JoinKey, ModelLineage


def _to_refs(refs: Refs) -> list[ColumnRef]:
    out = []
    for (rel, col, kind), subs in refs.items():
        masked = MASKED in subs
        out.append(
            ColumnRef(rel, col, kind, tuple(sorted(x for x in subs if x != MASKED)), masked)  # type: ignore[arg-type]
        )
    out.sort(key=lambda r: (r.relation.key, r.column, r.kind))
    return out


def _first_line(err: BaseException) -> str:
    text = str(err).strip() or type(err).__name__
    return text.splitlines()[0][:300]


def query_of(parsed: list[exp.Expr | None]) -> tuple[exp.Expr | None, list[str]]:
    """The query of the statements: the last one (CREATE ... AS / INSERT ... SELECT unwrap)."""
    warnings: list[str] = []
    stmts = [s for s in parsed if s is not None]
    found: list[exp.Expr] = []
    for stmt in stmts:
        if isinstance(stmt, exp.Query):
            found.append(stmt)
        elif isinstance(stmt, (exp.Create, exp.Insert)) and isinstance(stmt.expression, exp.Query):
            found.append(stmt.expression)
    if not found:
        return None, warnings
    if len(stmts) > 1:
        warnings.append(f"{len(stmts)} statements: the lineage is that of the last query")
    return found[-1], warnings


def analyse_model(
    sql: str | exp.Expr | None,
    *,
    dialect: str = "duckdb",
    schema: Any = None,
    output: Relation | None = None,
    default_catalog: str | None = None,
    default_schema: str | None = None,
    identity_dialect: str | None = None,
) -> ModelLineage:
    """Column lineage of every output column of one query.  Never raises.

    The query is parsed in ``dialect`` (the model's own: a Snowflake model's ``DATEADD(month,
    1, x)`` names no column ``month``).  Relations and columns in the result are named by the case
    rules of ``identity_dialect`` (default: ``dialect``): a workspace passes its own, so models
    written in different dialects name the same relation and column the same way.

    ``schema`` is ``{catalog: {schema: {table: {column: type}}}}`` for the tables the query reads
    (types may be empty strings).  Two-part names in the SQL get ``default_catalog`` (or the one
    catalog the schema holds for that table); one-part names get ``default_schema`` (``main``).

    >>> analyse_model(None, dialect="duckdb").opaque_reason
    'no SQL to analyse (a Python model, or a model the tool did not render)'
    >>> ml = analyse_model("SELECT * FROM raw.x", dialect="duckdb", default_catalog="warehouse")
    >>> ml.opaque_reason
    'SELECT * over warehouse.raw.x whose columns are unknown: add column types'
    """
    base: dict[str, Any] = {"output": output, "dialect": dialect}
    try:
        if sql is None or (isinstance(sql, str) and not sql.strip()):
            return ModelLineage.opaque(
                "no SQL to analyse (a Python model, or a model the tool did not render)", **base
            )
        if isinstance(sql, str):
            if "{{" in sql or "{%" in sql:
                return ModelLineage.opaque(
                    "the SQL still contains Jinja ({{ ... }} or {% ... %}): pass the compiled SQL",
                    **base,
                )
            try:
                parsed = sqlglot.parse(sql, read=dialect)
            except Exception as e:  # noqa: BLE001 - sqlglot raises several kinds
                return ModelLineage.opaque(f"could not parse: {_first_line(e)}", **base)
        else:
            parsed = [sql.copy()]
        query, warnings = query_of(parsed)
        if query is None:
            kinds = ", ".join(sorted({type(s).__name__.upper() for s in parsed if s})) or "nothing"
            return ModelLineage.opaque(f"not a query (the SQL is {kinds})", **base)
        ml = _analyse_query(query, dialect, schema, default_catalog, default_schema, warnings, base)
        if identity_dialect and identity_dialect != dialect:
            ml = renamed(ml, identity_dialect)
        return ml
    except RecursionError:
        return ModelLineage.opaque("the query is nested too deeply to analyse", **base)
    except Exception as e:  # noqa: BLE001 - the contract is: never crash
        return ModelLineage.opaque(
            f"could not analyse: {type(e).__name__}: {_first_line(e)}", **base
        )


def renamed(ml: ModelLineage, dialect: str) -> ModelLineage:
    """``ml`` with every relation and column named by ``dialect``'s case rules.

    >>> from splice.graph.model import Relation
    >>> ml = analyse_model("SELECT amount FROM raw.orders", dialect="snowflake",
    ...                    default_catalog="warehouse")
    >>> [r.text for r in ml.columns["AMOUNT"].sources]
    ['WAREHOUSE.RAW.ORDERS.AMOUNT:direct']
    >>> [r.text for r in renamed(ml, "duckdb").columns["amount"].sources]
    ['warehouse.raw.orders.amount:direct']
    """
    rels: dict[Relation, Relation] = {}

    def rel(r: Relation) -> Relation:
        got = rels.get(r)
        if got is None:
            got = rels[r] = Relation(
                norm_ident(r.catalog, dialect) if r.catalog else None,
                norm_ident(r.schema, dialect),
                norm_ident(r.name, dialect),
            )
        return got

    def refs(items: list[ColumnRef]) -> list[ColumnRef]:
        return [
            x._replace(relation=rel(x.relation), column=norm_ident(x.column, dialect))
            for x in items
        ]

    def joins(items: list[JoinKey]) -> list[JoinKey]:
        return [j._replace(left=refs([j.left])[0], right=refs([j.right])[0]) for j in items]

    columns: dict[str, ColumnLineage] = {}
    for name, col in ml.columns.items():
        new = norm_ident(name, dialect)
        columns[new] = ColumnLineage(new, refs(col.sources), col.opaque_reason)
    return ModelLineage(
        columns=columns,
        query_indirect=refs(ml.query_indirect),
        opaque_reason=ml.opaque_reason,
        warnings=ml.warnings,
        reads=[rel(r) for r in ml.reads],
        output=ml.output,
        dialect=ml.dialect,
        joins=joins(ml.joins),
    )


def _analyse_query(
    query: exp.Expr,
    dialect: str,
    schema: Any,
    default_catalog: str | None,
    default_schema: str | None,
    warnings: list[str],
    base: dict[str, Any],
) -> ModelLineage:
    nschema = normalise_schema(schema, dialect, default_catalog=default_catalog)
    known: dict[tuple[str | None, str, str], set[str]] = {}
    catalogs: dict[tuple[str, str], set[str | None]] = {}
    for cat, db, table, cols in iter_tables(nschema):
        known[(cat, db, table)] = set(cols)
        catalogs.setdefault((db, table), set()).add(cat)
    catalog_of = {k: next(iter(v)) for k, v in catalogs.items() if len(v) == 1}
    cat_n = norm_ident(default_catalog, dialect) if default_catalog else None
    db_n = norm_ident(default_schema, dialect) if default_schema else None
    try:
        qualified = qualify(
            query,
            dialect=dialect,
            schema=MappingSchema(for_sqlglot(nschema), dialect=dialect, normalize=False),
            catalog=cat_n,
            db=db_n,
            validate_qualify_columns=False,
            quote_identifiers=False,
            identify=False,
        )
    except Exception as e:  # noqa: BLE001
        return ModelLineage.opaque(f"could not qualify columns: {_first_line(e)}", **base)
    scopes = traverse_scope(qualified)
    if not scopes:
        return ModelLineage.opaque("not a query sqlglot can walk", **base)
    walker = Walker(dialect, known, catalog_of, cat_n, db_n)
    walker.by_expr = {id(s.expression): s for s in scopes}
    root = walker.info(scopes[-1])
    for s in scopes:  # record every relation read, even in scopes the output does not use
        for _n, (_node, src) in s.selected_sources.items():
            if isinstance(src, exp.Table):
                walker.relation(src)
    columns = {n: ColumnLineage(n, _to_refs(root.cols[n]), root.opaque.get(n)) for n in root.names}
    reason = None
    if not root.names and not root.unknown_star:
        reason = "the query has no output columns"
    if root.unknown_star:
        rels = ", ".join(dict.fromkeys(root.unknown_star))
        reason = f"SELECT * over {rels} whose columns are unknown: add column types"
    for rel in walker.reads:
        if walker.columns_of(rel) is None:
            warnings.append(f"{rel.key} has no known columns")
    return ModelLineage(
        columns=columns,
        query_indirect=_to_refs(root.qlevel),
        opaque_reason=reason,
        warnings=list(dict.fromkeys(warnings + walker.warnings)),
        reads=sorted(walker.reads, key=lambda r: r.key),
        joins=join_keys(walker, scopes),
        **base,
    )
