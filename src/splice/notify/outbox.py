"""The durable outbox: events queued in Splice's state, sent once per channel, retried with backoff.

:func:`deliver` does two things, each safe to run from several processes at once:

1. **enqueue**: in one transaction (``BEGIN IMMEDIATE``), read the audit-log entries and the
   incidents after the cursor, queue one delivery per (event, channel that wants it) and move
   the cursor.  A delivery is unique per (event, channel), so an event is never queued twice.
2. **send** what is due: each delivery is *claimed* first (a conditional update: one process
   wins), then sent with the channel's timeout, then marked delivered, or scheduled again after
   a backoff (30 s, doubling, at most an hour), or marked failed after ``max_attempts``.  A
   channel that fails is not tried again in the same call, so a dead receiver costs one timeout.

A claim lasts :data:`LEASE` seconds: a process that died between sending and recording is
retried after that (the only case in which a receiver may see a message twice).  Nothing here
raises because a channel failed; failures are logged to ``.splice/logs/notify.log``.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from splice.config.notify import NotifySection
from splice.notify.channels import send
from splice.notify.events import Event, from_audit, from_incident
from splice.state.sql import Statement, statement

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

#: Seconds a claimed delivery belongs to the process that claimed it.
LEASE = 300.0
BACKOFF_FIRST = 30.0
BACKOFF_MAX = 3600.0

_CURSOR = statement("SELECT position FROM notify_cursor WHERE name = ?")
_SET_CURSOR = statement(
    "INSERT INTO notify_cursor (name, position) VALUES (?, ?) "
    "ON CONFLICT(name) DO UPDATE SET position = excluded.position"
)
_AUDIT_AFTER = statement(
    "SELECT seq, at, kind, actor, proposal_id, payload FROM repair_audit_log "
    "WHERE seq > ? ORDER BY seq"
)
_INCIDENT_COLUMNS = ("rowid", "incident_id", "target", "title", "origin_node", "first_interval",
                     "last_interval", "anomalies", "diagnosis", "opened_at")  # fmt: skip
_INCIDENTS_AFTER = statement(
    "SELECT rowid, incident_id, target, title, origin_node, first_interval, last_interval, "
    "anomalies, diagnosis, opened_at FROM incidents WHERE rowid > ? ORDER BY rowid"
)
_QUEUE = statement(
    "INSERT OR IGNORE INTO notify_deliveries (event_key, event, channel, "
    "message, created_at, next_attempt_at) VALUES (?, ?, ?, ?, ?, ?)"
)
_CLAIM = statement(
    "UPDATE notify_deliveries SET status = 'sending', claimed_until = ?, "
    "attempts = attempts + 1 WHERE delivery_id = ? AND ((status = 'pending' AND "
    "next_attempt_at <= ?) OR (status = 'sending' AND claimed_until < ?))"
)
# how a delivery ends (each with the delivery's id last)
_CHANNEL_GONE = statement(
    "UPDATE notify_deliveries SET status = 'failed', last_error = ? WHERE delivery_id = ?"
)
_DELIVERED = statement(
    "UPDATE notify_deliveries SET status = 'delivered', delivered_at = ?, last_error = NULL, "
    "claimed_until = NULL WHERE delivery_id = ?"
)
_GAVE_UP = statement(
    "UPDATE notify_deliveries SET status = 'failed', last_error = ?, claimed_until = NULL "
    "WHERE delivery_id = ?"
)
_RETRY = statement(
    "UPDATE notify_deliveries SET status = 'pending', last_error = ?, claimed_until = NULL, "
    "next_attempt_at = ? WHERE delivery_id = ?"
)
_DUE = statement(
    "SELECT delivery_id, channel, event, message FROM notify_deliveries "
    "WHERE (status = 'pending' AND next_attempt_at <= ?) "
    "OR (status = 'sending' AND claimed_until < ?) ORDER BY delivery_id"
)
_ATTEMPTS = statement("SELECT attempts FROM notify_deliveries WHERE delivery_id = ?")
_COUNT = statement("SELECT COUNT(*) FROM notify_deliveries WHERE status = ?")
_COUNTS = statement("SELECT status, COUNT(*) FROM notify_deliveries GROUP BY status")
_WAITING = statement(
    "SELECT delivery_id, channel, event, message, status, attempts, last_error, "
    "next_attempt_at, created_at FROM notify_deliveries WHERE status != 'delivered' "
    "ORDER BY delivery_id DESC LIMIT ?"
)


def backoff(attempts: int) -> float:
    """Seconds before the next attempt after ``attempts`` failed ones.

    >>> [backoff(n) for n in (1, 2, 3, 10)]
    [30.0, 60.0, 120.0, 3600.0]
    """
    return float(min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** max(0, attempts - 1)))


@dataclass
class DeliveryReport:
    queued: int = 0  # deliveries queued by this call
    delivered: int = 0  # sent by this call
    retrying: int = 0  # failed by this call, to be tried again later
    failed: int = 0  # given up by this call (max attempts)
    pending: int = 0  # waiting after this call
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _log(ws: Workspace, line: str) -> None:
    try:
        path: Path = ws.splice_dir / "logs" / "notify.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        with path.open("a", encoding="utf-8") as f:
            f.write(f"{stamp} {line}\n")
    except OSError:
        pass


def _cursor(conn: sqlite3.Connection, name: str) -> int:
    row = conn.execute(_CURSOR, (name,)).fetchone()
    return int(row[0]) if row else 0


def _set_cursor(conn: sqlite3.Connection, name: str, position: int) -> None:
    conn.execute(_SET_CURSOR, (name, position))


def new_events(conn: sqlite3.Connection, config: Any) -> tuple[list[Event], int, int]:
    """Events after the cursor, and the cursor positions after them (audit seq, incidents rowid)."""
    events: list[Event] = []
    seq = _cursor(conn, "audit")
    for s, at, kind, actor, pid, payload in conn.execute(_AUDIT_AFTER, (seq,)).fetchall():
        seq = int(s)
        try:
            body = json.loads(payload)
        except ValueError:
            body = {}
        e = from_audit(conn, config, seq=seq, at=at, kind=kind, actor=actor, proposal_id=pid,
                       payload=body if isinstance(body, dict) else {})  # fmt: skip
        if e is not None:
            events.append(e)
    rowid = _cursor(conn, "incidents")
    for row in conn.execute(_INCIDENTS_AFTER, (rowid,)).fetchall():
        rowid = int(row[0])
        events.append(from_incident(dict(zip(_INCIDENT_COLUMNS, row, strict=True)), config))
    events.sort(key=lambda e: e.at)
    return events, seq, rowid


def enqueue(ws: Workspace, *, now: float | None = None) -> int:
    """Queue the events after the cursor for every channel that wants them; returns how many
    deliveries were queued (none when no channel is configured: the cursor moves all the same)."""
    now = time.time() if now is None else now
    channels: list[NotifySection] = list(ws.config.notify)
    queued = 0
    silent = _recorded_only(ws)
    with ws.state.transaction() as conn:
        events, seq, rowid = new_events(conn, ws.config)
        for e in events:
            if e.kind == "incident_opened" and silent(e.details.get("origin")):
                continue  # a domain at L0: the incident is recorded, nobody is told
            for c in channels:
                if c.wants(e.kind):
                    cur = conn.execute(
                        _QUEUE,
                        (e.key, e.kind, c.name, json.dumps(e.as_dict(), default=str), now, now),
                    )
                    queued += cur.rowcount
        _set_cursor(conn, "audit", seq)
        _set_cursor(conn, "incidents", rowid)
    return queued


def _recorded_only(ws: Workspace) -> Callable[[str | None], bool]:
    """Whether an incident starting at a node is only recorded: its domain is at L0 (manual).
    The graph is read only when some domain is at L0."""
    if not any(d.autonomy == "L0" for d in ws.config.domains):
        return lambda _origin: False
    from splice.approvals.domains import domain_for

    graph = ws.graph()

    def silent(origin: str | None) -> bool:
        if not origin or origin not in graph.nodes:
            return False
        dom = domain_for(graph, ws.config, origin)
        return dom is not None and dom.autonomy == "L0"

    return silent


def _claim(ws: Workspace, delivery_id: int, now: float) -> bool:
    with ws.state.transaction() as conn:
        cur = conn.execute(_CLAIM, (now + LEASE, delivery_id, now, now))
        return cur.rowcount == 1


def _finish(ws: Workspace, delivery_id: int, how: Statement, args: tuple[Any, ...]) -> None:
    """End a delivery ``how`` says (:data:`_DELIVERED`, :data:`_RETRY`, ...)."""
    with ws.state.transaction() as conn:
        conn.execute(how, (*args, delivery_id))


def _due(ws: Workspace, now: float) -> list[tuple[Any, ...]]:
    return ws.state.conn.execute(_DUE, (now, now)).fetchall()


def send_due(ws: Workspace, report: DeliveryReport, *, now: float | None = None) -> None:
    """Send every due delivery once (a channel that fails is skipped for the rest of the call)."""
    clock = time.time if now is None else (lambda: now)
    channels = {c.name: c for c in ws.config.notify}
    broken: set[str] = set()
    for delivery_id, name, kind, message in _due(ws, clock()):
        c = channels.get(name)
        if name in broken:
            continue
        if c is None:
            _finish(
                ws, delivery_id, _CHANNEL_GONE, (f"channel {name} is no longer in splice.toml",)
            )
            continue
        if not _claim(ws, delivery_id, clock()):
            continue  # another process has it, or had it done
        e = Event.from_dict(json.loads(message))
        error = send(c, e)
        attempts = int(ws.state.conn.execute(_ATTEMPTS, (delivery_id,)).fetchone()[0])
        t = clock()
        what = f"{name} {kind} {e.proposal_id or e.incident_id or ''}".rstrip()
        if error is None:
            _finish(ws, delivery_id, _DELIVERED, (t,))
            report.delivered += 1
            _log(ws, f"delivered {what} (attempt {attempts})")
            continue
        broken.add(name)
        report.errors.append(f"{name}: {error}")
        if attempts >= c.max_attempts:
            _finish(ws, delivery_id, _GAVE_UP, (error,))
            report.failed += 1
            _log(ws, f"FAILED {what}: gave up after {attempts} attempts: {error}")
        else:
            _finish(ws, delivery_id, _RETRY, (error, t + backoff(attempts)))
            report.retrying += 1
            _log(ws, f"retry {what}: attempt {attempts}/{c.max_attempts} failed: {error}; "
                 f"next in {backoff(attempts):g} s")  # fmt: skip


def deliver(ws: Workspace, *, now: float | None = None) -> DeliveryReport:
    """Queue what is new and send what is due; never raises for a channel's failure."""
    t0 = time.perf_counter()
    report = DeliveryReport()
    report.queued = enqueue(ws, now=now)
    if ws.config.notify or report.queued or _count(ws, "pending"):
        send_due(ws, report, now=now)
    if any(b.annotate for b in ws.config.bi):  # incidents on the BI tools' charts
        from splice.notify.annotations import sync

        report.errors += sync(ws)
    report.pending = _count(ws, "pending") + _count(ws, "sending")
    report.seconds = round(time.perf_counter() - t0, 3)
    return report


