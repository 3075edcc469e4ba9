"""One run while it executes (:class:`RunExecution`): batches of segments through their executors,
outcomes committed as evidence as each segment finishes, failures poisoning everything
downstream in every project, and the events the journal and the display receive."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from splice.plan.model import Plan, Segment
from splice.run.commit import commit_attempt, commit_build, commit_check, commit_failure
from splice.run.executors.base import SegmentJob, SegmentOutcome, release_all, tool_log
from splice.run.executors.registry import CAPABILITIES, executor_for
from splice.run.journal import Journal, RunEvent
from splice.run.report import CheckResult, NodeResult, RunReport, SegmentResult
from splice.run.segments import executable
from splice.support.faults import pause

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

Progress = Callable[[RunEvent], None]


def error_text(e: BaseException) -> str:
    """An exception in one line: a SpliceError's own line, else its type and message.

    >>> error_text(ValueError("bad"))
    'ValueError: bad'
    """
    from splice.errors import SpliceError

    return e.one_line() if isinstance(e, SpliceError) else f"{type(e).__name__}: {e}"


class RunExecution:
    """The state of one run while it executes (shared by the scheduler's threads)."""

    def __init__(
        self,
        ws: Workspace,
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

    def release(self, segment: Segment, graph: Any = None) -> None:
        """Free the warehouse after a batch: every tool's connection when segments run one at
        a time (a single-writer file is free between segments); this project's otherwise.
        An ingestion job (a process of its own) holds no connection of ours; on Spark, the
        tables it wrote are refreshed in the run's session (whose file listings it made stale)."""
        if segment.format == "ingestion":
            nodes = [graph.nodes[n] for n in segment.node_ids if graph and n in graph.nodes]
            _refresh_tables(self.ws, [r.key for n in nodes for r in n.all_writes])
            return
        if self.serial:
            release_all(self.ws)
            return
        prov = self.ws.provider(segment.project)
        if segment.format == "sqlmesh":
            prov.release()
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
            pause(
                self.ws.splice_dir, f"segment:{seg.id}"
            )  # a test's kill point (splice.support.faults)
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
                        cause = self._nearest_failed(nid) or cause
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
                    self.release(first, g)
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
            if nr.status == "skipped":
                # the tool skipped it: name the failed node(s) on its own paths, whatever the
                # tool said (SQLMesh names its first failure for every model it skips)
                with self.lock:
                    nr.skipped_because = (
                        self._nearest_failed(nid, outcome)
                        or nr.skipped_because
                        or self.poisoned.get(nid)
                    )
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
        good = [r for r in node_res if r.status in ("success", "noop", "ephemeral")]
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
                **(tool_log(outcome.log) if outcome is not None and ran else {}),
            },
        )

    def _nearest_failed(self, nid: str, outcome: SegmentOutcome | None = None) -> str | None:
        """The failed node(s) upstream of ``nid`` nearest to it on each of its paths (the walk
        up stops at a failed node: what is above it is that node's cause, not this one's), as
        ``a, b``; None when no ancestor failed."""
        results = list(self.report.nodes.values()) + list(outcome.nodes.values() if outcome else [])
        checks = list(self.report.checks.values()) + list(
            outcome.checks.values() if outcome else []
        )
        failed = {r.node_id for r in results if r.failed}
        failed |= {o for c in checks if c.failed and c.blocking for o in c.of}
        found: set[str] = set()
        seen = {nid}
        frontier = [nid]
        while frontier:
            nxt = []
            for n in frontier:
                for p in self.graph.parents(n):
                    if p in seen:
                        continue
                    seen.add(p)
                    if p in failed:
                        found.add(p)
                    else:
                        nxt.append(p)
            frontier = nxt
        return ", ".join(self.graph.topological_order(found)) if found else None

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
            if nr.status in ("success", "ephemeral") or (
                nr.status == "noop" and self._first_in_target(store, target, nr.node_id)
            ):
                # an ephemeral model's code is part of what its readers built: recorded like
                # a build, so the planner rebuilds them when it changes and reuses it otherwise
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
                external=nr.external,
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
        # a check's outcome is evidence about the node it checks (see _finish_segment); of the
        # check itself, only that its code passed (a new or changed one runs on its own)
        d = self.plan.decisions.get(chk.node_id)
        if chk.status in ("pass", "warn") and d is not None and d.fingerprint:
            try:
                commit_check(
                    self.store(),
                    target=self.report.target,
                    node_id=chk.node_id,
                    fingerprint=dict(d.fingerprint),
                )
            except Exception as e:  # noqa: BLE001 - the check ran; say the record did not land
                self.report.notes.append(f"recording check {chk.node_id} failed: {e}")
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

    def __init__(self, run: RunExecution, seg_of: dict[str, str]) -> None:
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


def _refresh_tables(ws: Workspace, relations: list[str]) -> None:
    """``REFRESH TABLE`` each relation on a Spark warehouse, in the run's session (another
    process rewrote its files: the session's cached listing of them is stale); nothing
    elsewhere."""
    if ws.config.warehouse.type != "spark" or not relations:
        return
    from sqlglot import exp

    from splice.warehouse.connect import connect
    from splice.warehouse.rows import table

    with connect(ws, "refreshing the tables an ingestion job wrote") as con:
        for rel in relations:
            con.execute(exp.Refresh(this=table(rel, "spark"), kind="TABLE").sql(dialect="spark"))
