"""Monitors derived from the graph's column lineage: join coverage and slices.

Row counts, null rates and distinct counts look normal when a vendor starts sending ``eur``
for ``EUR``, or when one booking channel stops arriving; what changes is *which* values arrive
and whether they still find their partner.  So, from the lineage (:mod:`splice.lineage`):

- **join coverage**, for every equi-join lineage finds (:class:`~splice.lineage.types.JoinKey`)
  whose right side is a lookup of its key (the key is unique there: a dimension, a seed; or
  the right side holds one row per interval and key, as daily rates do): per interval of the
  left side, the share of its rows whose key finds a partner.  A partner is a key of the
  right side's latest interval on or before (a rate holds until the next one), or any of its
  keys when it has no time column.  The monitor belongs to the model that joins; the left
  side's time column is its writer's, else the joining model's own traced back to it.  Only
  the intervals the joining model has built and the right side has reached are measured (a
  raw table loaded ahead of the models is not judged early, nor pushes "missing" on others).
- **slices**: row counts per value of a node's dimensions, a value absent from an interval
  that has rows counted as 0, not as missing (:mod:`splice.watch.detectors.slices` judges them).  The
  dimensions are the ones a declared metric is watched by, the text columns of the node's
  grain, and the text columns its readers group by or join on; never a unique key.  A
  dimension with more than :data:`MAX_SLICE_VALUES` values is not sliced (the query returns
  nothing for it).

Every query is a sqlglot expression; see :class:`JoinCoverageSpec` and :func:`slice_spec`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any, ClassVar

from sqlglot import exp

from splice.graph.model import Graph, Node, Relation
from splice.watch.specs import (
    INTERVAL,
    ColumnTypes,
    Measure,
    MetricSpec,
    is_temporal,
    is_text,
    node_keys,
    relation_of,
)

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

#: A dimension with more values than this (in the intervals measured) is not sliced.
MAX_SLICE_VALUES = 100
#: At most this many dimensions are sliced per node.
MAX_SLICE_DIMS = 4
#: How far back the right side's latest interval is looked for (days).
PARTNER_LOOKBACK_DAYS = 14


def _col(name: str, table: str | None = None) -> exp.Column:
    return exp.column(name, table=table, quoted=True)


def _table(rel: Relation) -> exp.Table:
    return exp.table_(rel.name, db=rel.schema, catalog=rel.catalog, quoted=True)


def _day(e: exp.Expr) -> exp.Expr:
    return exp.cast(e, exp.DataType.build("DATE"))


def _since(col: exp.Expr, start: date, time_type: str) -> exp.Expr:
    typ = "TIMESTAMP" if "TIMESTAMP" in (time_type or "").upper() else "DATE"
    return exp.GTE(
        this=col,
        expression=exp.cast(exp.Literal.string(start.isoformat()), exp.DataType.build(typ)),
    )


# -- join coverage -----------------------------------------------------------------------------
@dataclass
class JoinMonitor:
    """One join key as a monitor sees it: both sides' relations, key and time columns."""

    model: str  # the node that joins
    left: Relation
    left_key: str
    left_time: str
    left_time_type: str
    right: Relation
    right_key: str
    right_time: str | None  # None: every key of the right side is a partner
    right_node: str | None = None
    left_node: str | None = None
    # the joining model's own relation and time column: intervals it has not built yet (and
    # that the right side has no interval for yet) are not measured
    model_rel: Relation | None = None
    model_time: str | None = None

    @property
    def label(self) -> str:
        return f"coverage({self.left.name}.{self.left_key} in {self.right.name}.{self.right_key})"


