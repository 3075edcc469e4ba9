"""The SQLMesh executor: the project's ``Context``, ``run`` for missing intervals or
``plan(..., auto_apply=True)``, restatements for repairs; per-model outcomes from SQLMesh's
console protocol (see :mod:`splice.run.executors`)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from splice.graph.model import Node
from splice.run.executors.base import (
    ExecutorCapabilities,
    SegmentJob,
    SegmentOutcome,
    Sink,
    short_message,
)
from splice.run.executors.sqlmesh_audits import BlockedByAudits, audit_stored_changes
from splice.run.executors.sqlmesh_console import SqlmeshRecorder, make_console
from splice.run.report import CheckResult, NodeResult
from splice.support.capture import captured

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

#: Node kinds that are SQLMesh models (a SEED model is one, with kind "seed" in the graph).
BUILT = ("model", "seed")


def _externals(ctx: Any) -> list[str]:
    """The fqns of a SQLMesh context's external models."""
    from splice.providers.sqlmesh import is_external

    return [fqn for fqn, m in ctx.models.items() if is_external(m)]


SQLMESH_CAPABILITIES = ExecutorCapabilities(
    exact_selection=True,
    in_process=True,
    owns_state=True,
    exclusive=False,
    check_kind="audit",
    rows="execution_stats.total_rows_processed (not reported on DuckDB)",
    on_failure=(
        "a failed plan does not promote: the environment keeps its previous versions; a failed "
        "run does not record the failed interval (it is retried next time), but an interval "
        "whose blocking audit fails has already been written to the table the environment "
        "reads (SQLMesh audits after inserting)"
    ),
    kinds=("model", "seed", "audit"),
)


