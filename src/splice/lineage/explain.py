"""Why a column-lineage walk found nothing: ``(none)`` alone tells a person nothing.

:func:`why_empty` names the reason: the start is a leaf (a source, an external table, a seed, an
ingestion job), the column is not one the node is known to have (with the ones it has), the model
is opaque (with the reason), the column is computed from no column (a constant), or nothing
reads it.
"""

from __future__ import annotations

from typing import Any

from splice.graph.model import Graph
from splice.lineage.types import ModelLineage

_LEAVES = {
    "source": "a source: its columns start here",
    "external": "an external table: its columns start here",
    "seed": "a seed: its columns start in the project's CSV file",
    "ingestion": "an ingestion job: its columns start in the system it loads from",
}


def _known(cols: list[str]) -> str:
    shown = ", ".join(cols[:12]) + (", ..." if len(cols) > 12 else "")
    return f"its known columns are {shown}" if cols else "none of its columns are known"


def why_empty(
    graph: Graph,
    lineages: dict[str, ModelLineage],
    nid: str,
    column: str | None,
    direction: str,
) -> str:
    """One sentence saying why the ``direction`` walk from ``nid[.column]`` found no column."""
    node = graph.nodes[nid]
    ml = lineages.get(nid)
    if ml is not None and not ml.opaque_reason:
        columns = list(ml.columns)
    else:
        columns = [c.lower() for c in node.columns]
    if column and columns and column not in columns and not (ml and ml.opaque_reason):
        return f"{column} is not a column of {nid}: {_known(columns)}"
    if direction == "upstream":
        if node.kind in _LEAVES:
            bound = [
                p for p in graph.parents(nid) if (e := graph.edge(p, nid)) is not None and e.binding
            ]
            if bound:
                return f"{nid} is bound to {', '.join(sorted(bound))}: walk from there"
            return f"{nid} is {_LEAVES[node.kind]}"
        if ml is None:
            return f"{nid} has no column lineage (a {node.kind} of {node.tool})"
        if ml.opaque_reason:
            return f"{nid} is opaque: {ml.opaque_reason}"
        col = ml.columns.get(column) if column else None
        if col is not None and col.opaque_reason:
            return f"{column} could not be resolved: {col.opaque_reason}"
        if column and not ml.sources_of(column):
            return (
                f"{column} is computed from no column (a constant, or a function such as "
                "current_timestamp) and nothing filters or joins the rows"
            )
        return f"{nid} reads nothing the workspace knows"
    readers = sorted(c for c in graph.children(nid) if graph.nodes[c].kind in ("model", "snapshot"))
    if not readers:
        dashboards = sorted(c for c in graph.children(nid) if graph.nodes[c].kind == "dashboard")
        if dashboards:
            return f"no model reads {nid}; dashboards do: {', '.join(dashboards)}"
        return f"no model reads {nid}"
    opaque = [r for r in readers if (m := lineages.get(r)) is not None and m.opaque_reason]
    if opaque and len(opaque) == len(readers):
        return "every model that reads it is opaque: " + "; ".join(
            f"{r}: {lineages[r].opaque_reason}" for r in opaque
        )
    what = f"column {column}" if column else "its columns"
    return f"{len(readers)} model(s) read {nid} ({', '.join(readers[:5])}) but none uses {what}"


def add_why_empty(out: dict[str, Any], graph: Graph, lineages: dict[str, ModelLineage]) -> None:
    """Set ``out["why_empty"][direction]`` for each walk of a :func:`column_lineage` result
    that found nothing."""
    given = out.get("why_empty") or {}
    why = {
        d: given.get(d) or why_empty(graph, lineages, out["node"], out.get("column"), d)
        for d in ("upstream", "downstream")
        if out.get(d) == []
    }
    if why:
        out["why_empty"] = why
