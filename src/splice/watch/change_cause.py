"""A change inside the project as an incident's cause: the node whose code changed, and its run.

Two kinds of evidence name it:

- **restated values** (:mod:`splice.watch.restated`): values already published changed when a
  node was built with new code; the anomalies carry the change (node, run, components), so the
  cause is certain: the changed node is the origin, and the scope per node is exactly the
  intervals whose values changed (a table without a time column: as a whole);
- **the run that first built the bad interval** (:func:`shipped_with`): new intervals that are
  anomalous, where the run that first built the first of them also built the origin, or a node
  upstream of it, with new code (an incremental model whose SQL changed rewrites nothing it built
  before; its new intervals say it).  This is named when nothing more specific does (a vendor's
  inverted rate is its own cause even in a run that also shipped code).

The words name the node, its kind, the components of its code that changed with their hashes
before and after, and the run that shipped it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import date
from typing import Any

from splice.graph.model import Graph
from splice.state.sql import statement
from splice.watch.changes import CodeChange, code_changes, run_interval, run_words

#: Classes a change that shipped in the first bad interval's run is preferred to: they say
#: only how the values moved, not why.
WEAKER = ("unknown", "level_shift", "spike", "missing_rows")

_RUNS_STARTED = statement(
    "SELECT r.run_id, e.data FROM runs r JOIN run_events e ON e.run_id = r.run_id "
    "WHERE r.target = ? AND e.kind = 'run_started' ORDER BY r.started_at, r.run_id"
)


def _iso(d: Any) -> str:
    return d.isoformat() if hasattr(d, "isoformat") else str(d)


def restated(anomalies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [a for a in anomalies if a["detector"] == "restated"]


def changes_named(anomalies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The code changes the restated anomalies name (one record per change)."""
    out: dict[str, dict[str, Any]] = {}
    for a in restated(anomalies):
        for c in (a.get("data") or {}).get("changes") or []:
            out.setdefault(f"{c['node']}@{c.get('run_id') or c.get('version')}", c)
    return list(out.values())


def change_origin(graph: Graph, anomalies: list[dict[str, Any]]) -> str | None:
    """The changed node the incident starts at: the most upstream node the restated anomalies
    name whose descendants (or itself) hold them."""
    names = [c["node"] for c in changes_named(anomalies) if c["node"] in graph.nodes]
    held = {a["node_id"] for a in restated(anomalies)}
    cands = [n for n in names if n in held or graph.descendants(n) & held]
    for n in cands:
        if not (graph.ancestors(n) & set(cands)):
            return n
    return None


