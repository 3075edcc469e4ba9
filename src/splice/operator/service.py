"""The operator's pass: schedules due, production that moved, watches, the ladder.

``splice serve``'s scheduler leader calls :meth:`Operator.tick` every ``[operator]
tick_seconds``, one pass at a time (a long run delays the next pass; a tick of a schedule that
fell while its own last run was still running is skipped and logged, never run late). Each
pass:

1. every ``[[schedule]]`` whose latest tick is due runs (:meth:`Operator.run_schedule`): a
   ``run`` as ``splice run`` does (through the run locks: one run at a time per target), at the
   tick's time as its execution time; a ``watch``; or both. A schedule first seen starts from
   its next tick; a server down for a while runs only the latest tick missed, once;
2. every ``[operator] poll_seconds``: Splice's journal and the orchestrators' finished runs
   (:mod:`splice.operator.triggers`);
3. the triggers waiting (runs, orchestrator runs, OpenLineage events) become one watch per
   target once ``[operator] quiet_seconds`` have passed since the last of them;
4. whatever a watch opened or grew goes up the ladder (:mod:`splice.operator.ladder`).

The clock is given (:mod:`splice.operator.clock`), so a demo or a test plays a week in minutes.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from splice.errors import SpliceError
from splice.operator import ladder, store, ticks, triggers
from splice.operator.clock import Clock, SystemClock

if TYPE_CHECKING:
    from splice.config.operator import ScheduleSection
    from splice.workspace.core import Workspace

log = logging.getLogger("splice.operator")

#: ``open(target, light=...)``: a workspace for ``target`` (None: the server's); ``light`` for
#: bookkeeping that reads the state and the config only (no graph is checked or lent).
OpenWorkspace = Callable[..., AbstractContextManager["Workspace"]]


@dataclass
class Operations:
    """What the operator calls: the facade's own compositions (``splice.api`` hands them down)."""

    run: Callable[..., Any]  # api.run
    watch: Callable[..., Any]  # api.watch
    ladder: ladder.Actions


def _epoch(t: datetime) -> float:
    return t.timestamp()


def _at(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC)


def schedule_target(ws: Workspace, s: ScheduleSection) -> str:
    return s.target or ws.config.workspace.default_target


