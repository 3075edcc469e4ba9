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

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from functools import lru_cache
from typing import Any

from sqlglot import exp

from splice.graph.model import Graph, Node, Relation
from splice.warehouse.rows import date_literal, table

#: The column that stands for the parent's time column in a resolved expression.
PLACEHOLDER = "_splice_t"


def fault_start(anomalies: Iterable[dict[str, Any]]) -> date | None:
    """Where the fault started by the detectors' own account: the earliest ``data["since"]`` of
    an anomaly that reports its fault's first interval.

    The detectors put the fault's first interval and its length (``intervals``) on every finding;
    anomalies stored before they did only meant it for a value that stopped moving and a level
    shift (``shift``): an old jump's ``since`` is its last good interval, not a start.

    >>> a = {"detector": "level_shift", "data": {"since": "2026-09-21", "intervals": 4}}
    >>> b = {"detector": "jump", "data": {"since": "2026-09-01"}}
    >>> c = {"detector": "spike", "data": {"since": "2026-09-18", "shift": True}}
    >>> fault_start([a, b]), fault_start([a, c])
    (datetime.date(2026, 9, 21), datetime.date(2026, 9, 18))
    """
    out: date | None = None
    for a in anomalies:
        data = a.get("data") or {}
        since = data.get("since")
        starts = a.get("detector") == "stopped_moving" or "intervals" in data or data.get("shift")
        if not since or not starts:
            continue
        try:
            d = date.fromisoformat(str(since))
        except ValueError:
            continue
        out = d if out is None or d < out else out
    return out


def _cast_date(e: exp.Expr) -> exp.Expr:
    return exp.cast(e, exp.DataType.build("DATE"))


def _col(name: str) -> exp.Column:
    return exp.column(name, quoted=True)


def _days_from(con: Any, query: exp.Select, dialect: str) -> list[date]:
    rows = con.execute(query.sql(dialect=dialect)).fetchall()
    return sorted({r[0] for r in rows if isinstance(r[0], date)})


def origin_days(
    con: Any, relation: Relation, time_column: str, days: list[date], since: date | None,
    dialect: str,
) -> list[date]:  # fmt: skip
    """``days`` extended back to ``since`` with the intervals the relation has in between."""
    if since is None or not days or since >= min(days):
        return sorted(set(days))
    t = _cast_date(_col(time_column))
    q = (
        exp.select(t.copy())
        .distinct()
        .from_(table(relation, dialect))
        .where(exp.Between(this=t.copy(), low=date_literal(since), high=date_literal(min(days))))
    )
    return sorted(set(days) | set(_days_from(con, q, dialect)))


def span(days: list[date]) -> str:
    """Days as short ranges: ``2026-09-25..27, 2026-10-02``.

    >>> span([date(2026, 9, 25), date(2026, 9, 26), date(2026, 9, 27), date(2026, 10, 2)])
    '2026-09-25..27, 2026-10-02'
    """
    from splice.watch.diagnosis import consecutive_ranges

    parts = []
    for a, b in consecutive_ranges(days, gap=1):
        if a == b:
            parts.append(a.isoformat())
        elif (a.year, a.month) == (b.year, b.month):
            parts.append(f"{a.isoformat()}..{b.day:02d}")
        else:
            parts.append(f"{a.isoformat()}..{b.isoformat()}")
    return ", ".join(parts) or "none"


@dataclass
class Damage:
    """One node's damaged intervals, on its ``time_column`` (None: unknown, the whole node)."""

    node: str
    time_column: str | None
    days: list[date] = field(default_factory=list)
    full: bool = False
    why: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        from splice.watch.diagnosis import consecutive_ranges

        return {
            "node": self.node,
            "time_column": self.time_column,
            "intervals": [d.isoformat() for d in self.days],
            "ranges": [[a.isoformat(), b.isoformat()] for a, b in consecutive_ranges(self.days, 1)],
            "full": self.full,
            "why": "; ".join(self.why),
        }


def restatable(node: Node) -> bool:
    """Can the node's intervals be restated one by one (a SQLMesh incremental by time range)?"""
    mat = str(node.materialization or "").upper()
    return node.tool == "sqlmesh" and bool(node.time_column) and "INCREMENTAL" in mat


# -- the model's SQL: expressions in terms of a parent's time column ----------------------------
@lru_cache(maxsize=64)
def _parse(sql: str, dialect: str) -> exp.Expr | None:
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


