"""The damage of a changed key downstream: the rows that no longer find their partner.

The scope walk (:mod:`splice.watch.scope`) follows the rows that *read* a bad interval.  When
the values of a join key change (``eur`` for ``EUR``), the rows that should have joined the
bad intervals read none of them: they found an older partner (a weekend rate that holds until
the next one) or none.  So for a domain change at the origin, every model that joins the
changed key (:mod:`splice.watch.graph_monitors`) is damaged on its own intervals whose
partner interval, the origin's latest interval on or before, is a bad one; the walk goes on
downstream from there.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from splice.warehouse.rows import date_literal, table

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

#: How far before the first bad interval the origin's intervals are read (its partner rule).
LOOKBACK_DAYS = 14


def _days(con: Any, rel: Any, col: str, since: date, dialect: str) -> list[date]:
    day = exp.cast(exp.column(col, quoted=True), exp.DataType.build("DATE"))
    q = exp.select(day).distinct().from_(table(rel, dialect)).where(exp.GTE(
        this=day.copy(), expression=date_literal(since)))  # fmt: skip
    return sorted(r[0] for r in con.execute(q.sql(dialect)).fetchall() if r[0] is not None)


def partner_days(own: list[date], origin: list[date], bad: set[date]) -> list[date]:
    """The ``own`` intervals whose partner (the latest ``origin`` interval on or before) is bad.

    >>> d = date.fromisoformat
    >>> partner_days([d("2026-09-25"), d("2026-09-26"), d("2026-09-28")],
    ...              [d("2026-09-24"), d("2026-09-25"), d("2026-09-28")], {d("2026-09-25")})
    [datetime.date(2026, 9, 25), datetime.date(2026, 9, 26)]
    """
    out, origin = [], sorted(origin)
    for day in own:
        before = [o for o in origin if o <= day]
        if before and before[-1] in bad:
            out.append(day)
    return out


def join_scope(ws: Workspace, graph: Any, origin: str, fault: dict[str, Any],
               scope: dict[str, Any]) -> None:  # fmt: skip
    """In place: ``scope["nodes"]`` with the damage of the models joining the origin's changed
    key, and what is downstream of them (see the module doc)."""
    if fault.get("class") != "domain_change" or not scope.get("intervals"):
        return
    from splice.warehouse.connect import connect
    from splice.watch.damage import Damage, consecutive_ranges, restatable, span
    from splice.watch.graph_monitors import GraphFacts, join_monitors, workspace_models
    from splice.watch.scope import node_scopes
    from splice.watch.specs import ColumnTypes, relation_of

    node = graph.nodes[origin]
    rel, tc = relation_of(node), (node.time_column or "").lower()
    column = (fault.get("evidence") or {}).get("column")
    if rel is None or not tc or not column:
        return
    bad = {date.fromisoformat(d) for d in scope["intervals"]}
    facts = GraphFacts(graph, workspace_models(ws))
    models = [j for j in join_monitors(facts, ColumnTypes(ws), ws.dialect)
              if (j.right, j.right_key) == (rel, column) and j.model in graph.nodes]  # fmt: skip
    if not models:
        return
    have = {n["node"]: n for n in scope.get("nodes") or []}
    with connect(ws, "incident scope") as con:
        origin_days = _days(con, rel, tc, min(bad) - timedelta(days=LOOKBACK_DAYS), ws.dialect)
        for j in models:
            m = graph.nodes[j.model]
            mrel, mtc = relation_of(m), (m.time_column or "").lower()
            if mrel is None or not mtc:
                continue
            days = partner_days(_days(con, mrel, mtc, min(bad), ws.dialect), origin_days, bad)
            if not days:
                continue
            why = (f"its rows of {span(days)} join {node.name}.{column} on the intervals whose "
                   f"values changed ({span(sorted(bad))}): they no longer find that partner")  # fmt: skip
            start = Damage(j.model, mtc, days, full=not restatable(m), why=[why])
            for d in node_scopes(ws, graph, start, con):
                got = have.get(d.node)
                if got is None:
                    have[d.node] = d.as_dict()
                    continue
                merged = sorted(set(got.get("intervals") or []) | {x.isoformat() for x in d.days})
                if merged != got.get("intervals"):
                    got["intervals"] = merged
                    got["ranges"] = [[a.isoformat(), b.isoformat()] for a, b in consecutive_ranges(
                        [date.fromisoformat(x) for x in merged], 1)]  # fmt: skip
                    got["why"] = "; ".join(x for x in (got.get("why"), "; ".join(d.why)) if x)
                got["full"] = bool(got.get("full")) or d.full
    order = {n: i for i, n in enumerate(graph.topological_order(set(have)))}
    scope["nodes"] = sorted(have.values(), key=lambda n: order.get(n["node"], len(order)))
