"""The run journal: one row per run and an append-only list of events per run.

Events (``kind``): ``run_started``, ``segment_started``, ``node_started``, ``node_finished``
(status, duration, rows where the tool reports them), ``check_finished`` (dbt tests and SQLMesh
audits), ``segment_finished``, ``run_finished``; each carries the project where it has one.

Tables (state migration 3): ``runs``, ``run_events``, ``run_locks`` (see
:mod:`splice.state.migrations`). The journal keeps its own SQLite connection to the state file (``check_same_thread=False``,
guarded by a lock), because the tools call back from their worker threads. Every event is
committed as it happens, so a run killed half-way leaves the journal of everything up to the
kill, and :meth:`Journal.recover` marks such a run ``interrupted`` once its holder is gone.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from splice.errors import NodeNotFoundError, StateError
from splice.state.sql import Statement, statement

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

#: Run statuses. ``running`` is only ever seen while a holder is alive; a dead holder's run
#: becomes ``interrupted`` (see :meth:`Journal.recover`).
RUN_STATUSES = ("running", "success", "failed", "interrupted")

_JOURNAL_TABLES = {
    "sqlite": statement(
        "SELECT name FROM sqlite_master WHERE type='table' AND name IN "
        "('runs', 'run_events', 'run_locks')",
        backends=["sqlite"],
    ),
    "postgres": statement(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
        "AND table_name IN ('runs', 'run_events', 'run_locks')",
        backends=["postgres"],
    ),
}
_OPEN_RUN = statement(
    "INSERT INTO runs(run_id, target, status, selector, exclude, started_at, pid, host,"
    " command) VALUES(?,?,?,?,?,?,?,?,?)"
)
_ADD_EVENT = statement(
    "INSERT INTO run_events(run_id, seq, ts, kind, project, segment_id, node_id, status,"
    " duration, rows, data) VALUES(?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM run_events"
    " WHERE run_id=?), ?,?,?,?,?,?,?,?,?) RETURNING seq"
)
_FINISH_RUN = statement("UPDATE runs SET status=?, finished_at=?, summary=? WHERE run_id=?")
_RUN = statement("SELECT * FROM runs WHERE run_id=? OR run_id LIKE ? ORDER BY run_id LIMIT 3")
_EVENTS = statement(
    "SELECT run_id, seq, ts, kind, project, segment_id, node_id, status, duration,"
    " rows, data FROM run_events WHERE run_id=? ORDER BY seq"
)
_LAST_OUTCOMES = statement(
    "SELECT e.run_id, e.seq, e.ts, e.kind, e.project, e.segment_id, e.node_id, e.status,"
    " e.duration, e.rows, e.data FROM run_events e JOIN runs r USING(run_id)"
    " WHERE r.target=? AND e.kind IN ('node_finished', 'check_finished')"
    " ORDER BY e.ts, e.seq"
)
_RUNNING = statement("SELECT * FROM runs WHERE status='running'")


class RunNotFoundError(NodeNotFoundError):
    """No run in the journal has the id (or id prefix) asked for (a not-found error, as an
    unknown node or incident is)."""


@dataclass
class RunEvent:
    """One journal entry. ``data`` holds what does not fit the columns (messages, intervals)."""

    run_id: str
    seq: int
    ts: float
    kind: str
    project: str | None = None
    segment_id: str | None = None
    node_id: str | None = None
    status: str | None = None
    duration: float | None = None
    rows: int | None = None
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RunRecord:
    run_id: str
    target: str
    status: str
    started_at: float
    finished_at: float | None
    pid: int
    host: str
    command: str | None
    selector: str | None = None
    exclude: str | None = None
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def duration(self) -> float | None:
        return None if self.finished_at is None else self.finished_at - self.started_at

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["duration"] = self.duration
        return d


def new_run_id(now: float | None = None) -> str:
    """A sortable, unique run id: ``r20261001-093000-3fa2c1``.

    >>> new_run_id(0.0).startswith("r19700101-000000-")
    True
    """
    t = time.gmtime(time.time() if now is None else now)
    return time.strftime("r%Y%m%d-%H%M%S-", t) + uuid.uuid4().hex[:6]


def this_host() -> str:
    return socket.gethostname()


def _where(path: Path | str) -> str:
    from splice.state.store import redact

    return redact(path) if isinstance(path, str) else str(path)


class Journal:
    """The journal of one workspace's state file. Thread-safe; close it when done."""

    def __init__(self, path: Path | str) -> None:
        from splice.state.store import is_url, pg_connect

        self.path = path
        self._lock = threading.RLock()
        #: called with each event once it is committed (a run's OpenLineage emitter,
        #: :mod:`splice.openlineage.emit`); what a listener raises is ignored
        self.listeners: list[Callable[[RunEvent], None]] = []
        self.on_postgres = is_url(path)
        if self.on_postgres:
            self.conn = pg_connect(str(path))
        else:
            self.conn = sqlite3.connect(
                str(path), timeout=30, isolation_level=None, check_same_thread=False
            )
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA foreign_keys=ON")
        self._ensure_schema()

    @classmethod
    def for_workspace(cls, ws: Workspace) -> Journal:
        """The journal in ``ws``'s state (opening the state runs its migrations first)."""
        p = ws.state.path
        return cls(p if isinstance(p, str) else Path(p))

    def _ensure_schema(self) -> None:
        have = {
            r[0]
            for r in self.conn.execute(
                _JOURNAL_TABLES["postgres" if self.on_postgres else "sqlite"]
            )
        }
        if len(have) != 3:
            self.conn.close()
            raise StateError(
                f"Splice state {_where(self.path)} has no run journal (state migration 3).",
                fix="open the state through the workspace (StateStore applies its migrations)",
            )

    def close(self) -> None:
        with self._lock:
            self.conn.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing -------------------------------------------------------------------------------
    def open_run(
        self,
        run_id: str,
        *,
        target: str,
        selector: str | None,
        exclude: str | None,
        command: str | None,
    ) -> None:
        """The run's row (status ``running``), written as soon as the run holds its lock."""
        with self._lock:
            self.conn.execute(
                _OPEN_RUN,
                (
                    run_id,
                    target,
                    "running",
                    selector,
                    exclude,
                    time.time(),
                    os.getpid(),
                    this_host(),
                    command,
                ),
            )

    def start_run(self, run_id: str, *, data: dict[str, Any] | None = None) -> RunEvent:
        """The ``run_started`` event, with the plan the run executes."""
        return self.event(run_id, "run_started", status="running", data=data or {})

    def event(
        self,
        run_id: str,
        kind: str,
        *,
        project: str | None = None,
        segment_id: str | None = None,
        node_id: str | None = None,
        status: str | None = None,
        duration: float | None = None,
        rows: int | None = None,
        data: dict[str, Any] | None = None,
        notify: bool = True,
    ) -> RunEvent:
        """Append one event (committed at once), tell the listeners (unless ``notify`` is
        false) and return it."""
        now = time.time()
        payload = json.dumps(data or {}, default=str, separators=(",", ":"))
        with self._lock:
            cur = self.conn.execute(
                _ADD_EVENT,
                (
                    run_id,
                    run_id,
                    now,
                    kind,
                    project,
                    segment_id,
                    node_id,
                    status,
                    duration,
                    rows,
                    payload,
                ),
            )
            seq = int(cur.fetchone()[0])
        ev = RunEvent(
            run_id, seq, now, kind, project, segment_id, node_id, status, duration, rows, data or {}
        )
        if notify:
            self._notify(ev)
        return ev

    def _notify(self, ev: RunEvent) -> None:
        for listener in list(self.listeners):
            with contextlib.suppress(Exception):  # a listener never fails a run
                listener(ev)

    def finish_run(self, run_id: str, status: str, summary: dict[str, Any]) -> RunEvent:
        ev = self.event(run_id, "run_finished", status=status, data=summary, notify=False)
        with self._lock:
            self.conn.execute(
                _FINISH_RUN,
                (status, ev.ts, json.dumps(summary, default=str), run_id),
            )
        self._notify(ev)  # once the run's row says it finished
        return ev

    # -- reading -------------------------------------------------------------------------------
    def runs(self, *, target: str | None = None, limit: int = 20) -> list[RunRecord]:
        q = exp.select("*").from_("runs")
        if target:
            q = q.where(exp.column("target").eq(exp.Placeholder()))
        q = q.order_by(exp.column("started_at").desc(), exp.column("run_id").desc())
        q = q.limit(exp.Placeholder())
        args: tuple[Any, ...] = (target, limit) if target else (limit,)
        with self._lock:
            cur = self.conn.execute(Statement(q), args)
            cols = [c[0] for c in cur.description]
            rows = cur.fetchall()
        return [_record(dict(zip(cols, r, strict=True))) for r in rows]

    def run(self, run_id: str) -> RunRecord:
        """The run with this id, or the only run whose id starts with it."""
        with self._lock:
            cur = self.conn.execute(
                _RUN,
                (run_id, run_id.replace("%", "").replace("_", r"\_") + "%"),
            )
            cols = [c[0] for c in cur.description]
            rows = [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]
        exact = [r for r in rows if r["run_id"] == run_id]
        if exact:
            return _record(exact[0])
        if len(rows) == 1:
            return _record(rows[0])
        if not rows:
            recent = ", ".join(r.run_id for r in self.runs(limit=3)) or "none yet"
            raise RunNotFoundError(
                f"no run {run_id!r} in the journal {_where(self.path)}.",
                fix=f"`splice runs` lists the runs (latest: {recent})",
            )
        raise RunNotFoundError(
            f"run id {run_id!r} is ambiguous: {', '.join(r['run_id'] for r in rows)}...",
            fix="give more characters of the run id",
        )

    def events(self, run_id: str) -> list[RunEvent]:
        with self._lock:
            rows = self.conn.execute(_EVENTS, (run_id,)).fetchall()
        return [_event(r) for r in rows]

    def last_outcomes(self, target: str) -> dict[str, RunEvent]:
        """The latest node_finished / check_finished event per node in ``target``'s runs."""
        with self._lock:
            rows = self.conn.execute(_LAST_OUTCOMES, (target,)).fetchall()
        out: dict[str, RunEvent] = {}
        for r in rows:
            out[str(r[6])] = _event(r)
        return out

    # -- recovery ----------------------------------------------------------------------------------
    def running(self) -> list[RunRecord]:
        with self._lock:
            cur = self.conn.execute(_RUNNING)
            cols = [c[0] for c in cur.description]
            rows = cur.fetchall()
        return [_record(dict(zip(cols, r, strict=True))) for r in rows]

    def mark_interrupted(self, run: RunRecord, *, note: str) -> list[RunEvent]:
        """Close a dead run: nodes it started and never finished are ``interrupted``.

        Returns the node events written (the caller records them as failed attempts).
        """
        events = self.events(run.run_id)
        finished = {
            e.node_id for e in events if e.kind in ("node_finished", "check_finished") and e.node_id
        }
        started = [e for e in events if e.kind == "node_started" and e.node_id not in finished]
        seg_done = {e.segment_id for e in events if e.kind == "segment_finished"}
        written: list[RunEvent] = []
        for e in started:
            written.append(
                self.event(
                    run.run_id,
                    "node_finished",
                    project=e.project,
                    segment_id=e.segment_id,
                    node_id=e.node_id,
                    status="interrupted",
                    data={"message": note},
                )
            )
        for e in events:
            if e.kind == "segment_started" and e.segment_id not in seg_done:
                self.event(
                    run.run_id,
                    "segment_finished",
                    project=e.project,
                    segment_id=e.segment_id,
                    status="interrupted",
                    data={"message": note},
                )
        self.finish_run(
            run.run_id,
            "interrupted",
            {"note": note, "interrupted_nodes": [e.node_id for e in started]},
        )
        return written


def _record(row: dict[str, Any]) -> RunRecord:
    return RunRecord(
        run_id=row["run_id"],
        target=row["target"],
        status=row["status"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        pid=row["pid"],
        host=row["host"],
        command=row["command"],
        selector=row["selector"],
        exclude=row["exclude"],
        summary=json.loads(row["summary"]) if row.get("summary") else {},
    )


def _event(r: Any) -> RunEvent:
    return RunEvent(
        run_id=r[0],
        seq=r[1],
        ts=r[2],
        kind=r[3],
        project=r[4],
        segment_id=r[5],
        node_id=r[6],
        status=r[7],
        duration=r[8],
        rows=r[9],
        data=json.loads(r[10] or "{}"),
    )
