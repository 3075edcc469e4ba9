"""The compositions over the graph, runs, plans and incidents (what :mod:`splice.api` offers
beyond re-exporting: a run that recovers killed applies and grants access again, a plan that
checks the targets first, ...)."""

from __future__ import annotations

from typing import Any

from splice.graph.listing import node_record
from splice.workspace.core import Workspace


def list_nodes(
    ws: Workspace, selector: str | None = None, *, exclude: str | None = None
) -> list[dict[str, Any]]:
    """Nodes of every project (optionally a selection), in dependency order, as records."""
    from splice.graph.selectors import select

    g = ws.graph()
    return [node_record(g.nodes[i], g) for i in select(g, selector, exclude=exclude)]


def graph_view(ws: Workspace, selector: str | None, fmt: str) -> Any:
    """The joined graph as JSON data, DOT, Mermaid or text."""
    from splice.graph import render
    from splice.graph.selectors import select

    g = ws.graph()
    ids = select(g, selector) if selector else None
    if fmt == "json":
        return render.to_json(g, ids)
    if fmt == "dot":
        return render.to_dot(g, ids)
    if fmt == "mermaid":
        return render.to_mermaid(g, ids)
    return render.to_text(g, ids)


# -- runs (splice.run) ----------------------------------------------------------------------------
def run(
    ws: Workspace,
    selector: str | None = None,
    *,
    exclude: str | None = None,
    execution_time: Any = None,
    progress: Any = None,
    full: bool = False,
    fresh: bool = False,
    command: str | None = None,
) -> Any:
    """Plan and run the selection across projects; returns a :class:`splice.run.report.RunReport`.

    ``full`` builds every selected node whatever the evidence says (as ``dbt build`` would).
    ``command`` is what the journal records as the run's command line. The report says which
    killed repair applies were recovered, as the session started or, under the run lock, since
    (:func:`splice.api.recovery.recovered_then_in_session`); access granted on what the run
    rebuilt is granted again after it.
    """
    from splice.api.grants import keep_access
    from splice.api.recovery import recovered_then_in_session
    from splice.run.runner import run as _run

    if fresh:
        ws.use_cache = False  # from scratch: the graph too is loaded through the tools
    report = _run(
        ws,
        selector,
        exclude=exclude,
        execution_time=execution_time,
        progress=progress,
        full=full,
        fresh=fresh,
        command=command,
        recover=recovered_then_in_session,
    )
    report.notes.extend(keep_access(ws))  # a rebuilt relation keeps the access granted on it
    return report


def run_plan(
    ws: Workspace,
    plan: Any,
    *,
    progress: Any = None,
    execution_time: Any = None,
    command: str | None = None,
) -> Any:
    """Run a :class:`splice.plan.model.Plan` made earlier (by the planner or by hand); its
    report says which killed repair applies were recovered, as :func:`run`'s does."""
    from splice.api.recovery import recovered_then_in_session
    from splice.run.runner import run_plan as _run_plan

    return _run_plan(ws, plan, progress=progress, execution_time=execution_time, command=command,
                     recover=recovered_then_in_session)  # fmt: skip


def ingest(ws: Workspace, name: str, start: Any, end: Any, *, progress: Any = None) -> Any:
    """Run ingestion job ``name`` for ``start .. end`` (dates or ISO days) as a journaled run:
    its command, or its runs in the orchestrator that owns it. Returns the
    :class:`splice.run.report.RunReport`: a failed load is a failed run, with the job's own
    words (its last lines of output, or the orchestrator's error) as the node's message."""
    from splice.run.ingest_job import as_day, ingestion_plan

    first, last = as_day(start, "start"), as_day(end, "end")
    plan = ingestion_plan(ws, name, first, last)
    return run_plan(ws, plan, progress=progress,
                    command=f"splice ingest {name} --start {first} --end {last}")  # fmt: skip


def list_runs(ws: Workspace, *, limit: int = 20) -> list[dict[str, Any]]:
    """The runs in the journal, newest first (a run whose process died shows as interrupted)."""

    from splice.run.journal import Journal
    from splice.run.runner import recover_interrupted

    if not ws.state_exists:
        return []
    with Journal.for_workspace(ws) as journal:
        recover_interrupted(ws, journal)
        return [r.to_dict() for r in journal.runs(limit=limit)]


def run_journal(ws: Workspace, run_id: str) -> dict[str, Any]:
    """One run (an id or a unique prefix of one) and its events, in order."""

    from splice.run.journal import Journal, RunNotFoundError
    from splice.run.runner import recover_interrupted

    if not ws.state_exists:
        raise RunNotFoundError(
            f"no run {run_id!r}: the workspace has no runs yet.", fix="`splice run` starts one"
        )
    with Journal.for_workspace(ws) as journal:
        recover_interrupted(ws, journal)
        rec = journal.run(run_id)
        return {"run": rec.to_dict(), "events": [e.to_dict() for e in journal.events(rec.run_id)]}


