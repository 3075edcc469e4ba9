"""What the planner decides from (:class:`PlanInputs`), and a node's inputs: the nearest
buildable nodes and ingestion jobs upstream of it, through sources and externals."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from splice.graph.model import Graph
from splice.plan.evidence import Attempt, BuildRecord
from splice.plan.fingerprint import is_buildable
from splice.plan.model import Reason
from splice.plan.sqlmesh_view import ModelState, NodeView

#: Node kinds a plan passes through to reach a node's inputs (never built by Splice).
PASS_THROUGH = frozenset({"source", "external"})


def input_ids(
    graph: Graph, nid: str, memo: dict[str, frozenset[str]] | None = None
) -> frozenset[str]:
    """The nearest buildable nodes and ingestion jobs upstream of ``nid``, through sources."""
    memo = {} if memo is None else memo
    out: set[str] = set()
    for p in graph.parents(nid):
        pn = graph.nodes[p]
        if is_buildable(pn) or pn.kind == "ingestion":
            out.add(p)
        elif pn.kind in PASS_THROUGH:
            out |= _through(graph, p, memo)
    return frozenset(out)


def _through(graph: Graph, nid: str, memo: dict[str, frozenset[str]]) -> frozenset[str]:
    hit = memo.get(nid)
    if hit is None:
        memo[nid] = frozenset()  # a cycle through sources ends here
        hit = input_ids(graph, nid, memo)
        memo[nid] = hit
    return hit


@dataclass
class PlanInputs:
    """Everything :func:`splice.plan.planner.decide` needs, gathered by
    :func:`splice.plan.planner.make_plan` (or a benchmark)."""

    graph: Graph
    selected: list[str]  # node ids, any kind, in the graph's order
    target: str
    environments: dict[str, str]  # project -> environment
    formats: dict[str, str]  # project -> dbt | sqlmesh
    fingerprints: dict[str, dict[str, str]]  # buildable non-SQLMesh nodes of the selection
    builds: dict[str, BuildRecord] = field(default_factory=dict)
    attempts: dict[str, Attempt] = field(default_factory=dict)
    sqlmesh: dict[str, NodeView] = field(default_factory=dict)  # selected SQLMesh models
    sqlmesh_states: dict[str, ModelState] = field(default_factory=dict)  # env state per model
    also_backfilled: dict[str, list[list[int]]] = field(default_factory=dict)
    excluded: set[str] = field(default_factory=set)
    # SQLMesh standalone audits its plan would apply (changed or new), node id -> why
    sqlmesh_audits: dict[str, Reason] = field(default_factory=dict)
    # (upstream id, seq) -> the upstream's version just before seq (history look-up)
    seen_before: Callable[[str, int], int] = lambda _u, _s: 0
    # selected dbt tests -> their fingerprint; node id -> its digest when it last passed (None:
    # no check was ever recorded in the target, so none is known to be new)
    check_fingerprints: dict[str, dict[str, str]] = field(default_factory=dict)
    checks_seen: dict[str, str] | None = None
