"""Verification by recomputation: production equals a fresh build from the repaired inputs.

After a repair, every stored node in the incident's damage (and every built node below its
origin) is computed afresh from what its parents hold now, over every interval from the fault's
first one to the latest the node has, and compared row by row with what production holds:

- a SQLMesh model: the query SQLMesh renders for that range (``@start_ds``..``@end_ds`` filled
  in), its model names read through the target's environment;
- a dbt model built as a table: the SQL its last run compiled (the whole table); an incremental
  dbt model: its SQL compiled as a full refresh compiles it (``is_incremental()`` false);
- a seed, a source or a snapshot is an input (the fault's own test judges the origin); a Python
  model or another materialization is *not recomputed*, and the result says why (the repair is
  then not called verified).

The comparison is a multiset of rows per interval of the node's time column (numbers compared to
10 significant digits, so a sum added in another order is still equal): rows only production has,
rows only the rebuild has, and examples of each.  Recomputation is inductive: a node whose rows
equal its query over its parents is right when its parents are, so a node still wrong upstream
shows where it is wrong.  It cannot see an input that is itself still wrong (a reload that
fetched the frozen rates again): :mod:`splice.repair.fault_test` re-applies the fault's own test
to those.

Every query is a sqlglot expression, run on one warehouse connection.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from splice.warehouse.rows import date_literal, table

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

#: Significant digits two numbers must share to be the same value.
DIGITS = 10
#: Example rows kept per side of a node that differs.
EXAMPLES = 3
#: Nodes recomputed per repair at most (the damage's own always are).
LIMIT = 50
#: Float types whose values are rounded before they are compared.
_FLOATS = ("DOUBLE", "FLOAT", "REAL", "FLOAT4", "FLOAT8", "DOUBLE PRECISION")


@dataclass
class NodeCheck:
    """One node recomputed: what was compared and what differs."""

    node: str
    start: str | None = None
    end: str | None = None
    time_column: str | None = None
    rows_prod: int = 0
    rows_fresh: int = 0
    #: interval (ISO date, or ``*`` for a node without a time column) -> rows that differ
    differ: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: why the node was not recomputed (None: it was)
    skipped: str | None = None
    #: the node holds no interval from the fault's first on (it has not read the repaired
    #: days yet: the next run builds them from the repaired inputs): nothing to compare
    unread: str | None = None

    @property
    def ok(self) -> bool:
        return self.skipped is None and not self.differ

    def as_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "from": self.start,
            "through": self.end,
            "time_column": self.time_column,
            "rows_prod": self.rows_prod,
            "rows_fresh": self.rows_fresh,
            "differ": self.differ,
            "examples": self.examples,
            "skipped": self.skipped,
            "unread": self.unread,
        }


@dataclass
class Recomputed:
    nodes: list[NodeCheck] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def differ(self) -> list[NodeCheck]:
        return [n for n in self.nodes if n.differ]

    @property
    def skipped(self) -> list[NodeCheck]:
        return [n for n in self.nodes if n.skipped]

    @property
    def ok(self) -> bool:
        """Every node recomputed, and each equal to production (nothing skipped)."""
        return bool(self.nodes) and all(n.ok for n in self.nodes)

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "nodes": [n.as_dict() for n in self.nodes],
            "seconds": round(self.seconds, 3),
        }


# -- the fresh query of one node ----------------------------------------------------------------
def _relation_map(graph: Any) -> dict[str, Any]:
    """Lower-cased ``schema.name`` and ``catalog.schema.name`` of each SQLMesh model's name ->
    the relation the target's graph says it is read as (its environment's view)."""
    from splice.graph.relations import parse_relation

    out: dict[str, Any] = {}
    for n in graph.nodes.values():
        if n.tool != "sqlmesh" or n.kind != "model" or n.writes is None:
            continue
        fqn = str(n.meta.get("fqn") or "")
        if not fqn:
            continue
        rel = parse_relation(fqn.replace('"', ""))
        out[f"{rel.schema}.{rel.name}".lower()] = n.writes
        if rel.catalog:
            out[f"{rel.catalog}.{rel.schema}.{rel.name}".lower()] = n.writes
    return out


def _through_environment(q: exp.Expr, mapping: dict[str, Any], dialect: str) -> exp.Expr:
    """Model names in a rendered query read as the target's relations (a dev environment's
    ``fx__dev.daily_rates``; prod's own names are unchanged)."""

    def swap(node: exp.Expr) -> exp.Expr:
        if not isinstance(node, exp.Table) or not node.name or not node.db:
            return node
        parts = [p for p in (node.catalog, node.db, node.name) if p]
        rel = mapping.get(".".join(parts).lower()) or mapping.get(f"{node.db}.{node.name}".lower())
        if rel is None:
            return node
        t = table(rel, dialect)
        if node.alias:
            t = t.as_(node.alias, quoted=True)
        return t

    return q.transform(swap)