class SqlmeshExecutor:
    format = "sqlmesh"
    capabilities = SQLMESH_CAPABILITIES

    def __init__(self, ws: Workspace, project: str) -> None:
        self.ws = ws
        self.project = project

    def execute(self, job: SegmentJob, sink: Sink) -> SegmentOutcome:
        import sys

        from splice.support.sqlmesh_import import import_sqlmesh

        import_sqlmesh()
        from sqlmesh.core.console import get_console, set_console

        prov = self.ws.provider(self.project)
        env_name = job.segment.environment
        models = [n for n in job.nodes if n.kind in BUILT]
        audits = [n for n in job.nodes if n.kind == "audit"]
        standalone = [str(a.meta["snapshot_name"]) for a in audits if a.meta.get("standalone")]
        # SQLMesh evaluates standalone audits only in a plan or run that selects no models (its
        # model selection drops them): when the run selected every model of the project and
        # the others are reused (none builds in another segment), ask SQLMesh as `sqlmesh plan`
        # / `sqlmesh run` would, without a selection
        by_fqn = {str(n.meta["fqn"]): n for n in models}
        whole = bool(standalone) and all(
            fqn in by_fqn or (nid in job.decisions and job.decisions[nid].action != "build")
            for fqn, nid in _project_models(job.graph, self.project).items()
        )
        rec = SqlmeshRecorder()
        rec.on_start = lambda name: sink.node_started(by_fqn[name].id) if name in by_fqn else None
        rec.on_batch = lambda name, ok, dur: (
            sink.node_reported(by_fqn[name].id, "success" if ok else "error", dur)
            if name in by_fqn
            else None
        )
        outcome = SegmentOutcome(method="sqlmesh run")
        promoted: dict[str, str] = {}
        intervals: dict[str, list[list[int]]] = {}
        raised: BaseException | None = None
        with captured(
            self.ws.log_path,
            f"sqlmesh ({self.project}, segment {job.segment.id})",
            cwd=prov.run_dir,  # where its config's relative paths resolve (see run_dir)
        ) as out:
            console = make_console(rec, sys.stdout)
            previous = get_console()
            set_console(console)
            try:
                ctx = prov.context
                ctx.console = console
                applied: Any = None
                try:
                    restate = _restatement(job)
                    why_plan = (
                        None if restate else self._needs_plan(ctx, env_name, list(by_fqn), job)
                    )
                    if models and restate:
                        # a repair: SQLMesh's own restatement (it cascades downstream itself)
                        # (then the models downstream whose damage reaches beyond the
                        # cascade, for their extra ranges: each its own plan, in order)
                        outcome.method = "sqlmesh plan --restate-model"
                        for r in [restate, *(restate.get("then") or [])]:
                            outcome.notes.append(
                                f"restated {', '.join(r['models'])} for {r['start']}..{r['end']}"
                            )
                            applied = ctx.plan(
                                env_name,
                                restate_models=r["models"],
                                start=r["start"],
                                end=r["end"],
                                auto_apply=True,
                                no_prompts=True,
                                execution_time=job.execution_time,
                            )
                    elif (models or whole) and why_plan:
                        outcome.method = "sqlmesh plan"
                        outcome.notes.append(f"planned with SQLMesh because {why_plan}")
                        if not audit_stored_changes(
                            ctx,
                            env_name,
                            by_fqn,
                            prov.local_snapshot_ids(),
                            job.execution_time,
                            rec,
                            outcome,
                        ):
                            raise BlockedByAudits()
                        applied = ctx.plan(
                            env_name,
                            # external models are no build, but a plan selecting models
                            # without them fingerprints those models without their parents
                            # and other repos' models downstream (multi-repo): SQLMesh
                            # re-evaluates them in this plan, as it does by hand
                            select_models=None
                            if whole
                            else [
                                *by_fqn,
                                *_externals(ctx),
                                *prov.foreign_downstream(list(by_fqn)),
                            ],
                            auto_apply=True,
                            no_prompts=True,
                            execution_time=job.execution_time,
                            # prod: also evaluate what is due by cron, as the planner counted
                            run=env_name.lower() == "prod",
                        )
                    elif models:
                        status = ctx.run(
                            env_name,
                            select_models=None if whole else list(by_fqn),
                            no_auto_upstream=True,
                            execution_time=job.execution_time,
                        )
                        if getattr(status, "is_nothing_to_do", False):
                            outcome.notes.append("SQLMesh: no missing intervals")
                    if applied is not None:  # its snapshots: reading them back costs ~1 s
                        prov.remember_snapshots(applied.snapshots.values())
                        for other in self.ws.loaded_providers("sqlmesh", but=self.project):
                            other.state_changed()  # multi-repo: they read this one's models
                except BlockedByAudits:
                    pass  # the failed audits are in rec.failed; nothing was promoted
                except Exception as e:  # noqa: BLE001 - judged per model below
                    raised = e
                try:
                    env, snaps = prov.environment_snapshots(env_name)
                    if env is not None:
                        for s in snaps.values():
                            promoted[s.name] = s.fingerprint.to_identifier()
                            intervals[s.name] = [[int(a), int(b)] for a, b in s.intervals]
                    # what the plan meant to promote: its own snapshots, or (when it raised)
                    # the local ones, without reading every snapshot from state again
                    meant = (
                        {s.name: s.fingerprint.to_identifier() for s in applied.snapshots.values()}
                        if applied is not None
                        else prov.local_snapshot_ids()
                    )
                    local = (
                        {n: i for n, i in meant.items() if n in by_fqn}
                        if outcome.method == "sqlmesh plan"
                        else {}
                    )
                except Exception as e:  # noqa: BLE001 - the state could not be read back
                    local = {}
                    outcome.notes.append(
                        f"could not read SQLMesh's state back: {short_message(str(e), 2)}"
                    )
            finally:
                set_console(previous)
                prov.release()  # releases the warehouse; the loaded Context stays
                outcome.log = out.getvalue()
        if raised is not None and not rec.failed:
            err = short_message(f"{type(raised).__name__}: {raised}")
            from splice.support.faults_env import locked_error

            lock = locked_error(raised, f"SQLMesh project {self.project!r}")
            outcome.error = lock.message if lock else f"{outcome.method} failed: {err}"
        first_failure = next(iter(rec.failed), None)
        for fqn, node in by_fqn.items():
            res = NodeResult(node.id, self.project, job.segment.id, node.kind, "noop")
            batches = rec.batches.get(fqn, [])
            ok_batches = [b for b in batches if b["ok"]]
            if ok_batches:
                res.duration = sum((b["duration_ms"] or 0) for b in ok_batches) / 1000.0
                rows = [b["rows"] for b in ok_batches if b["rows"] is not None]
                res.rows = sum(rows) if rows else None
            res.intervals = intervals.get(fqn)
            if str(node.materialization or "").upper() == "EMBEDDED" and fqn not in rec.failed:
                # no table: nothing of its own can fail; its readers report what fails
                res.message = "embedded: no table of its own; SQLMesh inlines it into its readers"
            elif fqn in rec.failed:
                res.status = "failed"
                res.message = _sqlmesh_error(rec.failed[fqn], rec.failed_node_kind.get(fqn))
            elif fqn in rec.skipped:
                res.status = "skipped"
                res.message = "SQLMesh skipped it: a model upstream of it failed"
                if first_failure and first_failure in by_fqn:
                    res.skipped_because = by_fqn[first_failure].id
            elif outcome.error is not None:
                res.status = "failed"
                res.message = outcome.error
            elif outcome.method == "sqlmesh plan" and local.get(fqn) != promoted.get(fqn):
                res.status = "failed"
                res.message = (
                    f"SQLMesh did not promote it to {env_name!r}: the plan failed"
                    + (f" at {by_fqn[first_failure].id}" if first_failure in by_fqn else "")
                    + f"; {env_name!r} keeps its previous version"
                )
            elif raised is not None and not batches:
                res.status = "failed"
                res.message = short_message(f"{type(raised).__name__}: {raised}")
            elif ok_batches:
                res.status = "success"
                n = len(ok_batches)
                res.message = f"{n} interval batch{'es' if n != 1 else ''} evaluated"
            elif outcome.method == "sqlmesh plan":
                res.message = f"in {env_name!r} as planned; no intervals to evaluate"
            else:
                res.message = "no missing intervals"
            outcome.nodes[node.id] = res
        self._audits(audits, by_fqn, rec, outcome, job, whole)
        return outcome

    def _needs_plan(self, ctx: Any, env_name: str, fqns: list[str], job: SegmentJob) -> str | None:
        """Why a plan (not a run) is needed for these models, or None.

        SQLMesh's own view decides: its state when the environment is missing or did not finish
        its last plan; else the plan's tool_view (the planner built SQLMesh's plan: a change, or
        a new environment, needs a plan); a plan made by hand has no tool_view, so the local
        fingerprints are compared with the environment's.
        """
        env = ctx.state_reader.get_environment(env_name)
        if env is None:
            return f"environment {env_name!r} has never been planned"
        if not env.finalized_ts:
            return f"environment {env_name!r} did not finish its last plan ({env.plan_id})"
        changed = [
            f"{nid}: {tv.get('change') or 'new environment'}"
            for nid in job.segment.node_ids
            if (d := job.decisions.get(nid)) is not None
            and ((tv := d.tool_view).get("change") or tv.get("new_environment"))
        ]
        if changed:
            return f"SQLMesh's plan has changes ({'; '.join(changed)})"
        planned = [job.decisions.get(n.id) for n in job.nodes if n.kind in BUILT]
        if planned and all(d is not None and "change" in d.tool_view for d in planned):
            return None  # the planner asked SQLMesh for its plan just now: no change in it
        in_env = {s.name: str(s.snapshot_id.identifier) for s in env.snapshots}
        local = self.ws.provider(self.project).local_snapshot_ids()
        differ = [f for f in fqns if f in local and local[f] != in_env.get(f)]
        if differ:
            return f"its code differs from {env_name!r}: {', '.join(differ)}"
        return None

    def _audits(
        self,
        audits: list[Node],
        by_fqn: dict[str, Node],
        rec: SqlmeshRecorder,
        outcome: SegmentOutcome,
        job: SegmentJob,
        whole: bool = False,
    ) -> None:
        id_to_fqn = {n.id: f for f, n in by_fqn.items()}
        failing: dict[str, list[Any]] = {}
        for name, cause in rec.failed.items():
            errs = getattr(cause, "errors", None)
            if errs:
                failing[name] = list(errs)
        for a in audits:
            if a.meta.get("standalone"):
                outcome.checks[a.id] = _standalone_check(a, rec, outcome, job, whole)
                continue
            model_id = str(a.meta.get("model"))
            fqn = id_to_fqn.get(model_id)
            res = outcome.nodes.get(model_id)
            chk = CheckResult(a.id, self.project, job.segment.id, [model_id], "skipped")
            if fqn is None or res is None:
                chk.message = "its model was not run in this segment"
            elif fqn in failing:
                match = _match_audit(a, failing[fqn])
                if match is not None:
                    chk.status = "fail"
                    chk.failures = int(getattr(match, "count", 0) or 0) or None
                    chk.message = short_message(str(match), 2)
                    res.checks_failed.append(a.id)
                else:
                    chk.status = "pass"
            elif res.status == "success":
                batches = [b for b in rec.batches.get(fqn, []) if b["ok"]]
                warned = sum(b["audits_failed"] for b in batches)
                chk.status = "warn" if warned and not a.meta.get("blocking", True) else "pass"
                if warned:
                    chk.message = f"{warned} non-blocking audit failure(s) on this model"
            elif res.status == "noop":
                chk.message = "no intervals were evaluated, so SQLMesh ran no audits"
            else:
                chk.message = f"its model {res.status}"
            outcome.checks[a.id] = chk


