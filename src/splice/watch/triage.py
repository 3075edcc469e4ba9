"""Anomalies to incidents for one workspace target: group, diagnose, store (what watch calls)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from splice.graph.model import Graph
from splice.watch.diagnosis import diagnose
from splice.watch.incidents import Incident, Ref, anomalies_by_id, update_incidents
from splice.watch.independent import different, partition
from splice.watch.rederive import rederive_open, stamp

if TYPE_CHECKING:
    from splice.workspace.core import Workspace


def related_in(graph: Graph) -> Callable[[str, str], bool]:
    """Are two nodes on one lineage path (one upstream of the other, across projects)?"""
    memo: dict[str, set[str]] = {}

    def up(n: str) -> set[str]:
        if n not in memo:
            memo[n] = graph.ancestors(n) if n in graph.nodes else set()
        return memo[n]

    return lambda a, b: a == b or a in up(b) or b in up(a)


def triage(
    ws: Workspace, graph: Graph | None = None, *, progress: Callable[[str], None] | None = None
) -> list[Incident]:
    """Group the target's unassigned anomalies into incidents and diagnose those that changed;
    a group that independent causes explain becomes one incident per cause
    (:mod:`splice.watch.independent`)."""
    graph = graph or ws.graph()
    say = progress or (lambda _m: None)
    conn = ws.state.conn
    done: dict[frozenset[int], dict[str, Any]] = {}  # diagnoses made while splitting
    siblings: dict[frozenset[int], set[str]] = {}  # the other parts' roots, per part

    def diag(incident_id: str, anomalies: list[dict[str, Any]]) -> dict[str, Any]:
        key = frozenset(int(a["anomaly_id"]) for a in anomalies)
        if key in done:
            d = done[key]
        else:
            say(f"Diagnosing {incident_id} ({len(anomalies)} anomalies)...")
            d = diagnose(ws, graph, anomalies, siblings=siblings.get(key, set()))
        stamp(ws, graph, d)
        return d

    def split(g: list[Ref]) -> list[list[Ref]]:
        if len({r.node_id for r in g}) < 2:
            return [g]
        parts = partition(ws, graph, anomalies_by_id(conn, [r.anomaly_id for r in g]))
        if len(parts) < 2:
            return [g]
        say(f"Telling {len(parts)} possible causes apart ({len(g)} anomalies)...")
        keys = [frozenset(int(a["anomaly_id"]) for a in p.items) for p in parts]
        roots = [p.root for p in parts]
        found = [diagnose(ws, graph, p.items, siblings=set(roots) - {p.root}) for p in parts]
        kept = [0] + [i for i in range(1, len(parts)) if different(found[0], found[i])]
        if kept == [0]:
            return [g]
        merged = set(keys[0]).union(*(keys[i] for i in range(1, len(parts)) if i not in kept))
        for i in kept[1:]:
            done[keys[i]] = found[i]
            siblings[keys[i]] = {roots[j] for j in kept if j != i}
        first = frozenset(merged)
        siblings[first] = {roots[j] for j in kept[1:]}
        if first == keys[0]:
            done[first] = found[0]
        final = [first] + [keys[i] for i in kept[1:]]
        return [[r for r in g if r.anomaly_id in k] for k in final]

    touched = update_incidents(
        conn, ws.target, related_in(graph), diag, transaction=ws.state.transaction, split=split
    )
    # the open incidents nothing new touched: their scope follows the data built since
    rederive_open(ws, graph, skip={i.incident_id for i in touched}, progress=say)
    return touched
