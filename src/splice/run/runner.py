"""`splice run`: execute a Plan's segments, journal every step, commit what succeeded.

Guarantees:

- segments run in topological order (parallel only where :mod:`splice.run.scheduler` allows);
- a failed node (or a node whose blocking test/audit failed) skips everything downstream of it
  in every project; the report names the failed segment and the skipped nodes;
- what succeeded is committed as evidence right after its segment finishes (so a later
  failure, or a kill, never loses it), and the journal's ``node_finished`` for a node is
  written only once its outcome is committed;
- a run holds the run lock of its target (and of a single-writer warehouse) for its whole
  duration; a second run is refused with the holder named;
- a run that dies (SIGKILL) is found by the next one: its lock is taken over, its run is
  marked ``interrupted`` with the nodes it had started, and those count as failed attempts.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from splice.plan.model import Plan, Segment
from splice.run.commit import commit_attempt, commit_build, commit_failure, evidence_available
from splice.run.executors import (
    CAPABILITIES,
    SegmentJob,
    SegmentOutcome,
    executor_for,
    release_all,
)
from splice.run.journal import Journal, RunEvent, new_run_id, pid_alive, this_host
from splice.run.locks import WAREHOUSE_LOCK, RunLock, target_lock
from splice.run.report import CheckResult, NodeResult, RunReport, SegmentResult
from splice.run.scheduler import schedule, warehouse_capabilities
from splice.run.segments import executable

Progress = Callable[[RunEvent], None]


def resolve_execution_time(
    ws: Any, explicit: datetime | str | None = None, plan: Plan | None = None
) -> datetime | None:
    """The clock SQLMesh runs with: ``explicit``, else the one the plan was made with, else
    the planner's default (a demo workspace's recorded clock), else None (now)."""
    value: Any = explicit or (plan.execution_time if plan is not None else None)
    if value:
        return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    try:
        from splice.plan.sqlmesh_view import resolve_execution_time as planner_clock
    except ModuleNotFoundError:  # pragma: no cover - the planner ships with Splice
        record = Path(ws.splice_dir) / "demo.json"
        try:
            text = json.loads(record.read_text()).get("execution_time")
        except (OSError, ValueError):
            text = None
        return datetime.fromisoformat(text) if text else None
    return planner_clock(ws, None)


def _error_text(e: BaseException) -> str:
    from splice.errors import SpliceError

    return e.one_line() if isinstance(e, SpliceError) else f"{type(e).__name__}: {e}"


def lock_names(ws: Any) -> list[str]:
    names = [target_lock(ws.target)]
    if not warehouse_capabilities(ws.config.warehouse.type).concurrent_writers:
        names.append(WAREHOUSE_LOCK)
    return names


class _Run:
    """The state of one run while it executes (shared by the scheduler's threads)."""

    def __init__(
        self,
        ws: Any,
        plan: Plan,
        journal: Journal,
        report: RunReport,
        progress: Progress | None,
        execution_time: datetime | None,
    ) -> None:
        self.ws = ws
        self.plan = plan
        self._graph: Any = None
        self.journal = journal
        self.report = report
        self.progress = progress
        self.execution_time = execution_time
        self.lock = threading.RLock()
        self.poisoned: dict[str, str] = {}  # node id -> the failed node upstream of it
        self._ran_in_batch: set[str] = set()
        self.serial = True  # set by run_plan: batches run in this thread, one at a time
        self._local = threading.local()
        self._stores: list[Any] = []

    @property
    def graph(self) -> Any:
        """The graph, loaded on first use (a run with nothing to build never loads the tools)."""
        if self._graph is None:
            self._graph = self.ws.graph()
        return self._graph

    def store(self) -> Any:
        """Splice's state for this thread (SQLite connections stay in their thread)."""
        if threading.current_thread() is threading.main_thread():
            return self.ws.state
        st = getattr(self._local, "store", None)
        if st is None:
            from splice.state.store import StateStore

            st = StateStore.open(self.ws.state.path)
            self._local.store = st
            with self.lock:
                self._stores.append(st)
        return st

    def close(self) -> None:
        for st in self._stores:
            with contextlib.suppress(Exception):
                st.close()
        self._stores.clear()

    def release(self, segment: Segment) -> None:
        """Free the warehouse after a batch: every tool's connection when segments run one at
        a time (a single-writer file is free between segments); this project's otherwise."""
        if self.serial:
            release_all(self.ws)
            return
        prov = self.ws.provider(segment.project)
        if segment.format == "sqlmesh":
            prov.close()
        else:
            from splice.providers.dbt import release_warehouse

            release_warehouse()

    # -- events ------------------------------------------------------------------------------
    def emit(self, kind: str, **kw: Any) -> RunEvent:
        ev = self.journal.event(self.report.run_id, kind, **kw)
        self._show(ev)
        return ev

    def _show(self, ev: RunEvent) -> None:
        if self.progress is not None:
            # a display problem never stops a run
            with contextlib.suppress(Exception):
                self.progress(ev)

    # -- one batch of segments (usually one) ---------------------------------------------------------
    def run_batch(self, segments: list[Segment]) -> None:
        g = self.graph
        todo: dict[str, list[str]] = {}
        results: dict[str, SegmentResult] = {}
        for seg in segments:
            res = SegmentResult(seg.id, seg.project, seg.format, seg.environment, "success")
            results[seg.id] = res
            self.emit(
                "segment_started",
                project=seg.project,
                segment_id=seg.id,
                data={
                    "format": seg.format,
                    "environment": seg.environment,
                    "node_ids": seg.node_ids,
                    "depends_on": seg.depends_on,
                    "batch": [s.id for s in segments],
                },
            )
            run_ids: list[str] = []
            for nid in seg.node_ids:
                d = self.plan.decisions.get(nid)
                if (d is not None and d.action != "build") or nid not in g.nodes:
                    continue
                if not executable(g, nid, seg.format):
                    continue
                with self.lock:
                    cause = self.poisoned.get(nid)
                if cause is not None:
                    self._skip(seg, nid, cause)
                    res.skipped.append(nid)
                else:
                    run_ids.append(nid)
            todo[seg.id] = run_ids
        t0 = time.perf_counter()
        first = segments[0]
        all_ids = [n for s in segments for n in todo[s.id]]
        seg_of = {n: s.id for s in segments for n in todo[s.id]}
        outcome: SegmentOutcome | None = None
        if all_ids:
            caps = CAPABILITIES.get(first.format)
            buildable = [
                n
                for n in all_ids
                if g.nodes[n].kind not in ("test", "audit") and not (caps and caps.owns_state)
            ]
            try:
                commit_attempt(
                    self.store(),
                    target=self.report.target,
                    node_ids=buildable,
                    run_id=self.report.run_id,
                )
            except Exception as e:  # noqa: BLE001 - evidence trouble never stops a build
                self.report.notes.append(f"recording the attempt of {first.id} failed: {e}")
            job = SegmentJob(
                segment=replace(first, node_ids=all_ids),
                nodes=[g.nodes[n] for n in g.topological_order(all_ids)],
                decisions=self.plan.decisions,
                graph=g,
                execution_time=self.execution_time,
            )
            try:
                outcome = executor_for(self.ws, first.project, first.format).execute(
                    job, _Sink(self, seg_of)
                )
            except Exception as e:  # noqa: BLE001 - the segment failed as a whole
                from splice.errors import SpliceError

                msg = e.message if isinstance(e, SpliceError) else f"{type(e).__name__}: {e}"
                outcome = SegmentOutcome(method=f"{first.format}", error=msg)
            finally:
                try:
                    self.release(first)
                except Exception as e:  # noqa: BLE001 - reported, never fatal
                    self.report.notes.append(f"releasing the warehouse failed: {e}")
        elapsed = time.perf_counter() - t0
        if all_ids:
            with self.lock:
                self.report.timings["tools"] = self.report.timings.get("tools", 0.0) + elapsed
        self._ran_in_batch = {s.id for s in segments if todo[s.id]}
        for seg in segments:
            self._finish_segment(seg, results[seg.id], todo[seg.id], outcome, elapsed, segments)

    def _finish_segment(
        self,
        seg: Segment,
        res: SegmentResult,
        ran: list[str],
        outcome: SegmentOutcome | None,
        elapsed: float,
        batch: list[Segment],
    ) -> None:
        g = self.graph
        res.node_ids = list(ran)
        res.duration = elapsed if ran else 0.0
        if outcome is not None:
            res.method = outcome.method
            res.error = outcome.error
            res.notes = list(outcome.notes)
            others = [s.id for s in batch if s is not seg and s.id in self._ran_in_batch]
            if ran and others:
                res.notes.append(f"ran in one {outcome.method} with {', '.join(others)}")
        failed_here: list[str] = []
        for nid in ran:
            node = g.nodes[nid]
            if node.kind in ("test", "audit"):
                chk = (outcome.checks.get(nid) if outcome else None) or CheckResult(
                    nid,
                    seg.project,
                    seg.id,
                    list(node.depends_on),
                    "error",
                    message=(outcome.error if outcome else None) or "no result from the tool",
                )
                chk.segment_id = seg.id
                self._commit_check(seg, chk)
                continue
            nr = (outcome.nodes.get(nid) if outcome else None) or NodeResult(
                nid,
                seg.project,
                seg.id,
                node.kind,
                "failed",
                message=(outcome.error if outcome else None) or "no result from the tool",
            )
            nr.segment_id = seg.id
            if nr.status == "skipped" and nr.skipped_because is None:
                with self.lock:
                    nr.skipped_because = self.poisoned.get(nid) or self._failed_ancestor(nid)
            self._commit_node(seg, nr)
            if nr.failed:
                failed_here.append(nid)
        for chk in [self.report.checks[c] for c in ran if c in self.report.checks]:
            if chk.failed and chk.blocking:
                failed_here.extend(o for o in chk.of if o not in failed_here)
        with self.lock:
            for f in failed_here:
                for d in g.descendants(f):
                    self.poisoned.setdefault(d, f)
        node_res = [self.report.nodes[n] for n in ran if n in self.report.nodes]
        chk_res = [self.report.checks[n] for n in ran if n in self.report.checks]
        bad = [r for r in node_res if r.failed] + [c for c in chk_res if c.failed and c.blocking]
        good = [r for r in node_res if r.status in ("success", "noop")]
        skipped_any = bool(res.skipped) or any(r.status == "skipped" for r in node_res)
        if not ran:
            res.status = "skipped" if res.skipped else "success"
        elif bad or (outcome is not None and outcome.error):
            res.status = "partial" if good else "failed"
        elif skipped_any:
            res.status = "incomplete"  # nothing failed here; an upstream failure left nodes out
        else:
            res.status = "success"
        with self.lock:
            self.report.segments.append(res)
        self.emit(
            "segment_finished",
            project=seg.project,
            segment_id=seg.id,
            status=res.status,
            duration=res.duration,
            data={
                "method": res.method,
                "error": res.error,
                "notes": res.notes,
                "skipped": res.skipped,
                "failed": [r.node_id for r in node_res if r.failed],
            },
        )

    def _failed_ancestor(self, nid: str) -> str | None:
        failed = {n for n, r in self.report.nodes.items() if r.failed}
        failed |= {o for c in self.report.checks.values() if c.failed and c.blocking for o in c.of}
        for a in self.graph.topological_order(self.graph.ancestors(nid)):
            if a in failed:
                return a
        return None

    def _skip(self, seg: Segment, nid: str, cause: str) -> None:
        node = self.graph.nodes[nid]
        msg = f"skipped: {cause} failed upstream"
        if node.kind in ("test", "audit"):
            chk = CheckResult(
                nid, seg.project, seg.id, list(node.depends_on), "skipped", message=msg
            )
            with self.lock:
                self.report.checks[nid] = chk
            self.emit(
                "check_finished",
                project=seg.project,
                segment_id=seg.id,
                node_id=nid,
                status="skipped",
                data={"of": chk.of, "message": msg, "skipped_because": cause},
            )
            return
        nr = NodeResult(nid, seg.project, seg.id, node.kind, "skipped", message=msg)
        nr.skipped_because = cause
        with self.lock:
            self.report.nodes[nid] = nr
        self.emit(
            "node_finished",
            project=seg.project,
            segment_id=seg.id,
            node_id=nid,
            status="skipped",
            data={"message": msg, "skipped_because": cause},
        )

    # -- committing --------------------------------------------------------------------------
    def _commit_node(self, seg: Segment, nr: NodeResult) -> None:
        store = self.store()
        target = self.report.target
        d = self.plan.decisions.get(nr.node_id)
        try:
            if nr.status == "success" or (
                nr.status == "noop" and self._first_in_target(store, target, nr.node_id)
            ):
                # a no-op that made the node appear in this target (a new SQLMesh virtual
                # environment reusing prod's tables) is its first version there
                nr.version = commit_build(
                    store,
                    target=target,
                    node_id=nr.node_id,
                    fingerprint=dict(d.fingerprint) if d else {},
                    run_id=self.report.run_id,
                    rows=nr.rows,
                    intervals=nr.intervals,
                    upstream=list(d.inputs) if d is not None else None,
                )
            elif nr.failed or (nr.status == "skipped" and not self._owns_state(seg)):
                # a node the tool skipped was handed to it (its attempt is open): close it;
                # its last good build stays
                commit_failure(
                    store,
                    target=target,
                    node_id=nr.node_id,
                    run_id=self.report.run_id,
                    error=nr.message
                    or (
                        f"skipped: {nr.skipped_because} failed" if nr.skipped_because else nr.status
                    ),
                )
        except Exception as e:  # noqa: BLE001 - the build happened; say the evidence did not land
            self.report.notes.append(f"recording evidence for {nr.node_id} failed: {e}")
        with self.lock:
            self.report.nodes[nr.node_id] = nr
        self.emit(
            "node_finished",
            project=seg.project,
            segment_id=seg.id,
            node_id=nr.node_id,
            status=nr.status,
            duration=nr.duration,
            rows=nr.rows,
            data=_present(
                kind=nr.kind,
                message=nr.message,
                version=nr.version,
                skipped_because=nr.skipped_because,
                checks_failed=nr.checks_failed or None,
                intervals=len(nr.intervals) if nr.intervals is not None else None,
            ),
        )

    @staticmethod
    def _first_in_target(store: Any, target: str, node_id: str) -> bool:
        from splice.plan.evidence import has_build

        return not has_build(store, target, node_id)

    @staticmethod
    def _owns_state(seg: Segment) -> bool:
        caps = CAPABILITIES.get(seg.format)
        return bool(caps and caps.owns_state)

    def _commit_check(self, seg: Segment, chk: CheckResult) -> None:
        # a check's outcome is evidence about the node it checks (see _finish_segment); the
        # check itself is journaled only
        with self.lock:
            self.report.checks[chk.node_id] = chk
        self.emit(
            "check_finished",
            project=seg.project,
            segment_id=seg.id,
            node_id=chk.node_id,
            status=chk.status,
            duration=chk.duration,
            data=_present(
                of=chk.of, failures=chk.failures, message=chk.message, blocking=chk.blocking
            ),
        )


def _present(**fields: Any) -> dict[str, Any]:
    """The fields that have a value (journal events leave the rest out)."""
    return {k: v for k, v in fields.items() if v is not None}


class _Sink:
    """Live progress from an executor: node_started goes to the journal, tool reports to the
    display only (the journal's node_finished waits for the commit)."""

    def __init__(self, run: _Run, seg_of: dict[str, str]) -> None:
        self.run = run
        self.seg_of = seg_of

    def node_started(self, node_id: str) -> None:
        node = self.run.graph.nodes.get(node_id)
        self.run.emit(
            "node_started",
            project=node.project if node else None,
            segment_id=self.seg_of.get(node_id),
            node_id=node_id,
            data={"kind": node.kind} if node else {},
        )

    def node_reported(self, node_id: str, status: str, duration: float | None) -> None:
        node = self.run.graph.nodes.get(node_id)
        ev = RunEvent(
            self.run.report.run_id,
            0,
            time.time(),
            "node_reported",
            project=node.project if node else None,
            segment_id=self.seg_of.get(node_id),
            node_id=node_id,
            status=status,
            duration=duration,
        )
        self.run._show(ev)


def recover_interrupted(
    ws: Any,
    journal: Journal,
    *,
    held_targets: set[str] = frozenset(),  # type: ignore[assignment]
) -> list[str]:
    """Mark runs whose holder is gone as ``interrupted``; returns a note per run recovered.

    A run is dead when its target's lock is one this process holds, when nobody holds that
    lock (the kernel freed it when the holder died), or when its pid is gone from this host.
    """
    from splice.run.locks import is_held

    notes: list[str] = []
    lock_dir = ws.splice_dir / "locks"
    for r in journal.running():
        if r.pid == os.getpid() and r.host == this_host():
            continue
        dead = (
            r.target in held_targets
            or (r.host == this_host() and not pid_alive(r.pid))
            or not is_held(lock_dir, target_lock(r.target))
        )
        if not dead:
            continue
        note = (
            f"run {r.run_id} (pid {r.pid} on {r.host}, started "
            f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(r.started_at))}) stopped "
            "without finishing: marked interrupted"
        )
        # its nodes' evidence attempts stay "running": the planner reads them as interrupted
        events = journal.mark_interrupted(r, note=f"interrupted: {note}")
        started = [e.node_id for e in events if e.node_id]
        notes.append(note + (f" (was building {', '.join(started)})" if started else ""))
    return notes


