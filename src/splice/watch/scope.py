"""The scope of an incident is the damage, per node: where the fault started, and every interval
downstream that read a bad value.

- **the start**: a detector that reports a run ("3 intervals in a row since DAY", a value that
  stopped moving since DAY) says where the fault started; the origin's scope begins there, on
  the intervals the origin actually has (a business-day series has no weekend);
- **downstream** (:func:`node_scopes`), walking the built nodes below the origin in
  topological order, each from its damaged parents' intervals, with the evidence named:

  1. *rows*: a column of the node carries the parent's time column unchanged (column lineage:
     ``fct_bookings_usd.rate_date <- fx.daily_rates.rate_date``): the warehouse says which of
     the node's own intervals hold rows read at the bad intervals (Friday's rate converts
     Friday's, Saturday's and Sunday's bookings);
  2. *expression*: the node's time column is computed from the parent's (``date_trunc('month',
     booking_date)``): the expression, read from the model's SQL, evaluated on the bad days;
  3. *running windows*: a cumulative aggregate (``sum(x) over (partition by P order by T rows
     between unbounded preceding and current row)``) carries a bad interval into every later
     interval of its partition;
  4. otherwise the node is rebuilt whole (``full``), and the reason is said.
- **blocked** (:func:`blocked_scope`): intervals missing downstream because a blocking audit
  failed, from the run journal: the audit, the node it checks, the run, the missing intervals.

Every query is a sqlglot expression sent through one warehouse connection.
"""

from __future__ import annotations

import dataclasses
from datetime import date
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from splice.graph.model import Graph, Relation
from splice.warehouse.rows import date_literal, table
from splice.watch.damage import (
    SOURCE_KINDS,
    Damage,
    ScopeWalk,
    cast_date,
    consecutive_ranges,
    fault_start,
    origin_days,
    origin_time_column,
    quoted_column,
    read_parents,
    restatable,
    span,
)
from splice.watch.scope_sql import (
    RunningWindow,
    placeholder_values,
    running_windows,
    substitute,
    time_expression,
)

if TYPE_CHECKING:
    from splice.workspace.core import Workspace


def _downstream(walk: ScopeWalk, nid: str, parents: list[Damage]) -> Damage | None:
    from splice.watch.scope_asof import read_elsewhere
    from splice.watch.specs import relation_of

    graph = walk.graph
    node = graph.nodes[nid]
    rel = relation_of(node)
    own = node.time_column.lower() if node.time_column else None
    dmg = Damage(nid, own, full=not restatable(node))
    days: set[date] = set()
    unknown: list[str] = []
    for p in parents:
        pname = graph.nodes[p.node].name
        if not p.time_column or (p.full and not p.days):
            unknown.append(f"reads {pname}, damaged as a whole")
            continue
        refs = walk.refs(nid, p.node, p.time_column)
        links = sorted(c for c, how in refs.items() if how == "identity")
        tc = own or (links[0] if links else next(iter(sorted(refs)), None))
        if tc is None or rel is None:
            unknown.append(f"no column of it comes from {pname}.{p.time_column}")
            continue
        dmg.time_column = dmg.time_column or tc
        t = cast_date(quoted_column(tc))
        asof = read_elsewhere(walk, nid, p, rel, tc, links, dmg)  # missing upstream: scope_asof
        if links:
            cond = exp.or_(
                *[cast_date(quoted_column(c)).isin(*map(date_literal, p.days)) for c in links]
            )
            got = walk.days(exp.select(t).distinct().from_(table(rel, walk.dialect)).where(cond))
            via = ", ".join(links)
            what = (f"its {tc} is {pname}.{p.time_column} ({span(p.days)})" if links == [tc]
                    else f"rows whose {via} is one of {pname}'s bad {p.time_column}s "
                         f"({span(p.days)}) have {tc}")  # fmt: skip
            if got or asof is None:
                dmg.why.append(f"{what}: {span(got)}")
        elif refs.get(tc) == "transformation":
            sql, dialect = walk.sql(nid)
            f = None
            for r in walk.relations(p.node) if sql else []:
                f = time_expression(sql or "", dialect, tc, r, p.time_column)
                if f is not None:
                    break
            if f is None:
                unknown.append(f"its {tc} is computed from {pname}.{p.time_column} in a way "
                               "Splice cannot read")  # fmt: skip
                continue
            sub = exp.select(cast_date(f)).from_(placeholder_values(p.days))
            got = walk.days(
                exp.select(t).distinct().from_(table(rel, walk.dialect)).where(t.isin(query=sub))
            )
            shown = substitute(f, exp.column(p.time_column)).sql(dialect=walk.dialect)
            dmg.why.append(f"its {tc} is {shown} of {pname}'s bad days ({span(p.days)}): "
                           f"{span(got)}")  # fmt: skip
        elif asof is not None:
            got = []
        else:
            unknown.append(f"its {tc} does not come from {pname}.{p.time_column}")
            continue
        got = sorted(set(got) | set(asof or []))
        if got and (links or asof):
            got = _running(walk, nid, p, rel, tc, got, dmg)
        days |= set(got)
    if unknown:
        dmg.full = True
        dmg.why += [f"{u}: rebuilt whole" for u in unknown]
    dmg.days = sorted(days)
    if not dmg.days and not unknown:
        return None  # it read none of the bad intervals
    return dmg