@dataclass
class JoinCoverageSpec(MetricSpec):
    """Join coverage per interval of the left side: ``m0`` is the share of its rows whose key
    finds a partner (see the module doc).

    >>> j = JoinMonitor("p:m", Relation("w", "raw", "b"), "ccy", "day", "DATE",
    ...                 Relation("w", "fx", "r"), "ccy", "rate_day")
    >>> print(coverage_spec(j, {}).sql("duckdb", start=date(2026, 9, 28), pretty=True))
    WITH l AS (
      SELECT
        CAST("day" AS DATE) AS "interval_start",
        "ccy" AS "k"
      FROM "w"."raw"."b"
      WHERE
        "day" >= CAST('2026-09-28' AS DATE)
        AND CAST("day" AS DATE) <= (
          SELECT
            MAX(CAST("rate_day" AS DATE))
          FROM "w"."fx"."r"
        )
    ), r AS (
      SELECT DISTINCT
        CAST("rate_day" AS DATE) AS "d",
        "ccy" AS "k"
      FROM "w"."fx"."r"
      WHERE
        CAST("rate_day" AS DATE) >= CAST('2026-09-14' AS DATE)
    ), a AS (
      SELECT
        "x"."interval_start" AS "interval_start",
        MAX("y"."d") AS "d"
      FROM (
        SELECT DISTINCT
          "interval_start"
        FROM l
      ) AS "x"
      JOIN (
        SELECT DISTINCT
          "d"
        FROM r
      ) AS "y"
        ON "y"."d" <= "x"."interval_start"
      GROUP BY
        "x"."interval_start"
    )
    SELECT
      "l"."interval_start" AS "interval_start",
      AVG(CASE WHEN NOT "r"."k" IS NULL THEN 1.0 ELSE 0.0 END) AS "m0"
    FROM l
    LEFT JOIN a
      ON "a"."interval_start" = "l"."interval_start"
    LEFT JOIN r
      ON "r"."d" = "a"."d" AND "r"."k" = "l"."k"
    GROUP BY
      "l"."interval_start"
    """

    join: JoinMonitor | None = None
    #: its intervals (the left side's) say nothing about how far the warehouse is loaded
    judges_freshness: ClassVar[bool] = False

    def query(self, start: date | None = None) -> exp.Select:
        j = self.join
        assert j is not None
        left = exp.select(
            exp.alias_(_day(_col(j.left_time)), INTERVAL, quoted=True),
            exp.alias_(_col(j.left_key), "k", quoted=True),
        ).from_(_table(j.left))
        if start is not None:
            left = left.where(_since(_col(j.left_time), start, j.left_time_type))
        for rel, col in ((j.right, j.right_time), (j.model_rel, j.model_time)):
            if rel is not None and col:
                latest = exp.select(exp.Max(this=_day(_col(col)))).from_(_table(rel))
                left = left.where(
                    exp.LTE(this=_day(_col(j.left_time)), expression=exp.Subquery(this=latest))
                )
        matched = exp.Avg(
            this=exp.Case(
                ifs=[
                    exp.If(
                        this=exp.Not(this=exp.Is(this=_col("k", "r"), expression=exp.Null())),
                        true=exp.Literal.number("1.0"),
                    )
                ],  # fmt: skip
                default=exp.Literal.number("0.0"),
            )
        )
        out = exp.select(
            exp.alias_(_col(INTERVAL, "l"), INTERVAL, quoted=True),
            exp.alias_(matched, "m0", quoted=True),
        ).with_("l", as_=left)
        if j.right_time is None:
            right = exp.select(exp.alias_(_col(j.right_key), "k", quoted=True)).from_(
                _table(j.right)
            )
            out = out.with_("r", as_=right.distinct()).from_(exp.to_table("l", quoted=True))
            on: exp.Expr = exp.EQ(this=_col("k", "r"), expression=_col("k", "l"))
            out = out.join(exp.to_table("r", quoted=True), on=on, join_type="left")
        else:
            rday = _day(_col(j.right_time))
            right = exp.select(
                exp.alias_(rday, "d", quoted=True), exp.alias_(_col(j.right_key), "k", quoted=True)
            ).from_(_table(j.right))
            if start is not None:
                back = start - timedelta(days=PARTNER_LOOKBACK_DAYS)
                right = right.where(
                    exp.GTE(this=rday.copy(), expression=exp.cast(
                        exp.Literal.string(back.isoformat()), exp.DataType.build("DATE")))
                )  # fmt: skip
            # each interval of the left side: the right side's latest interval on or before it
            days = exp.select(_col(INTERVAL)).from_(exp.to_table("l", quoted=True)).distinct()
            rdays = exp.select(_col("d")).from_(exp.to_table("r", quoted=True)).distinct()
            anchor = (
                exp.select(
                    exp.alias_(_col(INTERVAL, "x"), INTERVAL, quoted=True),
                    exp.alias_(exp.Max(this=_col("d", "y")), "d", quoted=True),
                )
                .from_(exp.alias_(exp.Subquery(this=days), "x", table=True, quoted=True))
                .join(
                    exp.alias_(exp.Subquery(this=rdays), "y", table=True, quoted=True),
                    on=exp.LTE(this=_col("d", "y"), expression=_col(INTERVAL, "x")),
                )
                .group_by(_col(INTERVAL, "x"))
            )
            out = (
                out.with_("r", as_=right.distinct())
                .with_("a", as_=anchor)
                .from_(exp.to_table("l", quoted=True))
                .join(
                    exp.to_table("a", quoted=True),
                    on=exp.EQ(this=_col(INTERVAL, "a"), expression=_col(INTERVAL, "l")),
                    join_type="left",
                )
                .join(
                    exp.to_table("r", quoted=True),
                    on=exp.and_(
                        exp.EQ(this=_col("d", "r"), expression=_col("d", "a")),
                        exp.EQ(this=_col("k", "r"), expression=_col("k", "l")),
                    ),
                    join_type="left",
                )
            )
        return out.group_by(_col(INTERVAL, "l"))


