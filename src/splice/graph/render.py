"""Render the joined graph (or part of it) as JSON, Graphviz DOT, Mermaid or text.

Every renderer takes ``ids`` (for example the output of :func:`splice.graph.selectors.select`)
and keeps only those nodes and the edges between them.  Output is deterministic: nodes, projects
and edges are sorted by id.

Edge evidence is ``tool`` inside a project (the tool's own dependency), and for bindings across
projects ``declared`` or ``matched``; users see ``matched`` as ``inferred``.

>>> from splice.graph.model import Edge, Graph, Node
>>> g = Graph()
>>> g.add_node(Node("pricing:marts.agg_gmv_daily", "pricing", "marts.agg_gmv_daily", "model", "sqlmesh"))
>>> g.add_node(Node("finance:stg_gmv", "finance", "stg_gmv", "model", "dbt"))
>>> g.add_edge(Edge("pricing:marts.agg_gmv_daily", "finance:stg_gmv", "matched"))
>>> print(to_mermaid(g), end="")
flowchart LR
  subgraph finance["finance"]
    finance_stg_gmv["stg_gmv"]
  end
  subgraph pricing["pricing"]
    pricing_marts_agg_gmv_daily["marts.agg_gmv_daily"]
  end
  pricing_marts_agg_gmv_daily -.->|inferred| finance_stg_gmv
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from splice.errors import NodeNotFoundError
from splice.graph.model import Edge, Graph, Node

__all__ = ["evidence_label", "to_dot", "to_json", "to_mermaid"]

_LABELS = {"tool": "tool", "declared": "declared", "matched": "inferred"}

# Shapes by node kind; a kind not listed is drawn as a box.
_DOT_SHAPES = {
    "source": "cylinder",
    "external": "cylinder",
    "seed": "folder",
    "snapshot": "box3d",
    "test": "diamond",
    "audit": "diamond",
    "ingestion": "cds",
    "dashboard": "note",
}
_MERMAID_SHAPES = {  # (open, close) around the quoted label
    "source": ("[(", ")]"),
    "external": ("[(", ")]"),
    "test": ("{", "}"),
    "audit": ("{", "}"),
    "ingestion": ("[/", "/]"),
    "dashboard": ("{{", "}}"),
}
# Mermaid's flowchart lexer reads these as keywords even at the start of a longer word
# (``style_x`` lexes as ``style`` + ``_x``); an identifier starting with one gets a prefix.
_MERMAID_KEYWORDS = (
    "end",
    "graph",
    "subgraph",
    "flowchart",
    "style",
    "classdef",
    "class",
    "click",
    "call",
    "href",
    "linkstyle",
    "default",
    "interpolate",
    "direction",
)


def evidence_label(edge: Edge) -> str:
    """The evidence as users read it: ``tool``, ``declared`` or ``inferred`` (for ``matched``).

    >>> evidence_label(Edge("a:x", "b:y", "matched"))
    'inferred'
    """
    return _LABELS.get(edge.evidence, edge.evidence)


def _subset(graph: Graph, ids: Iterable[str] | None) -> tuple[list[Node], list[Edge]]:
    if ids is None:
        wanted = set(graph.nodes)
    else:
        wanted = set(ids)
        missing = sorted(wanted - set(graph.nodes))
        if missing:
            close = difflib.get_close_matches(missing[0], list(graph.nodes), n=3)
            hint = f" Closest: {', '.join(close)}" if close else ""
            raise NodeNotFoundError(
                f"cannot render unknown node id(s): {', '.join(missing)}.{hint}",
                fix="pass ids from the graph, for example the result of select()",
            )
    nodes = [graph.nodes[i] for i in sorted(wanted)]
    edges = sorted(
        (e for e in graph.edges if e.upstream in wanted and e.downstream in wanted),
        key=lambda e: (e.upstream, e.downstream),
    )
    return nodes, edges


def _by_project(nodes: list[Node]) -> dict[str, list[Node]]:
    out: dict[str, list[Node]] = {}
    for node in nodes:
        out.setdefault(node.project, []).append(node)
    return dict(sorted(out.items()))


# -- JSON -------------------------------------------------------------------------------------


def to_json(graph: Graph, ids: Iterable[str] | None = None) -> dict[str, Any]:
    """A JSON-ready dict: ``{"nodes": [...], "edges": [...]}``, sorted.

    Each edge carries ``evidence`` (``tool``, ``declared``, ``matched``), ``label`` (what users
    read: ``tool``, ``declared``, ``inferred``), ``binding`` and the ``relation`` it joins on.

    >>> from splice.graph.model import Graph, Node, Relation
    >>> g = Graph()
    >>> g.add_node(Node("finance:stg_gmv", "finance", "stg_gmv", "model", "dbt",
    ...                 writes=Relation("warehouse", "staging", "stg_gmv"), tags=["daily"]))
    >>> to_json(g)["nodes"][0]["writes"]
    'warehouse.staging.stg_gmv'
    """
    nodes, edges = _subset(graph, ids)
    return {
        "nodes": [
            {
                "id": n.id,
                "project": n.project,
                "name": n.name,
                "kind": n.kind,
                "tool": n.tool,
                "writes": n.writes.key if n.writes else None,
                "reads": sorted(r.key for r in n.reads),
                "tags": sorted(n.tags),
            }
            for n in nodes
        ],
        "edges": [
            {
                "upstream": e.upstream,
                "downstream": e.downstream,
                "evidence": e.evidence,
                "label": evidence_label(e),
                "binding": e.binding,
                "relation": e.relation.key if e.relation else None,
            }
            for e in edges
        ],
    }


# -- Graphviz DOT -----------------------------------------------------------------------------


def _dot_str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(graph: Graph, ids: Iterable[str] | None = None) -> str:
    """Graphviz DOT: one cluster per project, bindings dashed and labelled with their evidence."""
    nodes, edges = _subset(graph, ids)
    lines = [
        "digraph splice {",
        '  graph [rankdir=LR, fontname="Helvetica"];',
        '  node [shape=box, fontname="Helvetica"];',
        '  edge [fontname="Helvetica"];',
    ]
    for project, members in _by_project(nodes).items():
        lines.append("")
        lines.append(f"  subgraph {_dot_str('cluster_' + project)} {{")
        lines.append(f"    label={_dot_str(project)};")
        for n in members:
            attrs = [f"label={_dot_str(n.name)}"]
            if n.kind in _DOT_SHAPES:
                attrs.append(f"shape={_DOT_SHAPES[n.kind]}")
            lines.append(f"    {_dot_str(n.id)} [{', '.join(attrs)}];")
        lines.append("  }")
    if edges:
        lines.append("")
    for e in edges:
        line = f"  {_dot_str(e.upstream)} -> {_dot_str(e.downstream)}"
        if e.binding:
            line += f" [style=dashed, label={_dot_str(evidence_label(e))}]"
        lines.append(line + ";")
    lines.append("}")
    return "\n".join(lines) + "\n"


# -- Mermaid ----------------------------------------------------------------------------------


class _MermaidIds:
    """Allocates unique Mermaid identifiers: ``[A-Za-z0-9_]``, starting with a letter, never
    starting with a keyword."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def __call__(self, text: str) -> str:
        ascii_ = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
        base = re.sub(r"[^A-Za-z0-9]+", "_", ascii_).strip("_") or "node"
        if base[0].isdigit() or base.lower().startswith(_MERMAID_KEYWORDS):
            base = "n_" + base
        ident, i = base, 1
        while ident.lower() in self.used:  # Mermaid ids are case-sensitive; stay safe anyway
            i += 1
            ident = f"{base}_{i}"
        self.used.add(ident.lower())
        return ident


