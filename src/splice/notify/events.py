"""Events, derived from what Splice already records: the audit log's entries and new incidents.

Each event names what happened, the target, the incident and proposal, who decided (the
principal's name; ``splice`` for Splice's own bookkeeping) and the command to run next.

>>> e = Event("audit:3", "stop_started", 0.0, "Org-wide stop by lee: quarter close",
...           None, None, None, "lee", "splice resume")
>>> e.as_dict()["next_command"], e.when
('splice resume', '1970-01-01 00:00 UTC')
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from splice.state.sql import statement

_PROPOSAL = statement("SELECT payload, target FROM repair_proposals WHERE proposal_id = ?")

#: The audit-log kinds that become an event (the others are steps of one: propose, apply, ...).
AUDIT_EVENTS = {
    "request": "proposal_requested",
    "escalate": "request_escalated",
    "expire": "request_expired",
    "approve": "proposal_approved",
    "reject": "proposal_rejected",
    "failed": "repair_failed",
    "interrupted": "repair_failed",
    "undo": "repair_undone",
    "stop": "stop_started",
    "resume": "stop_ended",
    "accept-level": "level_accepted",
    # access grants (splice.grants): the grant's id stands in proposal_id
    "access-request": "access_requested",
    "access-escalate": "request_escalated",
    "access-expire": "request_expired",
    "access-grant": "access_granted",
    "access-revoke": "access_ended",
    # "verify" becomes repair_verified or repair_unverified, by its result
}


@dataclass(frozen=True)
class Event:
    key: str  # unique per event: "audit:SEQ" or "incident:ID"
    kind: str  # one of splice.config.notify.EVENTS (or "test")
    at: float
    summary: str  # one line: what happened
    target: str | None
    incident_id: str | None
    proposal_id: str | None
    actor: str  # who decided
    next_command: str
    details: dict[str, Any] = field(default_factory=dict)
    workspace: str = "workspace"

    @property
    def when(self) -> str:
        return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self.at))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Event:
        return cls(**d)


def _proposal(conn: sqlite3.Connection, proposal_id: str | None) -> dict[str, Any]:
    if not proposal_id:
        return {}
    row = conn.execute(_PROPOSAL, (proposal_id,)).fetchone()
    if row is None:
        return {}
    d = json.loads(row[0])
    d["target"] = row[1]
    return dict(d)


def _owners(config: Any, domain: str | None) -> list[str]:
    for d in config.domains:
        if d.name == domain:
            return list(d.owners)
    return []


def from_audit(
    conn: sqlite3.Connection,
    config: Any,
    *,
    seq: int,
    at: float,
    kind: str,
    actor: str,
    proposal_id: str | None,
    payload: dict[str, Any],
) -> Event | None:
    """The event an audit-log entry stands for, or None (a step no one needs telling of)."""
    if kind == "verify":
        event = "repair_verified" if payload.get("passed") else "repair_unverified"
    elif kind in AUDIT_EVENTS:
        event = AUDIT_EVENTS[kind]
    else:
        return None
    if kind.startswith("access-"):
        return _access_event(config, seq, at, kind, event, actor, proposal_id or "", payload)
    p = _proposal(conn, proposal_id)
    pid = proposal_id or ""
    inc = p.get("incident_id") or payload.get("incident_id")
    title = p.get("title") or ""
    owners = _owners(config, p.get("domain"))
    comment = payload.get("comment")
    details: dict[str, Any] = {}
    if p:
        details.update(title=title, domain=p.get("domain"), change_class=p.get("change_class"),
                       scope=f"{p.get('scope_start')}..{p.get('scope_end')}")  # fmt: skip
    if comment:
        details["comment"] = comment
    first = owners[0] if owners else "NAME"
    others = [d for d in p.get("domains") or [] if d != p.get("domain")]
    if others:  # every domain the repair touches decides: the first owner of each is asked
        details["domains"] = [p.get("domain"), *others]
        firsts = [first, *(o[0] for o in (_owners(config, d) for d in others) if o)]
        first = ", ".join(firsts)
    if event == "proposal_requested":
        summary = f"Proposal {pid} waits for approval by {first}: {title}"
        nxt = f"splice approve {pid}"
        details["asked"] = first.split(", ") if others else owners[:1]
    elif event == "request_escalated":
        owner = payload.get("owner") or "NAME"
        summary = f"Proposal {pid} is still unanswered: {owner} is asked as well"
        nxt = f"splice approve {pid}"
        details["asked"] = payload.get("asked") or []
    elif event == "request_expired":
        summary = f"Proposal {pid} expired: {comment or 'unanswered'}"
        nxt = f"splice propose {inc}" if inc else "splice proposals --all"
    elif event == "proposal_approved" and payload.get("waiting"):
        waiting = list(payload["waiting"])
        mine = ", ".join(payload.get("domains") or [])
        summary = (f"Proposal {pid} approved for {mine} by {actor}; it waits for "
                   f"{', '.join(waiting)}: {title}")  # fmt: skip
        nxt = f"splice approve {pid}"
        details["waiting_for"] = waiting
    elif event == "proposal_approved":
        summary = f"Proposal {pid} approved by {actor}: {title}"
        nxt = f"splice apply {pid}"
    elif event == "proposal_rejected":
        summary = f"Proposal {pid} rejected by {actor}" + (f": {comment}" if comment else "")
        nxt = f"splice incident show {inc}" if inc else "splice proposals --all"
    elif event == "repair_verified":
        summary = f"Repair {pid} applied and verified: {payload.get('summary') or title}"
        nxt = f"splice receipt {pid}"
    elif event == "repair_unverified":
        summary = f"Repair {pid} applied but NOT verified: {payload.get('summary') or title}"
        nxt = f"splice receipt {pid}"
        details["undo"] = f"splice undo {pid}"
    elif event == "repair_failed":
        what = "was interrupted" if kind == "interrupted" else "failed"
        summary = f"Repair {pid} {what}" + (f": {comment}" if comment else "")
        nxt = f"splice receipt {pid}"
    elif event == "repair_undone":
        summary = f"Repair {pid} undone by {actor}" + (f": {comment}" if comment else "")
        nxt = f"splice incident show {inc}" if inc else "splice proposals --all"
    elif event == "stop_started":
        summary = f"Org-wide stop by {actor}: {payload.get('reason')}"
        nxt = "splice resume"
        details["reason"] = payload.get("reason")
    elif event == "level_accepted":
        summary, details = _level_accepted(inc, actor, payload, details)
        nxt = f"splice incident show {inc}"
    else:  # stop_ended
        summary = f"Org-wide stop lifted by {actor} (stopped by {payload.get('stopped_by')})"
        nxt = "splice proposals"
        details["reason"] = payload.get("reason")
    target = p.get("target") or payload.get("target")
    return Event(f"audit:{seq}", event, at, summary, target, inc, proposal_id, actor,
                 nxt, details, config.workspace.name)  # fmt: skip


def _access_event(config: Any, seq: int, at: float, kind: str, event: str, actor: str,
                  gid: str, payload: dict[str, Any]) -> Event:  # fmt: skip
    """The words of an access grant's step (``payload``: the audit-log entry's)."""
    grantee = payload.get("grantee") or "?"
    rels = payload.get("relations") or []
    what = f"{grantee} reads {', '.join(rels[:3])}" + (
        f" (+{len(rels) - 3})" if len(rels) > 3 else ""
    )
    owners = _owners(config, payload.get("domain"))
    details: dict[str, Any] = {"grantee": grantee, "relations": rels}
    if kind == "access-request":
        first = owners[0] if owners else "an owner"
        summary = f"Access {gid} waits for approval by {first}: {what} ({payload.get('comment')})"
        nxt = f"splice access approve {gid}"
        details.update(domain=payload.get("domain"), asked=owners[:1], hours=payload.get("hours"))
    elif kind == "access-escalate":
        summary = (
            f"Access request {gid} is still unanswered: {payload.get('owner')} is asked as well"
        )
        nxt = f"splice access approve {gid}"
        details["asked"] = payload.get("asked") or []
    elif kind == "access-expire":
        summary = f"Access request {gid} expired: {payload.get('comment') or 'unanswered'}"
        nxt = "splice access list --all"
    elif kind == "access-grant":
        summary = f"Access {gid} granted: {what}. {payload.get('comment') or ''}".strip()
        nxt = f"splice access revoke {gid} --reason ... (ends it early)"
        details["until"] = payload.get("until")
    else:
        summary = f"Access {gid} ended: {payload.get('comment') or 'revoked'}"
        nxt = f"splice access show {gid}"
    return Event(f"audit:{seq}", event, at, summary, None, None, gid, actor, nxt, details,
                 config.workspace.name)  # fmt: skip


def _level_accepted(
    inc: str | None, actor: str, payload: dict[str, Any], details: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    """The words of an accepted level: which series, from when, and whether the incident closed.

    >>> s, d = _level_accepted("INC-4", "maria", {"status": "accepted", "remaining": 0,
    ...     "series": [{"metric": "fx_rate", "series": "currency=JPY", "since": "2026-09-25"}]}, {})
    >>> s
    'Incident INC-4: new level of fx_rate currency=JPY accepted by maria from 2026-09-25; the incident is closed'
    """
    series = payload.get("series") or []
    names = [f"{x.get('metric')} {x.get('series')}".replace(" (all)", "") for x in series]
    what = names[0] if len(names) == 1 else f"{len(names)} series"
    starts = sorted({str(x.get("since")) for x in series if x.get("since")})
    when = f" from {starts[0]}" if starts else ""
    left = payload.get("remaining") or 0
    tail = (
        "the incident is closed"
        if payload.get("status") == "accepted"
        else f"{left} series stay open"
    )
    summary = f"Incident {inc}: new level of {what} accepted by {actor}{when}; {tail}"
    details = {**details, "series": names[:20], "since": starts[0] if starts else None,
               "status": payload.get("status"), "domain": payload.get("domain")}  # fmt: skip
    return summary, details


def from_incident(row: dict[str, Any], config: Any) -> Event:
    """The event of an incident opened by ``splice watch``."""
    inc = row["incident_id"]
    diag = json.loads(row["diagnosis"]) if row.get("diagnosis") else {}
    blast = diag.get("blast_radius") or {}
    dashboards = [d.get("label") or d.get("name") for d in blast.get("dashboards") or []
                  if isinstance(d, dict)]  # fmt: skip
    details = {
        "title": row["title"],
        "origin": row["origin_node"],
        "intervals": f"{row['first_interval']}..{row['last_interval']}",
        "anomalies": row["anomalies"],
    }
    if dashboards:
        details["dashboards"] = dashboards
    if diag.get("cause"):
        details["cause"] = diag["cause"]
    source = (diag.get("source") or {}).get("node")
    if source:
        details["source"] = source
    return Event(f"incident:{inc}", "incident_opened", float(row["opened_at"]),
                 f"Incident {inc} opened: {row['title']}", row["target"], inc, None, "splice",
                 f"splice propose {inc}", details, config.workspace.name)  # fmt: skip


def sample_event(config: Any, channel: str) -> Event:
    """The message ``splice notify test`` sends."""
    return Event("test", "test", time.time(),
                 f"Test message from Splice workspace {config.workspace.name} to channel {channel}",
                 None, None, None, "splice", "splice notify status", {"channel": channel},
                 config.workspace.name)  # fmt: skip
