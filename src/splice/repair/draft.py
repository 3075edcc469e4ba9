"""From an incident's diagnosis to the narrowest repair, as plain data (no side effects).

The repair of a bad input has up to three steps, in order:

1. **reload** the ingestion job that fed the origin, for the scope's days, through the runner
   that owns it (``[[ingestion]].command`` with ``{start}`` / ``{end}``; dlt scripts and shell
   commands alike);
2. **restate** the SQLMesh origin for the scope: SQLMesh's own plan (built, never applied
   here) lists every model of the cascade and the intervals it will backfill;
3. **rebuild** the dbt models downstream of the binding, with exact selection.

It also lists what the repair will touch (for the undo), what it costs against a full
rebuild, and the commands a person could run instead.  Nothing here writes anything.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from splice.errors import RepairError
from splice.graph.model import Graph
from splice.sqlrows import count_query


@dataclass
class Touch:
    """A relation the repair rewrites: the rows in [start, end] of ``time_column`` (or all)."""

    node_id: str
    relation: str  # the physical table (fully qualified)
    time_column: str | None
    start: date | None
    end: date | None
    rows_in_scope: int = 0
    rows_total: int = 0


@dataclass
class Draft:
    incident_id: str
    origin: str
    change_class: str
    title: str
    cause: str
    scope_start: date
    scope_end: date
    steps: list[dict[str, Any]] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    touches: list[Touch] = field(default_factory=list)
    cost: dict[str, Any] = field(default_factory=dict)
    audit: Any = None  # AuditSuggestion | None
    environments: list[dict[str, Any]] = field(default_factory=list)


def _ingestion_step(ws: Any, node_id: str, start: date, end: date) -> tuple[dict[str, Any], str]:
    name = node_id.split(":", 1)[1]
    job = next((i for i in ws.config.ingestion if i.name == name), None)
    if job is None or not job.command:
        raise RepairError(
            f"the incident's source {node_id} has no command to reload it with.",
            fix=f"give [[ingestion]] {name!r} a command with {{start}} and {{end}} in splice.toml",
        )
    if job.runner == "dagster":
        raise RepairError(
            f"{node_id} runs in Dagster; reloading Dagster jobs is not supported yet.",
            fix="reload it in Dagster for the scope's days, then propose again without --reload",
        )
    argv = [a.format(start=start.isoformat(), end=end.isoformat()) for a in job.command]
    step = {
        "kind": "reload",
        "project": "ingestion",
        "nodes": [node_id],
        "start": start,
        "end": end,
        "command": argv,
        "detail": {"runner": job.runner, "writes": list(job.writes), "cwd": str(ws.root)},
    }
    return step, shlex.join(argv)


def _restate_step(
    ws: Any, graph: Graph, origin: str, start: date, end: date, execution_time: datetime | None
) -> tuple[dict[str, Any], str, list[Touch], dict[str, Any]]:
    node = graph.nodes[origin]
    prov = ws.provider(node.project)
    ctx = prov.context
    env_name = ws.environment(node.project)
    fqn = str(node.meta.get("fqn"))
    end_excl = end + timedelta(days=1)
    builder = ctx.plan_builder(
        env_name,
        restate_models=[fqn],
        start=start.isoformat(),
        end=end.isoformat(),
        execution_time=execution_time or end_excl.isoformat(),
        skip_tests=True,
    )
    plan = builder.build()
    env = ctx.state_reader.get_environment(env_name)
    tables = {s.name: s.table_name() for s in (env.snapshots if env else [])}
    by_fqn = {str(n.meta.get("fqn")): n for n in graph.nodes.values() if n.project == node.project}
    cascade = []
    touches = []
    intervals = 0
    for sid, (lo, hi) in sorted(plan.restatements.items(), key=lambda kv: kv[0].name):
        n = by_fqn.get(sid.name)
        if n is None or n.kind != "model":
            continue
        days = max(1, round((hi - lo) / 86_400_000))
        intervals += days
        cascade.append({"node": n.id, "model": sid.name, "intervals": days,
                        "start": start.isoformat(), "end": end.isoformat()})  # fmt: skip
        table = tables.get(sid.name)
        if table:
            touches.append(Touch(n.id, table, n.time_column, start, end))
    model = node.name
    cmd = shlex.join([
        "sqlmesh", "-p", str(prov.ctx.project_path.relative_to(ws.root)), "plan", env_name,
        "--restate-model", model, "--start", start.isoformat(), "--end", end.isoformat(),
        "--auto-apply", "--no-prompts",
    ])  # fmt: skip
    step = {
        "kind": "restate",
        "project": node.project,
        "nodes": [c["node"] for c in cascade],
        "start": start,
        "end": end,
        "command": shlex.split(cmd),
        "detail": {"environment": env_name, "restate": [fqn], "cascade": cascade},
    }
    return step, cmd, touches, {"intervals": intervals}


def _dbt_steps(
    ws: Any, graph: Graph, ids: list[str]
) -> tuple[list[dict[str, Any]], list[str], list[Touch]]:
    steps, cmds, touches = [], [], []
    by_project: dict[str, list[str]] = {}
    for n in ids:
        node = graph.nodes[n]
        if node.tool == "dbt" and node.kind in ("model", "seed", "snapshot"):
            by_project.setdefault(node.project, []).append(n)
    for project, nodes in by_project.items():
        prov = ws.provider(project)
        names = [graph.nodes[n].name for n in nodes]
        rel_dir = prov.ctx.project_path.relative_to(ws.root)
        argv = ["dbt", "build", "--select", *names, "--project-dir", str(rel_dir),
                "--profiles-dir", str(prov.profiles_dir.relative_to(ws.root)
                                      if prov.profiles_dir.is_relative_to(ws.root)
                                      else prov.profiles_dir),
                "--target", ws.environment(project)]  # fmt: skip
        steps.append({"kind": "rebuild", "project": project, "nodes": graph.topological_order(nodes),
                      "start": None, "end": None, "command": argv,
                      "detail": {"target": ws.environment(project)}})  # fmt: skip
        cmds.append(shlex.join(argv))
        for n in nodes:
            node = graph.nodes[n]
            if node.writes is not None and (node.materialization or "").lower() != "view":
                touches.append(Touch(n, node.writes.key, None, None, None))
    return steps, cmds, touches


def draft_repair(ws: Any, incident: Any, *, execution_time: datetime | None = None) -> Draft:
    """The narrowest repair the incident's evidence supports (see the module docstring)."""
    d = incident.diagnosis or {}
    scope = d.get("scope") or {}
    origin = (d.get("origin") or {}).get("node")
    if not origin or not scope.get("start"):
        raise RepairError(
            f"incident {incident.incident_id} has no origin or scope to repair.",
            fix=f"run splice watch again; then splice incident show {incident.incident_id}",
        )
    if incident.status != "open":
        raise RepairError(
            f"incident {incident.incident_id} is {incident.status}; only open incidents are repaired.",
            fix="splice incidents lists the open ones",
        )
    graph = ws.graph()
    if origin not in graph.nodes:
        raise RepairError(f"the incident's origin {origin} is no longer in the graph.",
                          fix="run splice watch to diagnose it again")  # fmt: skip
    start, end = date.fromisoformat(scope["start"]), date.fromisoformat(scope["end"])
    node = graph.nodes[origin]
    draft = Draft(
        incident_id=incident.incident_id, origin=origin, change_class="reload_ingestion",
        title=f"Repair {incident.incident_id}: {incident.title}", cause=d.get("cause") or "",
        scope_start=start, scope_end=end,
        environments=list((d.get("blast_radius") or {}).get("environments") or []),
    )  # fmt: skip
    src = d.get("source") or {}
    if src.get("node", "").startswith("ingestion:"):
        step, cmd = _ingestion_step(ws, src["node"], start, end)
        draft.steps.append(step)
        draft.commands.append(f"(cd {ws.root} && {cmd})")
        time_col = src.get("time_column")
        draft.touches.append(Touch(src["node"], src["relation"], time_col, start, end))
    rebuild_from: list[str] = sorted(graph.descendants(origin))
    if node.tool == "sqlmesh" and node.kind == "model":
        step, cmd, touches, cost = _restate_step(ws, graph, origin, start, end, execution_time)
        draft.steps.append(step)
        draft.commands.append(cmd)
        draft.touches += touches
        draft.change_class = "restatement"
        draft.cost["intervals_scoped"] = cost["intervals"]
    elif node.tool == "dbt":
        rebuild_from = [origin, *rebuild_from]
    steps, cmds, touches = _dbt_steps(ws, graph, rebuild_from)
    draft.steps += steps
    draft.commands += cmds
    draft.touches += touches
    if steps and draft.change_class == "reload_ingestion":
        draft.change_class = "restatement"  # a rebuild of models is never a plain reload
    _count(ws, draft)
    draft.audit = _audit(ws, graph, origin, d)
    return draft