def _running(
    walk: ScopeWalk, nid: str, p: Damage, rel: Relation, tc: str, got: list[date], dmg: Damage
) -> list[date]:
    """``got`` extended with every later interval of a running total's partition."""
    if p.time_column is None or not walk.windowed(nid, p.node, p.time_column):
        return got
    sql, dialect = walk.sql(nid)
    if not sql:
        return got
    wins: list[RunningWindow] = []
    for r in walk.relations(p.node):
        wins = running_windows(sql, dialect, r, p.time_column)
        if wins:
            break
    if not wins:
        return got
    t = cast_date(quoted_column(tc))
    cond: exp.Expr = t >= date_literal(min(got))
    parts = [e for w in wins if w.partition is not None for e in w.partition]
    if all(w.partition is not None for w in wins):
        for e in parts:
            cond = exp.and_(cond, substitute(e, t).isin(query=exp.select(e.copy()).from_(
                placeholder_values(got))))  # fmt: skip
    later = walk.days(exp.select(t).distinct().from_(table(rel, walk.dialect)).where(cond))
    out = sorted(set(got) | set(later))
    added = [d for d in out if d not in set(got)]
    by = (f"partition by {', '.join(substitute(e, exp.column(tc)).sql(dialect=walk.dialect) for e in parts)}"
          if parts and all(w.partition is not None for w in wins) else "every partition")  # fmt: skip
    dmg.why.append(f"a running total ({wins[0].text}) carries them into every later {tc} of "
                   f"the same partition ({by}): {span(added) if added else 'none later'}")  # fmt: skip
    return out


def node_scopes(ws: Workspace, graph: Graph, origin: Damage, con: Any) -> list[Damage]:
    """The origin's damage, then every built node downstream that read bad values, in
    topological order, each derived from its damaged parents' intervals."""
    from splice.watch.blast import BUILT_KINDS

    walk = ScopeWalk(ws, graph, con)
    damaged: dict[str, Damage] = {origin.node: origin}
    if graph.nodes[origin.node].kind in SOURCE_KINDS:
        # a source origin (a feed watched as it lands): its readers read it through the job
        # that loads it, the parent a walk looking through sources finds
        for writer in read_parents(graph, origin.node):
            damaged.setdefault(writer, dataclasses.replace(origin, node=writer))
    out = [origin]
    down = graph.topological_order(graph.descendants(origin.node))
    for nid in down:
        if graph.nodes[nid].kind not in BUILT_KINDS:
            continue
        parents = [damaged[p] for p in sorted(read_parents(graph, nid)) if p in damaged]
        if not parents:
            continue
        try:
            d = _downstream(walk, nid, parents)
        except Exception as e:  # noqa: BLE001 - a query the warehouse refuses: rebuild it whole
            d = Damage(nid, None, full=True,
                       why=[f"its intervals could not be derived ({str(e).splitlines()[0]}): "
                            "rebuilt whole"])  # fmt: skip
        if d is not None:
            damaged[nid] = d
            out.append(d)
    return out