def sqlmesh_query(ws: Workspace, graph: Any, node: Any, start: date, end: date,
                  names: dict[str, Any] | None = None) -> exp.Expr:  # fmt: skip
    """The query SQLMesh runs for ``node`` over ``start``..``end`` (both inclusive)."""
    from splice.support.capture import captured

    prov = ws.provider(node.project)
    ctx = prov.context
    model = ctx.models[str(node.meta.get("fqn"))]
    with captured(ws.log_path, f"sqlmesh render {node.name} (recompute)", cwd=prov.run_dir):
        q = model.render_query_or_raise(
            start=start.isoformat(), end=end.isoformat(), execution_time=end.isoformat(),
            engine_adapter=ctx.engine_adapter,
        )  # fmt: skip
    return _through_environment(q, names if names is not None else _relation_map(graph),
                                ws.dialect)  # fmt: skip


def dbt_query(ws: Workspace, node: Any) -> tuple[exp.Expr | None, str | None]:
    """The SQL dbt's last run compiled for a table model, parsed (None and why otherwise)."""
    import sqlglot

    mat = str(node.materialization or "").lower()
    prov = ws.provider(node.project)
    dialect = node.dialect or ws.dialect
    if mat == "incremental" and hasattr(prov, "first_run_sql"):
        # its last run compiled only the new rows' query: the whole table's, as a full refresh
        try:
            sql = prov.first_run_sql([node]).get(node.id)
        except Exception as e:  # noqa: BLE001 - said: the node is not recomputed
            return None, f"dbt could not compile its full-refresh SQL ({str(e).splitlines()[0]})"
        if not sql:
            return None, "dbt did not compile its full-refresh SQL"
        try:
            return sqlglot.parse_one(sql, dialect=dialect), None
        except Exception as e:  # noqa: BLE001 - unreadable SQL: said, never recomputed wrong
            return None, f"its compiled SQL could not be parsed ({str(e).splitlines()[0]})"
    if mat not in ("table", ""):
        return None, f"a dbt {mat or 'model'}: Splice does not recompute it"
    pkg = str(node.meta.get("package") or node.project)
    work = getattr(prov, "work", None)
    env = getattr(getattr(prov, "ctx", None), "environment", None)
    if work is None or env is None or not node.path:
        return None, "dbt's compiled SQL of its last run was not found"
    f = work / "target" / env / "compiled" / pkg / node.path
    if not f.is_file():
        return None, f"dbt's compiled SQL of its last run was not found ({f})"
    try:
        return sqlglot.parse_one(f.read_text(encoding="utf-8"), dialect=dialect), None
    except Exception as e:  # noqa: BLE001 - unreadable SQL: said, never recomputed wrong
        return None, f"its compiled SQL could not be parsed ({str(e).splitlines()[0]})"