class Operator:
    """One workspace's operator (the scheduler leader of ``splice serve`` holds one)."""

    def __init__(self, opener: OpenWorkspace, ops: Operations, clock: Clock | None = None):
        self.open_ws = opener
        self.ops = ops
        self.clock: Clock = clock or SystemClock()
        self._polled_at = float("-inf")  # monotonic

    def now(self) -> float:
        return _epoch(self.clock.now())

    # -- the pass -------------------------------------------------------------------------
    def tick(self) -> float:
        """One pass (see the module's text); returns the seconds until the next one. Failures
        are logged and recorded, never raised."""
        with self.open_ws(None, light=True) as ws:
            cfg = ws.config
            if not cfg.operator.enabled:
                return cfg.operator.tick_seconds
            schedules = list(cfg.schedule)
            poll = time.monotonic() - self._polled_at >= cfg.operator.poll_seconds
        for s in schedules:
            self._guard(f"schedule {s.name}", s.target, functools.partial(self._maybe_run, s))
        if poll:
            self._polled_at = time.monotonic()
            self._guard("polling", None, self._poll)
        self._guard("triggered watch", None, self.watch_triggered)
        self._guard("resuming its own proposals", None, self._resume)
        return cfg.operator.tick_seconds

    def _resume(self) -> None:
        with self.open_ws(None, light=True) as ws:
            if not ladder.own_pending(ws):
                return
        with self.open_ws(None) as ws:
            ladder.resume_own(ws, self.ops.ladder, trigger="resume", now=self.now)

    def _guard(self, what: str, target: str | None, fn: Callable[[], Any]) -> None:
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - the operator outlives one bad step
            log.exception("operator: %s failed", what)
            words = e.one_line() if isinstance(e, SpliceError) else f"{type(e).__name__}: {e}"
            try:
                with self.open_ws(target, light=True) as ws:
                    store.log(ws.state, ws.target, "error", f"{what} failed: {words}",
                              at=self.now())  # fmt: skip
            except Exception:  # noqa: BLE001 - the state itself is unreachable: logged above
                log.exception("operator: could not record the failure")

    def _poll(self) -> None:
        with self.open_ws(None, light=True) as ws:
            now = self.now()
            triggers.poll_journal(ws, now=now)
            triggers.poll_orchestrators(ws, now=now)

    # -- schedules ------------------------------------------------------------------------
    def _maybe_run(self, s: ScheduleSection) -> None:
        with self.open_ws(s.target, light=True) as ws:
            target = ws.target
            now = self.clock.now()
            row = store.schedule_rows(ws.state).get((s.name, target))
            if row is None:  # first seen: start from the next tick
                store.baseline(ws.state, s.name, target,
                               _epoch(ticks.latest_tick(s.cron, s.timezone, now)))  # fmt: skip
                return
            last = _at(row.last_tick) if row.last_tick is not None else None
            d = ticks.due(s.cron, s.timezone, last=last, now=now)
            if d is None:
                return
            if (row.started_at is not None and row.finished_at is not None
                    and row.started_at <= _epoch(d.tick) < row.finished_at):  # fmt: skip
                # every tick since the last one fell while its run was still running: overlap
                if store.skip_tick(ws.state, row, _epoch(d.tick)):
                    store.log(ws.state, target, "skipped",
                              f"schedule {s.name}: {d.skipped + 1} tick(s) up to "
                              f"{d.tick:%Y-%m-%d %H:%M}Z fell while the run of "
                              f"{_at(row.last_tick or 0):%Y-%m-%d %H:%M}Z was still running; "
                              "skipped (runs never overlap)", at=_epoch(now), schedule=s.name,
                              skipped=d.skipped + 1, overlap=True)  # fmt: skip
                return
            if not store.take_tick(ws.state, row, _epoch(d.tick), now=_epoch(now),
                                   detail={"tick": d.tick.isoformat(), "skipped": d.skipped}):  # fmt: skip
                return  # another server took it
            if d.skipped:
                store.log(ws.state, target, "skipped",
                          f"schedule {s.name}: {d.skipped} earlier tick(s) missed (the server was "
                          f"down or busy); running the latest, {d.tick:%Y-%m-%d %H:%M}Z, once",
                          at=_epoch(now), schedule=s.name, skipped=d.skipped)  # fmt: skip
        with self.open_ws(s.target) as ws:
            self._execute(ws, s, d.tick, trigger="schedule")

    def run_schedule(self, name: str) -> dict[str, Any]:
        """``splice schedule run NAME``: run one schedule now (its ticks are not moved)."""
        from splice.errors import InputError

        with self.open_ws(None) as ws:
            found = [s for s in ws.config.schedule if s.name == name]
            if not found:
                names = ", ".join(s.name for s in ws.config.schedule) or "(none)"
                raise InputError(f"no [[schedule]] named {name!r} in splice.toml (schedules: "
                                 f"{names}).", fix="splice schedule list shows them")  # fmt: skip
        s = found[0]
        with self.open_ws(s.target) as ws:
            return self._execute(ws, s, self.clock.now(), trigger="by hand")

    def _execute(
        self, ws: Workspace, s: ScheduleSection, tick: datetime, *, trigger: str
    ) -> dict[str, Any]:
        from splice.approvals.autonomy import active_stop

        target = ws.target
        started = self.now()
        out: dict[str, Any] = {"schedule": s.name, "target": target, "do": s.do,
                               "tick": tick.isoformat(), "trigger": trigger}  # fmt: skip
        store.log(ws.state, target, "schedule", f"schedule {s.name} ({s.do}) started "
                  f"for {tick:%Y-%m-%d %H:%M}Z ({trigger})", at=started, schedule=s.name,
                  tick=out["tick"], trigger=trigger)  # fmt: skip
        outcome = "ok"
        try:
            stop = active_stop(ws.state)
            if s.runs and stop is not None and not ws.config.operator.run_during_stop:
                out["run"] = {"held": f"org-wide stop by {stop.who}: {stop.reason!r}"}
                store.log(ws.state, target, "held", f"schedule {s.name}: run held by the "
                          f"org-wide stop ({stop.who}: {stop.reason!r}); [operator] "
                          "run_during_stop = true keeps runs going", at=self.now(),
                          schedule=s.name)  # fmt: skip
                outcome = "held"
            elif s.runs:
                report = self.ops.run(ws, s.select, execution_time=tick.replace(tzinfo=None),
                                      command=f"{triggers.OWN_COMMAND_PREFIX}{s.name}")  # fmt: skip
                out["run"] = {"run_id": report.run_id, "status": report.status,
                              "counts": report.counts()}  # fmt: skip
                if not report.ok:
                    outcome = "run failed"
            if s.watches:
                out["watch"] = self._watch(ws, None, trigger=f"schedule {s.name}",
                                           triggers_=[{"source": "schedule", "schedule": s.name}])  # fmt: skip
        except SpliceError as e:
            outcome = "error"
            out["error"] = e.one_line()
        finally:
            store.finish(ws.state, s.name, target, outcome, out, now=self.now())
        store.log(ws.state, target, "schedule", f"schedule {s.name} finished: {outcome}",
                  at=self.now(), schedule=s.name, outcome=outcome)  # fmt: skip
        out["outcome"] = outcome
        return out

    # -- watches --------------------------------------------------------------------------
    def watch_triggered(self) -> dict[str, Any] | None:
        """The waiting triggers of the default target as one watch, once quiet."""
        with self.open_ws(None, light=True) as ws:
            now = self.now()
            waiting = [t for t in store.pending_triggers(ws.state) if t.target == ws.target]
            if not waiting:
                return None
            quiet = ws.config.operator.quiet_seconds
            newest, oldest = max(t.at for t in waiting), min(t.at for t in waiting)
            if now - newest < quiet and now - oldest < 4 * quiet:
                return None  # more may come: one watch for all of them
            taken = store.take_triggers(ws.state, waiting, now=now)
            if not taken:
                return None
        with self.open_ws(None) as ws:
            moved: list[str] | None = []
            for t in taken:
                if moved is not None and t.detail.get("nodes"):
                    moved += list(t.detail["nodes"])
                else:
                    moved = None  # a run of anything: watch everything
            reach = None if moved is None else triggers.downstream(ws, moved)
            why = ", ".join(sorted({t.source for t in taken}))
            if reach == set():
                store.log(ws.state, ws.target, "watch",
                          f"nothing to watch downstream of {', '.join(moved or [])} ({why})",
                          at=now, triggers=[t.as_dict() for t in taken])  # fmt: skip
                return {"watched": False}
            return self._watch(ws, reach, trigger=why, triggers_=[t.as_dict() for t in taken])

    def _watch(
        self, ws: Workspace, nodes: set[str] | None, *, trigger: str,
        triggers_: list[dict[str, Any]],
    ) -> dict[str, Any]:  # fmt: skip
        result = self.ops.watch(ws, nodes=nodes)
        # what was measured: every metric and monitor of the nodes (None: the whole watch)
        only = None if nodes is None else [m.name for m in result.metrics]
        incidents = list(result.incidents)
        summary = (f"watch ({trigger}): {result.points} point(s), {len(result.anomalies)} "
                   f"anomal{'y' if len(result.anomalies) == 1 else 'ies'}, "
                   f"{len(incidents)} incident(s) opened or grown")  # fmt: skip
        store.log(ws.state, ws.target, "watch", summary, at=self.now(), watch_id=result.watch_id,
                  only=only, triggers=triggers_,
                  incidents=[i.incident_id for i in incidents])  # fmt: skip
        steps = ladder.act(ws, incidents, self.ops.ladder, trigger=trigger, now=self.now)
        return {"watch_id": result.watch_id, "points": result.points,
                "anomalies": len(result.anomalies),
                "incidents": [i.incident_id for i in incidents],
                "steps": [s.as_dict() for s in steps]}  # fmt: skip