# -- plans and evidence (splice.plan) -------------------------------------------------------------
def plan(
    ws: Workspace,
    selector: str | None = None,
    *,
    exclude: str | None = None,
    execution_time: Any = None,
    fresh: bool = False,
) -> Any:
    """The plan for ``ws.target``: per node BUILD or REUSE and why, in segments (a Plan)."""
    from splice.plan.planner import make_plan

    ws.check_targets()  # before the planner reads or writes any state
    if fresh:
        ws.use_cache = False  # from scratch: the graph too is loaded through the tools
    return make_plan(ws, selector, exclude=exclude, execution_time=execution_time, fresh=fresh)


def evidence(ws: Workspace) -> dict[str, Any]:
    """What Splice knows was built in ``ws.target``: node id -> its latest build record."""
    from dataclasses import asdict

    from splice.plan.evidence import last_builds

    return {n: asdict(r) for n, r in sorted(last_builds(ws.state, ws.target).items())}


def list_incidents(ws: Workspace, *, status: str | list[str] | None = "open") -> list[Any]:
    """The target's incidents, newest first (``status``: one status or a list; None: every
    status)."""
    from splice.watch.incidents import list_incidents as _list

    return _list(ws.state.conn, ws.target, status=status)


def incident(ws: Workspace, incident_id: str, *, live: bool = True) -> Any:
    """One incident with its diagnosis (raises NodeNotFoundError naming the known ids).

    ``live``: an open incident's dashboards, charts and metrics are the graph's now
    (:func:`splice.watch.blast.refresh_reach`); when an orchestrator runs the incident's source job (Dagster), the job's recent
    runs there (status, start, end, link) are read now and shown beside the load records, as
    ``diagnosis["source"]["orchestrator"]`` (with ``error`` when they could not be read)."""
    from splice.reads.connectors import orchestrator_runs
    from splice.watch.incidents import get_incident

    inc = get_incident(ws.state.conn, incident_id)
    if live and inc.diagnosis and inc.status != "resolved":
        from splice.watch.blast import refresh_reach

        refresh_reach(ws, inc.diagnosis, inc.origin_node)
    src = (inc.diagnosis or {}).get("source") or {}
    name = str(src.get("node") or "").removeprefix("ingestion:")
    job = next((j for j in ws.config.ingestion if j.name == name), None)
    if live and job is not None and job.orchestrated:
        src["orchestrator"] = orchestrator_runs(ws, job, limit=5)
    return inc


def queue_ingestion(
    ws: Workspace, name: str, start: Any, end: Any, *, tags: dict[str, str] | None = None
) -> list[Any]:
    """Run ingestion job ``name`` for ``start..end`` through the orchestrator that owns it
    (``[ingestion.dagster]`` / ``[ingestion.airflow]``) and wait: its runs there (:class:`OrchestratorRun`). A job Splice
    runs itself is refused (``splice propose`` reloads those)."""
    from splice.errors import InputError
    from splice.orchestrators import for_job

    job = next((j for j in ws.config.ingestion if j.name == name), None)
    orch = for_job(job, ws.root) if job is not None else None
    if orch is None:
        raise InputError(
            f"ingestion job {name!r} is not run by an orchestrator in splice.toml.",
            fix='give it runner = "dagster" (or "airflow") and its [ingestion.dagster] '
            "(or [ingestion.airflow]) table",
        )
    orch.check()
    return orch.reload(start, end, tags={"splice/workspace": ws.config.workspace.name,
                                         **(tags or {})})  # fmt: skip


def stop_local_orchestrators(root: Any) -> list[str]:
    """Stop every orchestrator server Splice started for the workspace at ``root``
    (``[ingestion.dagster]`` / ``[ingestion.airflow]`` ``local``); the URLs of those that ran."""
    from pathlib import Path

    from splice.config.workspace import load_config
    from splice.orchestrators import for_job

    stopped: list[str] = []
    for job in load_config(Path(root)).ingestion:
        orch = for_job(job, Path(root))
        if orch is not None and orch.stop_local():
            stopped.append(orch.cfg.url)
    return stopped


def plan_checks(plan: Any) -> set[str]:
    """The decisions of a plan that run a test or audit (the rest build relations)."""
    from splice.plan.checks import is_check

    return {n for n, d in plan.decisions.items() if d.action == "build" and is_check(d)}
