"""The operator's rows in Splice's state: each schedule's last tick and outcome, the watches
waiting to be coalesced, the cursors of what it has seen, and what it did and why.

Every autonomous *decision* (a proposal drafted, approved, applied) is also an audit-log
entry by the operator's principal (:mod:`splice.approvals.auditlog`); this activity log is
the operator's own diary: what triggered each watch, what each schedule did, what it skipped.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from splice.state.sql import statement
from splice.state.store import StateStore
from splice.support.clock import utc_text

_SCHEDULE_SELECT = statement(
    "SELECT name, target, last_tick, started_at, finished_at, outcome, detail "
    "FROM operator_schedules"
)
_SCHEDULE_BASE = statement(
    "INSERT OR IGNORE INTO operator_schedules (name, target, last_tick) VALUES (?, ?, ?)"
)
_SCHEDULE_TAKE = statement(
    "UPDATE operator_schedules SET last_tick = ?, started_at = ?, finished_at = NULL, "
    "outcome = 'running', detail = ? WHERE name = ? AND target = ? AND last_tick IS ?"
)
_SCHEDULE_SKIP = statement(
    "UPDATE operator_schedules SET last_tick = ? WHERE name = ? AND target = ? AND last_tick IS ?"
)
_SCHEDULE_FINISH = statement(
    "UPDATE operator_schedules SET finished_at = ?, outcome = ?, detail = ? "
    "WHERE name = ? AND target = ?"
)
_TRIGGER_INSERT = statement(
    "INSERT INTO operator_triggers (target, source, at, detail) VALUES (?, ?, ?, ?)"
)
_TRIGGERS_PENDING = statement(
    "SELECT seq, target, source, at, detail FROM operator_triggers "
    "WHERE taken_at IS NULL ORDER BY seq"
)
_TRIGGER_TAKE = statement(
    "UPDATE operator_triggers SET taken_at = ? WHERE seq = ? AND taken_at IS NULL"
)
_CURSOR_SELECT = statement("SELECT value FROM operator_cursors WHERE name = ?")
_CURSOR_SET = statement("INSERT OR REPLACE INTO operator_cursors (name, value) VALUES (?, ?)")
_ACTIVITY_INSERT = statement(
    "INSERT INTO operator_activity (at, target, kind, summary, detail) VALUES (?, ?, ?, ?, ?)"
)
_ACTIVITY_SELECT = statement(
    "SELECT seq, at, target, kind, summary, detail FROM operator_activity "
    "WHERE target = ? ORDER BY seq DESC LIMIT ?"
)


@dataclass
class ScheduleRow:
    """What the state remembers of one schedule on one target."""

    name: str
    target: str
    last_tick: float | None = None
    started_at: float | None = None
    finished_at: float | None = None
    outcome: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "last_tick": utc_text(self.last_tick) if self.last_tick else None,
            "started_at": utc_text(self.started_at) if self.started_at else None,
            "finished_at": utc_text(self.finished_at) if self.finished_at else None,
            "outcome": self.outcome,
            "detail": self.detail,
        }


def schedule_rows(state: StateStore) -> dict[tuple[str, str], ScheduleRow]:
    out = {}
    for r in state.conn.execute(_SCHEDULE_SELECT).fetchall():
        row = ScheduleRow(r[0], r[1], r[2], r[3], r[4], r[5], json.loads(r[6]) if r[6] else {})
        out[(row.name, row.target)] = row
    return out


def baseline(state: StateStore, name: str, target: str, tick: float) -> None:
    """A schedule seen for the first time starts from ``tick`` (nothing before it runs)."""
    with state.transaction() as conn:
        conn.execute(_SCHEDULE_BASE, (name, target, tick))


def take_tick(
    state: StateStore, row: ScheduleRow, tick: float, *, now: float, detail: dict[str, Any]
) -> bool:
    """Claim ``tick`` for the schedule, only if no one took a tick since ``row`` was read
    (so a tick runs once even with two servers on one state)."""
    with state.transaction() as conn:
        cur = conn.execute(
            _SCHEDULE_TAKE, (tick, now, json.dumps(detail), row.name, row.target, row.last_tick)
        )
        return bool(cur.rowcount)


def skip_tick(state: StateStore, row: ScheduleRow, tick: float) -> bool:
    """Move the schedule past ``tick`` without running it (it fell while the schedule's last
    run was still running), with the same compare-and-set as :func:`take_tick`; the last run's
    outcome stays what it was."""
    with state.transaction() as conn:
        cur = conn.execute(_SCHEDULE_SKIP, (tick, row.name, row.target, row.last_tick))
        return bool(cur.rowcount)


def finish(
    state: StateStore, name: str, target: str, outcome: str, detail: dict[str, Any],
    *, now: float | None = None,
) -> None:  # fmt: skip
    with state.transaction() as conn:
        conn.execute(_SCHEDULE_FINISH, (time.time() if now is None else now, outcome,
                                        json.dumps(detail, default=str), name, target))  # fmt: skip


@dataclass(frozen=True)
class Trigger:
    """A reason to watch ``target`` soon: a schedule, a run, an orchestrator's run, an event."""

    seq: int
    target: str
    source: str  # schedule | run | orchestrator | openlineage
    at: float
    detail: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "at": utc_text(self.at), **self.detail}


def add_trigger(
    state: StateStore, target: str, source: str, detail: dict[str, Any], *, at: float
) -> None:
    with state.transaction() as conn:
        conn.execute(_TRIGGER_INSERT, (target, source, at, json.dumps(detail, default=str)))


def pending_triggers(state: StateStore) -> list[Trigger]:
    rows = state.conn.execute(_TRIGGERS_PENDING).fetchall()
    return [Trigger(int(r[0]), r[1], r[2], float(r[3]), json.loads(r[4])) for r in rows]


def take_triggers(state: StateStore, triggers: list[Trigger], *, now: float) -> list[Trigger]:
    """Mark ``triggers`` taken; returns those this call took (another may have taken some)."""
    taken = []
    with state.transaction() as conn:
        for t in triggers:
            if conn.execute(_TRIGGER_TAKE, (now, t.seq)).rowcount:
                taken.append(t)
    return taken


def cursor(state: StateStore, name: str) -> str | None:
    row = state.conn.execute(_CURSOR_SELECT, (name,)).fetchone()
    return None if row is None else str(row[0])


def set_cursor(state: StateStore, name: str, value: str) -> None:
    with state.transaction() as conn:
        conn.execute(_CURSOR_SET, (name, value))


@dataclass(frozen=True)
class Activity:
    """One line of the operator's diary."""

    seq: int
    at: float
    target: str
    kind: str  # schedule | skipped | watch | notify | propose | approve | apply | held | error
    summary: str
    detail: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "at": utc_text(self.at), "target": self.target,
                "kind": self.kind, "summary": self.summary, **self.detail}  # fmt: skip


def log(
    state: StateStore, target: str, kind: str, summary: str, *, at: float,
    **detail: Any,
) -> None:  # fmt: skip
    with state.transaction() as conn:
        conn.execute(_ACTIVITY_INSERT, (at, target, kind, summary,
                                        json.dumps(detail, default=str)))  # fmt: skip


def activity(state: StateStore, target: str, *, limit: int = 50) -> list[Activity]:
    rows = state.conn.execute(_ACTIVITY_SELECT, (target, limit)).fetchall()
    return [Activity(int(r[0]), float(r[1]), r[2], r[3], r[4], json.loads(r[5])) for r in rows]