def _standalone_check(
    audit: Node, rec: SqlmeshRecorder, outcome: SegmentOutcome, job: SegmentJob, whole: bool
) -> CheckResult:
    """A standalone audit's result: SQLMesh evaluates it as a snapshot of its own (never
    blocking, so a failure is a warning, as ``sqlmesh run`` prints it)."""
    name = str(audit.meta["snapshot_name"])
    chk = CheckResult(audit.id, audit.project, job.segment.id, list(audit.depends_on), "skipped")
    chk.blocking = bool(audit.meta.get("blocking"))
    batches = [b for b in rec.batches.get(name, []) if b["ok"]]
    if name in rec.failed:
        chk.status = "fail"
        chk.message = short_message(f"{type(rec.failed[name]).__name__}: {rec.failed[name]}", 2)
    elif any(b["audits_failed"] for b in batches):
        chk.status = "warn" if not chk.blocking else "fail"
        # SQLMesh's warning: "NAME: 'NAME' audit error: N rows failed. ..."
        counts = [
            int(m.group(1))
            for w in rec.warnings
            if w.startswith(f"{name}:") and (m := re.search(r"(\d+) rows? failed", w))
        ]
        chk.failures = sum(counts) if counts else None
        chk.message = "the standalone audit returned rows (non-blocking: SQLMesh warns)"
    elif batches:
        chk.status = "pass"
    elif name in rec.skipped:
        chk.message = "SQLMesh skipped it: a model it queries failed"
    elif outcome.error is not None:
        chk.message = "the segment failed before SQLMesh ran it"
    elif whole:
        chk.message = "SQLMesh had nothing due for it"
    else:
        chk.message = (
            "SQLMesh runs standalone audits only when no models are selected "
            "(select the whole project to run it)"
        )
    return chk


