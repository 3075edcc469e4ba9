"""Two causes, two incidents: the anomalies of one group that another fault explains better.

Grouping (:func:`splice.watch.incidents.group`) joins anomalies of nodes on one lineage path
that are close in time.  Two independent faults on one path (a rate the vendor inverted, and,
the same Monday, a bookings load that ran twice) would then be one incident with one origin, one
cause and one repair that cannot fix the other fault.  :func:`partition` splits a group where
an upstream fault cannot explain what is seen downstream:

- an anomaly is **explained** by an anomaly upstream of it (on its node's ancestors, in the part
  the upstream one belongs to) when the kinds fit: rows gained or duplicated (row counts,
  duplicates) are explained by rows upstream, never by a value; a value (a sum, an average, a
  lag) is explained by rows upstream that feed it, or by a value upstream whose columns feed its
  columns (column lineage, direct or not) in the same dimension values (EUR's rate explains EUR's
  GMV, not JPY's); rows that went missing are explained by anything upstream (a failed audit
  blocks what comes after it), but weakly: a row fault upstream is preferred;
- anomalies of a node that nothing upstream explains, and that themselves say rows were added
  (duplicates, a jump of the row count, rows that arrived late), start a part of their own: a
  candidate second cause.  Anything else unexplained stays with the first part;
- every origin (an anomalous node with no anomalous node upstream: two sources whose paths
  meet downstream) starts a part, and so do the values a code change rewrote (they name their
  cause themselves).

The caller (:func:`splice.watch.triage.triage`) keeps a candidate as an incident of its own
only when its diagnosis names a different fault (class or source) than the first part's, so a
fault the diagnosis cannot tell apart is never split.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from splice.graph.model import Graph

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

ROW_KINDS = ("volume", "duplicates", "null_rate", "distinct")
#: Detectors that say rows were added: a value upstream never does that.
ADDED_ROWS = ("duplicates", "volume_jump", "late_rows")
#: Detectors that say rows went missing: anything upstream may (a blocking audit).
LOST_ROWS = ("missing", "volume_drop")


def is_row(a: dict[str, Any]) -> bool:
    return a.get("kind") in ROW_KINDS or a["detector"] in ADDED_ROWS + LOST_ROWS


@dataclass
class Part:
    root: str  # the node the part's cause starts at
    items: list[dict[str, Any]] = field(default_factory=list)

    @property
    def nodes(self) -> set[str]:
        return {a["node_id"] for a in self.items}


class _Lineage:
    """Which columns of a node a measure reads, and whether one column feeds another."""

    def __init__(self, ws: Workspace, graph: Graph) -> None:
        from splice.watch.diagnosis import measure_columns

        self.ws, self.graph = ws, graph
        self.columns = measure_columns(ws, graph)
        self._up: dict[str, set[tuple[str, str]] | None] = {}

    def upstream(self, node: str, column: str) -> set[tuple[str, str]] | None:
        """(node, column) of every column upstream of ``node.column``; None when unknown."""
        key = f"{node}.{column}"
        if key not in self._up:
            from splice.lineage.query import column_lineage

            try:
                res = column_lineage(self.ws, key, direction="upstream")
                self._up[key] = {(h["node"], str(h["column"]).lower())
                                 for h in res["upstream"] if h.get("node")}  # fmt: skip
            except Exception:  # noqa: BLE001 - no lineage: the value may come from anywhere
                self._up[key] = None
        return self._up[key]

    def feeds(self, down: dict[str, Any], up: dict[str, Any]) -> bool:
        dcols = self.columns.get(down["metric"], [])
        ucols = self.columns.get(up["metric"], [])
        if not dcols or not ucols:
            return True  # a measure of the rows themselves: any column may move it
        for c in dcols:
            hops = self.upstream(down["node_id"], c)
            if hops is None or any((up["node_id"], u) in hops for u in ucols):
                return True
        return False


def _same_dims(a: dict[str, Any], b: dict[str, Any]) -> bool:
    da, db = a.get("dims") or {}, b.get("dims") or {}
    return all(da[k] == db[k] for k in set(da) & set(db))


def _explains(lin: _Lineage, down: dict[str, Any], up: dict[str, Any]) -> int:
    """2: ``up`` explains ``down``; 1: it may (rows missing after anything); 0: it cannot."""
    if is_row(down):
        if is_row(up):
            return 2
        return 1 if down["detector"] in LOST_ROWS else 0
    if not _same_dims(down, up):
        return 0
    if is_row(up):
        return 2
    return 2 if lin.feeds(down, up) else 0


def partition(ws: Workspace, graph: Graph, anomalies: list[dict[str, Any]]) -> list[Part]:
    """The group's anomalies as parts (see the module doc).  The first part is the values a
    code change rewrote when there are any (a change explains what moved after it), else the
    origin with the most anomalies; every other origin (an anomalous node with no anomalous
    node upstream) starts a part of its own."""
    from collections import Counter

    from splice.watch.diagnosis import origin_nodes

    restated = [a for a in anomalies if a["detector"] == "restated"]
    others = [a for a in anomalies if a["detector"] != "restated"]
    nodes = {a["node_id"] for a in others if a["node_id"] in graph.nodes}
    count = Counter(a["node_id"] for a in others)
    origins = sorted(origin_nodes(graph, nodes), key=lambda n: (-count[n], n))
    parts: list[Part] = []
    if restated:
        from splice.watch.change_cause import change_origin

        parts.append(Part(change_origin(graph, restated) or restated[0]["node_id"], restated))
    for o in origins:
        parts.append(Part(o, [a for a in others if a["node_id"] == o]))
    if not parts:
        return [Part("", list(anomalies))]
    first = parts[0]
    first.items += [a for a in others if a["node_id"] not in graph.nodes]
    if len(parts) == 1 and len(nodes) < 2:
        return [Part(first.root, list(anomalies))]
    lin = _Lineage(ws, graph)
    for nid in graph.topological_order(nodes - set(origins)):
        mine = [a for a in others if a["node_id"] == nid]
        ups = graph.ancestors(nid)
        loose: list[dict[str, Any]] = []
        for a in mine:
            best, score = None, 0
            for p in parts:
                s = max((_explains(lin, a, b) for b in p.items if b["node_id"] in ups),
                        default=0)  # fmt: skip
                if s > score:
                    best, score = p, s
                if s == 2:
                    break
            if best is None:
                loose.append(a)
            else:
                best.items.append(a)
        if not loose:
            continue
        if any(a["detector"] in ADDED_ROWS for a in loose):
            parts.append(Part(nid, loose))
        else:
            first.items.extend(loose)
    return [p for p in parts if p.items]


def different(first: dict[str, Any], other: dict[str, Any]) -> bool:
    """Does ``other`` (a candidate part's diagnosis) name a fault of its own, not the first's?"""
    a, b = first.get("fault") or {}, other.get("fault") or {}
    if b.get("class") in (None, "unknown", "level_shift", "spike"):
        return False
    if a.get("class") != b.get("class"):
        return True
    src_a = (first.get("source") or {}).get("relation")
    src_b = (other.get("source") or {}).get("relation")
    return bool(src_a and src_b and src_a != src_b)
