"""The blast radius of a bad node: what downstream is wrong, who sees it, what reprocesses.

- every node downstream of the origin in every project (models, seeds, snapshots; not tests);
- the dashboards that read any of them (dbt exposures and ``[[dashboards]]``);
- the declared metrics on the origin or downstream of it (the numbers people will ask about);
- the environments: the SQLMesh environments that hold the same physical version of an
  affected model (a prod restatement clears those intervals there too, so they reprocess),
  and the Splice targets whose other projects read them (their downstream models rebuild).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from splice.graph.model import Graph

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

BUILT_KINDS = ("model", "seed", "snapshot")


def _sqlmesh_environments(ws: Workspace, project: str, fqns: list[str]) -> list[dict[str, Any]]:
    """Per SQLMesh environment: does it hold the prod version of any of ``fqns``?"""
    ctx = ws.provider(project).context
    envs = ctx.state_reader.get_environments()
    prod = next((e for e in envs if e.name == "prod"), None)
    prod_versions = {}
    if prod is not None:
        prod_versions = {s.name: s.version for s in prod.snapshots}
    wanted = {f for f in fqns}
    out = []
    for env in sorted(envs, key=lambda e: (e.name != "prod", e.name)):
        shared = sorted(
            s.name for s in env.snapshots
            if s.name in wanted and prod_versions.get(s.name) == s.version
        )  # fmt: skip
        own = sorted(s.name for s in env.snapshots if s.name in wanted and s.name not in shared)
        out.append({"environment": env.name, "shared": shared, "own_version": own})
    return out


def blast_radius(
    ws: Workspace, graph: Graph, origin: str, *, environments: bool = True
) -> dict[str, Any]:
    """What is downstream of ``origin`` (see the module docstring). ``environments``: also
    the SQLMesh environments and Splice targets that reprocess (asks SQLMesh's state, which
    loads the SQLMesh project)."""
    down = graph.descendants(origin)
    nodes: list[dict[str, Any]] = [
        {"node": n, "project": graph.nodes[n].project, "kind": graph.nodes[n].kind,
         "tool": graph.nodes[n].tool, "owner": graph.nodes[n].owner}
        for n in graph.topological_order(down)
        if graph.nodes[n].kind in BUILT_KINDS
    ]  # fmt: skip
    dashboards = [
        {"node": n, "name": graph.nodes[n].name,
         "label": graph.nodes[n].meta.get("label") or graph.nodes[n].description,
         "tool": graph.nodes[n].tool, "owner": graph.nodes[n].owner,
         "url": graph.nodes[n].meta.get("url")}
        for n in sorted(down)
        if graph.nodes[n].kind == "dashboard"
    ]  # fmt: skip
    charts = [
        {"node": n, "name": graph.nodes[n].name, "label": graph.nodes[n].meta.get("label"),
         "tool": graph.nodes[n].tool, "url": graph.nodes[n].meta.get("url"),
         "dashboards": sorted(c for c in graph.children(n) if graph.nodes[c].kind == "dashboard")}
        for n in sorted(down)
        if graph.nodes[n].kind == "chart"
    ]  # fmt: skip
    reach = down | {origin}
    from splice.semantic.declared import metric_node

    on = [(m, metric_node(graph, m)) for m in ws.config.metrics]
    metrics = [
        {"name": m.name, "node": node, "owner": m.owner, "domain": m.domain}
        for m, node in on
        if node in reach
    ]
    affected: list[str] = [origin] + [str(n["node"]) for n in nodes]
    by_project: dict[str, list[str]] = {}
    for n in affected:
        by_project.setdefault(graph.nodes[n].project, []).append(n)
    envs_out: list[dict[str, Any]] = []
    reprocessing: dict[str, set[str]] = {}  # project -> environments that reprocess
    for spec in ws.config.projects if environments else []:
        ids = by_project.get(spec.name)
        if not ids or spec.format != "sqlmesh":
            continue
        fqns = [str(graph.nodes[n].meta.get("fqn")) for n in ids if graph.nodes[n].meta.get("fqn")]
        try:
            envs = _sqlmesh_environments(ws, spec.name, fqns)
        except Exception as e:  # noqa: BLE001 - the state may be unreadable; say so
            envs_out.append({"project": spec.name, "error": str(e).splitlines()[0]})
            continue
        for env in envs:
            if env["environment"] == "prod":
                what = "restated (the repair's own environment)"
            elif env["shared"]:
                what = (f"reprocesses: shares prod's version of {len(env['shared'])} affected "
                        "model(s), whose restated intervals are cleared there too")  # fmt: skip
            else:
                what = "not affected: its own versions of the affected models"
            if env["environment"] == "prod" or env["shared"]:
                reprocessing.setdefault(spec.name, set()).add(env["environment"])
            envs_out.append({"project": spec.name, "environment": env["environment"],
                             "effect": what, "shared": env["shared"]})  # fmt: skip
    # targets whose other projects read a reprocessing environment rebuild downstream
    for tname, t in sorted(ws.config.targets.items()):
        for spec in ws.config.projects:
            if spec.format == "sqlmesh" or spec.name not in by_project:
                continue
            reads = [p for p, envs in reprocessing.items()
                     if t.environments.get(p) in envs]  # fmt: skip
            if reads:
                envs_out.append({
                    "project": spec.name, "environment": t.environments.get(spec.name),
                    "target": tname,
                    "effect": f"rebuilds: reads {', '.join(reads)} "
                              f"({', '.join(t.environments[p] for p in reads)})",
                })  # fmt: skip
    return {
        "nodes": nodes,
        "dashboards": dashboards,
        "charts": charts,  # a BI tool's charts ([[bi]]), each with its dashboards
        "metrics": metrics,
        "environments": envs_out,
        "projects": sorted({graph.nodes[n].project for n in affected}),
    }


def refresh_reach(ws: Workspace, diagnosis: dict[str, Any], origin: str | None) -> None:
    """An open incident's dashboards, charts and metrics as the graph has them now (a BI tool
    read since the diagnosis, a dashboard declared since), in place; the rest of its blast
    radius (what the repair rewrites) stays as diagnosed. Only from the graph cache: reading an
    incident never loads a tool (which may wait on the warehouse a run holds)."""
    graph = ws.cached_graph()
    if graph is None:
        return
    blast = diagnosis.get("blast_radius")
    if not origin or origin not in graph.nodes or not isinstance(blast, dict):
        return
    now = blast_radius(ws, graph, origin, environments=False)
    for key in ("dashboards", "charts", "metrics"):
        blast[key] = now[key]