def coverage_spec(j: JoinMonitor, common: dict[str, Any]) -> JoinCoverageSpec:
    expr = exp.Avg(this=_col(j.left_key))  # what it reads, for the lineage of the measure
    fields: dict[str, Any] = {
        "node_id": j.model, "relation": j.left, "time": j.left_time,
        "time_type": j.left_time_type, "grain": "day", "declared": False,
    } | common  # fmt: skip
    return JoinCoverageSpec(
        name=f"{j.model}/join({j.left.name}.{j.left_key})",
        dimensions=[],
        measures=[Measure(f"{j.model}/{j.label}", j.label, "coverage", expr, column=j.left_key)],
        join=j,
        **fields,
    )


# -- what the graph knows ----------------------------------------------------------------------
class GraphFacts:
    """Nodes by relation, unique keys, time columns and readers' use of columns, from the graph
    and the workspace's column lineage (read once)."""

    def __init__(self, graph: Graph, lineage: dict[str, Any]) -> None:
        self.graph = graph
        self.lineage = lineage
        self.by_rel: dict[Relation, list[Node]] = {}
        for n in graph.nodes.values():
            rel = relation_of(n) if n.kind in ("model", "seed", "source", "external") else None
            if rel is not None:
                self.by_rel.setdefault(rel, []).append(n)
            if n.kind == "ingestion":
                for r in n.all_writes:
                    self.by_rel.setdefault(r, []).append(n)
        self.tests: dict[str, list[Node]] = {}
        for n in graph.nodes.values():
            of = n.meta.get("model") or n.meta.get("test_of")
            if n.kind in ("audit", "test") and of:
                self.tests.setdefault(str(of), []).append(n)
        # the columns of each relation its readers group by or join on
        self.used: dict[Relation, list[str]] = {}
        for ml in lineage.values():
            for ref in ml.query_indirect:
                if "GROUP_BY" in ref.subtypes:
                    self.used.setdefault(ref.relation, []).append(ref.column)
            for jk in getattr(ml, "joins", None) or []:
                for side in (jk.left, jk.right):
                    self.used.setdefault(side.relation, []).append(side.column)

    def node_of(self, rel: Relation) -> Node | None:
        nodes = sorted(self.by_rel.get(rel, []), key=lambda n: (n.kind != "model", n.id))
        return nodes[0] if nodes else None

    def unique(self, node: Node) -> set[str]:
        """Columns unique on their own in ``node`` (SQLMesh unique_values, dbt unique)."""
        out = set(node_keys(self.graph, node).unique)
        for t in self.tests.get(node.id, []):
            if t.meta.get("test_name") == "unique":
                cols = t.meta.get("test_columns")
                if isinstance(cols, list):
                    out.update(str(c).lower() for c in cols)
        return out

    def time_of(self, rel: Relation, via: str | None = None) -> str | None:
        """The time column of ``rel``: its node's; else a column its writer passes on from an
        upstream time column; else ``via``'s time column traced back to it."""
        for n in self.by_rel.get(rel, []):
            if n.time_column:
                return n.time_column.lower()
        for n in self.by_rel.get(rel, []):
            ml = self.lineage.get(n.id)
            for col, cl in (ml.columns if ml is not None else {}).items():
                for ref in cl.direct:
                    up = self.node_of(ref.relation)
                    if (ref.subtypes == ("IDENTITY",) and up is not None and up.time_column
                            and up.time_column.lower() == ref.column):  # fmt: skip
                        return str(col)
        model = self.graph.nodes.get(via or "")
        ml = self.lineage.get(via or "")
        if model is not None and model.time_column and ml is not None:
            cl = ml.columns.get(model.time_column.lower())
            for ref in cl.direct if cl is not None else []:
                if ref.relation == rel and ref.subtypes == ("IDENTITY",):
                    return ref.column
        return None