@dataclass
class RunSession:
    """A held run lock and the open journal: what a run needs before it plans."""

    journal: Journal
    lock: RunLock
    run_id: str
    notes: list[str] = field(default_factory=list)
    finished: bool = False  # run_finished is written


@contextmanager
def run_session(
    ws: Any,
    *,
    command: str | None = None,
    selector: str | None = None,
    exclude: str | None = None,
) -> Iterator[RunSession]:
    """Take the run lock of ``ws``'s target (and of a single-writer warehouse) before anything
    opens the warehouse, recover runs whose holder died, and release it all at the end.

    Raises :class:`~splice.run.locks.RunLockedError` naming the holder when another run has it.
    """
    journal = Journal.for_workspace(ws)
    run_id = new_run_id()
    lock = RunLock(
        ws.splice_dir / "locks",
        journal,
        lock_names(ws),
        run_id=run_id,
        command=command or "splice.run.run_plan",
    )
    try:
        lock.acquire()
        notes = list(lock.notes)
        notes += recover_interrupted(ws, journal, held_targets={ws.target})
        journal.open_run(
            run_id, target=ws.target, selector=selector, exclude=exclude, command=command
        )
        session = RunSession(journal, lock, run_id, notes)
        try:
            yield session
        except BaseException as e:
            if not session.finished:
                # planning failed (or was stopped) before the run started
                status = "interrupted" if isinstance(e, KeyboardInterrupt) else "failed"
                journal.finish_run(
                    run_id, status, {"error": _error_text(e), "notes": notes, "counts": {}}
                )
            raise
    finally:
        # whatever planning or running opened: the file is free again (never mask the outcome)
        with contextlib.suppress(Exception):
            release_all(ws)
        lock.release()
        journal.close()


