"""The lineage the incident page draws: from the ingestion job that feeds the origin, through
the origin, to every node and dashboard in the blast radius, laid out in columns left to right.

The nodes are the diagnosis's column path (which ends at the source), the origin and the blast
radius; an edge joins two of them when the graph does, directly or through nodes left out of the
drawing (a cross-project source binding, say; they are named in the edge's ``via``). The path's
own steps are edges too (the ingestion job feeds the origin's relation across a binding).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

#: Node kinds a path starts from (the job or relation that feeds the origin).
SOURCE_KINDS = ("ingestion", "source", "external")
#: How many left-out nodes an edge may pass through.
MAX_VIA = 3
#: At most this many nodes are drawn (the path, the sources and the dashboards always are).
MAX_DRAWN = 40


def _links(graph: Any, members: set[str]) -> dict[tuple[str, str], list[str]]:
    """(upstream, downstream) -> the left-out nodes between them, for member pairs the graph
    joins directly or through at most :data:`MAX_VIA` left-out nodes."""
    out: dict[tuple[str, str], list[str]] = {}
    for a in members:
        if a not in graph.nodes:
            continue
        todo: deque[tuple[str, list[str]]] = deque((c, []) for c in sorted(graph.children(a)))
        seen: set[str] = set()
        while todo:
            n, via = todo.popleft()
            if n in seen:
                continue
            seen.add(n)
            if n in members:
                if n != a and (a, n) not in out:
                    out[(a, n)] = via
                continue
            if len(via) < MAX_VIA:
                todo.extend((c, [*via, n]) for c in sorted(graph.children(n)))
    return out


def _layers(ids: list[str], edges: list[tuple[str, str]]) -> dict[str, int]:
    """Longest-path layering: each node one column right of its furthest upstream member.

    >>> sorted(_layers(["a", "b", "c"], [("a", "b"), ("b", "c"), ("a", "c")]).items())
    [('a', 0), ('b', 1), ('c', 2)]
    """
    parents: dict[str, list[str]] = {n: [] for n in ids}
    for a, b in edges:
        parents[b].append(a)
    layer: dict[str, int] = {}

    def depth(n: str, stack: frozenset[str]) -> int:
        if n in layer:
            return layer[n]
        ps = [p for p in parents[n] if p not in stack]
        layer[n] = 1 + max((depth(p, stack | {n}) for p in ps), default=-1)
        return layer[n]

    for n in ids:
        depth(n, frozenset())
    return layer


def incident_lineage(ws: Workspace, incident_id: str) -> dict[str, Any]:
    """The incident's lineage as a drawing's data: ``nodes`` (``id``, ``label``, ``project``,
    ``kind``, ``tool``, ``column`` and ``row`` in the drawing, ``origin``, ``on_path``,
    ``source``, ``dashboard``), ``edges`` (``from``, ``to``, ``on_path``, ``via``), and
    ``origin``, ``sources`` and ``dashboards`` (ids), ``hidden`` (blast-radius nodes left out
    of a drawing of more than :data:`MAX_DRAWN`)."""
    from splice.reads import state_conn
    from splice.watch.incidents import get_incident

    conn = state_conn(ws)
    empty: dict[str, Any] = {"nodes": [], "edges": [], "origin": None, "sources": [],
                             "dashboards": [], "hidden": []}  # fmt: skip
    if conn is None:
        return empty
    d = get_incident(conn, incident_id).diagnosis or {}
    origin = (d.get("origin") or {}).get("node")
    if not origin:
        return empty
    graph = ws.graph()
    blast = d.get("blast_radius") or {}
    path = [s["node"] for s in reversed(d.get("path") or [])]  # source first
    sources = [n for n in path if n in graph.nodes and graph.nodes[n].kind in SOURCE_KINDS]
    if not sources and origin in graph.nodes:  # no column path: the kinds upstream of the origin
        sources = sorted(
            n for n in graph.ancestors(origin, depth=MAX_VIA + 1)
            if graph.nodes[n].kind in SOURCE_KINDS
        )  # fmt: skip
        path = [*sources[:1], origin]
    dashboards = [x["node"] for x in blast.get("dashboards") or []]
    must = list(dict.fromkeys([*sources, *path, origin, *dashboards]))
    rest = [x["node"] for x in blast.get("nodes") or [] if x["node"] not in must]
    room = max(0, MAX_DRAWN - len(must))
    hidden = rest[room:]
    ids = list(dict.fromkeys([*sources, *path, origin, *rest[:room], *dashboards]))
    members = set(ids)
    links = _links(graph, members)
    # the path's steps (source first) join even where the graph's edges do not
    path_pairs = list(zip(path, path[1:], strict=False))
    for a, b in path_pairs:
        links.setdefault((a, b), [])
    for s in sources:
        if s not in path:
            links.setdefault((s, origin), [])
    edges = sorted(links)
    layer = _layers(ids, edges)
    below = {b for _, b in edges}
    for n in ids:  # cut off by the nodes left out: one column right of the origin
        if n not in below and n not in sources and n != origin and n not in path:
            layer[n] = max(layer[n], layer[origin] + 1)
    if any(n not in below for n in ids if n not in sources and n not in path):
        layer = _relayer(ids, edges, layer)
    # rows: the path first in each column, then by the mean row of the upstream nodes
    on_path = set(path)
    row: dict[str, int] = {}
    parents: dict[str, list[str]] = {n: [] for n in ids}
    for a, b in edges:
        parents[b].append(a)
    for col in range(max(layer.values(), default=-1) + 1):
        here = [n for n in ids if layer[n] == col]

        def key(n: str) -> tuple[int, float, str]:
            ps = [row[p] for p in parents[n] if p in row]
            return (0 if n in on_path else 1, sum(ps) / len(ps) if ps else 0.0, n)

        for i, n in enumerate(sorted(here, key=key)):
            row[n] = i
    dash_labels = {
        x["node"]: x.get("label") or x.get("name") for x in blast.get("dashboards") or []
    }
    nodes = []
    for n in ids:
        g = graph.nodes.get(n)
        nodes.append(
            {
                "id": n,
                "label": dash_labels.get(n) or (g.name if g else n),
                "project": g.project if g else n.split(":", 1)[0],
                "kind": g.kind if g else "node",
                "tool": g.tool if g else None,
                "column": layer[n],
                "row": row[n],
                "origin": n == origin,
                "on_path": n in on_path,
                "source": n in sources,
                "dashboard": n in dashboards or (g is not None and g.kind == "dashboard"),
            }
        )
    path_set = set(path_pairs)
    return {
        "nodes": nodes,
        "edges": [
            {"from": a, "to": b, "on_path": (a, b) in path_set, "via": links[(a, b)]}
            for a, b in edges
        ],
        "origin": origin,
        "sources": sources,
        "dashboards": dashboards,
        "hidden": hidden,
    }


def _relayer(ids: list[str], edges: list[tuple[str, str]], layer: dict[str, int]) -> dict[str, int]:
    """Push each node right of its upstream nodes again, after some were moved."""
    out = dict(layer)
    for _ in range(len(ids)):
        moved = False
        for a, b in edges:
            if out[b] <= out[a]:
                out[b] = out[a] + 1
                moved = True
        if not moved:
            break
    return out