def join_monitors(facts: GraphFacts, types: ColumnTypes, dialect: str) -> list[JoinMonitor]:
    """A :class:`JoinMonitor` for every join key the lineage finds that can be measured."""
    out: list[JoinMonitor] = []
    seen: set[tuple[Relation, str, Relation, str]] = set()
    for model in sorted(facts.lineage):
        ml = facts.lineage[model]
        for jk in getattr(ml, "joins", None) or []:
            key = (jk.left.relation, jk.left.column, jk.right.relation, jk.right.column)
            if key in seen:
                continue
            lnode, rnode = facts.node_of(jk.left.relation), facts.node_of(jk.right.relation)
            ltime = facts.time_of(jk.left.relation, model)
            if ltime is None or rnode is None:
                continue
            lcols = types.of(lnode) if lnode is not None else {}
            if lcols.get(ltime) and not is_temporal(lcols[ltime], dialect):
                continue
            rtime = facts.time_of(jk.right.relation)
            rkeys = node_keys(facts.graph, rnode)
            if jk.right.column in facts.unique(rnode) or rnode.kind == "seed":
                rtime = None  # a lookup of its key: any of its keys is a partner
            elif not (rtime and set(rkeys.grain) == {rtime, jk.right.column}):
                continue  # neither a lookup nor one row per interval and key: no partner rule
            seen.add(key)
            m = facts.graph.nodes.get(model)
            mrel = relation_of(m) if m is not None and m.time_column else None
            out.append(JoinMonitor(
                model, jk.left.relation, jk.left.column, ltime, lcols.get(ltime) or "DATE",
                jk.right.relation, jk.right.column, rtime, rnode.id,
                lnode.id if lnode is not None else None,
                mrel if mrel != jk.left.relation else None,
                m.time_column.lower() if mrel is not None and m is not None and m.time_column
                else None,
            ))  # fmt: skip
    return out


# -- slices ------------------------------------------------------------------------------------
def slice_spec(spec_common: dict[str, Any], node: Node, dim: str) -> MetricSpec:
    """Row counts of ``node`` per value of ``dim`` per interval (nothing when ``dim`` has more
    than :data:`MAX_SLICE_VALUES` values in the intervals measured).

    >>> from splice.graph.model import Node
    >>> n = Node("p:f", "p", "f", "model", "sqlmesh")
    >>> s = slice_spec({"relation": Relation("w", "m", "f"), "time": "day", "time_type": "DATE",
    ...                 "node_id": "p:f", "grain": "day", "declared": False}, n, "channel")
    >>> print(s.sql("duckdb", start=date(2026, 9, 28)))  # doctest: +NORMALIZE_WHITESPACE
    SELECT CAST("day" AS DATE) AS "interval_start", "channel" AS "d0", COUNT(*) AS "m0"
    FROM "w"."m"."f" WHERE "day" >= CAST('2026-09-28' AS DATE) AND (SELECT COUNT(DISTINCT
    "channel") FROM "w"."m"."f" WHERE "day" >= CAST('2026-09-28' AS DATE)) <= 100 GROUP BY
    CAST("day" AS DATE), "channel"
    """
    return SliceSpec(
        name=f"{node.id}/slices({dim})",
        dimensions=[dim],
        measures=[
            Measure(
                f"{node.id}/rows_by({dim})",
                f"row_count by {dim}",
                "slice",
                exp.Count(this=exp.Star()),
                column=dim,
            )
        ],  # fmt: skip
        **spec_common,
    )