# -- the diagnosis' scope ----------------------------------------------------------------------
def extend_scope(
    ws: Workspace, graph: Graph, origin: str, anomalies: list[dict[str, Any]], scope: dict[str, Any],
    *, gap: int = 1,
) -> dict[str, Any]:  # fmt: skip
    """``scope`` (the origin's intervals, as the diagnosis made it) extended in place: back to
    where the fault started, with ``nodes`` (the damage per node) and ``blocked``."""
    from splice.warehouse.connect import connect
    from splice.watch.specs import relation_of

    node = graph.nodes[origin]
    days = [date.fromisoformat(d) for d in scope.get("intervals") or []]
    since = fault_start(anomalies)
    tc = origin_time_column(ws, node)
    rel = relation_of(node)
    why = [str(scope.get("why") or "the origin's anomalous intervals")]
    with connect(ws, "incident scope") as con:
        if since is not None and days and since < min(days) and tc and rel is not None:
            more = origin_days(con, rel, tc, days, since, ws.dialect)
            added = [d for d in more if d not in set(days)]
            if added:
                days = more
                why.append(f"from {since.isoformat()}, where the detectors say the fault started "
                           f"({span(added)} added)")  # fmt: skip
        # a loaded relation's days are reloaded one by one, as a restatable model's are
        loaded = node.kind in SOURCE_KINDS and bool(tc)
        origin_dmg = Damage(origin, tc, days, full=not (restatable(node) or loaded), why=list(why))
        damage = node_scopes(ws, graph, origin_dmg, con) if days else [origin_dmg]
        from splice.watch.blocked import blocked_scope, blocked_words

        try:
            blocked = blocked_scope(ws, graph, damage, min(days) if days else since, con)
        except Exception as e:  # noqa: BLE001 - the damage stands without it; say why
            blocked = []
            scope["blocked_error"] = str(e).splitlines()[0] if str(e) else type(e).__name__
    words = blocked_words(blocked)
    if words:
        why.append(words)
    ranges = consecutive_ranges(days, gap=gap)
    scope.update(
        {
            "start": days[0].isoformat() if days else None,
            "end": days[-1].isoformat() if days else None,
            "intervals": [d.isoformat() for d in days],
            "ranges": [[a.isoformat(), b.isoformat()] for a, b in ranges],
            "why": "; ".join(why),
            "nodes": [d.as_dict() for d in damage],
            "blocked": blocked,
        }
    )
    if since is not None:
        scope["since"] = since.isoformat()
    return scope


def scope_lines(scope: dict[str, Any], graph: Graph | None = None) -> list[str]:
    """The damage per node and the blocked intervals, one line each (for the incident report).

    >>> scope_lines({"nodes": [{"node": "p:a", "intervals": ["2026-09-25"], "full": False,
    ...     "why": "the origin"}], "blocked": []})
    ['  p:a: 2026-09-25 (the origin)']
    """
    lines = []
    for n in scope.get("nodes") or []:
        days = [date.fromisoformat(d) for d in n.get("intervals") or []]
        what = span(days) if days else "every interval"
        if n.get("full"):
            what += ", rebuilt whole"
        lines.append(f"  {n['node']}: {what} ({n.get('why') or ''})")
    for b in scope.get("blocked") or []:
        days = [date.fromisoformat(d) for d in b.get("intervals") or []]
        kind = b.get("kind") or "audit"
        lines.append(
            f"  {b['node']}: {span(days) if days else 'not built'} missing: {kind} {b['audit']} "
            f"on {b['audited_node']} failed in run {b['run_id']}"
        )
    return lines