def _count(ws: Workspace, status: str) -> int:
    row = ws.state.conn.execute(_COUNT, (status,)).fetchone()
    return int(row[0])


def status(ws: Workspace, *, limit: int = 50) -> dict[str, Any]:
    """The outbox: counts per status, and the deliveries not delivered (newest first)."""
    conn = ws.state.conn
    counts = dict(conn.execute(_COUNTS))
    rows = conn.execute(_WAITING, (limit,)).fetchall()
    waiting = []
    for did, ch, kind, message, st, attempts, err, nxt, created in rows:
        summary = json.loads(message).get("summary")
        waiting.append({"id": did, "channel": ch, "event": kind, "summary": summary,
                        "status": st, "attempts": attempts, "last_error": err,
                        "next_attempt_at": nxt if st == "pending" else None,
                        "created_at": created})  # fmt: skip
    return {
        "channels": [
            {
                "name": c.name,
                "type": c.type,
                "format": c.format if c.type == "webhook" else None,
                "events": c.events or "all",
            }
            for c in ws.config.notify
        ],  # fmt: skip
        "counts": {s: int(counts.get(s, 0)) for s in ("pending", "sending", "delivered", "failed")},
        "waiting": waiting,
        "cursor": {"audit": _cursor(conn, "audit"), "incidents": _cursor(conn, "incidents")},
    }


def send_test(ws: Workspace, channel: str | None = None) -> list[dict[str, Any]]:
    """Send a test message to every channel (or the one named) now, outside the outbox."""
    from splice.errors import ConfigError
    from splice.notify.events import sample_event

    chosen = [c for c in ws.config.notify if channel is None or c.name == channel]
    if not chosen:
        known = ", ".join(c.name for c in ws.config.notify)
        raise ConfigError(
            f"no [[notify]] channel {channel!r} in splice.toml"
            + (f" (channels: {known})." if known else "; none is declared."),
            fix='declare one: [[notify]] name = ..., type = "webhook" or "email" '
            "(see docs/configuration.md)",
        )
    out = []
    for c in chosen:
        t0 = time.perf_counter()
        error = send(c, sample_event(ws.config, c.name))
        _log(ws, f"test {c.name}: " + ("delivered" if error is None else f"failed: {error}"))
        out.append({"channel": c.name, "type": c.type, "ok": error is None, "error": error,
                    "seconds": round(time.perf_counter() - t0, 3)})  # fmt: skip
    return out
