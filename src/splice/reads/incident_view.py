"""What an incident's page draws: a chart per anomalous metric and the lineage from the source
to the dashboards (plain data; :mod:`splice.web.svg` draws it)."""

from __future__ import annotations

from collections import deque
from typing import Any

from splice.errors import SpliceError

#: Points shown before the incident's first interval and after its last.
BEFORE, AFTER = 45, 20
#: Charts per incident at most (the evidence lists the strongest first).
MAX_CHARTS = 6


def incident_charts(ws: Any, diagnosis: dict[str, Any]) -> list[dict[str, Any]]:
    """Per anomalous metric of the diagnosis (its evidence), the history of the series the
    evidence names around the incident: each point's value, its baseline band and whether it
    is one of the anomalous intervals.

    A metric watched both as a declared metric and as a monitor of the same measure is charted
    once (the declared one, listed first).
    """
    from splice.reads.quality import metric_history

    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str]] = set()
    for e in diagnosis.get("evidence") or []:
        example = e.get("example") or {}
        series = example.get("series")
        if len(out) >= MAX_CHARTS:
            break
        try:
            hist = metric_history(
                ws, e["metric"], series=None if series in (None, "(all)") else series
            )
        except SpliceError:
            continue  # a metric splice.toml no longer declares: the words still say it
        key = (str(hist.get("node")), str(hist.get("measure")), str(series))
        if key in seen:
            continue
        seen.add(key)
        rows = next((s for s in hist.get("series") or [] if s["series"] == series), None)
        if rows is None and hist.get("series"):
            rows = hist["series"][0]
        if rows is None:
            continue
        bad = set(e.get("intervals") or [])
        points = rows["points"]
        idx = [i for i, p in enumerate(points) if p["interval"] in bad]
        if idx:
            points = points[max(0, idx[0] - BEFORE) : idx[-1] + AFTER + 1]
        out.append(
            {
                "metric": e["metric"],
                "node": e.get("node"),
                "detector": e.get("detector"),
                "series": rows["series"],
                "series_anomalous": e.get("series"),
                "intervals": sorted(bad),
                "expected": example.get("expected"),
                "points": [
                    {
                        "interval": p["interval"],
                        "value": p["value"],
                        "band": p.get("band"),
                        "anomalous": p["interval"] in bad,
                    }
                    for p in points
                ],
            }
        )
    return out


def incident_lineage(ws: Any, diagnosis: dict[str, Any]) -> dict[str, Any]:
    """The nodes from the incident's source (the ingestion job) through its origin to every
    node and dashboard in the blast radius, with the edges between them (through nodes left
    out, such as an external table or a test, so the drawing keeps to what matters), each node
    with its layer (the longest path from the source).
    """
    origin = (diagnosis.get("origin") or {}).get("node")
    path = [p["node"] for p in diagnosis.get("path") or []]
    source = (diagnosis.get("source") or {}).get("node") or (path[-1] if path else origin)
    blast = diagnosis.get("blast_radius") or {}
    keep = {n for n in [source, origin, *path] if n}
    keep |= {n["node"] for n in blast.get("nodes") or []}
    keep |= {n["node"] for n in blast.get("dashboards") or []}
    graph = ws.graph()
    keep = {n for n in keep if n in graph.nodes}
    if not keep:
        return {"nodes": [], "edges": []}
    edges: set[tuple[str, str]] = set()
    for u in keep:  # the next kept node on every path down from u
        todo, seen = deque(sorted(graph.children(u))), set()
        while todo:
            v = todo.popleft()
            if v in seen:
                continue
            seen.add(v)
            if v in keep:
                edges.add((u, v))
            else:
                todo.extend(sorted(graph.children(v)))
    layer = {n: 0 for n in keep}
    for _ in range(len(keep)):  # longest path; the kept subgraph is small and acyclic
        changed = False
        for u, v in edges:
            if layer[v] < layer[u] + 1:
                layer[v] = layer[u] + 1
                changed = True
        if not changed:
            break
    dashboards = {n["node"] for n in blast.get("dashboards") or []}
    labels = {n["node"]: n.get("label") for n in blast.get("dashboards") or []}
    nodes = []
    for n in sorted(keep, key=lambda n: (layer[n], n)):
        node = graph.nodes[n]
        nodes.append(
            {
                "id": n,
                "label": labels.get(n) or node.name,
                "project": node.project,
                "kind": "dashboard" if n in dashboards else node.kind,
                "tool": node.tool,
                "layer": layer[n],
                "origin": n == origin,
                "source": n == source,
                "on_path": n in path,
            }
        )
    return {"nodes": nodes, "edges": sorted(edges)}