def _resolve(e: exp.Expr, sc: Any, rel: Relation, column: str, depth: int = 0) -> exp.Expr | None:
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
            inner = _resolve(proj.unalias(), src, rel, column, depth + 1)
            if inner is None:
                return None
            c.replace(inner)
        elif isinstance(src, exp.Table) and _is_parent(src, rel) and c.name.lower() == column:
            c.replace(_col(PLACEHOLDER))
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

    ast = _parse(sql, dialect)
    root = build_scope(ast) if ast is not None else None
    if root is None:
        return None
    proj = next(
        (s for s in _selects(root.expression) if s.alias_or_name.lower() == output.lower()),
        None,
    )
    return _resolve(proj.unalias(), root, rel, column) if proj is not None else None


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

    ast = _parse(sql, dialect)
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
            key = _resolve(order.expressions[0].this, sc, rel, column)
            if key is None or not any(
                c.name == PLACEHOLDER for c in exp.Paren(this=key).find_all(exp.Column)
            ):
                continue
            parts = [_resolve(p, sc, rel, column) for p in w.args.get("partition_by") or []]
            resolved: list[exp.Expr] | None = [p for p in parts if p is not None]
            if len(resolved or []) != len(parts):
                resolved = None
            out.append(RunningWindow(w.sql(dialect=dialect), resolved))
    return out


def _substitute(e: exp.Expr, by: exp.Expr) -> exp.Expr:
    holder = exp.Paren(this=e.copy())
    for c in list(holder.find_all(exp.Column)):
        if c.name == PLACEHOLDER:
            c.replace(by.copy())
    return holder.this


def _values(days: list[date]) -> exp.Expr:
    return exp.values([(date_literal(d),) for d in days], alias="_v", columns=[PLACEHOLDER])


# -- the walk downstream -----------------------------------------------------------------------
_THROUGH = ("source", "external")


def read_parents(graph: Graph, nid: str) -> set[str]:
    """The nodes whose relations ``nid`` reads: its parents, looking through sources."""
    out: set[str] = set()
    stack, seen = list(graph.parents(nid)), set()
    while stack:
        p = stack.pop()
        if p in seen or p not in graph.nodes:
            continue
        seen.add(p)
        if graph.nodes[p].kind in _THROUGH:
            stack.extend(graph.parents(p))
        else:
            out.add(p)
    return out


class _Walk:
    """The lineage, SQL and warehouse a scope walk asks, each asked at most once per node."""

    def __init__(self, ws: Any, graph: Graph, con: Any) -> None:
        from splice.lineage.service import workspace_lineage, writers_map

        self.ws, self.graph, self.con, self.dialect = ws, graph, con, ws.dialect
        self.lineage = workspace_lineage(ws).models
        self.writers = writers_map(graph, ws.dialect)
        self._sql: dict[str, tuple[str | None, str]] = {}

    def sql(self, nid: str) -> tuple[str | None, str]:
        """The model's SQL: for dbt, what its last run compiled (it built the data, and reading
        it needs no dbt parse); else, and when there is none, the tool's rendering (cached)."""
        if nid not in self._sql:
            node = self.graph.nodes[nid]
            found: tuple[str | None, str] | None = None
            if node.tool == "dbt" and node.path:
                prov = self.ws.provider(node.project)
                if getattr(prov, "manifest", None) is None and hasattr(prov, "work"):
                    pkg = str(node.meta.get("package") or node.project)
                    f = prov.work / "target" / prov.ctx.environment / "compiled" / pkg / node.path
                    if f.is_file():
                        found = (f.read_text(encoding="utf-8"), node.dialect or self.dialect)
            if found is None:
                from splice.lineage.service import rendered_sql

                try:
                    sql, dialect, _ = rendered_sql(self.ws, self.graph, [nid])[nid]
                except Exception:  # noqa: BLE001 - no SQL: expressions and windows stay unknown
                    sql, dialect = None, self.dialect
                found = (sql, dialect)
            self._sql[nid] = found
        return self._sql[nid]

    def windowed(self, nid: str, parent: str, column: str) -> bool:
        """Does a window of ``nid`` order or partition by ``parent.column`` (column lineage)?"""
        ml = self.lineage.get(nid)
        return ml is not None and any(
            "WINDOW" in r.subtypes
            and self.writers.get(r.relation.key) == parent
            and r.column.lower() == column
            for cl in ml.columns.values()
            for r in cl.sources
        )

    def relations(self, nid: str) -> list[Relation]:
        """The relations a reader may name ``nid`` by (its writes, a SQLMesh model's name)."""
        from splice.graph.relations import parse_relation

        n = self.graph.nodes[nid]
        rels = list(n.all_writes)
        for key, writer in self.writers.items():
            if writer == nid:
                rels.append(parse_relation(key, dialect=self.dialect))
        return rels

    def refs(self, nid: str, parent: str, column: str) -> dict[str, str]:
        """Output columns of ``nid`` fed directly by ``parent.column``: column -> how
        (``identity`` or ``transformation``)."""
        ml = self.lineage.get(nid)
        out: dict[str, str] = {}
        if ml is None:
            return out
        for name, cl in ml.columns.items():
            for r in cl.direct:
                if self.writers.get(r.relation.key) == parent and r.column.lower() == column:
                    how = "identity" if set(r.subtypes) <= {"IDENTITY"} else "transformation"
                    if out.get(name) != "identity":
                        out[name] = how
        return out

    def days(self, q: exp.Select) -> list[date]:
        return _days_from(self.con, q, self.dialect)


