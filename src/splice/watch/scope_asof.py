"""Missing intervals upstream are damage downstream too: the rows an as-of join gave an older
interval (part of an incident's scope, :mod:`splice.watch.scope`).

When a parent's damaged intervals have no rows at all (a vendor down for two days: the load
failed, the rates are missing), no row downstream carries them, so the rows that should have
read them are not found by their link (``fct_bookings_usd.rate_date`` is never Monday).  They
are found through the join instead: the child's SQL compares its own time column with the
parent's in a range (``b.booking_date >= r.rate_date``: each booking reads the latest rate on
or before its day).  For a missing interval ``m`` of the parent, the rows whose own time falls
from ``m`` up to the parent's next present interval (or, for a forward join
``t <= parent``, after the previous one up to ``m``) would have read ``m``; they read another
interval instead (their link column, when the child has one, says which: older than ``m``, or
none).

The join is read from the model's SQL with sqlglot (through CTEs and subqueries), so any
model comparing its time with a parent's time in a range is covered, whatever the names.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from sqlglot import exp

from splice.graph.model import Relation
from splice.warehouse.rows import date_literal, table

#: Comparisons that make a range join, and the side the child's time stands on for
#: ``child OP parent`` to mean "the child reads a parent interval at or before it".
_BACKWARD = {exp.GTE: True, exp.GT: True, exp.LTE: False, exp.LT: False}


@dataclass(frozen=True)
class RangeJoin:
    """``child_time >= parent_time`` (``backward``: each row reads the latest parent interval
    at or before it) or ``child_time <= parent_time`` (forward)."""

    text: str
    backward: bool


def _strip(e: exp.Expr) -> exp.Expr:
    while isinstance(e, exp.Cast | exp.Paren | exp.Alias):
        e = e.this
    return e


def _base_column(e: exp.Expr, sc: Any, depth: int = 0) -> tuple[str, str, str] | None:
    """(schema, table, column) of the base table column ``e`` copies (through CTEs and
    subqueries, casts allowed); None when it is computed."""
    from sqlglot.optimizer.scope import Scope

    e = _strip(e)
    if depth > 20 or not isinstance(e, exp.Column):
        return None
    src = sc.sources.get(e.table) if e.table else (
        next(iter(sc.sources.values())) if len(sc.sources) == 1 else None)  # fmt: skip
    if isinstance(src, Scope):
        proj = next((s for s in getattr(src.expression, "selects", None) or []
                     if s.alias_or_name.lower() == e.name.lower()), None)  # fmt: skip
        return _base_column(proj, src, depth + 1) if proj is not None else None
    if isinstance(src, exp.Table):
        return (src.db.lower(), src.name.lower(), e.name.lower())
    return None


def range_joins(sql: str, dialect: str, output: str, rel: Relation, column: str) -> list[RangeJoin]:
    """The range comparisons between the model's output column ``output`` (its time) and
    ``rel.column`` (the parent's time), in any JOIN condition or WHERE of the query.

    >>> sql = ("with r as (select d as rate_day, x from s.rates) select b.day, r.x from "
    ...        "s.bookings as b left join r on b.day >= r.rate_day")
    >>> [j.backward for j in range_joins(sql, "duckdb", "day", Relation(None, "s", "rates"), "d")]
    [True]
    >>> range_joins(sql, "duckdb", "x", Relation(None, "s", "rates"), "d")
    []
    """
    from sqlglot.optimizer.scope import build_scope, traverse_scope

    from splice.watch.scope_sql import PLACEHOLDER, parse_model, resolve

    ast = parse_model(sql, dialect)
    if ast is None:
        return []
    root = build_scope(ast)
    if root is None:
        return []
    proj = next((s for s in getattr(root.expression, "selects", None) or []
                 if s.alias_or_name.lower() == output.lower()), None)  # fmt: skip
    own = _base_column(proj, root) if proj is not None else None
    if own is None:
        return []

    def parent_side(e: exp.Expr, sc: Any) -> bool:
        got = resolve(e, sc, rel, column)
        return got is not None and any(
            c.name == PLACEHOLDER for c in exp.Paren(this=got).find_all(exp.Column)
        )

    out: list[RangeJoin] = []
    for sc in traverse_scope(ast):
        conds = [j.args.get("on") for j in sc.expression.args.get("joins") or []]
        where = sc.expression.args.get("where")
        conds += [where.this] if where is not None else []
        for cond in [c for c in conds if c is not None]:
            for cmp in cond.find_all(*_BACKWARD):
                a, b = cmp.this, cmp.expression
                for mine, theirs, flip in ((a, b, False), (b, a, True)):
                    if _base_column(mine, sc) == own and parent_side(theirs, sc):
                        back = _BACKWARD[type(cmp)] != flip
                        out.append(RangeJoin(cmp.sql(dialect=dialect), back))
    return out


def _cast_date(e: exp.Expr) -> exp.Expr:
    return exp.cast(e, exp.DataType.build("DATE"))


def _neighbour(walk: Any, rel: Relation, tc: str, day: date, after: bool) -> date | None:
    """The parent's nearest present interval after (or before) ``day``."""
    t = _cast_date(exp.column(tc, quoted=True))
    agg = exp.Min(this=t) if after else exp.Max(this=t)
    cond = t > date_literal(day) if after else t < date_literal(day)
    q = exp.select(agg).from_(table(rel, walk.dialect)).where(cond)
    row = walk.con.execute(q.sql(dialect=walk.dialect)).fetchone()
    return row[0] if row and isinstance(row[0], date) else None


def present_days(walk: Any, rel: Relation, tc: str, days: list[date]) -> set[date]:
    """Which of ``days`` the relation has rows for."""
    t = _cast_date(exp.column(tc, quoted=True))
    q = exp.select(t).distinct().from_(table(rel, walk.dialect))
    return set(walk.days(q.where(t.isin(*map(date_literal, days)))))


def asof_days(
    walk: Any, nid: str, rel: Relation, tc: str, parent: Any, parent_rel: Relation,
    missing: list[date], links: list[str],
) -> tuple[list[date], str] | None:  # fmt: skip
    """The intervals of ``nid`` whose rows read another interval in place of the parent's
    ``missing`` ones, and why; None when ``nid`` joins the parent by no range."""
    from splice.watch.damage import span

    sql, dialect = walk.sql(nid)
    joins: list[RangeJoin] = []
    for r in walk.relations(parent.node) if sql else []:
        joins = range_joins(sql or "", dialect, tc, r, parent.time_column)
        if joins:
            break
    if not joins:
        return None
    back = joins[0].backward
    t = _cast_date(exp.column(tc, quoted=True))
    conds: list[exp.Expr] = []
    for m in sorted(missing):
        edge = _neighbour(walk, parent_rel, parent.time_column, m, after=back)
        if back:
            window: exp.Expr = t >= date_literal(m)
            if edge is not None:
                window = exp.and_(window, t < date_literal(edge))
        else:
            window = t <= date_literal(m)
            if edge is not None:
                window = exp.and_(window, t > date_literal(edge))
        if links:  # the row read another interval than m (or none): its link says so
            other = [exp.or_(exp.column(c, quoted=True).is_(exp.null()),
                             _cast_date(exp.column(c, quoted=True)) < date_literal(m) if back
                             else _cast_date(exp.column(c, quoted=True)) > date_literal(m))
                     for c in links]  # fmt: skip
            window = exp.and_(window, *other)
        conds.append(exp.paren(window))
    q = exp.select(t).distinct().from_(table(rel, walk.dialect)).where(exp.or_(*conds))
    got = walk.days(q)
    pname = walk.graph.nodes[parent.node].name
    why = (f"its rows whose {tc} falls where {pname} has no rows ({span(sorted(missing))}) read "
           f"{'an older' if back else 'a later'} {parent.time_column} through the range join "
           f"({joins[0].text}): {span(got)}")  # fmt: skip
    return got, why


def read_elsewhere(walk: Any, nid: str, p: Any, rel: Relation, tc: str, links: list[str],
                   dmg: Any) -> list[date] | None:  # fmt: skip
    """The intervals of ``nid`` whose rows read another interval in place of those of the
    parent's (``p``, a :class:`~splice.watch.scope.Damage`) damaged intervals it has no rows
    for (None: it has rows for all of them, or no range join to follow); the reason is added
    to ``dmg.why``."""
    from splice.watch.specs import relation_of

    prel = relation_of(walk.graph.nodes[p.node])
    if prel is None or p.time_column is None or not p.days:
        return None
    have = present_days(walk, prel, p.time_column, p.days)
    missing = [d for d in p.days if d not in have]
    found = asof_days(walk, nid, rel, tc, p, prel, missing, links) if missing else None
    if found is None:
        return None
    dmg.why.append(found[1])
    return found[0]