def _count(ws: Any, draft: Draft) -> None:
    """Rows in scope against rows in full, for every relation the repair rewrites."""
    from splice.warehouse import connect

    with connect(ws, "splice propose") as con:
        for t in draft.touches:
            t.rows_in_scope = int(con.execute(
                count_query(t.relation, t.time_column, t.start, t.end, ws.dialect)
            ).fetchone()[0])  # fmt: skip
            t.rows_total = int(con.execute(
                count_query(t.relation, None, None, None, ws.dialect)
            ).fetchone()[0])  # fmt: skip
    scoped = sum(t.rows_in_scope for t in draft.touches)
    full = sum(t.rows_total for t in draft.touches)
    days = (draft.scope_end - draft.scope_start).days + 1
    draft.cost.update({
        "rows_scoped": scoped,
        "rows_full_rebuild": full,
        "share": round(scoped / full, 4) if full else None,
        "days": days,
        "relations": [
            {"node": t.node_id, "relation": t.relation, "rows_scoped": t.rows_in_scope,
             "rows_total": t.rows_total, "scoped_by": t.time_column}
            for t in draft.touches
        ],
    })  # fmt: skip


def _audit(ws: Any, graph: Graph, origin: str, diagnosis: dict[str, Any]) -> Any:
    from splice.repair.audit_suggestion import suggest_audit

    node = graph.nodes[origin]
    if node.tool != "sqlmesh" or not node.path or not node.time_column:
        return None
    head = (diagnosis.get("headline") or {}).get("metric")
    dims: list[str] = []
    for e in diagnosis.get("evidence") or []:
        if e["metric"] == head:
            series = e["example"]["series"]
            dims = [p.split("=", 1)[0] for p in series.split(", ") if "=" in p]
            break
    prov = ws.provider(node.project)
    return suggest_audit(prov.ctx.project_path, node.project, node.path, diagnosis,
                         time_col=node.time_column, dims=dims)  # fmt: skip