def _downstream(walk: _Walk, nid: str, parents: list[Damage]) -> Damage | None:
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
        t = _cast_date(_col(tc))
        asof = read_elsewhere(walk, nid, p, rel, tc, links, dmg)  # missing upstream: scope_asof
        if links:
            cond = exp.or_(*[_cast_date(_col(c)).isin(*map(date_literal, p.days)) for c in links])
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
            sub = exp.select(_cast_date(f)).from_(_values(p.days))
            got = walk.days(
                exp.select(t).distinct().from_(table(rel, walk.dialect)).where(t.isin(query=sub))
            )
            shown = _substitute(f, exp.column(p.time_column)).sql(dialect=walk.dialect)
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
    walk: _Walk, nid: str, p: Damage, rel: Relation, tc: str, got: list[date], dmg: Damage
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
    t = _cast_date(_col(tc))
    cond: exp.Expr = t >= date_literal(min(got))
    parts = [e for w in wins if w.partition is not None for e in w.partition]
    if all(w.partition is not None for w in wins):
        for e in parts:
            cond = exp.and_(cond, _substitute(e, t).isin(query=exp.select(e.copy()).from_(
                _values(got))))  # fmt: skip
    later = walk.days(exp.select(t).distinct().from_(table(rel, walk.dialect)).where(cond))
    out = sorted(set(got) | set(later))
    added = [d for d in out if d not in set(got)]
    by = (f"partition by {', '.join(_substitute(e, exp.column(tc)).sql(dialect=walk.dialect) for e in parts)}"
          if parts and all(w.partition is not None for w in wins) else "every partition")  # fmt: skip
    dmg.why.append(f"a running total ({wins[0].text}) carries them into every later {tc} of "
                   f"the same partition ({by}): {span(added) if added else 'none later'}")  # fmt: skip
    return out


def node_scopes(ws: Any, graph: Graph, origin: Damage, con: Any) -> list[Damage]:
    """The origin's damage, then every built node downstream that read bad values, in
    topological order, each derived from its damaged parents' intervals."""
    from splice.watch.blast import BUILT_KINDS

    walk = _Walk(ws, graph, con)
    damaged: dict[str, Damage] = {origin.node: origin}
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
def _origin_time_column(ws: Any, node: Node) -> str | None:
    if node.time_column:
        return node.time_column.lower()
    declared = [m.time for m in ws.config.metrics if m.node == node.id and m.time]
    return declared[0].lower() if declared else None


def extend_scope(
    ws: Any, graph: Graph, origin: str, anomalies: list[dict[str, Any]], scope: dict[str, Any],
    *, gap: int = 1,
) -> dict[str, Any]:  # fmt: skip
    """``scope`` (the origin's intervals, as the diagnosis made it) extended in place: back to
    where the fault started, with ``nodes`` (the damage per node) and ``blocked``."""
    from splice.warehouse.connect import connect
    from splice.watch.diagnosis import consecutive_ranges
    from splice.watch.specs import relation_of

    node = graph.nodes[origin]
    days = [date.fromisoformat(d) for d in scope.get("intervals") or []]
    since = fault_start(anomalies)
    tc = _origin_time_column(ws, node)
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
        origin_dmg = Damage(origin, tc, days, full=not restatable(node), why=list(why))
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
