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
import logging
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from splice.plan.model import Plan
from splice.run.commit import evidence_available
from splice.run.execution import Progress, RunExecution, error_text
from splice.run.executors.base import release_all
from splice.run.executors.registry import CAPABILITIES
from splice.run.journal import Journal, new_run_id, this_host
from splice.run.locks import WAREHOUSE_LOCK, RunLock, target_lock
from splice.run.report import RunReport
from splice.run.scheduler import schedule
from splice.support.procs import pid_alive
from splice.warehouse import engines

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

#: What a run session also recovers while it holds the run lock, after the runs whose holder
#: died are marked: a function of the workspace returning one note per thing recovered. The
#: layers above pass theirs (:mod:`splice.api` and the repair flow pass the recovery of repair
#: applies that were killed, :func:`splice.repair.recovery.recover_in_session`); the run layer
#: knows nothing of repairs.
Recover = Callable[["Workspace"], list[str]]


def resolve_execution_time(
    ws: Workspace, explicit: datetime | str | None = None, plan: Plan | None = None
) -> datetime | None:
    """The clock SQLMesh runs with: ``explicit``, else the one the plan was made with, else
    the planner's default (a demo workspace's recorded clock), else None (now)."""
    value: Any = explicit or (plan.execution_time if plan is not None else None)
    if value:
        from splice.support.clock import parse_execution_time

        return parse_execution_time(value)
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


def server_lock_ws(ws: Workspace) -> Any:
    """The workspace, when its warehouse takes runs' locks too (PostgreSQL); else None."""
    return ws if engines.capabilities(ws.config.warehouse.type).server_locks else None


def lock_names(ws: Workspace) -> list[str]:
    names = [target_lock(ws.target)]
    if not engines.capabilities(ws.config.warehouse.type).concurrent_writers:
        names.append(WAREHOUSE_LOCK)
    return names


def recover_interrupted(
    ws: Workspace,
    journal: Journal,
    *,
    held_targets: set[str] = frozenset(),  # type: ignore[assignment]
) -> list[str]:
    """Mark runs whose holder is gone as ``interrupted``; returns a note per run recovered.

    A run is dead when its target's lock is one this process holds, when nobody holds that
    lock (the kernel freed it when the holder died), or when its pid is gone from this host.
    """
    from splice.warehouse.locks import is_held

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
    ws: Workspace,
    *,
    command: str | None = None,
    selector: str | None = None,
    exclude: str | None = None,
    recover: Recover | None = None,
) -> Iterator[RunSession]:
    """Take the run lock of ``ws``'s target (and of a single-writer warehouse) before anything
    opens the warehouse, recover runs whose holder died (and what ``recover`` recovers), and
    release it all at the end.

    Raises :class:`~splice.run.locks.RunLockedError` naming the holder when another run has it.
    """
    ws.check_targets()  # a dbt profile without the target: refused before anything is written
    ws.ensure_warehouse()  # the tools and the ingestion jobs it starts connect to it
    journal = Journal.for_workspace(ws)
    run_id = new_run_id()
    lock = RunLock(
        ws.splice_dir / "locks",
        journal,
        lock_names(ws),
        run_id=run_id,
        command=command or "splice.run.run_plan",
        server_ws=server_lock_ws(ws),
    )
    try:
        lock.acquire()
        notes = list(lock.notes)
        notes += recover_interrupted(ws, journal, held_targets={ws.target})
        from splice.run.children import kill_orphans

        for child in kill_orphans(ws.splice_dir):  # a dead run's jobs die before we start
            notes.append(_orphan_note(child))
        if recover is not None:
            notes += recover(ws)
        journal.open_run(
            run_id, target=ws.target, selector=selector, exclude=exclude, command=command
        )
        _listen_for_openlineage(ws, journal, run_id)
        session = RunSession(journal, lock, run_id, notes)
        from splice.warehouse.spark.connect import run_spark_session

        if ws.config.warehouse.type == "spark":
            # the tools reconnect inside the run's Spark session: a connection they kept from
            # before (another session) would not be interrupted with the run, nor refreshed
            release_all(ws)
        try:
            # opened on first use when no tool is loaded yet: a run with nothing to do (the
            # remembered no-op plan) opens no Spark session at all
            lazy = not (ws.loaded_providers("dbt") or ws.loaded_providers("sqlmesh"))
            with run_spark_session(ws, lazy=lazy) as spark_id, _spark_mark(ws, spark_id):
                yield session
        except BaseException as e:
            if not session.finished:
                # planning failed (or was stopped) before the run started
                status = "interrupted" if isinstance(e, KeyboardInterrupt) else "failed"
                journal.finish_run(
                    run_id, status, {"error": error_text(e), "notes": notes, "counts": {}}
                )
            raise
    finally:
        # whatever planning or running opened: the file is free again (never mask the outcome)
        with contextlib.suppress(Exception):
            release_all(ws)
        lock.release()
        journal.close()


def _listen_for_openlineage(ws: Workspace, journal: Journal, run_id: str) -> None:
    """The run's OpenLineage events, when OpenLineage is configured
    (:func:`splice.openlineage.settings.listener`; otherwise nothing of OpenLineage is
    imported). Never fails the run."""
    from splice.openlineage.settings import listener

    try:
        emitter = listener(ws, run_id)
    except Exception:  # noqa: BLE001 - lineage events never stop a run
        logging.getLogger("splice.openlineage").exception(
            "OpenLineage events of run %s are not sent", run_id
        )
        emitter = None
    if emitter is not None:
        journal.listeners.append(emitter)