def _mermaid_str(text: str) -> str:
    for char, entity in (("#", "#35;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;")):
        text = text.replace(char, entity)
    return '"' + text.replace("\n", " ") + '"'


def to_mermaid(graph: Graph, ids: Iterable[str] | None = None) -> str:
    """A Mermaid ``flowchart LR``: a subgraph per project, bindings dotted with their evidence.

    Node ids become Mermaid identifiers made of letters, digits and ``_`` (unique, never a
    Mermaid keyword); labels show the node's name.
    """
    nodes, edges = _subset(graph, ids)
    alloc = _MermaidIds()
    groups = _by_project(nodes)
    group_ids = {project: alloc(project) for project in groups}
    node_ids = {n.id: alloc(n.id) for n in nodes}
    lines = ["flowchart LR"]
    for project, members in groups.items():
        lines.append(f"  subgraph {group_ids[project]}[{_mermaid_str(project)}]")
        for n in members:
            open_, close = _MERMAID_SHAPES.get(n.kind, ("[", "]"))
            lines.append(f"    {node_ids[n.id]}{open_}{_mermaid_str(n.name)}{close}")
        lines.append("  end")
    for e in edges:
        up, down = node_ids[e.upstream], node_ids[e.downstream]
        if e.binding:
            lines.append(f"  {up} -.->|{evidence_label(e)}| {down}")
        else:
            lines.append(f"  {up} --> {down}")
    return "\n".join(lines) + "\n"


def to_text(graph: Graph, ids: Iterable[str] | None = None) -> str:
    """The graph as plain text: each project with its nodes in dependency order (and their
    upstream nodes in the same project), then the bindings across projects with their evidence.

    >>> g = Graph()
    >>> g.add_node(Node("pricing:fx", "pricing", "fx", "model", "sqlmesh"))
    >>> g.add_node(Node("finance:gmv", "finance", "gmv", "model", "dbt"))
    >>> g.add_edge(Edge("pricing:fx", "finance:gmv", "declared"))
    >>> print(to_text(g))
    finance (1 nodes)
      gmv [model]
    pricing (1 nodes)
      fx [model]
    bindings across projects
      pricing:fx -> finance:gmv (declared)
    """
    wanted = set(ids) if ids is not None else set(graph.nodes)
    lines: list[str] = []
    for p in sorted({graph.nodes[i].project for i in wanted}):
        members = [i for i in graph.topological_order(wanted) if graph.nodes[i].project == p]
        lines.append(f"{p} ({len(members)} nodes)")
        for nid in members:
            n = graph.nodes[nid]
            inner = [u for u in sorted(graph.parents(nid))
                     if u in wanted and graph.nodes[u].project == p]  # fmt: skip
            lines.append(
                f"  {n.name} [{n.kind}]"
                + (f" <- {', '.join(graph.nodes[u].name for u in inner)}" if inner else "")
            )
    bindings = [e for e in graph.bindings if e.upstream in wanted and e.downstream in wanted]
    if bindings:
        lines.append("bindings across projects")
        for e in sorted(bindings, key=lambda e: (e.upstream, e.downstream)):
            rel = f" via {e.relation.key}" if e.relation else ""
            lines.append(f"  {e.upstream} -> {e.downstream} ({evidence_label(e)}{rel})")
    return "\n".join(lines)
