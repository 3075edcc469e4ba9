"""Default monitors of every built model and seed, whatever its tool says about time.

:func:`splice.watch.metrics.default_monitors` watches the nodes whose tool names a time column
(SQLMesh's incremental models).  This module covers the rest of what the projects build (dbt
models, seeds and snapshots, SQLMesh models of other kinds), and gives every monitored node a
*content* spec:

- **the time column** of a node without one: the temporal column a ``unique`` test keys, else
  one a ``not_null`` test guards, else the first temporal column of the relation;
- **its grain**, read from the model's own SQL (what its last run compiled): a time column
  computed as ``date_trunc('month', ...)`` makes a monthly table, so its intervals are months;
  an interval is measured only once it is closed (the newest day in the warehouse is past its
  end, see :func:`closed_rows`): a monthly or quarterly rollup grows as its interval fills,
  and a half-filled month is no anomaly;
- ``{node}/rows``: the row count and the sum of every numeric column per interval, except key
  columns (a ``unique`` test's) and running totals (a window aggregate, which a quarter-to-date
  column is: it resets at every quarter);
- a node with no time column at all is measured **per table** (``time`` empty): once per watch,
  as of the newest interval in the warehouse (``MetricSpec.at``), its row count (judged for a
  drop) and sums (judged for a spike);
- ``{node}/content``, for every monitored node: a checksum of each column's values per
  interval (or per table).  Checksums are never judged as numbers; when the node's code or an
  upstream node's code changed (:mod:`splice.watch.changes`), the watch measures them again
  over every stored interval and reports the values the change rewrote
  (:mod:`splice.watch.restated`).
"""

from __future__ import annotations

from datetime import date, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from splice.graph.model import Graph, Node
from splice.warehouse.rows import values_checksum
from splice.watch.specs import (
    ColumnTypes,
    Measure,
    MetricSpec,
    is_numeric,
    is_temporal,
    node_keys,
    relation_of,
)

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

BUILT_KINDS = ("model", "seed", "snapshot")
#: At most this many columns of a node get a checksum.
MAX_CHECKSUM_COLUMNS = 24
#: At most this many numeric columns of a node are summed.
MAX_SUM_COLUMNS = 20
#: ``date_trunc`` units and the grain they make.
GRAINS = {"WEEK": "week", "MONTH": "month", "QUARTER": "quarter", "YEAR": "year"}
#: The detectors of a per-table monitor: one point per watch says little more than a drop
#: of its rows or a spike of a sum.
PER_TABLE_DETECTORS = {"volume": ("volume_drop",), "value": ("spike",)}


# -- what the node's tests and SQL say ----------------------------------------------------------
def columns_tested(graph: Graph, node: Node) -> dict[str, list[str]]:
    """test name (``unique``, ``not_null``, ...) -> the columns dbt tests of ``node`` name."""
    out: dict[str, list[str]] = {}
    for n in graph.nodes.values():
        if n.kind != "test" or n.meta.get("test_of") != node.id:
            continue
        name = str(n.meta.get("test_name") or "")
        for c in n.meta.get("test_columns") or []:  # type: ignore[attr-defined]
            out.setdefault(name, []).append(str(c).lower())
    return out


def node_sql(ws: Workspace, node: Node) -> tuple[str | None, str]:
    """The SQL that built the node: for dbt, what its last run compiled; else the graph's."""
    dialect = node.dialect or ws.dialect
    if node.tool == "dbt" and node.path and node.kind in ("model", "snapshot"):
        try:
            prov = ws.provider(node.project)
            pkg = str(node.meta.get("package") or node.project)
            f = prov.work / "target" / prov.ctx.environment / "compiled" / pkg / node.path
            if f.is_file():
                return f.read_text(encoding="utf-8"), dialect
        except Exception:  # noqa: BLE001 - no compiled SQL: the shape stays unknown
            return None, dialect
    return node.sql, dialect


