"""Everything around one node across tools, and the joined graph at a glance (the web page's
graph pages).

:func:`node_neighbourhood` walks one node's ancestors and descendants in every project (tests
and audits left out: they are the node's checks), each with its distance and the edge it was
reached through, so a reader sees where a dbt model's data comes from in SQLMesh or ingestion
and which dashboards read it. :func:`graph_summary` counts nodes per project and kind and lists
the bindings that join the projects.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from splice.graph.model import Graph

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

#: Not listed up or down (a node page lists its checks apart).
CHECK_KINDS = ("test", "audit")
_LABELS = {"matched": "inferred"}


def _walk(
    g: Graph, start: str, step: Any, up: bool, limit: int
) -> tuple[list[dict[str, Any]], int]:
    """Breadth first from ``start``: (the first ``limit`` nodes reached, how many in all)."""
    seen = {start}
    out: list[dict[str, Any]] = []
    total = 0
    queue: deque[tuple[str, int]] = deque([(start, 0)])
    while queue:
        nid, dist = queue.popleft()
        for nxt in sorted(step(nid)):
            if nxt in seen:
                continue
            seen.add(nxt)
            n = g.nodes[nxt]
            if n.kind in CHECK_KINDS:
                continue
            queue.append((nxt, dist + 1))
            total += 1
            if len(out) >= limit:
                continue
            e = g.edge(nxt, nid) if up else g.edge(nid, nxt)
            crosses = bool(e is not None and e.binding)
            out.append(
                {
                    "id": nxt,
                    "name": n.name,
                    "kind": n.kind,
                    "project": n.project,
                    "tool": n.tool,
                    "depth": dist + 1,
                    "via": nid,
                    "binding": _LABELS.get(e.evidence, e.evidence) if e and crosses else None,
                    "relation": e.relation.key if e is not None and e.relation else None,
                }
            )
    return out, total


def node_neighbourhood(ws: Workspace, node_id: str, *, limit: int = 300) -> dict[str, Any]:
    """Every node upstream and downstream of ``node_id`` across projects, nearest first.

    Each entry: id, name, kind, project, tool, ``depth`` (edges away), ``via`` (the node it was
    reached from) and ``binding`` (``declared`` or ``inferred`` when that edge crosses projects,
    else None). At most ``limit`` per side; ``upstream_count`` / ``downstream_count`` say how
    many in all, and ``projects_up`` / ``projects_down`` which projects they are in.
    """
    from splice.reads.nodes import find_node

    g = ws.graph()
    n = find_node(g, node_id)
    up, n_up = _walk(g, n.id, g.parents, True, limit)
    down, n_down = _walk(g, n.id, g.children, False, limit)

    def projects(rows: list[dict[str, Any]]) -> list[str]:
        return list(dict.fromkeys(r["project"] for r in rows))

    return {
        "node": n.id,
        "project": n.project,
        "upstream": up,
        "downstream": down,
        "upstream_count": n_up,
        "downstream_count": n_down,
        "projects_up": projects(up),
        "projects_down": projects(down),
    }


def graph_summary(ws: Workspace, *, bindings: int = 50) -> dict[str, Any]:
    """The joined graph at a glance: per project its tool and node counts per kind; the
    bindings between projects (the first ``bindings``, by upstream id) with their evidence."""
    g = ws.graph()
    per: dict[str, dict[str, Any]] = {}
    for n in g.nodes.values():
        p = per.setdefault(
            n.project, {"project": n.project, "tool": n.tool, "kinds": {}, "nodes": 0}
        )
        p["kinds"][n.kind] = p["kinds"].get(n.kind, 0) + 1
        p["nodes"] += 1
    edges = sorted(g.bindings, key=lambda e: (e.upstream, e.downstream))
    return {
        "nodes": len(g.nodes),
        "projects": [
            {**p, "kinds": sorted(p["kinds"].items(), key=lambda kv: -kv[1])}
            for p in sorted(per.values(), key=lambda p: p["project"])
        ],
        "bindings": [
            {
                "upstream": e.upstream,
                "downstream": e.downstream,
                "evidence": _LABELS.get(e.evidence, e.evidence),
                "relation": e.relation.key if e.relation else None,
            }
            for e in edges[:bindings]
        ],
        "bindings_count": len(edges),
    }