def status(ws: Workspace, clock: Clock | None = None) -> dict[str, Any]:
    """The schedules (next tick, last outcome), the triggers waiting, each domain's level."""
    from splice.approvals.autonomy import LEVELS, active_stop

    clock = clock or SystemClock()
    now = clock.now()
    rows = store.schedule_rows(ws.state) if ws.state_exists else {}
    schedules = []
    for s in ws.config.schedule:
        target = schedule_target(ws, s)
        row = rows.get((s.name, target))
        schedules.append({
            "name": s.name, "cron": s.cron, "timezone": s.timezone, "target": target,
            "do": s.do, "select": s.select,
            "next": ticks.next_tick(s.cron, s.timezone, now).isoformat(),
            "last": row.as_dict() if row else None,
        })  # fmt: skip
    pending = store.pending_triggers(ws.state) if ws.state_exists else []
    stop = active_stop(ws.state) if ws.state_exists else None
    return {
        "enabled": ws.config.operator.enabled,
        "agent": ws.config.operator.agent,
        "clock": clock.describe(),
        "now": now.isoformat(),
        "schedules": schedules,
        "waiting_triggers": [t.as_dict() for t in pending if t.target == ws.target],
        "domains": [
            {"name": d.name, "level": d.autonomy, "meaning": LEVELS[d.autonomy], "owners": d.owners}
            for d in ws.config.domains
        ],  # fmt: skip
        "stop": stop.as_dict() if stop else None,
        "run_during_stop": ws.config.operator.run_during_stop,
    }


def activity(ws: Workspace, *, limit: int = 50) -> list[dict[str, Any]]:
    """The operator's recent steps, newest first."""
    if not ws.state_exists:
        return []
    return [a.as_dict() for a in store.activity(ws.state, ws.target, limit=limit)]