def fresh_query(ws: Workspace, graph: Any, node: Any, start: date, end: date,
                names: dict[str, Any] | None = None) -> tuple[exp.Expr | None, str | None]:  # fmt: skip
    """The node's query as its tool would run it now (None and why when there is none)."""
    if node.kind != "model":
        return None, f"a {node.kind}: its rows are not computed from other nodes"
    if node.language == "python":
        return None, "a Python model: no SQL to run again"
    if node.tool == "sqlmesh":
        try:
            return sqlmesh_query(ws, graph, node, start, end, names), None
        except Exception as e:  # noqa: BLE001 - said: the node is not recomputed
            return None, f"SQLMesh could not render it ({str(e).splitlines()[0]})"
    if node.tool == "dbt":
        return dbt_query(ws, node)
    return None, f"a {node.tool} node: Splice cannot run its query again"


# -- comparing ----------------------------------------------------------------------------------
def _column_types(con: Any, rel: Any, dialect: str) -> list[tuple[str, str]]:
    """The relation's (column, TYPE) pairs in order, as the warehouse has them (DuckDB's and
    PostgreSQL's information_schema, Spark's DESCRIBE); empty when it does not exist."""
    from splice.warehouse.engines import engine_module

    found = engine_module(dialect, "columns").typed_columns(con, rel.key)
    return [(str(c), str(t).upper()) for c, t in found]


def _norm(col: str, typ: str, dialect: str) -> exp.Expr:
    """A column as compared: floats to :data:`DIGITS` significant digits."""
    c = exp.column(col, quoted=True)
    if not typ.startswith(_FLOATS):
        return c.as_(col, quoted=True)
    from splice.warehouse.engines import engine_module

    # each engine rounds its own way (PostgreSQL through NUMERIC, Spark by magnitude)
    rounded: exp.Expr = engine_module(dialect, "rows").round_significant(c.copy(), DIGITS)
    case = exp.Case(
        ifs=[
            exp.If(
                this=exp.or_(
                    exp.Is(this=c.copy(), expression=exp.Null()),
                    exp.EQ(this=c.copy(), expression=exp.Literal.number(0)),
                ),
                true=exp.cast(c.copy(), exp.DataType.build("DOUBLE")),
            )
        ],  # fmt: skip
        default=exp.cast(rounded, exp.DataType.build("DOUBLE")),
    )
    return case.as_(col, quoted=True)


def _side(src: exp.Expr, cols: list[tuple[str, str]], where: exp.Expr | None, dialect: str
          ) -> exp.Select:  # fmt: skip
    q = exp.select(*(_norm(c, t, dialect) for c, t in cols)).from_(src)
    return q.where(where) if where is not None else q


def compare(con: Any, node_id: str, prod: Any, fresh: exp.Expr, time_column: str | None,
            start: date | None, end: date | None, dialect: str) -> NodeCheck:  # fmt: skip
    """``prod`` (a relation) against ``fresh`` (a query), row by row per interval."""
    out = NodeCheck(node_id, start.isoformat() if start else None,
                    end.isoformat() if end else None, time_column)  # fmt: skip
    cols = _column_types(con, prod, dialect)
    if not cols:
        out.skipped = f"{prod.key} does not exist in the warehouse"
        return out
    names = [c for c, _ in cols]
    tc = time_column if time_column and time_column.lower() in [n.lower() for n in names] else None
    if time_column and tc is None:
        out.time_column = None
    where = None
    if tc and start and end:
        t = exp.cast(exp.column(tc, quoted=True), exp.DataType.build("DATE"))
        where = exp.Between(this=t, low=date_literal(start), high=date_literal(end))
    fresh_src = exp.Subquery(this=fresh, alias=exp.TableAlias(this=exp.to_identifier("_fresh")))
    p = _side(table(prod, dialect), cols, where, dialect)
    f = _side(fresh_src, cols, where.copy() if where is not None else None, dialect)
    temps: list[exp.Table] = []
    try:
        if _temp_tables(dialect):  # each side computed once, then read from its copy
            p, f = (_temp(con, q, dialect, temps) for q in (p, f))
        _compare(con, out, p, f, tc, names, dialect)
    finally:
        for made in temps:
            con.execute(exp.Drop(this=made, kind="TABLE", exists=True).sql(dialect=dialect))
    return out


