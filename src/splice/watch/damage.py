"""A fault's damage, what every scope module builds on: :class:`Damage` (one node's damaged
intervals), days said as ranges, where the fault started, the nodes a node reads, and the walk's
cached questions to the lineage, the SQL and the warehouse (:class:`ScopeWalk`).  The scope
itself is :mod:`splice.watch.scope`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from splice.graph.model import Graph, Node, Relation
from splice.warehouse.rows import date_literal, table

if TYPE_CHECKING:
    from splice.workspace.core import Workspace


def consecutive_ranges(days: list[date], gap: int = 3) -> list[tuple[date, date]]:
    """Sorted days as ranges, joining days at most ``gap`` apart.

    >>> consecutive_ranges([date(2026, 9, 28), date(2026, 9, 29), date(2026, 10, 9)])
    [(datetime.date(2026, 9, 28), datetime.date(2026, 9, 29)), (datetime.date(2026, 10, 9), datetime.date(2026, 10, 9))]
    """
    out: list[tuple[date, date]] = []
    for d in sorted(set(days)):
        if out and (d - out[-1][1]).days <= gap:
            out[-1] = (out[-1][0], d)
        else:
            out.append((d, d))
    return out


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


def cast_date(e: exp.Expr) -> exp.Expr:
    """``CAST(e AS DATE)``."""
    return exp.cast(e, exp.DataType.build("DATE"))


def quoted_column(name: str) -> exp.Column:
    """A column by its name, quoted."""
    return exp.column(name, quoted=True)


def days_from(con: Any, query: exp.Select, dialect: str) -> list[date]:
    """The distinct dates ``query`` returns in its first column, sorted."""
    rows = con.execute(query.sql(dialect=dialect)).fetchall()
    return sorted({r[0] for r in rows if isinstance(r[0], date)})


def origin_days(
    con: Any, relation: Relation, time_column: str, days: list[date], since: date | None,
    dialect: str,
) -> list[date]:  # fmt: skip
    """``days`` extended back to ``since`` with the intervals the relation has in between."""
    if since is None or not days or since >= min(days):
        return sorted(set(days))
    t = cast_date(quoted_column(time_column))
    q = (
        exp.select(t.copy())
        .distinct()
        .from_(table(relation, dialect))
        .where(exp.Between(this=t.copy(), low=date_literal(since), high=date_literal(min(days))))
    )
    return sorted(set(days) | set(days_from(con, q, dialect)))


def span(days: list[date]) -> str:
    """Days as short ranges: ``2026-09-25..27, 2026-10-02``.

    >>> span([date(2026, 9, 25), date(2026, 9, 26), date(2026, 9, 27), date(2026, 10, 2)])
    '2026-09-25..27, 2026-10-02'
    """
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


#: Kinds of node that stand for a relation something else loads (a walk looks through them to
#: the relations they name; a watched one is a feed as it lands).
SOURCE_KINDS = ("source", "external")


def origin_time_column(ws: Workspace, node: Node) -> str | None:
    """The time column of an incident's origin: its tool's, else the one its declared metrics
    are measured by (a source has none of its own)."""
    if node.time_column:
        return node.time_column.lower()
    declared = [m.time for m in ws.config.metrics if m.node == node.id and m.time]  # SQL ones
    return declared[0].lower() if declared else None


def read_parents(graph: Graph, nid: str) -> set[str]:
    """The nodes whose relations ``nid`` reads: its parents, looking through sources."""
    out: set[str] = set()
    stack, seen = list(graph.parents(nid)), set()
    while stack:
        p = stack.pop()
        if p in seen or p not in graph.nodes:
            continue
        seen.add(p)
        if graph.nodes[p].kind in SOURCE_KINDS:
            stack.extend(graph.parents(p))
        else:
            out.add(p)
    return out


class ScopeWalk:
    """The lineage, SQL and warehouse a scope walk asks, each asked at most once per node."""

    def __init__(self, ws: Workspace, graph: Graph, con: Any) -> None:
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
        return days_from(self.con, q, self.dialect)
