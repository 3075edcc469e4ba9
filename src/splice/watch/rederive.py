"""The scope is re-derived, not remembered: an open incident's diagnosis is made again from the
data as it is now whenever a node in its scope has built a later interval than its last
derivation saw (every watch while it is open), and at ``propose``.

Damage that lands after the incident was first diagnosed is added this way: rates frozen through
Friday convert Saturday's and Sunday's bookings at Friday's rate once the weekend is built, and
every later day of a running total with them; a late feed's fault goes on while it stays late
and ends where it catches up.

A fault keeps its class when it is derived again: new evidence extends or ends its intervals,
and a different class needs evidence of its own (the new diagnosis names it among ``classes``
while the old one no longer appears there).  ``scope["derived_at"]`` (epoch seconds) and
``scope["through"]`` (the latest interval built on a scoped node then) say when and on what.
"""

from __future__ import annotations

import json
import time
from datetime import date
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from splice.state.sql import statement
from splice.warehouse.rows import table

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

_STORE_DIAGNOSIS = statement(
    "UPDATE incidents SET title = ?, origin_node = ?, diagnosis = ?, updated_at = ? "
    "WHERE incident_id = ? AND status = 'open'"
)


def latest_built(ws: Workspace, graph: Any, diagnosis: dict[str, Any], con: Any) -> str | None:
    """The latest interval any node of the diagnosis' scope holds now (ISO date)."""
    from splice.watch.specs import relation_of

    scope = diagnosis.get("scope") or {}
    nodes = {(n.get("node"), n.get("time_column")) for n in scope.get("nodes") or []}
    origin = (diagnosis.get("origin") or {}).get("node")
    if origin and origin in graph.nodes:
        nodes.add((origin, graph.nodes[origin].time_column))
    best: date | None = None
    for nid, tc in sorted(nodes, key=str):
        node = graph.nodes.get(nid)
        col = (tc or (node.time_column if node else None) or "").lower()
        rel = relation_of(node) if node is not None else None
        if not col or rel is None:
            continue
        t = exp.cast(exp.column(col, quoted=True), exp.DataType.build("DATE"))
        try:
            row = con.execute(exp.select(exp.Max(this=t)).from_(table(rel, ws.dialect))
                              .sql(dialect=ws.dialect)).fetchone()  # fmt: skip
        except Exception:  # noqa: BLE001 - a relation gone or renamed: it says nothing newer
            continue
        v = row[0] if row else None
        if isinstance(v, date) and (best is None or v > best):
            best = v
    return best.isoformat() if best else None


def stamp(
    ws: Workspace, graph: Any, diagnosis: dict[str, Any], *, now: float | None = None
) -> None:
    """Say in the diagnosis' scope when it was derived and the latest interval it saw."""
    from splice.warehouse.connect import connect

    scope = diagnosis.setdefault("scope", {})
    scope["derived_at"] = time.time() if now is None else now
    try:
        with connect(ws, "incident scope") as con:
            scope["through"] = latest_built(ws, graph, diagnosis, con)
    except Exception:  # noqa: BLE001 - unknown: the next watch derives it again
        scope["through"] = None


def _keep_class(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The new fault, unless it names a less specific class while the old one still holds:
    then the old class stays, with the intervals the new evidence gives it.  A more specific
    class (:data:`splice.watch.cause.PRIORITY`: a repeat that turns out to be a late feed once
    the values move on) has evidence of its own and replaces it.

    >>> old = {"fault": {"class": "late", "intervals": ["2026-09-28"]}}
    >>> new = {"fault": {"class": "stopped_moving", "classes": ["stopped_moving", "late"],
    ...                  "intervals": ["2026-09-29"]}}
    >>> kept = _keep_class(old, new)
    >>> kept["class"], kept["intervals"]
    ('late', ['2026-09-28', '2026-09-29'])
    >>> _keep_class(new, {"fault": {"class": "late", "classes": ["late", "stopped_moving"]}})["class"]
    'late'
    """
    from splice.watch.cause import PRIORITY

    of, nf = old.get("fault") or {}, new.get("fault") or {}
    oc, nc = of.get("class"), nf.get("class")
    if not oc or not nc or oc in ("unknown", nc):
        return nf
    rank = {c: i for i, c in enumerate(PRIORITY)}
    more_specific = rank.get(nc, len(rank)) < rank.get(oc, len(rank))
    if more_specific or oc not in (nf.get("classes") or []):
        return nf  # evidence of its own, or the old class's evidence is gone
    kept = dict(of)
    kept["intervals"] = sorted(set(nf.get("intervals") or []) | set(of.get("intervals") or []))
    return kept


def rederive(ws: Workspace, graph: Any, incident: Any, *, force: bool = False,
             now: float | None = None) -> dict[str, Any] | None:  # fmt: skip
    """Derive ``incident``'s diagnosis again when its scope has later intervals built (or
    ``force``); store and return it (None: nothing newer, nothing stored)."""
    from splice.warehouse.connect import connect
    from splice.watch.diagnosis import diagnose
    from splice.watch.incidents import incident_anomalies

    old = incident.diagnosis or {}
    conn = ws.state.conn
    with connect(ws, "incident scope (re-derived)") as con:
        through = latest_built(ws, graph, old, con)
    seen = (old.get("scope") or {}).get("through")
    if not force and through is not None and seen is not None and through <= seen:
        return None
    anomalies = incident_anomalies(conn, incident.incident_id)
    if not anomalies:
        return None
    new = diagnose(ws, graph, anomalies, siblings=set(old.get("siblings") or []))
    new["fault"] = _keep_class(old, new)
    stamp(ws, graph, new, now=now)
    scope = new["scope"]
    with ws.state.transaction():
        conn.execute(
            _STORE_DIAGNOSIS,
            (new.get("title") or incident.title, (new.get("origin") or {}).get("node"),
             json.dumps(new, default=str), scope["derived_at"], incident.incident_id),
        )  # fmt: skip
    incident.diagnosis = new
    return new


def rederive_open(ws: Workspace, graph: Any, *, skip: set[str] | None = None,
                  progress: Any = None) -> list[str]:  # fmt: skip
    """Re-derive every open incident of the target (but ``skip``, just diagnosed) that has later
    intervals built; returns the ids re-derived."""
    from splice.watch.incidents import list_incidents

    out = []
    for inc in list_incidents(ws.state.conn, ws.target, status="open"):
        if skip and inc.incident_id in skip:
            continue
        try:
            if rederive(ws, graph, inc) is not None:
                out.append(inc.incident_id)
                if progress:
                    progress(f"Re-derived {inc.incident_id}'s scope from the data as it is now")
        except Exception as e:  # noqa: BLE001 - the stored diagnosis stands; say why
            if progress:
                progress(f"{inc.incident_id}: its scope could not be re-derived "
                         f"({str(e).splitlines()[0] if str(e) else type(e).__name__})")  # fmt: skip
    return out
