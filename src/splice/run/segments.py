"""The plan `splice run` uses when the planner is not installed: everything selected builds.

Segments come from the planner's :func:`splice.plan.segments.make_segments` (same cut, same
ids), so a fallback plan runs exactly like a planned one.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from splice.graph.model import Graph
from splice.plan.model import NodeDecision, Plan, Reason
from splice.plan.segments import make_segments
from splice.run.executors.registry import EXECUTABLE

if TYPE_CHECKING:
    from splice.workspace.core import Workspace


def executable(graph: Graph, node_id: str, fmt: str | None = None) -> bool:
    """Does an executor build this node?  In an ``ingestion`` segment (a repair's reload, see
    :mod:`splice.repair.apply_plan`) the ingestion job itself runs."""
    n = graph.nodes[node_id]
    if fmt == "ingestion":
        return n.kind == "ingestion"
    return n.kind in EXECUTABLE.get(n.tool, ())


def build_evidence(ws: Workspace, node_ids: Any) -> dict[str, tuple[dict[str, str], list[str]]]:
    """For each buildable node of ``node_ids``: its fingerprint and the nodes it reads (what
    the run records as evidence when it builds it; without them the next plan would see the
    node as changed and build it again); for each dbt test, its fingerprint (recorded when it
    passes: see :mod:`splice.plan.checks`). Plans made without the planner (``--full``, a
    repair) fill their decisions with these."""
    from splice.plan.checks import check_fingerprints
    from splice.plan.fingerprint import fingerprints
    from splice.plan.inputs import input_ids

    g = ws.graph()
    ids = [n for n in node_ids if n in g.nodes and g.nodes[n].kind not in ("test", "audit")]
    tests = [n for n in node_ids if n in g.nodes and g.nodes[n].kind == "test"]
    fps = fingerprints(ws, ids)
    memo: dict[str, frozenset[str]] = {}
    out = {n: (fps.get(n, {}), sorted(input_ids(g, n, memo))) for n in ids}
    for t, fp in check_fingerprints(ws, g, tests, set()).items():
        out[t] = (fp, [])
    return out


def fallback_plan(
    ws: Workspace, selector: str | None = None, *, exclude: str | None = None
) -> Plan:
    """Every selected executable node builds (used while :mod:`splice.plan.planner` is absent).

    Tests and audits of a selected node come along, as ``dbt build -s`` does.
    """
    from splice.graph.selectors import select

    g = ws.graph()
    chosen = set(select(g, selector, exclude=exclude))
    excluded = set(select(g, exclude)) if exclude else set()
    build = {n for n in chosen if executable(g, n)}
    for n in chosen:
        for c in g.children(n):
            node = g.nodes[c]
            if node.kind in ("test", "audit") and c not in excluded and executable(g, c):
                build.add(c)
    formats = {p.name: p.format for p in ws.config.projects}
    envs = {p.name: ws.provider(p.name).ctx.environment for p in ws.config.projects}
    evidence = build_evidence(ws, build)
    decisions: dict[str, NodeDecision] = {}
    for n in g.topological_order(build):
        node = g.nodes[n]
        code = "selected_test" if node.kind in ("test", "audit") else "never_built"
        text = (
            "a test of a node that builds"
            if code == "selected_test"
            else "selected (no planner installed: every selected node builds)"
        )
        decisions[n] = NodeDecision(
            n,
            node.project,
            "build",
            [Reason(code, text)],  # type: ignore[arg-type]
            fingerprint=evidence.get(n, ({}, []))[0],
            inputs=evidence.get(n, ({}, []))[1],
        )
    return Plan(
        target=ws.target,
        environments=envs,
        decisions=decisions,
        segments=make_segments(
            g,
            list(decisions),
            format_of=lambda p: formats.get(p, "dbt"),
            environment_of=lambda p: envs.get(p, ws.target),
        ),
        selector=selector,
        created_at=time.time(),
    )
