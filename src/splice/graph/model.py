"""The neutral graph: nodes of every project, relations, edges and bindings.

A :class:`Node` is anything with an id ``project:name``: a dbt model, a SQLMesh model, a source,
a seed, a test or audit, an ingestion job, a dashboard.  A :class:`Relation` is the warehouse
object a node writes or reads, normalised by the dialect's identifier rules; it is the key that
joins projects.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

NodeKind = Literal[
    "model",
    "source",
    "seed",
    "snapshot",
    "test",
    "audit",
    "external",
    "ingestion",
    "dashboard",
    "chart",  # a BI tool's chart ([[bi]]): a dashboard's part, reading its dataset's relations
    # dbt's semantic layer: listed with their edges, never built
    "semantic_model",
    "metric",
    "saved_query",
]
Evidence = Literal["declared", "matched", "tool"]


@dataclass(frozen=True, order=True)
class Relation:
    """A warehouse object, already normalised (see :func:`splice.graph.relations.normalise`).

    >>> Relation("warehouse", "marts", "agg_gmv_daily").key
    'warehouse.marts.agg_gmv_daily'
    """

    catalog: str | None
    schema: str
    name: str

    @cached_property
    def key(self) -> str:  # asked for 100,000s of times on a big graph: computed once
        parts = [p for p in (self.catalog, self.schema, self.name) if p]
        return ".".join(parts)

    def __str__(self) -> str:
        return self.key


@dataclass
class Node:
    """One node of the joined graph.

    ``depends_on`` lists ids of nodes in the same project (edges the tool itself knows);
    ``reads`` lists the relations the node reads, which is how bindings across projects are found.
    """

    id: str
    project: str
    name: str
    kind: NodeKind
    tool: str  # dbt, sqlmesh, dlt, command, exposure, declared
    writes: Relation | None = None
    also_writes: list[Relation] = field(default_factory=list)  # an ingestion job may load several
    reads: list[Relation] = field(default_factory=list)
    depends_on: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    columns: dict[str, str] = field(default_factory=dict)  # column -> type ("" when unknown)
    sql: str | None = None  # rendered / compiled SQL, when the tool renders it
    dialect: str | None = None
    language: str = "sql"  # sql, python, none
    materialization: str | None = None  # dbt materialization or SQLMesh model kind
    time_column: str | None = None
    path: str | None = None  # source file, relative to the project
    owner: str | None = None
    description: str | None = None
    meta: dict[str, object] = field(default_factory=dict)

    @property
    def short(self) -> str:
        return self.name

    @property
    def all_writes(self) -> list[Relation]:
        return ([self.writes] if self.writes else []) + list(self.also_writes)


@dataclass(frozen=True)
class Edge:
    """``upstream`` -> ``downstream``.  ``binding`` is true when the edge crosses projects."""

    upstream: str
    downstream: str
    evidence: Evidence = "tool"
    relation: Relation | None = None

    @property
    def binding(self) -> bool:
        return self.evidence != "tool"


@dataclass(frozen=True)
class Ambiguity:
    """A read of ``relation`` by ``reader`` that could not become an edge (zero or several writers)."""

    reader: str
    relation: Relation
    writers: tuple[str, ...]


@dataclass
class Graph:
    """The joined graph of every project in a workspace."""

    nodes: dict[str, Node] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)
    ambiguities: list[Ambiguity] = field(default_factory=list)
    _parents: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set), repr=False)
    _children: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set), repr=False)
    _edge_index: dict[tuple[str, str], Edge] = field(default_factory=dict, repr=False)
    _topo_cache: tuple[tuple[int, int], list[str]] | None = field(default=None, repr=False)

    def add_node(self, node: Node) -> None:
        self.nodes[node.id] = node

    def add_edge(self, edge: Edge) -> None:
        key = (edge.upstream, edge.downstream)
        if key in self._edge_index or edge.upstream == edge.downstream:
            return
        self._edge_index[key] = edge
        self.edges.append(edge)
        self._parents[edge.downstream].add(edge.upstream)
        self._children[edge.upstream].add(edge.downstream)

    def parents(self, node_id: str) -> set[str]:
        return self._parents.get(node_id, set())

    def children(self, node_id: str) -> set[str]:
        return self._children.get(node_id, set())

    def latest_version(self, ref: str) -> str | None:
        """The id of the latest version of the versioned dbt model ``ref`` names (``p:m`` or
        ``m``), as dbt's ``ref('m')`` resolves it; None when ``ref`` names no versioned model.
        """
        project, sep, name = ref.partition(":")
        if not sep:
            project, name = "", ref
        hits = [
            n.id
            for n in self.nodes.values()
            if n.meta.get("model_name") == name
            and n.meta.get("version") is not None
            and n.meta.get("version") == n.meta.get("latest_version")
            and (not project or n.project == project)
        ]
        return hits[0] if len(hits) == 1 else None

    def edge(self, upstream: str, downstream: str) -> Edge | None:
        return self._edge_index.get((upstream, downstream))

    @property
    def bindings(self) -> list[Edge]:
        return [e for e in self.edges if e.binding]

    def writer_of(self, relation: Relation) -> list[str]:
        return [n.id for n in self.nodes.values() if relation in n.all_writes]

    def ancestors(self, node_id: str, depth: int | None = None) -> set[str]:
        return self._walk(node_id, self.parents, depth)

    def descendants(self, node_id: str, depth: int | None = None) -> set[str]:
        return self._walk(node_id, self.children, depth)

    @staticmethod
    def _walk(start: str, step, depth: int | None) -> set[str]:  # type: ignore[no-untyped-def]
        seen: set[str] = set()
        frontier = {start}
        level = 0
        while frontier and (depth is None or level < depth):
            nxt: set[str] = set()
            for n in frontier:
                for m in step(n):
                    if m not in seen and m != start:
                        seen.add(m)
                        nxt.add(m)
            frontier = nxt
            level += 1
        return seen

    def topological_order(self, ids: set[str] | list[str] | None = None) -> list[str]:
        """Node ids in dependency order (stable: ties broken by id).

        A subset keeps the order of the whole graph, so a node never comes before an
        ancestor even when the nodes between them are not in the subset.
        """
        stamp = (len(self.nodes), len(self.edges))
        if self._topo_cache is None or self._topo_cache[0] != stamp:
            self._topo_cache = (stamp, self._topo(set(self.nodes)))
        order = self._topo_cache[1]
        if ids is None:
            return list(order)
        wanted = set(ids)
        return [n for n in order if n in wanted]

    def _topo(self, wanted: set[str]) -> list[str]:
        import heapq

        indeg = {n: 0 for n in wanted}
        for n in wanted:
            for p in self.parents(n):
                if p in wanted:
                    indeg[n] += 1
        heap = [n for n, d in indeg.items() if d == 0]
        heapq.heapify(heap)
        out: list[str] = []
        while heap:
            n = heapq.heappop(heap)
            out.append(n)
            for c in self.children(n):
                if c in indeg:
                    indeg[c] -= 1
                    if indeg[c] == 0:
                        heapq.heappush(heap, c)
        if len(out) != len(wanted):  # a cycle: append the rest in id order, never loop forever
            out.extend(sorted(wanted - set(out)))
        return out
