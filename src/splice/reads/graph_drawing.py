"""The whole graph as a drawing's data (what :func:`splice.web.svg.lineage` draws): every node of
every project in columns left to right, each one column right of its furthest upstream node,
rows ordered so that a node sits near the nodes it reads (the mean row of its parents), and an
edge for every dependency, bindings between projects included.

Checks (dbt tests, SQLMesh audits) hang off the models they check and would double the drawing:
as in dbt docs' lineage view they are left out unless asked for (``checks=True``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

CHECK_KINDS = ("test", "audit")


def whole_graph(
    ws: Workspace, *, checks: bool = False, project: str | None = None
) -> dict[str, Any]:
    """``{"nodes", "edges", "origin": None, "sources", "dashboards", "hidden", "kinds"}``:
    ``nodes`` as in :func:`splice.reads.incident_lineage.incident_lineage` (``column``, ``row``),
    ``hidden`` how many checks were left out, ``kinds`` the count of each kind drawn.
    ``project``: only that project's nodes (and the edges among them)."""
    g = ws.graph()
    keep = {
        nid for nid, n in g.nodes.items()
        if (checks or n.kind not in CHECK_KINDS) and (project is None or n.project == project)
    }  # fmt: skip
    hidden = sum(1 for n in g.nodes.values() if n.kind in CHECK_KINDS and n.id not in keep)
    order = [n for n in g.topological_order() if n in keep]
    order += sorted(keep - set(order))  # a cycle the tools allowed: drawn at the end
    parents = {n: sorted(p for p in g.parents(n) if p in keep) for n in order}
    layer: dict[str, int] = {}
    for n in order:
        layer[n] = 1 + max((layer[p] for p in parents[n] if p in layer), default=-1)
    row: dict[str, int] = {}
    for col in range(max(layer.values(), default=-1) + 1):
        here = [n for n in order if layer[n] == col]

        def key(n: str) -> tuple[float, str, str]:
            ps = [row[p] for p in parents[n] if p in row]
            return (sum(ps) / len(ps) if ps else -1.0, g.nodes[n].project, n)

        for i, n in enumerate(sorted(here, key=key)):
            row[n] = i
    kinds: dict[str, int] = {}
    nodes = []
    for n in order:
        node = g.nodes[n]
        kinds[node.kind] = kinds.get(node.kind, 0) + 1
        nodes.append(
            {
                "id": n,
                "label": str(node.meta.get("label") or node.name),
                "project": node.project,
                "kind": node.kind,
                "tool": node.tool,
                "column": layer[n],
                "row": row[n],
                "source": not parents[n],
                "dashboard": node.kind == "dashboard",
            }
        )
    return {
        "nodes": nodes,
        "edges": [{"from": p, "to": n} for n in order for p in parents[n]],
        "origin": None,
        "sources": [n["id"] for n in nodes if n["source"]],
        "dashboards": [n["id"] for n in nodes if n["dashboard"]],
        "hidden": hidden,
        "kinds": sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])),
    }
