"""Anomalies to incidents for one workspace target: group, diagnose, store (what watch calls)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from splice.graph.model import Graph
from splice.watch.diagnosis import diagnose
from splice.watch.incidents import Incident, update_incidents
from splice.watch.rederive import rederive_open, stamp


def related_in(graph: Graph) -> Callable[[str, str], bool]:
    """Are two nodes on one lineage path (one upstream of the other, across projects)?"""
    memo: dict[str, set[str]] = {}

    def up(n: str) -> set[str]:
        if n not in memo:
            memo[n] = graph.ancestors(n) if n in graph.nodes else set()
        return memo[n]

    return lambda a, b: a == b or a in up(b) or b in up(a)


def triage(
    ws: Any, graph: Graph | None = None, *, progress: Callable[[str], None] | None = None
) -> list[Incident]:
    """Group the target's unassigned anomalies into incidents and diagnose those that changed."""
    graph = graph or ws.graph()
    say = progress or (lambda _m: None)

    def diag(incident_id: str, anomalies: list[dict[str, Any]]) -> dict[str, Any]:
        say(f"Diagnosing {incident_id} ({len(anomalies)} anomalies)...")
        d = diagnose(ws, graph, anomalies)
        stamp(ws, graph, d)
        return d

    touched = update_incidents(
        ws.state.conn, ws.target, related_in(graph), diag, transaction=ws.state.transaction
    )
    # the open incidents nothing new touched: their scope follows the data built since
    rederive_open(ws, graph, skip={i.incident_id for i in touched}, progress=say)
    return touched