def run_plan(
    ws: Any,
    plan: Plan,
    *,
    progress: Progress | None = None,
    execution_time: datetime | str | None = None,
    command: str | None = None,
    exclude: str | None = None,
    planner: str = "splice.plan.planner",
    session: RunSession | None = None,
) -> RunReport:
    """Run ``plan`` in ``ws`` and return what happened (see the module docstring).

    Pass the ``session`` the plan was made in (:func:`run_session`); without one the lock is
    taken here (the plan was then made without it: fine for a plan made by hand).
    """
    if session is None:
        with run_session(ws, command=command, selector=plan.selector, exclude=exclude) as s:
            return run_plan(
                ws,
                plan,
                progress=progress,
                execution_time=execution_time,
                command=command,
                exclude=exclude,
                planner=planner,
                session=s,
            )
    et = resolve_execution_time(ws, execution_time, plan)
    journal = session.journal
    run_id = session.run_id
    report = RunReport(
        run_id=run_id,
        target=plan.target,
        status="running",
        started_at=time.time(),
        selector=plan.selector,
        exclude=exclude,
        execution_time=et.isoformat() if et else None,
        planner=planner,
    )
    report.notes.extend(session.notes)
    if not evidence_available():
        report.notes.append(
            "splice.plan.evidence is not installed: outcomes are journaled but not "
            "recorded as evidence"
        )
    report.notes.extend(f"plan: {w}" for w in getattr(plan, "warnings", []) or [])
    started = journal.start_run(
        run_id,
        data={
            "planner": planner,
            "execution_time": report.execution_time,
            "environments": plan.environments,
            "segments": [
                {
                    "id": s.id,
                    "project": s.project,
                    "format": s.format,
                    "environment": s.environment,
                    "node_ids": s.node_ids,
                    "depends_on": s.depends_on,
                }
                for s in plan.segments
            ],
            "to_build": len(plan.to_build),
            "notes": list(report.notes),
        },
    )
    state = _Run(ws, plan, journal, report, progress, et)
    state._show(started)
    caps = warehouse_capabilities(ws.config.warehouse.type)
    exclusive = frozenset(f for f, c in CAPABILITIES.items() if c.exclusive)
    parallel = caps.max_parallel if caps.concurrent_writers else 1
    state.serial = parallel <= 1
    try:
        schedule(
            plan.segments,
            state.run_batch,
            max_parallel=parallel,
            exclusive_formats=exclusive,
        )
    except BaseException:
        report.status = "interrupted"
        report.finished_at = time.time()
        journal.mark_interrupted(journal.run(run_id), note="interrupted: the run was stopped")
        session.finished = True
        raise
    finally:
        state.close()
    bad = report.failed_nodes or [c for c, r in report.checks.items() if r.failed and r.blocking]
    report.status = "failed" if bad else "success"
    report.finished_at = time.time()
    report.timings["total"] = report.finished_at - report.started_at
    report.timings.setdefault("tools", 0.0)
    state._show(journal.finish_run(run_id, report.status, report.summary()))
    session.finished = True
    return report