@lru_cache(maxsize=256)
def read_shape(sql: str, dialect: str, time: str) -> tuple[str | None, frozenset[str]]:
    """(the grain of the output column ``time``, the output columns computed by a window).

    The grain is ``day`` unless ``time`` is a ``date_trunc`` (through CTEs and subqueries);
    None when the SQL cannot be read.

    >>> sql = ("with d as (select booking_date, sum(x) as x from t group by 1) "
    ...        "select cast(date_trunc('month', booking_date) as date) as month, x, "
    ...        "sum(x) over (order by booking_date) as running from d")
    >>> g, w = read_shape(sql, "duckdb", "month"); g, sorted(w)
    ('month', ['running'])
    """
    import sqlglot
    from sqlglot.optimizer.scope import build_scope

    try:
        root = build_scope(sqlglot.parse_one(sql, read=dialect))
    except Exception:  # noqa: BLE001 - unreadable SQL: unknown shape
        return None, frozenset()
    if root is None:
        return None, frozenset()
    grain = "day"
    for e in _trace(root, time):
        for t in e.find_all(exp.TimestampTrunc, exp.DateTrunc):
            unit = t.text("unit").upper()
            if unit in GRAINS:
                grain = GRAINS[unit]
                break
        else:
            continue
        break
    windowed = frozenset(
        str(p.alias_or_name).lower()
        for p in getattr(root.expression, "selects", None) or []
        if any(e.find(exp.Window) is not None for e in _trace(root, p.alias_or_name))
    )
    return grain, windowed


def _trace(sc: Any, name: str, depth: int = 0) -> list[exp.Expr]:
    """The expressions that define output column ``name`` of scope ``sc``, outermost first,
    followed through the CTEs and subqueries it reads by name."""
    from sqlglot.optimizer.scope import Scope

    if depth > 10:
        return []
    selects = getattr(sc.expression, "selects", None) or []
    proj = next((s for s in selects if str(s.alias_or_name).lower() == name.lower()), None)
    if proj is None:
        return []
    e = proj.unalias()
    out = [e]
    for c in e.find_all(exp.Column):
        src = sc.sources.get(c.table) if c.table else (
            next(iter(sc.sources.values())) if len(sc.sources) == 1 else None
        )  # fmt: skip
        if isinstance(src, Scope):
            out += _trace(src, c.name, depth + 1)
    return out


def time_column(graph: Graph, node: Node, cols: dict[str, str], dialect: str) -> str | None:
    """The column a node's intervals are on, when its tool names none (see the module doc)."""
    temporal = [c for c in cols if is_temporal(cols[c] or "", dialect)]
    if not temporal:
        return None
    tests = columns_tested(graph, node)
    for name in ("unique", "not_null"):
        hit = [c for c in temporal if c in tests.get(name, [])]
        if hit:
            return hit[0]
    return temporal[0]


# -- the specs -------------------------------------------------------------------------------------
def _checksums(base: str, columns: list[str], dialect: str) -> list[Measure]:
    return [
        Measure(
            f"{base}/checksum({c})",
            f"checksum({c})",
            "checksum",
            values_checksum(exp.column(c, quoted=True), dialect),
            column=c,
        )  # fmt: skip
        for c in columns[:MAX_CHECKSUM_COLUMNS]
    ]