def _temp_tables(dialect: str) -> bool:
    """Whether the engine of ``dialect`` keeps temporary tables on a connection (Spark's
    session does not here)."""
    from splice.warehouse.engines import ENGINES, capabilities

    return dialect in ENGINES and capabilities(dialect).temp_tables


def _temp(con: Any, q: exp.Select, dialect: str, made: list[exp.Table]) -> exp.Select:
    """``q``'s rows in a temporary table; a query of all of them."""
    import uuid

    name = exp.table_(f"_splice_recompute_{uuid.uuid4().hex[:12]}")
    create = exp.Create(this=name, kind="TABLE", expression=q,
                        properties=exp.Properties(expressions=[exp.TemporaryProperty()]))  # fmt: skip
    con.execute(create.sql(dialect=dialect))
    made.append(name.copy())
    return exp.select(exp.Star()).from_(name.copy())


def _compare(con: Any, out: NodeCheck, p: exp.Select, f: exp.Select, tc: str | None,
             names: list[str], dialect: str) -> None:  # fmt: skip
    def count(q: exp.Query) -> int:
        cq = exp.select(exp.Count(this=exp.Star())).from_(exp.Subquery(this=q, alias="_n"))
        return int(con.execute(cq.sql(dialect=dialect)).fetchone()[0] or 0)

    out.rows_prod, out.rows_fresh = count(p.copy()), count(f.copy())
    for label, a, b in (("production", p, f), ("rebuild", f, p)):
        only = exp.except_(a.copy(), b.copy(), distinct=False)
        sub = exp.Subquery(this=only, alias=exp.TableAlias(this=exp.to_identifier("_d")))
        if tc:
            key = exp.cast(exp.column(tc, quoted=True), exp.DataType.build("DATE"))
            q = exp.select(key.as_("_t"), exp.Count(this=exp.Star())).from_(sub).group_by(
                key.copy())  # fmt: skip
            rows = con.execute(q.sql(dialect=dialect)).fetchall()
            for day, n in rows:
                k = day.isoformat() if hasattr(day, "isoformat") else str(day)
                out.differ[k] = out.differ.get(k, 0) + int(n)
        else:
            n = count(only.copy())
            if n:
                out.differ["*"] = out.differ.get("*", 0) + n
        ex = exp.select(exp.Star()).from_(sub.copy()).limit(EXAMPLES)
        if tc:
            ex = ex.order_by(exp.column(tc, quoted=True))
        got = con.execute(ex.sql(dialect=dialect)).fetchall()
        if got:
            out.examples[f"only in {label}"] = [
                {c: _plain(v) for c, v in zip(names, r, strict=False)} for r in got
            ]
    out.differ = dict(sorted(out.differ.items()))


def _plain(v: Any) -> Any:
    from splice.warehouse.rows import plain

    return plain(v)


# -- the nodes of an incident ------------------------------------------------------------------
def _latest(con: Any, rel: Any, tc: str, dialect: str) -> date | None:
    t = exp.cast(exp.column(tc, quoted=True), exp.DataType.build("DATE"))
    row = con.execute(exp.select(exp.Max(this=t)).from_(table(rel, dialect)).sql(dialect=dialect)
                      ).fetchone()  # fmt: skip
    v = row[0] if row else None
    return v if isinstance(v, date) else None


def nodes_to_recompute(graph: Any, damage: list[Any], limit: int) -> tuple[list[str], list[str]]:
    """The stored nodes of the damage, then the built nodes below its origin (at most ``limit``
    in all, the damage's always), in topological order; and those left out by the limit."""
    from splice.watch.blast import BUILT_KINDS

    listed = {d.node for d in damage if d.node in graph.nodes}
    origin = damage[0].node if damage and damage[0].node in graph.nodes else None
    below = ({n for n in graph.descendants(origin) if graph.nodes[n].kind in BUILT_KINDS}
             if origin else set())  # fmt: skip
    order = graph.topological_order(listed | below)
    chosen = [n for n in order if n in listed]
    left: list[str] = []
    for n in order:
        if n in listed:
            continue
        if len(chosen) < max(limit, len(listed)):
            chosen.append(n)
        else:
            left.append(n)
    return graph.topological_order(set(chosen)), left