@dataclass
class SliceSpec(MetricSpec):
    """A slice spec: its query measures nothing for a dimension with too many values."""

    def query(self, start: date | None = None) -> exp.Select:
        q = super().query(start)
        values = exp.select(
            exp.Count(this=exp.Distinct(expressions=[_col(self.dimensions[0])]))
        ).from_(_table(self.relation))
        if start is not None:
            values = values.where(_since(_col(self.time), start, self.time_type))
        cap = exp.LTE(
            this=exp.Subquery(this=values), expression=exp.Literal.number(MAX_SLICE_VALUES)
        )
        return q.where(cap, append=True)


def slice_dimensions(facts: GraphFacts, node: Node, cols: dict[str, str], time: str,
                     declared: list[MetricSpec], dialect: str) -> list[str]:  # fmt: skip
    """The dimensions ``node`` is sliced by (see the module doc), at most MAX_SLICE_DIMS."""
    rel = relation_of(node)
    keys = node_keys(facts.graph, node)
    unique = facts.unique(node)
    if keys.grain and time not in keys.grain:
        unique |= set(keys.grain) if len(keys.grain) == 1 else set()
    found: list[str] = []
    for d in declared:
        if d.node_id == node.id:
            found += [c for c in d.dimensions]
    if time in keys.grain:
        found += [c for c in keys.grain if c != time]
    found += facts.used.get(rel, []) if rel is not None else []
    out = []
    for c in dict.fromkeys(x.lower() for x in found):
        if c != time and c in cols and c not in unique and is_text(cols[c] or "", dialect):
            out.append(c)
    return out[:MAX_SLICE_DIMS]


def graph_monitors(ws: Workspace, graph: Graph, types: ColumnTypes, declared: list[MetricSpec], *,
                   sensitivity: str, calendar: str | None,
                   exclude: list[str] | None = None) -> list[MetricSpec]:  # fmt: skip
    """The join-coverage and slice monitors of ``graph`` (none when lineage cannot be had)."""
    lineage = workspace_models(ws)
    facts = GraphFacts(graph, lineage)
    skip = set(exclude or [])
    dialect = ws.dialect
    specs: list[MetricSpec] = []
    for node in sorted(graph.nodes.values(), key=lambda n: n.id):
        if node.id in skip or not node.time_column or node.kind not in ("model", "seed", "source"):
            continue
        rel = relation_of(node)
        cols = types.of(node)
        time = node.time_column.lower()
        if rel is None or time not in cols or not is_temporal(cols[time] or "DATE", dialect):
            continue
        common = {
            "node_id": node.id, "relation": rel, "time": time, "time_type": cols[time] or "DATE",
            "grain": "day", "declared": False, "owner": node.owner, "sensitivity": sensitivity,
            "calendar": calendar,
        }  # fmt: skip
        for dim in slice_dimensions(facts, node, cols, time, declared, dialect):
            specs.append(slice_spec(common, node, dim))
    for j in join_monitors(facts, types, dialect):
        if j.model in skip:
            continue
        owner = graph.nodes[j.model].owner if j.model in graph.nodes else None
        common = {"owner": owner, "sensitivity": sensitivity, "calendar": calendar}
        specs.append(coverage_spec(j, common))
    return specs


def workspace_models(ws: Workspace) -> dict[str, Any]:
    """The workspace's column lineage per model (empty when it cannot be had: the graph
    monitors are then left out, the other monitors stand)."""
    from splice.lineage.service import workspace_lineage

    try:
        return dict(workspace_lineage(ws).models)
    except Exception:  # noqa: BLE001 - no lineage: no lineage-derived monitors
        return {}