@contextlib.contextmanager
def _spark_mark(ws: Workspace, session_id: str | None) -> Iterator[None]:
    """The run's Spark session recorded among its children while it runs (see
    :func:`splice.run.children.kill_orphans`)."""
    if session_id is None:
        yield
        return
    from splice.run.children import spark_session_mark

    mark = spark_session_mark(ws.splice_dir, str(ws.config.warehouse.remote), session_id)
    try:
        yield
    finally:
        mark.unlink(missing_ok=True)


def _orphan_note(child: dict[str, Any]) -> str:
    if child.get("spark_session"):
        return (f"interrupted {len(child.get('operations') or [])} Spark operation(s) a dead run "
                f"left running (session {child['spark_session']})")  # fmt: skip
    if child.get("orchestrator"):
        return f"stopped {child['orchestrator']} run {child.get('run_id')} left by a dead run"
    return (f"killed process group {child['pgid']} left by a dead run "
            f"({' '.join(child.get('argv') or [])})")  # fmt: skip


def run_plan(
    ws: Workspace,
    plan: Plan,
    *,
    progress: Progress | None = None,
    execution_time: datetime | str | None = None,
    command: str | None = None,
    exclude: str | None = None,
    planner: str = "splice.plan.planner",
    session: RunSession | None = None,
    recover: Recover | None = None,
) -> RunReport:
    """Run ``plan`` in ``ws`` and return what happened (see the module docstring).

    Pass the ``session`` the plan was made in (:func:`run_session`); without one the lock is
    taken here (the plan was then made without it: fine for a plan made by hand), and
    ``recover`` is passed to :func:`run_session`.
    """
    if session is None:
        with run_session(
            ws, command=command, selector=plan.selector, exclude=exclude, recover=recover
        ) as s:
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
        environments=dict(getattr(plan, "environments", None) or {}),
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
            "checks": _count_checks(plan),
            "notes": list(report.notes),
        },
    )
    state = RunExecution(ws, plan, journal, report, progress, et)
    state._show(started)
    caps = engines.capabilities(ws.config.warehouse.type)
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
    if not bad:
        _remember_noop(ws, plan, report, et)
    report.finished_at = time.time()
    report.timings["total"] = report.finished_at - report.started_at
    report.timings.setdefault("tools", 0.0)
    state._show(journal.finish_run(run_id, report.status, report.summary()))
    session.finished = True
    return report


def _count_checks(plan: Plan) -> int:
    """How many of the plan's decisions run a test or audit."""
    try:
        from splice.plan.checks import is_check
    except ModuleNotFoundError:  # pragma: no cover - the planner ships with Splice
        return 0
    return sum(1 for d in plan.decisions.values() if d.action == "build" and is_check(d))


def _remember_noop(ws: Workspace, plan: Plan, report: RunReport, et: datetime | None) -> None:
    """Let the next ``splice run`` with nothing new skip loading the tools
    (:func:`splice.plan.planner.remember_after_run`); a failure to remember costs only that."""
    if not plan.memo or not plan.to_build:
        return  # not the planner's plan, or a no-op plan (remembered when it was made)
    from splice.plan.planner import remember_after_run

    t0 = time.perf_counter()
    try:
        release_all(ws)
        noop, not_kept = remember_after_run(ws, plan, et)
        if noop and not_kept is None:
            report.notes.append(
                "nothing is left to build: the next run with no new code, data or interval "
                "due reuses this plan without loading the tools"
            )
        elif noop:
            report.notes.append(
                f"nothing is left to build; the next run plans from scratch: {not_kept}"
            )
    except Exception as e:  # noqa: BLE001 - the run succeeded; say why the memo is empty
        report.notes.append(
            f"the no-op plan after this run was not remembered ({type(e).__name__}: {e}); "
            "the next run plans from scratch"
        )
    report.timings["remember"] = time.perf_counter() - t0


def run(
    ws: Workspace,
    selector: str | None = None,
    *,
    exclude: str | None = None,
    execution_time: datetime | str | None = None,
    progress: Progress | None = None,
    command: str | None = None,
    full: bool = False,
    fresh: bool = False,
    recover: Recover | None = None,
) -> RunReport:
    """Take the run lock, plan (:func:`splice.plan.planner.make_plan`; with ``full``, every
    selected node builds; with ``fresh``, no remembered no-op plan is reused) and run;
    ``recover`` is passed to :func:`run_session`.

    The report's duration is the whole command's, planning included (``timings["plan"]``
    says how much of it the planning took)."""
    began = time.time()
    with run_session(
        ws, command=command, selector=selector, exclude=exclude, recover=recover
    ) as session:
        t0 = time.perf_counter()
        if full:
            from splice.run.segments import fallback_plan

            plan, planner = fallback_plan(ws, selector, exclude=exclude), "full"
        else:
            plan, planner = make_run_plan(
                ws, selector, exclude=exclude, execution_time=execution_time, fresh=fresh
            )
        planning = time.perf_counter() - t0
        report = run_plan(
            ws,
            plan,
            progress=progress,
            execution_time=execution_time,
            command=command,
            exclude=exclude,
            planner=planner,
            session=session,
        )
    report.timings["plan"] = planning
    report.started_at = began
    if report.finished_at is not None:
        report.timings["total"] = report.finished_at - began
    return report


def make_run_plan(
    ws: Workspace,
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
