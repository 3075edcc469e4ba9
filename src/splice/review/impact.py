"""The reach of changed columns across tools: downstream columns, metrics and dashboards.

Starts are ``{node id: [changed columns]}``; the walk is the workspace's column lineage
(:class:`splice.lineage.LineageIndex`), across bindings from one project into the next.  Every
column reached keeps the path that led to it (``pricing:fx.daily_rates.rate_to_usd ->
pricing:marts.fct_bookings_usd.gmv_usd -> ...``), so a reviewer sees why it is named.

A model whose lineage is opaque cannot say which of its columns a change reaches: it is named
as reached as a whole (column ``*``) and the walk goes on from it node by node.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from splice.graph.model import Graph
from splice.lineage.types import ModelLineage

OPAQUE = "*"


@dataclass
class Reached:
    """One downstream column a change reaches, and how."""

    node: str
    column: str
    kind: str  # direct: the changed value flows into it; indirect: it filters, joins, groups
    path: list[str]  # node.column from the changed column to this one
    origin: str  # the changed model the path starts from

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "column": self.column,
            "kind": self.kind,
            "path": self.path,
            "from": self.origin,
        }


@dataclass
class Impact:
    columns: list[Reached] = field(default_factory=list)
    metrics: list[dict[str, Any]] = field(default_factory=list)
    dashboards: list[dict[str, Any]] = field(default_factory=list)
    #: the BI tool's charts reached ([[bi]]), each with its link and the dashboards showing it
    charts: list[dict[str, Any]] = field(default_factory=list)

    @property
    def nodes(self) -> list[str]:
        return sorted({r.node for r in self.columns})

    def to_dict(self) -> dict[str, Any]:
        return {
            "nodes": self.nodes,
            "columns": [c.to_dict() for c in self.columns],
            "metrics": self.metrics,
            "dashboards": self.dashboards,
            "charts": self.charts,
        }


def _label(node: str | None, column: str) -> str:
    return f"{node}.{column}"


def reach(
    graph: Graph,
    lineages: Mapping[str, ModelLineage],
    writers: Mapping[str, str],
    starts: Mapping[str, list[str]],
    metrics: list[Any] | None = None,
) -> Impact:
    """Every column, metric and dashboard downstream of ``starts`` (node id -> columns).

    ``metrics`` are :class:`splice.watch.metrics.MetricSpec` (declared ones are reported)."""
    from splice.lineage import LineageIndex

    idx = LineageIndex({k: (v, graph.nodes[k].writes) for k, v in lineages.items()}, writers)
    best: dict[tuple[str, str], Reached] = {}
    for nid in sorted(starts):
        for col in starts[nid]:
            origin = _label(nid, col)
            if nid not in idx.lineages and nid not in idx.outputs:
                continue
            if col != OPAQUE and nid in idx.lineages:
                ml = idx.lineages[nid]
                if not ml.opaque_reason and col not in ml.columns:
                    continue  # a removed column: the head's lineage no longer has it
            hops = idx.downstream(nid, col) if col != OPAQUE else _opaque_walk(graph, idx, nid)
            via: dict[tuple[str | None, str], tuple[str | None, str] | None] = {(nid, col): None}
            for h in hops:
                if h.node_id is None or h.self_ref:
                    continue
                via.setdefault((h.node_id, h.column), h.via)
                path = [_label(h.node_id, h.column)]
                cur = h.via
                guard = 0
                while cur is not None and guard < 200:
                    path.append(_label(cur[0], cur[1]))
                    cur = via.get(cur)
                    guard += 1
                if path[-1] != origin:
                    path.append(origin)
                path.reverse()
                key = (h.node_id, h.column)
                old = best.get(key)
                if old is None or (old.kind == "indirect" and h.kind == "direct"):
                    best[key] = Reached(h.node_id, h.column, h.kind, path, nid)
    # a model reached only as "*" (opaque) and the starts themselves are not listed twice
    columns = sorted(
        (r for r in best.values() if (r.node, r.column) not in _start_pairs(starts)),
        key=lambda r: (len(r.path), r.node, r.column),
    )
    impact = Impact(columns=columns)
    touched: dict[str, set[str]] = {}
    for r in columns:
        touched.setdefault(r.node, set()).add(r.column)
    for nid, cols in starts.items():
        touched.setdefault(nid, set()).update(cols)
    for spec in metrics or []:
        if not spec.declared or spec.node_id not in touched:
            continue
        used = _metric_columns(spec)
        hit = touched[spec.node_id]
        cols = sorted(hit & used) if OPAQUE not in hit else sorted(used)
        if not cols:
            continue
        path = next(
            (r.path for r in columns if r.node == spec.node_id and r.column in cols),
            [_label(spec.node_id, cols[0])],
        )
        impact.metrics.append(
            {
                "name": spec.name,
                "node": spec.node_id,
                "columns": cols,
                "owner": spec.owner,
                "path": path,
            }
        )
    for nid, node in sorted(graph.nodes.items()):
        if node.kind != "chart" or nid not in touched:
            continue
        impact.charts.append(
            {
                "node": nid,
                "name": node.name,
                "label": node.meta.get("label") or node.description or node.name,
                "columns": sorted(touched[nid]),
                "url": node.meta.get("url"),
                "dashboards": sorted(
                    c for c in graph.children(nid) if graph.nodes[c].kind == "dashboard"
                ),
            }
        )
    for nid, node in sorted(graph.nodes.items()):
        if node.kind != "dashboard":
            continue
        reads = sorted(p for p in graph.parents(nid) if p in touched)
        if reads:
            impact.dashboards.append(
                {
                    "node": nid,
                    "name": node.name,
                    "label": node.meta.get("label") or node.description or node.name,
                    "reads": reads,
                    "owner": node.owner,
                    "url": node.meta.get("url"),
                    "charts": [c for c in reads if graph.nodes[c].kind == "chart"],
                }
            )
    return impact


def _start_pairs(starts: Mapping[str, list[str]]) -> set[tuple[str, str]]:
    return {(n, c) for n, cols in starts.items() for c in cols}


def _opaque_walk(graph: Graph, idx: Any, nid: str) -> list[Any]:
    """From a model whose columns are unknown: every column of every model downstream of it."""
    from splice.lineage.walk import Hop

    hops: list[Any] = []
    seen = {nid}
    frontier = [(nid, 0)]
    while frontier:
        cur, depth = frontier.pop(0)
        for child in sorted(graph.children(cur)):
            if child in seen:
                continue
            seen.add(child)
            frontier.append((child, depth + 1))
            if graph.nodes[child].kind not in ("model", "snapshot"):
                continue  # through sources (a binding into another project); dashboards apart
            ml = idx.lineages.get(child)
            cols = list(ml.columns) if ml is not None and ml.columns else [OPAQUE]
            for c in cols:
                hops.append(
                    Hop(child, graph.nodes[child].writes, c, "indirect", depth + 1, (cur, OPAQUE))
                )
    return hops


def _metric_columns(spec: Any) -> set[str]:
    from sqlglot import exp

    cols = {spec.time.lower(), *(d.lower() for d in spec.dimensions)}
    for m in spec.measures:
        cols.update(c.name.lower() for c in m.expr.find_all(exp.Column))
    return cols
