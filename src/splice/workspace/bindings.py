"""Join the projects: tool edges, declared bindings, matched bindings and ambiguities.

Rules (DESIGN.md, "Binding"): a declared binding always wins; otherwise a read of relation R
that no node of the reader's own project writes becomes an edge from R's writer when exactly one
node of another project writes R (evidence "matched", shown as inferred); zero or several writers
is never an edge: the input counts as external and doctor reports it.  A source (or external
model) over a relation its own project writes (a dbt source declared where the project's seed
lands) is matched to that writer the same way: the tool itself knows no such edge.
"""

from __future__ import annotations

from collections import defaultdict

from splice.config.workspace import WorkspaceConfig
from splice.errors import ConfigError
from splice.graph.model import Ambiguity, Edge, Graph, Node, Relation
from splice.graph.relations import parse_relation
from splice.graph.suggest import closest


def resolve_ref(
    graph: Graph, ref: str, *, where: str, dialect: str, default_catalog: str | None
) -> str:
    """A node id or a relation name in splice.toml -> node id; unknown refs are ConfigErrors."""
    if ref in graph.nodes:
        return ref
    # a bare name that is unique across projects
    by_name = [n.id for n in graph.nodes.values() if n.name == ref]
    if len(by_name) == 1:
        return by_name[0]
    latest = graph.latest_version(ref)  # a versioned dbt model: its latest version
    if latest:
        return latest
    # a relation name: the node that writes it
    try:
        rel = parse_relation(ref, dialect=dialect, default_catalog=default_catalog)
        writers = graph.writer_of(rel)
        if len(writers) == 1:
            return writers[0]
    except Exception:  # noqa: BLE001 - not a relation name either; reported below
        pass
    near = closest(ref, list(graph.nodes))
    hint = f" Closest: {', '.join(near)}." if near else ""
    raise ConfigError(
        f"splice.toml: {where}: {ref!r} is not a node id.{hint}",
        fix="use an id `project:node` as `splice ls` prints it",
    )


def join(
    nodes: list[Node], cfg: WorkspaceConfig, *, dialect: str, default_catalog: str | None
) -> Graph:
    g = Graph()
    for n in nodes:
        g.add_node(n)
    for n in nodes:
        for d in n.depends_on:
            if d in g.nodes:
                g.add_edge(Edge(d, n.id, "tool"))

    writers: dict[Relation, list[str]] = defaultdict(list)
    for n in nodes:
        for r in n.all_writes:
            writers[r].append(n.id)

    declared: set[str] = set()
    for i, b in enumerate(cfg.bindings):
        w_id = resolve_ref(
            g,
            b.writer,
            where=f"bindings[{i}].writer",
            dialect=dialect,
            default_catalog=default_catalog,
        )
        r_id = resolve_ref(
            g,
            b.reader,
            where=f"bindings[{i}].reader",
            dialect=dialect,
            default_catalog=default_catalog,
        )
        wn, rn = g.nodes[w_id], g.nodes[r_id]
        brel = wn.writes or (rn.reads[0] if rn.reads else None)
        g.add_edge(Edge(w_id, r_id, "declared", brel))
        declared.add(r_id)

    for i, dash in enumerate(cfg.dashboards):
        did = f"dashboards:{dash.name}"
        for j, ref in enumerate(dash.reads):
            up = resolve_ref(
                g,
                ref,
                where=f"dashboards[{i}].reads[{j}]",
                dialect=dialect,
                default_catalog=default_catalog,
            )
            up_node = g.nodes[up]
            if up_node.writes:
                g.nodes[did].reads.append(up_node.writes)
            g.add_edge(Edge(up, did, "declared", up_node.writes))

    for n in nodes:
        if n.id in declared or n.kind in ("dashboard",):
            continue
        covered: set[Relation] = set()
        for dep in n.depends_on:
            if dep in g.nodes:
                covered.update(g.nodes[dep].reads)
                covered.update(g.nodes[dep].all_writes)
        for rel in n.reads:
            if rel in covered:
                continue  # read through a source / external node of its own project
            own = [w for w in writers.get(rel, []) if g.nodes[w].project == n.project and w != n.id]
            if own and n.kind in ("source", "external"):
                # a source over its own project's seed or model: the tool knows no edge (dbt
                # never links a source to what writes its relation), so the relation does
                if len(own) == 1:
                    g.add_edge(Edge(own[0], n.id, "matched", rel))
                else:
                    g.ambiguities.append(Ambiguity(n.id, rel, tuple(sorted(own))))
                continue
            if own:
                continue  # an edge the tool itself knows
            others = sorted(w for w in writers.get(rel, []) if g.nodes[w].project != n.project)
            if len(others) == 1:
                g.add_edge(Edge(others[0], n.id, "matched", rel))
            else:
                g.ambiguities.append(Ambiguity(n.id, rel, tuple(others)))
    return g
