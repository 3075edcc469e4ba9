"""Plain-data records of nodes, for `splice ls` (table or --json)."""

from __future__ import annotations

from typing import Any

from splice.graph.model import Graph, Node


def node_record(node: Node, graph: Graph | None = None) -> dict[str, Any]:
    """One node as JSON-ready data.

    >>> from splice.graph.model import Relation
    >>> node_record(Node(id="p:m", project="p", name="m", kind="model", tool="dbt",
    ...                  writes=Relation("w", "s", "m")))["writes"]
    'w.s.m'
    """
    rec: dict[str, Any] = {
        "id": node.id,
        "project": node.project,
        "name": node.name,
        "kind": node.kind,
        "tool": node.tool,
        "materialization": node.materialization,
        "writes": [r.key for r in node.all_writes][0] if node.all_writes else None,
        "also_writes": [r.key for r in node.also_writes],
        "reads": sorted({r.key for r in node.reads}),
        "depends_on": sorted(node.depends_on),
        "tags": sorted(node.tags),
        "time_column": node.time_column,
        "owner": node.owner,
        "path": node.path,
        "columns": dict(node.columns),
        # the SQL dialect its SQL is parsed in ([[projects]] dialect, else the tool's)
        "dialect": node.dialect,
    }
    if graph is not None:
        rec["upstream"] = sorted(graph.parents(node.id))
        rec["downstream"] = sorted(graph.children(node.id))
    # dbt: a version of a versioned model, a unit test's type
    for key in ("label", "url", "version", "latest_version", "test_type"):
        if key in node.meta and node.meta[key]:
            rec[key] = node.meta[key]
    return rec