def _project_models(graph: Any, project: str) -> dict[str, str]:
    """{fqn: node id} of every SQLMesh model (seeds included) of ``project`` in the graph."""
    return {
        str(n.meta["fqn"]): n.id
        for n in graph.nodes.values()
        if n.project == project and n.kind in BUILT and n.meta.get("fqn")
    }


def _restatement(job: SegmentJob) -> dict[str, Any] | None:
    """The restatement a repair asks of this segment (``tool_view["restate"]``), if any."""
    for n in job.nodes:
        d = job.decisions.get(n.id)
        if d is not None and d.tool_view.get("restate"):
            return dict(d.tool_view["restate"])
    return None


def _match_audit(audit_node: Node, errors: list[Any]) -> Any:
    """The AuditError of ``errors`` that is this audit node (same audit name and arguments)."""
    name = audit_node.meta.get("audit")
    want_args = audit_node.meta.get("args") or {}
    same_name = [e for e in errors if getattr(e, "audit_name", None) == name]
    for e in same_name:
        args = {
            k: (v.sql(dialect=audit_node.dialect or "duckdb") if hasattr(v, "sql") else str(v))
            for k, v in (getattr(e, "audit_args", None) or {}).items()
        }
        if all(args.get(k) == v for k, v in dict(want_args).items()):  # type: ignore[call-overload]
            return e
    return None


def _sqlmesh_error(cause: BaseException | str, node_kind: str | None) -> str:
    errs = getattr(cause, "errors", None)
    if errs:
        names = ", ".join(
            f"{getattr(e, 'audit_name', '?')} ({getattr(e, 'count', '?')} rows)" for e in errs
        )
        return f"blocking audit failed: {names}"
    where = "creating its table" if node_kind == "CreateNode" else "evaluating it"
    return f"SQLMesh failed {where}: {short_message(f'{type(cause).__name__}: {cause}', 3)}"
