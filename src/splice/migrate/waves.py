"""The waves of a migration, in graph order, from the source target's graph.

1. **raw**: the relations ingestion jobs load, and the relations sources name that nothing in
   the graph writes: copied row for row (with dlt's ``_dlt_loads`` beside a dlt job's tables,
   which diagnosis reads).
2. one wave per **project**, projects in the order their bindings run (a project reading
   another's models comes after it): rebuilt in the new target by the project's own tool.

Each wave lists its relations with their rows in the source, the declared metrics on its
nodes, and the domains whose owners may approve it.
"""

from __future__ import annotations

from typing import Any

from splice.errors import ConfigError
from splice.migrate.model import Moved, Wave

BUILT = ("model", "seed", "snapshot")


def _short(rel: Any) -> str:
    return f"{rel.schema}.{rel.name}"


def _raw(graph: Any) -> tuple[list[str], list[Moved]]:
    written = {r.key for n in graph.nodes.values() if n.kind in (*BUILT, "ingestion")
               for r in n.all_writes}  # fmt: skip
    nodes: list[str] = []
    moved: list[Moved] = []
    seen: set[str] = set()
    for nid in graph.topological_order():
        n = graph.nodes[nid]
        if n.kind == "ingestion":
            rels = n.all_writes
        elif (
            n.kind in ("source", "external") and len(n.reads) == 1 and n.reads[0].key not in written
        ):
            rels = list(n.reads)
        else:
            continue
        for r in rels:
            if _short(r) not in seen:
                seen.add(_short(r))
                moved.append(
                    Moved(nid, _short(r), n.time_column if n.kind != "ingestion" else None)
                )
        if rels:
            nodes.append(nid)
        if n.kind == "ingestion":  # dlt's load records, when there are any (plan drops the rest)
            for schema in dict.fromkeys(r.schema for r in rels):
                key = f"{schema}._dlt_loads"
                if key not in seen:
                    seen.add(key)
                    moved.append(Moved(nid, key, None, extra=True))
    return nodes, moved


def _project_order(graph: Any, projects: list[str]) -> list[str]:
    after: dict[str, set[str]] = {p: set() for p in projects}
    for nid, n in graph.nodes.items():
        if n.kind not in BUILT or n.project not in after:
            continue
        for parent in graph.parents(nid):
            p = graph.nodes[parent]
            if p.kind in BUILT and p.project != n.project and p.project in after:
                after[n.project].add(p.project)
    order: list[str] = []
    while len(order) < len(projects):
        ready = [p for p in projects if p not in order and after[p] <= set(order)]
        if not ready:  # projects that read each other: one wave each, in declared order
            ready = [next(p for p in projects if p not in order)]
        order.append(ready[0])
    return order


def waves(source: Any, dest: Any) -> list[Wave]:
    """The waves moving ``source``'s target to ``dest``'s (two open workspaces)."""
    from splice.approvals.domains import domain_for
    from splice.watch.metrics import watch_specs

    graph = source.graph()
    dest_graph = dest.graph()
    missing = sorted(nid for nid, n in graph.nodes.items()
                     if n.kind in BUILT and nid not in dest_graph.nodes)  # fmt: skip
    if missing:
        raise ConfigError(
            f"target {dest.target} has no node {missing[0]} (and {len(missing) - 1} more) that "
            f"target {source.target} builds: the targets must hold the same projects.",
            fix=f"map every project in [targets.{dest.target}] of splice.toml",
        )
    specs = [s for s in watch_specs(source, graph, lineage=False) if s.declared]

    def domains(nodes: list[str]) -> list[str]:
        names = [d.name for n in nodes if (d := domain_for(graph, source.config, n)) is not None]
        return list(dict.fromkeys(names))

    raw_nodes, raw_moved = _raw(graph)
    out = [Wave(1, "raw", "copy", None, raw_nodes, raw_moved,
                sorted({s.name for s in specs if s.node_id in raw_nodes}), domains(raw_nodes))]  # fmt: skip
    projects = [p.name for p in source.config.projects]
    for project in _project_order(graph, projects):
        nodes = [nid for nid in graph.topological_order()
                 if graph.nodes[nid].project == project and graph.nodes[nid].kind in BUILT]  # fmt: skip
        moved = []
        for nid in nodes:
            there, here = dest_graph.nodes[nid].writes, graph.nodes[nid].writes
            if there is None or here is None:
                continue
            moved.append(Moved(nid, _short(there), graph.nodes[nid].time_column,
                               source_relation=None if _short(here) == _short(there) else _short(here)))  # fmt: skip
        if not nodes:
            continue
        out.append(Wave(len(out) + 1, project, "build", project, nodes, moved,
                        sorted({s.name for s in specs if s.node_id in nodes}), domains(nodes)))  # fmt: skip
    return out