def table_monitors(
    ws: Workspace,
    graph: Graph,
    types: ColumnTypes,
    timed: list[MetricSpec],
    *,
    dialect: str,
    sensitivity: str,
    calendar: str | None,
    exclude: list[str] | None = None,
) -> list[MetricSpec]:
    """The monitors of every built node ``timed`` (the tool-timed default monitors) leaves
    out, and a content spec for every node (see the module doc)."""
    skip = set(exclude or [])
    by_node: dict[str, MetricSpec] = {}
    for s in timed:
        by_node.setdefault(s.node_id, s)
    specs: list[MetricSpec] = []
    for node in sorted(graph.nodes.values(), key=lambda n: n.id):
        if node.id in skip or node.kind not in BUILT_KINDS or node.tool in ("dlt", "command"):
            continue
        rel = relation_of(node)
        if rel is None:
            continue
        cols = types.of(node)
        if not cols:
            continue
        common: dict[str, Any] = {
            "node_id": node.id, "relation": rel, "declared": False, "owner": node.owner,
            "sensitivity": sensitivity, "calendar": calendar, "dimensions": [],
        }  # fmt: skip
        have = by_node.get(node.id)
        if have is not None:  # timed by its tool: its content per interval
            content = [c for c in cols if c != have.time]
            specs.append(MetricSpec(name=f"{node.id}/content", time=have.time,
                                    time_type=have.time_type, grain=have.grain,
                                    measures=_checksums(node.id, content, dialect), **common))  # fmt: skip
            continue
        specs += _untimed(ws, graph, node, cols, common, dialect)
    return [s for s in specs if s.measures]


def _untimed(
    ws: Workspace,
    graph: Graph,
    node: Node,
    cols: dict[str, str],
    common: dict[str, Any],
    dialect: str,
) -> list[MetricSpec]:
    base = node.id
    time = time_column(graph, node, cols, dialect)
    grain, windowed = None, frozenset[str]()
    if time is not None:
        sql, sql_dialect = node_sql(ws, node)
        if sql:
            grain, windowed = read_shape(sql, sql_dialect, time)
        elif node.kind == "seed":
            grain = "day"  # a seed's rows are what its file says: no SQL truncates them
    if grain is None:
        time = None  # a time column whose grain cannot be read: measured per table
    keys = set(node_keys(graph, node).unique) | set(columns_tested(graph, node).get("unique", []))
    numeric = [
        c for c in cols
        if c != time and c not in keys and c not in windowed and is_numeric(cols[c] or "", dialect)
    ][:MAX_SUM_COLUMNS]  # fmt: skip
    per_table = time is None
    detectors = PER_TABLE_DETECTORS if per_table else {}
    rows = [Measure(f"{base}/row_count", "row_count", "volume", exp.Count(this=exp.Star()),
                    detectors=detectors.get("volume"))]  # fmt: skip
    rows += [
        Measure(
            f"{base}/sum({c})",
            f"sum({c})",
            "value",
            exp.Sum(this=exp.column(c, quoted=True)),
            column=c,
            detectors=detectors.get("value"),
        )  # fmt: skip
        for c in numeric
    ]
    timing: dict[str, Any] = {"time": time or "", "time_type": cols.get(time or "", "") or "DATE",
                              "grain": grain or "day"}  # fmt: skip
    content = [c for c in cols if c != time]
    return [
        MetricSpec(name=f"{base}/rows", measures=rows, **timing, **common),
        MetricSpec(
            name=f"{base}/content", measures=_checksums(base, content, dialect), **timing, **common
        ),  # fmt: skip
    ]


# -- what the watch does with them --------------------------------------------------------------
def closed_rows(spec: MetricSpec, rows: list[tuple[Any, ...]], ref_end: date | None
                ) -> list[tuple[Any, ...]]:  # fmt: skip
    """The rows of a coarse grain's intervals that are closed: whose last day is at most
    ``ref_end`` (the newest day in the warehouse).  A month that is still filling is measured
    when it is complete.

    >>> spec = MetricSpec("m", "p:n", None, "month", "DATE", [], "month", [])  # type: ignore[arg-type]
    >>> rows = [(date(2026, 8, 1), 5), (date(2026, 9, 1), 2)]
    >>> closed_rows(spec, rows, date(2026, 9, 27)), len(closed_rows(spec, rows, date(2026, 9, 30)))
    ([(datetime.date(2026, 8, 1), 5)], 2)
    """
    from splice.watch.grid import as_date, next_interval

    if spec.grain == "day" or spec.per_table or ref_end is None:
        return rows
    end = ref_end + timedelta(days=1)
    return [r for r in rows if r[0] is None or next_interval(as_date(r[0]), spec.grain) <= end]