def recompute(ws: Workspace, damage: list[Any], *, since: date | None = None,
              limit: int = LIMIT) -> Recomputed:  # fmt: skip
    """Recompute the incident's nodes (``damage``: :class:`splice.repair.damage.NodeDamage`,
    the origin first) from ``since`` (default: the earliest damaged interval) to the latest
    interval each node has, and compare each with production."""
    from splice.warehouse.connect import connect
    from splice.watch.metrics import relation_of

    t0 = time.perf_counter()
    graph = ws.graph()
    out = Recomputed()
    by_node = {d.node: d for d in damage}
    origin_days = damage[0].days if damage else []
    firsts = [min(d.days) for d in damage if d.days]
    first = since or (min(origin_days) if origin_days else min(firsts) if firsts else None)
    ids, left = nodes_to_recompute(graph, damage, limit)
    names = _relation_map(graph)
    with connect(ws, "repair verification (recompute)") as con:
        for nid in ids:
            node = graph.nodes[nid]
            mat = str(node.materialization or "").lower()
            if node.kind != "model" or mat in ("view", "ephemeral", "embedded"):
                continue  # stores nothing of its own: what it shows is its parents'
            rel = relation_of(node)
            d = by_node.get(nid)
            tc = (node.time_column or (d.time_column if d else None) or "").lower() or None
            if rel is None:
                out.nodes.append(NodeCheck(nid, skipped="it writes no relation Splice knows"))
                continue
            # from the node's own first damaged interval (a month's first day for a monthly
            # node), else the fault's first
            start = min(d.days) if d is not None and d.days else first
            end = _latest(con, rel, tc, ws.dialect) if tc else None
            if tc and start is not None and end is not None and end < start:
                out.nodes.append(NodeCheck(nid, start=start.isoformat(), time_column=tc, unread=(
                    f"its latest {tc} is {end.isoformat()}: it has not read {start.isoformat()} "
                    "or later yet")))  # fmt: skip
                continue
            if tc and (start is None or end is None):
                start = end = None
            q, why = fresh_query(ws, graph, node, start or date(1900, 1, 1),
                                 end or date(9999, 12, 31), names)  # fmt: skip
            if q is None:
                out.nodes.append(NodeCheck(nid, time_column=tc, skipped=why))
                continue
            try:
                out.nodes.append(compare(con, nid, rel, q, tc, start, end, ws.dialect))
            except Exception as e:  # noqa: BLE001 - said per node: a verdict never hides it
                out.nodes.append(NodeCheck(nid, time_column=tc, skipped=(
                    f"the warehouse refused the comparison ({str(e).splitlines()[0][:200]})")))  # fmt: skip
    for nid in left:
        out.nodes.append(NodeCheck(nid, skipped=f"beyond the {limit} nodes recomputed per repair"))
    out.seconds = time.perf_counter() - t0
    return out


def words(r: Recomputed) -> str:
    """The recomputation in one sentence."""
    checked = [n for n in r.nodes if n.skipped is None and n.unread is None]
    unread = [n for n in r.nodes if n.unread is not None]
    if not r.differ and not r.skipped:
        later = (f"; {len(unread)} node(s) have not read the repaired intervals yet"
                 if unread else "")  # fmt: skip
        return (f"recomputed {len(checked)} node(s) from the repaired inputs: production equals "
                f"the rebuild on every interval{later}")  # fmt: skip
    parts = []
    for n in r.differ:
        days = [k for k in n.differ if k != "*"]
        where = (f"{days[0]}..{days[-1]} ({len(days)} interval(s))" if len(days) > 1 else
                 days[0] if days else "the whole table")  # fmt: skip
        parts.append(f"{n.node} differs from its rebuild on {where}: "
                     f"{sum(n.differ.values())} row(s)")  # fmt: skip
    for n in r.skipped:
        parts.append(f"{n.node} not recomputed ({n.skipped})")
    return "; ".join(parts)