def run(
    ws: Any,
    selector: str | None = None,
    *,
    exclude: str | None = None,
    execution_time: datetime | str | None = None,
    progress: Progress | None = None,
    command: str | None = None,
    full: bool = False,
    fresh: bool = False,
) -> RunReport:
    """Take the run lock, plan (:func:`splice.plan.planner.make_plan`; with ``full``, every
    selected node builds; with ``fresh``, no remembered no-op plan is reused) and run."""
    with run_session(ws, command=command, selector=selector, exclude=exclude) as session:
        if full:
            from splice.run.segments import fallback_plan

            plan, planner = fallback_plan(ws, selector, exclude=exclude), "full"
        else:
            plan, planner = make_run_plan(
                ws, selector, exclude=exclude, execution_time=execution_time, fresh=fresh
            )
        return run_plan(
            ws,
            plan,
            progress=progress,
            execution_time=execution_time,
            command=command,
            exclude=exclude,
            planner=planner,
            session=session,
        )


def make_run_plan(
    ws: Any,
    selector: str | None,
    *,
    exclude: str | None = None,
    execution_time: datetime | str | None = None,
    fresh: bool = False,
) -> tuple[Plan, str]:
    """The plan to run and who made it: the planner, or the fallback while it is absent."""
    try:
        from splice.plan import planner as planner_mod
    except ModuleNotFoundError as e:
        if e.name != "splice.plan.planner":
            raise
        planner_mod = None  # type: ignore[assignment]
    if planner_mod is not None and hasattr(planner_mod, "make_plan"):
        et = resolve_execution_time(ws, execution_time)
        return (
            planner_mod.make_plan(ws, selector, exclude=exclude, execution_time=et, fresh=fresh),
            "splice.plan.planner",
        )
    from splice.run.segments import fallback_plan

    return fallback_plan(ws, selector, exclude=exclude), "fallback"
