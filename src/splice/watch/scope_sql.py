"""A model's SQL in terms of a parent's time column: an output column as an expression of it
(:func:`time_expression`) and the running windows ordered by it (:func:`running_windows`), for
the scope walk (:mod:`splice.watch.scope`) and the as-of reads (:mod:`splice.watch.scope_asof`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from typing import Any

from sqlglot import exp

from splice.graph.model import Relation
from splice.warehouse.rows import date_literal
from splice.watch.damage import quoted_column

#: The column that stands for the parent's time column in a resolved expression.
PLACEHOLDER = "_splice_t"


@lru_cache(maxsize=64)
def parse_model(sql: str, dialect: str) -> exp.Expr | None:
    """The model's query, qualified (cached: callers copy what they change)."""
    import sqlglot
    from sqlglot.optimizer.qualify import qualify

    try:
        ast = sqlglot.parse_one(sql, read=dialect)
    except Exception:  # noqa: BLE001 - unparsable SQL: the node is rebuilt whole
        return None
    try:
        return qualify(ast, dialect=dialect, validate_qualify_columns=False)
    except Exception:  # noqa: BLE001 - qualification is a help, not a requirement
        return ast


def _is_parent(t: exp.Table, rel: Relation) -> bool:
    return t.name.lower() == rel.name.lower() and (
        not t.db or t.db.lower() == rel.schema.lower()
    )  # fmt: skip


def _selects(e: exp.Expr) -> list[exp.Expr]:
    """A query's projections (a set operation's are its first query's)."""
    return list(getattr(e, "selects", None) or [])


def resolve(e: exp.Expr, sc: Any, rel: Relation, column: str, depth: int = 0) -> exp.Expr | None:
    """``e`` (an expression of scope ``sc``) rewritten in terms of :data:`PLACEHOLDER`, the
    parent's time column, through CTEs and subqueries; None when it reads anything else."""
    from sqlglot.optimizer.scope import Scope

    if depth > 20:
        return None
    e = e.copy()
    holder = exp.Paren(this=e)
    for c in list(holder.find_all(exp.Column)):
        if c.table:
            src = sc.sources.get(c.table)
        else:
            src = next(iter(sc.sources.values())) if len(sc.sources) == 1 else None
        if isinstance(src, Scope):
            proj = next(
                (s for s in _selects(src.expression) if s.alias_or_name.lower() == c.name.lower()),
                None,
            )
            if proj is None:
                return None
            inner = resolve(proj.unalias(), src, rel, column, depth + 1)
            if inner is None:
                return None
            c.replace(inner)
        elif isinstance(src, exp.Table) and _is_parent(src, rel) and c.name.lower() == column:
            c.replace(quoted_column(PLACEHOLDER))
        else:
            return None
    return holder.this


def time_expression(sql: str, dialect: str, output: str, rel: Relation, column: str) -> exp.Expr | None:  # fmt: skip
    """The model's output column ``output`` as an expression of the parent's time column.

    >>> sql = "select cast(date_trunc('month', g.d) as date) as month from s.t as g"
    >>> time_expression(sql, "duckdb", "month", Relation(None, "s", "t"), "d").sql("duckdb")
    'CAST(DATE_TRUNC(\\'MONTH\\', "_splice_t") AS DATE)'
    """
    from sqlglot.optimizer.scope import build_scope

    ast = parse_model(sql, dialect)
    root = build_scope(ast) if ast is not None else None
    if root is None:
        return None
    proj = next(
        (s for s in _selects(root.expression) if s.alias_or_name.lower() == output.lower()),
        None,
    )
    return resolve(proj.unalias(), root, rel, column) if proj is not None else None


@dataclass
class RunningWindow:
    """A cumulative aggregate ordered by the time: ``partition`` resolved in terms of the time
    (None when it depends on anything else: then every later interval counts)."""

    text: str
    partition: list[exp.Expr] | None


def running_windows(sql: str, dialect: str, rel: Relation, column: str) -> list[RunningWindow]:
    """The cumulative aggregates (running totals) of a model ordered by the parent's time.

    >>> sql = ("select d, sum(x) over (partition by date_trunc('quarter', d) order by d "
    ...        "rows between unbounded preceding and current row) as qtd from s.t")
    >>> [w.partition[0].sql("duckdb") for w in running_windows(sql, "duckdb",
    ...     Relation(None, "s", "t"), "d")]
    ['DATE_TRUNC(\\'QUARTER\\', "_splice_t")']
    """
    from sqlglot.optimizer.scope import traverse_scope

    ast = parse_model(sql, dialect)
    if ast is None:
        return []
    out: list[RunningWindow] = []
    for sc in traverse_scope(ast):
        for w in sc.expression.find_all(exp.Window):
            if w.find_ancestor(exp.Select) is not sc.expression or not isinstance(
                w.this, exp.AggFunc
            ):
                continue
            order = w.args.get("order")
            spec = w.args.get("spec")
            if order is None or not order.expressions:
                continue
            if spec is not None and not (
                str(spec.args.get("start") or "").upper() == "UNBOUNDED"
                and str(spec.args.get("start_side") or "").upper() == "PRECEDING"
            ):
                continue
            key = resolve(order.expressions[0].this, sc, rel, column)
            if key is None or not any(
                c.name == PLACEHOLDER for c in exp.Paren(this=key).find_all(exp.Column)
            ):
                continue
            parts = [resolve(p, sc, rel, column) for p in w.args.get("partition_by") or []]
            resolved: list[exp.Expr] | None = [p for p in parts if p is not None]
            if len(resolved or []) != len(parts):
                resolved = None
            out.append(RunningWindow(w.sql(dialect=dialect), resolved))
    return out


def substitute(e: exp.Expr, by: exp.Expr) -> exp.Expr:
    """``e`` with :data:`PLACEHOLDER` replaced by ``by``."""
    holder = exp.Paren(this=e.copy())
    for c in list(holder.find_all(exp.Column)):
        if c.name == PLACEHOLDER:
            c.replace(by.copy())
    return holder.this


def placeholder_values(days: list[date]) -> exp.Expr:
    """``days`` as a VALUES table whose one column is :data:`PLACEHOLDER`."""
    return exp.values([(date_literal(d),) for d in days], alias="_v", columns=[PLACEHOLDER])
