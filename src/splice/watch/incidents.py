"""Incidents: anomalies that share a cause, grouped, diagnosed, and kept in Splice's state.

Fifty currencies frozen on the same Monday, and the same freeze seen in the marts downstream,
are one incident, not fifty-one alerts.  Two anomalies belong together when

- their nodes are the same node, or one is upstream of the other in the graph (across
  projects), and
- their intervals are at most ``GAP_DAYS`` apart (a run of bad days, a weekend in between);

or when they name the same cause (``key``: values one code change rewrote, however far
apart their intervals are, see :mod:`splice.watch.restated`).

Grouping works on *runs*: the consecutive anomalous intervals of one node.  New anomalies that
join the run of an open incident extend that incident; otherwise they open a new one.  Each
open incident's diagnosis (:mod:`splice.watch.diagnosis`) is refreshed whenever it changes.

>>> from datetime import date
>>> a = [Ref(1, "p:fx", date(2026, 9, 28)), Ref(2, "p:fx", date(2026, 9, 29)),
...      Ref(3, "p:mart", date(2026, 9, 28)), Ref(4, "p:other", date(2026, 9, 28))]
>>> related = lambda x, y: {x, y} <= {"p:fx", "p:mart"}
>>> [sorted(r.anomaly_id for r in g) for g in group(a, related)]
[[1, 2, 3], [4]]
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from sqlglot import exp

from splice.errors import NodeNotFoundError
from splice.state.sql import Statement, placeholders, statement, where_equal

_INCIDENT = statement(
    "SELECT incident_id, target, status, title, origin_node, first_interval, last_interval, "
    "anomalies, diagnosis, opened_at, updated_at, resolved_at, resolution FROM incidents "
    "WHERE lower(incident_id) = lower(?)"
)
_LATEST_IDS = statement("SELECT incident_id FROM incidents ORDER BY opened_at DESC LIMIT 5")
_TOP_NUMBER = statement(
    "SELECT MAX(CAST(substr(incident_id, 5) AS INTEGER)) FROM incidents "
    "WHERE incident_id LIKE 'INC-%'"
)
_UNGROUPED_ANOMALIES = statement(
    "SELECT a.anomaly_id, a.node_id, a.interval_start, a.incident_id, "
    "CASE WHEN a.data LIKE '%\"change_key\"%' THEN a.data END FROM watch_anomalies a "
    "LEFT JOIN incidents i ON i.incident_id = a.incident_id "
    "WHERE a.target = ? AND (a.incident_id IS NULL OR i.status = 'open' OR i.status IS NULL)"
)
_MERGE = statement(
    "UPDATE incidents SET status = 'merged', resolution = ?, updated_at = ? WHERE incident_id = ?"
)
_OPEN = statement(
    "INSERT INTO incidents (title, origin_node, first_interval, last_interval, "
    "anomalies, diagnosis, updated_at, incident_id, target, status, opened_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'open', ?)"
)
_REFRESH = statement(
    "UPDATE incidents SET title = ?, origin_node = ?, first_interval = ?, "
    "last_interval = ?, anomalies = ?, diagnosis = ?, updated_at = ? "
    "WHERE incident_id = ?"
)
_ORPHANS = statement(
    "SELECT i.incident_id FROM incidents i WHERE i.target = ? AND i.status = 'open' AND "
    "NOT EXISTS (SELECT 1 FROM watch_anomalies a WHERE a.incident_id = i.incident_id)"
)
_INCIDENT_ANOMALIES = statement(
    "SELECT a.anomaly_id, a.metric, a.node_id, a.dims, a.interval_start, a.detector, "
    "a.direction, a.value, a.expected, a.score, a.reason, a.data, s.spec, s.kind "
    "FROM watch_anomalies a JOIN watch_series s ON s.series_id = a.series_id "
    "WHERE a.incident_id = ? ORDER BY a.interval_start, a.metric, a.dims, a.detector"
)
_RESOLVE = statement(
    "UPDATE incidents SET status = ?, resolution = ?, resolved_at = ?, updated_at = ? "
    "WHERE incident_id = ?"
)
_REOPEN = statement(
    "UPDATE incidents SET status = 'open', resolution = ?, resolved_at = NULL, "
    "updated_at = ? WHERE incident_id = ? AND status IN ('resolved', 'repaired')"
)

#: Anomalous intervals of related nodes this many days apart or closer are one incident
#: (Friday and Monday are three days apart).
GAP_DAYS = 3


@dataclass(frozen=True)
class Ref:
    """The part of a stored anomaly that grouping needs."""

    anomaly_id: int
    node_id: str
    interval: date
    incident_id: str | None = None
    key: str | None = None  # the cause the anomaly names itself (a code change), if any


@dataclass
class Incident:
    incident_id: str
    target: str
    status: str
    title: str
    origin_node: str | None
    first_interval: date
    last_interval: date
    anomalies: int
    diagnosis: dict[str, Any] = field(default_factory=dict)
    opened_at: float = 0.0
    updated_at: float = 0.0
    resolved_at: float | None = None
    resolution: str | None = None

    def as_dict(self, *, with_diagnosis: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.incident_id,
            "target": self.target,
            "status": self.status,
            "title": self.title,
            "origin": self.origin_node,
            "first_interval": self.first_interval.isoformat(),
            "last_interval": self.last_interval.isoformat(),
            "anomalies": self.anomalies,
            "opened_at": self.opened_at,
            "updated_at": self.updated_at,
            "resolved_at": self.resolved_at,
            "resolution": self.resolution,
        }
        if with_diagnosis:
            out["diagnosis"] = self.diagnosis
        return out


# -- grouping (pure) -------------------------------------------------------------------------
def _runs(refs: list[Ref]) -> list[list[Ref]]:
    """Per node, the anomalies split into runs of intervals at most GAP_DAYS apart."""
    by_node: dict[str, list[Ref]] = defaultdict(list)
    for r in refs:
        by_node[r.node_id].append(r)
    runs: list[list[Ref]] = []
    for node in sorted(by_node):
        items = sorted(by_node[node], key=lambda r: (r.interval, r.anomaly_id))
        current = [items[0]]
        for r in items[1:]:
            if (r.interval - current[-1].interval).days <= GAP_DAYS:
                current.append(r)
            else:
                runs.append(current)
                current = [r]
        runs.append(current)
    return runs


def _close(a: list[Ref], b: list[Ref]) -> bool:
    """Do two runs overlap, or touch within GAP_DAYS?"""
    a0, a1 = a[0].interval, a[-1].interval
    b0, b1 = b[0].interval, b[-1].interval
    return (b0 - a1).days <= GAP_DAYS and (a0 - b1).days <= GAP_DAYS


def group(refs: list[Ref], related: Callable[[str, str], bool]) -> list[list[Ref]]:
    """Anomalies grouped by shared cause: runs of related nodes that overlap in time."""
    if not refs:
        return []
    runs = _runs(refs)
    parent = list(range(len(runs)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(runs)):
        for j in range(i + 1, len(runs)):
            ni, nj = runs[i][0].node_id, runs[j][0].node_id
            if ni != nj and _close(runs[i], runs[j]) and related(ni, nj):
                parent[find(i)] = find(j)
    # runs that name the same cause are one incident, however far apart
    by_key: dict[str, int] = {}
    for i, run in enumerate(runs):
        for r in run:
            if r.key:
                if r.key in by_key:
                    parent[find(i)] = find(by_key[r.key])
                else:
                    by_key[r.key] = i
    # runs of the same node joined through an open incident stay joined
    by_incident: dict[str, int] = {}
    for i, run in enumerate(runs):
        for r in run:
            if r.incident_id:
                if r.incident_id in by_incident:
                    parent[find(i)] = find(by_incident[r.incident_id])
                else:
                    by_incident[r.incident_id] = i
    groups: dict[int, list[Ref]] = defaultdict(list)
    for i, run in enumerate(runs):
        groups[find(i)].extend(run)
    out = [sorted(g, key=lambda r: (r.interval, r.node_id, r.anomaly_id)) for g in groups.values()]
    return sorted(out, key=lambda g: (g[0].interval, g[0].node_id))


# -- the state ------------------------------------------------------------------------------
_COLUMNS = (
    "incident_id", "target", "status", "title", "origin_node", "first_interval", "last_interval",
    "anomalies", "diagnosis", "opened_at", "updated_at", "resolved_at", "resolution",
)  # fmt: skip


def _row(r: tuple[Any, ...]) -> Incident:
    return Incident(
        incident_id=r[0],
        target=r[1],
        status=r[2],
        title=r[3],
        origin_node=r[4],
        first_interval=date.fromisoformat(r[5]),
        last_interval=date.fromisoformat(r[6]),
        anomalies=int(r[7]),
        diagnosis=json.loads(r[8]) if r[8] else {},
        opened_at=float(r[9]),
        updated_at=float(r[10]),
        resolved_at=r[11],
        resolution=r[12],
    )


def list_incidents(
    conn: Any, target: str | None = None, *, status: str | list[str] | None = None
) -> list[Incident]:
    """Stored incidents, newest first (all targets when ``target`` is None)."""
    cond, args = where_equal(target=target or None, status=status or None)
    q = exp.select(*_COLUMNS).from_("incidents")
    if cond is not None:
        q = q.where(cond)
    q = q.order_by(exp.column("opened_at").desc(), exp.column("incident_id").desc())
    return [_row(r) for r in conn.execute(Statement(q), args)]


def get_incident(conn: Any, incident_id: str) -> Incident:
    row = conn.execute(_INCIDENT, (incident_id,)).fetchone()
    if row is None:
        known = [r[0] for r in conn.execute(_LATEST_IDS)]
        raise NodeNotFoundError(
            f"no incident {incident_id!r} in this workspace's state.",
            fix=(f"use one of: {', '.join(known)} (splice incidents lists them)" if known
                 else "run splice watch first; it opens incidents when it finds anomalies"),
        )  # fmt: skip
    return _row(row)


def incident_anomalies(conn: Any, incident_id: str) -> list[dict[str, Any]]:
    """The stored anomalies of one incident, oldest interval first."""
    return _anomalies(conn, _INCIDENT_ANOMALIES, [incident_id])


def _next_id(conn: Any) -> str:
    row = conn.execute(_TOP_NUMBER).fetchone()
    return f"INC-{int(row[0] or 0) + 1}"


def _refs(conn: Any, target: str) -> list[Ref]:
    """Anomalies not yet in an incident, and those of open incidents (they may grow)."""
    rows = conn.execute(_UNGROUPED_ANOMALIES, (target,)).fetchall()
    return [Ref(int(r[0]), r[1], date.fromisoformat(r[2]), r[3] if r[3] else None,
                _change_key(r[4])) for r in rows]  # fmt: skip


def _change_key(data: str | None) -> str | None:
    """The cause an anomaly names (its data's ``change_key``); the data may hold a NaN, which
    only Python's JSON reads, so it is read here rather than in SQL."""
    if not data:
        return None
    try:
        key = json.loads(data).get("change_key")
    except ValueError:
        return None
    return str(key) if key else None


Diagnose = Callable[[str, list[dict[str, Any]]], dict[str, Any]]


def update_incidents(
    conn: Any,
    target: str,
    related: Callable[[str, str], bool],
    diagnose: Diagnose,
    *,
    transaction: Any,
    now: float | None = None,
    split: Callable[[list[Ref]], list[list[Ref]]] | None = None,
) -> list[Incident]:
    """Group the target's new anomalies into incidents; refresh the diagnosis of those touched.

    Returns the incidents opened or changed by this call.  ``diagnose(incident_id, anomalies)``
    runs before the write; the write is one transaction.  ``split(group)``: the group's parts
    that independent causes explain (:mod:`splice.watch.independent`), each an incident.
    """
    now = time.time() if now is None else now
    refs = _refs(conn, target)
    touched: list[tuple[str, bool, list[Ref]]] = []  # (incident id, new?, refs)
    taken: set[str] = set()
    next_n = int(_next_id(conn).split("-")[1])
    open_ones = list_incidents(conn, target, status="open")[::-1]  # oldest first
    groups = group(refs, related)
    if split is not None:
        groups = [part for g in groups for part in split(g)]
    for g in groups:
        olds = sorted({r.incident_id for r in g if r.incident_id})
        if olds and all(r.incident_id == olds[0] for r in g):
            continue  # nothing new for this incident
        keep = next((o for o in olds if o not in taken), None)
        if keep is None:
            keep = _reopenable(open_ones, g, related, taken)
        fresh = keep is None
        if keep is None:
            keep, next_n = f"INC-{next_n}", next_n + 1
        touched.append((keep, fresh, g))
        taken.add(keep)
    orphans = _orphans(conn, target, {t[0] for t in touched})
    if not touched and not orphans:
        return []
    plans: list[tuple[str, bool, list[Ref], dict[str, Any], list[dict[str, Any]]]] = []
    for inc_id, is_new, g in touched:
        ids = [r.anomaly_id for r in g]
        anomalies = _anomalies_by_id(conn, ids)
        plans.append((inc_id, is_new, g, diagnose(inc_id, anomalies), anomalies))
    with transaction():
        # new ids are taken here, inside the write transaction (BEGIN IMMEDIATE): a concurrent
        # writer that opened incidents since the ids above were guessed cannot collide
        n = int(_next_id(conn).split("-")[1])
        for i, (_old_id, is_new, g, diag, anoms) in enumerate(plans):
            if is_new:
                plans[i] = (f"INC-{n}", is_new, g, diag, anoms)
                n += 1
        for inc_id in orphans:
            resolve_incident(
                conn,
                inc_id,
                "no anomaly remains: its intervals were measured and judged afresh",
                now=now,
            )
        for inc_id, is_new, g, diag, _anoms in plans:
            ids = [r.anomaly_id for r in g]
            for i in range(0, len(ids), 500):
                chunk = ids[i : i + 500]
                link = exp.update(
                    "watch_anomalies",
                    {"incident_id": exp.Placeholder()},
                    where=exp.column("anomaly_id").isin(*placeholders(len(chunk))),
                )
                conn.execute(Statement(link), [inc_id, *chunk])
            kept = {p[0] for p in plans}  # an incident another part keeps is no merge
            merged = sorted(
                {r.incident_id for r in g if r.incident_id and r.incident_id not in kept}
            )
            for other in merged:
                conn.execute(_MERGE, (f"merged into {inc_id}", now, other))
            first = min(r.interval for r in g).isoformat()
            last = max(r.interval for r in g).isoformat()
            values = (
                diag.get("title") or f"{len(g)} anomalies",
                diag.get("origin", {}).get("node"),
                first,
                last,
                len(g),
                json.dumps(diag, default=str),
                now,
            )
            if is_new:
                conn.execute(_OPEN, (*values, inc_id, target, now))
            else:
                conn.execute(_REFRESH, (*values, inc_id))
    return [get_incident(conn, inc_id) for inc_id, *_ in plans]


def _orphans(conn: Any, target: str, keep: set[str]) -> list[str]:
    """Open incidents left with no anomaly (a backfill judged their intervals afresh)."""
    rows = conn.execute(_ORPHANS, (target,)).fetchall()
    return [r[0] for r in rows if r[0] not in keep]


def _reopenable(
    open_ones: list[Incident], g: list[Ref], related: Callable[[str, str], bool], taken: set[str]
) -> str | None:
    """An open incident this group continues although none of its anomalies is linked to it
    any more (a backfill measured and judged its intervals afresh): same time, related origin."""
    first, last = g[0].interval, max(r.interval for r in g)
    nodes = {r.node_id for r in g}
    for inc in open_ones:
        if inc.incident_id in taken or inc.origin_node is None:
            continue
        close = (first - inc.last_interval).days <= GAP_DAYS and (
            inc.first_interval - last
        ).days <= GAP_DAYS
        if close and any(related(inc.origin_node, n) for n in nodes):
            return inc.incident_id
    return None


def anomalies_by_id(conn: Any, ids: list[int]) -> list[dict[str, Any]]:
    """The stored anomalies with these ids (as the diagnosis reads them)."""
    return _anomalies_by_id(conn, ids)


def _anomalies_by_id(conn: Any, ids: list[int]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        # the incident's query, its WHERE an id list
        q = _INCIDENT_ANOMALIES.tree
        assert isinstance(q, exp.Select)
        by_id = exp.column("anomaly_id", table="a").isin(*placeholders(len(chunk)))
        out += _anomalies(conn, Statement(q.where(by_id, append=False)), chunk)
    out.sort(key=lambda a: (a["interval"], a["metric"], json.dumps(a["dims"]), a["detector"]))
    return out


_ANOMALY_COLUMNS = (
    "anomaly_id", "metric", "node_id", "dims", "interval", "detector", "direction",
    "value", "expected", "score", "reason", "data", "spec", "kind",
)  # fmt: skip


def _anomalies(conn: Any, query: Statement, args: list[Any]) -> list[dict[str, Any]]:
    """The anomalies ``query`` (:data:`_INCIDENT_ANOMALIES`, or its variant by id) reads."""
    rows = conn.execute(query, args).fetchall()
    out = []
    for r in rows:
        rec = dict(zip(_ANOMALY_COLUMNS, r, strict=True))
        rec["dims"] = json.loads(rec["dims"])
        rec["data"] = json.loads(rec["data"]) if rec["data"] else {}
        rec["interval"] = date.fromisoformat(rec["interval"])
        out.append(rec)
    return out


def resolve_incident(
    conn: Any, incident_id: str, resolution: str, *, status: str = "resolved",
    now: float | None = None,
) -> None:  # fmt: skip
    """Close an incident (verification passed, or a person dismissed it)."""
    now = time.time() if now is None else now
    conn.execute(_RESOLVE, (status, resolution, now, now, incident_id))


def reopen_incident(conn: Any, incident_id: str, why: str, *, now: float | None = None) -> None:
    """Open a resolved incident again (its repair was undone)."""
    now = time.time() if now is None else now
    conn.execute(_REOPEN, (why, now, incident_id))