def _by_node(anomalies: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = defaultdict(lambda: {"days": set(), "whole": False,
                                                          "measures": set(), "since": set(),
                                                          "time": None})  # fmt: skip
    for a in restated(anomalies):
        rec = out[a["node_id"]]
        data = a.get("data") or {}
        if data.get("kind") == "table":
            rec["whole"] = True
        else:
            rec["days"].add(_iso(a["interval"]))
            rec["since"].update(data.get("built_since") or [])
            rec["time"] = rec["time"] or data.get("time_column")
        rec["measures"].add(str(data.get("measure") or a["metric"].rsplit("/", 1)[-1]))
    return out


def _hashes(c: dict[str, Any]) -> str:
    parts = [f"{k} {str((c.get('before') or {}).get(k))[:8]} -> {str((c.get('after') or {}).get(k))[:8]}"
             for k in c.get("components") or []]  # fmt: skip
    return ", ".join(parts)


def _days(days: list[str]) -> str:
    from splice.watch.damage import span

    return span([date.fromisoformat(d) for d in days])


def restated_fault(
    conn: Any, graph: Graph, anomalies: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """The ``code_change`` fault of an incident whose anomalies are restated values."""
    named = changes_named(anomalies)
    if not named:
        return None
    origin = change_origin(graph, anomalies) or named[0]["node"]
    lead = next((c for c in named if c["node"] == origin), named[0])
    others = [c for c in named if c is not lead]
    nodes = _by_node(anomalies)
    parts = []
    for nid in graph.topological_order(set(nodes)) if all(n in graph.nodes for n in nodes) \
            else sorted(nodes):  # fmt: skip
        rec = nodes[nid]
        what = ", ".join(sorted(rec["measures"]))
        where = "as a whole" if rec["whole"] else (
            f"on {len(rec['days'])} interval{'s' if len(rec['days']) != 1 else ''} "
            f"({_days(sorted(rec['days']))})")  # fmt: skip
        parts.append(f"{nid} {where} ({what})")
    kind = graph.nodes[origin].kind if origin in graph.nodes else "node"
    run = _run_words(conn, lead)
    words = (
        f"code change: {kind} {origin} was built with new code ({_hashes(lead)}) in {run}, "
        f"and values already published changed: {'; '.join(parts)}"
        + (f"; other changes in the same span: {', '.join(c['node'] for c in others)}"
           if others else "")
    )  # fmt: skip
    days = sorted({d for rec in nodes.values() for d in rec["days"]})
    return {
        "class": "code_change",
        "words": words,
        "n": len(nodes),
        "evidence": {
            "how": "restated values",
            "node": origin,
            "kind": kind,
            "run_id": lead.get("run_id"),
            "components": lead.get("components"),
            "before": lead.get("before"),
            "after": lead.get("after"),
            "changes": named,
            "restated": {
                n: {
                    "intervals": sorted(r["days"]),
                    "whole": r["whole"],
                    "measures": sorted(r["measures"]),
                }
                for n, r in nodes.items()
            },  # fmt: skip
        },
        "classes": ["code_change"],
        "intervals": days,
    }


def _run_words(conn: Any, c: dict[str, Any]) -> str:
    change = CodeChange(c["node"], c.get("run_id"), int(c.get("version") or 0),
                        tuple(c.get("components") or ()), c.get("before") or {},
                        c.get("after") or {}, _ts(c.get("recorded_at")), str(c.get("reason")))  # fmt: skip
    try:
        return run_words(conn, change)
    except Exception:  # noqa: BLE001 - the journal is gone: the run id says enough
        return f"run {c.get('run_id')}"


def _ts(v: Any) -> float:
    from datetime import datetime

    try:
        return datetime.fromisoformat(str(v)).timestamp()
    except (TypeError, ValueError):
        return 0.0


def change_scope(scope: dict[str, Any], anomalies: list[dict[str, Any]], origin: str) -> None:
    """The scope per node as the restated values say it: the changed node, and every node
    with the intervals whose published values changed (a table without a time column as a
    whole)."""
    nodes = _by_node(anomalies)
    listed = {n["node"]: n for n in scope.get("nodes") or []}
    out = []
    for nid in [origin] + [n for n in nodes if n != origin]:
        rec = nodes.get(nid)
        n = dict(listed.get(nid) or {"node": nid, "time_column": None, "full": True})
        if rec is None or rec["whole"]:
            n.update({"intervals": [], "ranges": [], "full": True,
                      "why": "built with the new code as a whole" if nid == origin else
                      "its values changed as a whole"})  # fmt: skip
        else:
            days = sorted(rec["days"] | rec["since"])
            n.update({"intervals": days, "ranges": _ranges(days), "time_column": rec["time"],
                      "why": f"its published values of {_days(sorted(rec['days']))} changed "
                             f"({', '.join(sorted(rec['measures']))})"
                             + (f"; {_days(sorted(rec['since']))} first built with the new code"
                                if rec["since"] else "")})  # fmt: skip
        out.append(n)
    scope["nodes"] = out
    scope["why"] = "the values the code change rewrote, per node"


def _ranges(days: list[str]) -> list[list[str]]:
    from splice.watch.damage import consecutive_ranges

    return [[a.isoformat(), b.isoformat()]
            for a, b in consecutive_ranges([date.fromisoformat(d) for d in days], gap=1)]  # fmt: skip


# -- a change shipped in the run that first built the bad interval ------------------------------
def first_run_through(conn: Any, target: str, day: date) -> str | None:
    """The first run of ``target`` that processed ``day`` (its data reached that day)."""
    rows = conn.execute(_RUNS_STARTED, (target,)).fetchall()
    for run_id, data in rows:
        try:
            et = json.loads(data).get("execution_time") if data else None
        except ValueError:
            et = None
        if not et:
            continue
        through = run_interval(conn, run_id)
        if through is not None and through >= day:
            return str(run_id)
    return None


def shipped_with(conn: Any, target: str, graph: Graph, origin: str, first: date
                 ) -> list[CodeChange]:  # fmt: skip
    """Code changes of ``origin`` or upstream of it built by the run that first built ``first``."""
    run = first_run_through(conn, target, first)
    if run is None:
        return []
    near = {origin} | (graph.ancestors(origin) if origin in graph.nodes else set())
    return [c for c in code_changes(conn, target, nodes=near) if c.run_id == run]


def shipped_fault(conn: Any, graph: Graph, changes: list[CodeChange], first: date
                  ) -> dict[str, Any]:  # fmt: skip
    c = changes[0]
    kind = graph.nodes[c.node_id].kind if c.node_id in graph.nodes else "node"
    rec = c.as_dict()
    return {
        "class": "code_change",
        "words": (
            f"code change: {kind} {c.node_id} was built with new code ({_hashes(rec)}) in "
            f"{run_words(conn, c)}, the run that first built {first.isoformat()}, the first "
            "anomalous interval"
            + (
                f"; also changed in that run: {', '.join(x.node_id for x in changes[1:])}"
                if len(changes) > 1
                else ""
            )
        ),  # fmt: skip
        "n": len(changes),
        "evidence": {
            "how": "the first anomalous interval's run",
            "node": c.node_id,
            "kind": kind,
            "run_id": c.run_id,
            "components": list(c.components),
            "before": rec["before"],
            "after": rec["after"],
            "changes": [x.as_dict() for x in changes],
        },  # fmt: skip
        "classes": ["code_change"],
        "intervals": [],
    }
