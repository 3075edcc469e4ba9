"""From an incident's diagnosis to the narrowest repair, as plain data (no side effects).

The repair of a bad input has up to three steps, in order:

1. **reload** the ingestion job that fed the origin, for the scope's days, through the runner
   that owns it (``[[ingestion]].command`` with ``{start}`` / ``{end}``; dlt scripts and shell
   commands alike);
2. **restate** the SQLMesh origin for the scope: SQLMesh's own plan (built, never applied
   here) lists every model of the cascade and the intervals it will backfill.  A model
   downstream whose damaged intervals (the diagnosis' per-node scope,
   :mod:`splice.repair.damage`) reach beyond that cascade is restated too, for the extra
   ranges only (Friday's bad rate converts Saturday's and Sunday's bookings: the origin is
   restated for Friday, the bookings mart for Saturday..Sunday, each with its cascade);
3. **rebuild** the dbt models downstream of the binding, with exact selection (an incremental
   dbt model with ``--full-refresh``: dbt cannot rebuild a range of it without the model's
   own variables).

It also lists, per node, the damaged intervals and how the repair rewrites them, what the
repair will touch (for the undo, per node and range), what it costs against a full rebuild
(per node too), and the commands a person could run instead.  Nothing here writes anything.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from splice.errors import RepairError
from splice.graph.model import Graph
from splice.repair.damage import NodeDamage, day_ranges, node_damage
from splice.warehouse.rows import count_query
from splice.watch.damage import SOURCE_KINDS

if TYPE_CHECKING:
    from splice.workspace.core import Workspace


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
    #: per node: the damaged intervals and how the repair rewrites them; the blocked intervals
    scope: dict[str, Any] = field(default_factory=dict)


def _ingestion_step(
    ws: Workspace, node_id: str, start: date, end: date
) -> tuple[dict[str, Any], str]:
    name = node_id.split(":", 1)[1]
    job = next((i for i in ws.config.ingestion if i.name == name), None)
    if job is not None and job.orchestrated:
        return _orchestrated_step(ws, job, node_id, start, end)
    if job is None or not job.command:
        raise RepairError(
            f"the incident's source {node_id} has no command to reload it with.",
            fix=f"give [[ingestion]] {name!r} a command with {{start}} and {{end}} in splice.toml",
        )
    argv = [a.format(start=start.isoformat(), end=end.isoformat()) for a in job.command]
    return _reload(ws, job, node_id, start, end, argv), shlex.join(argv)


def _reload(ws: Workspace, job: Any, node_id: str, start: date, end: date, argv: list[str],
            **detail: Any) -> dict[str, Any]:  # fmt: skip
    """A reload step of ``job`` (as plain data, like every step of a proposal)."""
    return {
        "kind": "reload",
        "project": "ingestion",
        "nodes": [node_id],
        "start": start,
        "end": end,
        "command": argv,
        "detail": {
            "runner": job.runner,
            "writes": list(job.writes),
            "cwd": str(ws.root),
            **detail,
        },  # fmt: skip
    }


def _orchestrated_step(
    ws: Workspace, job: Any, node_id: str, start: date, end: date
) -> tuple[dict[str, Any], str]:
    """A reload queued through the orchestrator that owns the job: the runs it will submit
    (run config or partition tags, filled in now, so the approval is of exactly these), after
    checking that the orchestrator answers and knows the job."""
    from splice.orchestrators import for_job

    orch = for_job(job, ws.root)
    assert orch is not None
    where = orch.check()  # unreachable or unknown job: a one-line OrchestratorError
    runs = [{"run_config": c, "tags": t} for c, t in orch.requests(start, end, {})]
    spec = {"system": orch.system, "url": orch.cfg.url, "job": orch.job, **where,
            "days": orch.cfg.days, "runs": runs}  # fmt: skip
    return _reload(ws, job, node_id, start, end, [], orchestrator=spec), orch.describe(start, end)


def _cascade_of(ws: Workspace, ctx: Any, env_name: str, fqn: str, start: date, end: date,
                execution_time: datetime | None) -> dict[str, tuple[date, date]]:  # fmt: skip
    """SQLMesh's own restatement of ``fqn`` for ``start..end`` (built, never applied): every
    model of its cascade with the days it would reprocess."""
    builder = ctx.plan_builder(
        env_name,
        restate_models=[fqn],
        start=start.isoformat(),
        end=end.isoformat(),
        execution_time=execution_time or (end + timedelta(days=1)).isoformat(),
        skip_tests=True,
    )
    plan = builder.build()
    out: dict[str, tuple[date, date]] = {}
    for sid, (lo, hi) in plan.restatements.items():
        first = datetime.fromtimestamp(lo / 1000, tz=UTC).date()
        last = datetime.fromtimestamp(max(lo, hi - 1) / 1000, tz=UTC).date()
        out[sid.name] = (first, last)
    return out


def _restate_step(
    ws: Workspace, graph: Graph, roots: list[str], start: date, end: date,
    execution_time: datetime | None, damage: list[NodeDamage],
    why: str = "the origin, for its damaged intervals",
) -> tuple[dict[str, Any], list[str], dict[str, dict[date, str]], dict[str, Any]]:  # fmt: skip
    """Restate the roots (the origin; or the models that read a source origin's bad days), all
    of one project, for their days (SQLMesh's cascade reprocesses their downstream for the
    same days); then every SQLMesh model downstream whose damaged days reach beyond what is
    restated already, for those extra ranges (and its own cascade).  Returns the step, the
    commands, the days each node's table is rewritten ({node: {day: how}}), and the cost."""
    node = graph.nodes[roots[0]]
    prov = ws.provider(node.project)
    ctx = prov.context
    env_name = ws.environment(node.project)
    by_fqn = {str(n.meta.get("fqn")): n for n in graph.nodes.values() if n.project == node.project}
    rel_project = str(prov.ctx.project_path.relative_to(ws.root))
    covered: dict[str, dict[date, str]] = {}  # node id -> day -> how it is rewritten
    whole: set[str] = set()  # restated whole (no time column: SQLMesh rebuilds it)
    restatements: list[dict[str, Any]] = []
    cmds: list[str] = []
    intervals = 0

    def restate(target: Any, lo: date, hi: date, why: str) -> None:
        nonlocal intervals
        fqn = str(target.meta.get("fqn"))
        cascade = []
        for name, (a, b) in sorted(_cascade_of(ws, ctx, env_name, fqn, lo, hi,
                                               execution_time).items()):  # fmt: skip
            n = by_fqn.get(name)
            if n is None or n.kind != "model":
                continue
            days = (b - a).days + 1
            intervals += days
            cascade.append({"node": n.id, "model": name, "intervals": days,
                            "start": a.isoformat(), "end": b.isoformat()})  # fmt: skip
            how = (f"restated ({lo}..{hi})" if n.id == target.id
                   else f"SQLMesh's cascade of {target.name} ({lo}..{hi})")  # fmt: skip
            if not n.time_column:
                whole.add(n.id)
            day = a
            while day <= b:
                covered.setdefault(n.id, {}).setdefault(day, how)
                day += timedelta(days=1)
        restatements.append({"node": target.id, "models": [fqn], "start": lo.isoformat(),
                             "end": hi.isoformat(), "why": why, "cascade": cascade})  # fmt: skip
        cmds.append(shlex.join([
            "sqlmesh", "-p", rel_project, "plan", env_name, "--restate-model", target.name,
            "--start", lo.isoformat(), "--end", hi.isoformat(), "--auto-apply", "--no-prompts",
        ]))  # fmt: skip

    for r in roots:
        restate(graph.nodes[r], start, end, why)
    for d in damage:
        n = graph.nodes.get(d.node)
        if (n is None or n.id in roots or n.tool != "sqlmesh" or n.kind != "model"
                or n.project != node.project):  # fmt: skip
            continue
        if not n.time_column or d.everything:
            if n.id not in covered:
                restate(n, start, end, "rebuilt whole (no time column)")
            continue
        extra = sorted(set(d.days) - set(covered.get(n.id, {})))
        for lo, hi in day_ranges(extra):
            why = "its damaged intervals reach beyond what is restated already"
            restate(n, lo, hi, f"{why} ({d.why})" if d.why else why)
    order = graph.topological_order(sorted(covered))
    first = restatements[0]
    step = {
        "kind": "restate",
        "project": node.project,
        "nodes": order,
        "start": start,
        "end": end,
        "command": shlex.split(cmds[0]),
        "detail": {
            "environment": env_name,
            "restate": first["models"],
            "cascade": first["cascade"],
            "restatements": restatements,
            "whole": sorted(whole),
        },  # fmt: skip
    }
    return step, cmds, covered, {"intervals": intervals, "whole": whole}


def _span(lo: date, hi: date) -> str:
    return lo.isoformat() if lo == hi else f"{lo.isoformat()}..{hi.isoformat()}"


def _incremental(node: Any) -> bool:
    return (node.materialization or "").lower() in ("incremental", "microbatch")


def _dbt_steps(
    ws: Workspace, graph: Graph, ids: list[str]
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
        incremental = [n for n in nodes if _incremental(graph.nodes[n])]
        rel_dir = prov.ctx.project_path.relative_to(ws.root)
        argv = ["dbt", "build", "--select", *names, "--project-dir", str(rel_dir),
                "--profiles-dir", str(prov.profiles_dir.relative_to(ws.root)
                                      if prov.profiles_dir.is_relative_to(ws.root)
                                      else prov.profiles_dir),
                "--target", ws.environment(project)]  # fmt: skip
        if incremental:  # an incremental model only rebuilds its damaged range with a refresh
            argv.append("--full-refresh")
        detail: dict[str, Any] = {"target": ws.environment(project)}
        if incremental:
            detail["full_refresh"] = graph.topological_order(incremental)
        steps.append({"kind": "rebuild", "project": project, "nodes": graph.topological_order(nodes),
                      "start": None, "end": None, "command": argv, "detail": detail})  # fmt: skip
        cmds.append(shlex.join(argv))
        for n in nodes:
            node = graph.nodes[n]
            if node.writes is not None and (node.materialization or "").lower() != "view":
                touches.append(Touch(n, node.writes.key, None, None, None))
    return steps, cmds, touches


def _restated_touches(ws: Workspace, graph: Graph, project: str, covered: dict[str, dict[date, str]],
                      whole: set[str]) -> list[Touch]:  # fmt: skip
    """One touch per node and range of days its table is rewritten (disjoint ranges, so the
    undo puts each row back once)."""
    env = ws.provider(project).context.state_reader.get_environment(ws.environment(project))
    tables = {s.name: s.table_name() for s in (env.snapshots if env else [])}
    touches = []
    for nid in graph.topological_order(sorted(covered)):
        n = graph.nodes[nid]
        table = tables.get(str(n.meta.get("fqn")))
        if not table:
            continue
        if nid in whole or not n.time_column:
            touches.append(Touch(nid, table, None, None, None))
            continue
        for lo, hi in day_ranges(covered[nid]):
            touches.append(Touch(nid, table, n.time_column, lo, hi))
    return touches


def draft_repair(ws: Workspace, incident: Any, *, execution_time: datetime | None = None) -> Draft:
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
    fault = d.get("fault") or {}
    if fault.get("class") == "code_change":  # rebuilding runs the same new code again
        ev = fault.get("evidence") or {}
        path = graph.nodes[origin].path
        raise RepairError(
            f"incident {incident.incident_id} is a change inside the project: {origin} was built "
            f"with new code in run {ev.get('run_id') or '?'}; rebuilding it runs that code again, "
            "so no reload or restatement undoes it.",
            fix=(f"if the change is a mistake, revert {path or 'its file'} in project "
                 f"{graph.nodes[origin].project} and splice run (the next splice watch shows the "
                 f"values restored); if it is intended, splice incident accept-level "
                 f"{incident.incident_id}"),
        )  # fmt: skip
    start, end = date.fromisoformat(scope["start"]), date.fromisoformat(scope["end"])
    node = graph.nodes[origin]
    damage = node_damage(d)
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
        draft.commands.append(cmd if not step["command"] else f"(cd {ws.root} && {cmd})")
        time_col = src.get("time_column")
        draft.touches.append(Touch(src["node"], src["relation"], time_col, start, end))
    rebuild_from: list[str] = sorted(graph.descendants(origin))
    covered: dict[str, dict[date, str]] = {}
    roots = [origin] if node.tool == "sqlmesh" and node.kind == "model" else []
    if node.kind in SOURCE_KINDS:
        roots, rebuild_from = _readers(graph, origin, damage)
    for project in sorted({graph.nodes[r].project for r in roots}):
        mine = [r for r in roots if graph.nodes[r].project == project]
        why = (
            "the origin, for its damaged intervals"
            if mine == [origin]
            else "it read the source's bad intervals"
        )
        step, cmds, done, cost = _restate_step(
            ws, graph, mine, start, end, execution_time, damage, why
        )
        draft.steps.append(step)
        draft.commands += cmds
        draft.touches += _restated_touches(ws, graph, project, done, cost["whole"])
        draft.change_class = "restatement"
        draft.cost["intervals_scoped"] = draft.cost.get("intervals_scoped", 0) + cost["intervals"]
        covered.update(done)
    if node.tool == "dbt" and node.kind in ("model", "seed", "snapshot"):
        rebuild_from = [origin, *rebuild_from]
    steps, cmds, touches = _dbt_steps(ws, graph, rebuild_from)
    draft.steps += steps
    draft.commands += cmds
    draft.touches += touches
    if steps and draft.change_class == "reload_ingestion":
        draft.change_class = "restatement"  # a rebuild of models is never a plain reload
    rewritten = {s["project"] for s in draft.steps}
    draft.environments = [e for e in draft.environments if e.get("project") in rewritten]
    _count(ws, draft)
    draft.scope = _node_scope(graph, draft, damage, covered, steps, d)
    draft.audit = _audit(ws, graph, origin, d)
    return draft


def _readers(graph: Graph, origin: str, damage: list[NodeDamage]) -> tuple[list[str], list[str]]:
    """What has read a source's bad days, when the incident starts at the source itself (a
    relation an ingestion job loads, watched as it lands): the SQLMesh models to restate (the
    damaged ones no damaged SQLMesh model of their project feeds: SQLMesh's cascade does the
    rest) and the nodes below them and below every other damaged node (dbt rebuilds). A load
    caught before any model read it needs the reload alone: the next run builds the rest.

    >>> from splice.graph.model import Graph, Node, Edge
    >>> g = Graph()
    >>> g.add_node(Node("p:raw.fx", "p", "raw.fx", "external", "sqlmesh"))
    >>> g.add_node(Node("p:fx", "p", "fx", "model", "sqlmesh"))
    >>> g.add_node(Node("f:gmv", "f", "gmv", "model", "dbt"))
    >>> g.add_edge(Edge("p:raw.fx", "p:fx")); g.add_edge(Edge("p:fx", "f:gmv"))
    >>> _readers(g, "p:raw.fx", [])
    ([], [])
    >>> _readers(g, "p:raw.fx", [NodeDamage("p:raw.fx", None, []), NodeDamage("p:fx", None, [])])
    (['p:fx'], ['f:gmv'])
    """
    read = {d.node for d in damage if d.node != origin and d.node in graph.nodes}
    roots = sorted(
        n for n in read
        if graph.nodes[n].tool == "sqlmesh" and graph.nodes[n].kind == "model"
        and not any(graph.nodes[a].project == graph.nodes[n].project and
                    graph.nodes[a].tool == "sqlmesh" for a in graph.ancestors(n) & read)
    )  # fmt: skip
    below: set[str] = set()
    for n in read:
        below |= graph.descendants(n)
    restated = {n for r in roots for n in graph.descendants(r) | {r}
                if graph.nodes[n].tool == "sqlmesh" and graph.nodes[n].project == graph.nodes[r].project}  # fmt: skip
    rebuild = sorted((read | below) - restated)
    return roots, rebuild


def _node_scope(graph: Graph, draft: Draft, damage: list[NodeDamage],
                covered: dict[str, dict[date, str]], rebuilds: list[dict[str, Any]],
                diagnosis: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    """Per node: the damaged intervals, how the repair rewrites them, and its rows."""
    rebuilt = {n: s for s in rebuilds for n in s["nodes"]}
    refresh = {n for s in rebuilds for n in s["detail"].get("full_refresh") or []}
    rows: dict[str, list[int]] = {}
    for r in draft.cost.get("relations") or []:
        acc = rows.setdefault(r["node"], [0, 0, 0])
        acc[0] += r["rows_scoped"]
        acc[1] = max(acc[1], r["rows_total"])
    by_node = {dm.node: dm for dm in damage}
    # a source origin is rewritten by the reload of the job that loads it
    origin = graph.nodes.get(draft.origin)
    reload = next((s for s in draft.steps if s["kind"] == "reload"
                   and set(s["nodes"]) & graph.ancestors(draft.origin)), None)  # fmt: skip
    if origin is None or origin.kind not in SOURCE_KINDS:
        reload = None
    ids = [dm.node for dm in damage]
    ids += [n for n in graph.topological_order([*covered, *rebuilt]) if n not in by_node]
    out = []
    for nid in ids:
        dm = by_node.get(nid)
        n = graph.nodes.get(nid)
        entry: dict[str, Any] = (dm.as_dict() if dm else
                                 {"node": nid, "time_column": n.time_column if n else None,
                                  "intervals": [], "ranges": [], "full": False, "why": "",
                                  "blocked": []})  # fmt: skip
        days = covered.get(nid, {})
        if nid == draft.origin and reload is not None:
            lo, hi = reload["start"], reload["end"]
            entry["repair"] = f"reloaded by {reload['nodes'][0]} for {_span(lo, hi)}"
            entry["rewrites"] = [[lo.isoformat(), hi.isoformat()]]
        elif nid in covered:
            ways: dict[str, list[date]] = {}
            for day, how in sorted(days.items()):
                ways.setdefault(how, []).append(day)
            entry["repair"] = "; ".join(
                f"{how.split(' (')[0]} {', '.join(_span(a, b) for a, b in day_ranges(ds))}"
                for how, ds in ways.items()
            )
            entry["rewrites"] = [[a.isoformat(), b.isoformat()] for a, b in day_ranges(days)]
            if dm and not dm.everything and set(dm.days) - set(days):
                missing = day_ranges(set(dm.days) - set(days))
                entry["not_rewritten"] = [[a.isoformat(), b.isoformat()] for a, b in missing]
        elif nid in rebuilt:
            entry["repair"] = ("rebuilt whole with --full-refresh (incremental dbt model)"
                               if nid in refresh else "rebuilt whole (dbt)")  # fmt: skip
            entry["rewrites"] = "all"
            if n is not None and (n.materialization or "").lower() == "view":
                entry["repair"] = "a view: rebuilt, it stores nothing (it reads the repaired rows)"
        else:
            entry["repair"] = "not rewritten by this repair"
            if dm and dm.days:
                entry["not_rewritten"] = [[a.isoformat(), b.isoformat()]
                                          for a, b in day_ranges(dm.days)]  # fmt: skip
        if nid in rows:
            entry["rows_scoped"], entry["rows_total"] = rows[nid][0], rows[nid][1]
        out.append(entry)
    blocked = [dict(b) for b in ((diagnosis.get("scope") or {}).get("blocked") or [])]
    return {"nodes": out, "blocked": blocked}


def _count(ws: Workspace, draft: Draft) -> None:
    """Rows in scope against rows in full, for every relation the repair rewrites."""
    from splice.warehouse.connect import connect

    totals: dict[str, int] = {}
    with connect(ws, "splice propose") as con:
        for t in draft.touches:
            t.rows_in_scope = int(con.execute(
                count_query(t.relation, t.time_column, t.start, t.end, ws.dialect)
            ).fetchone()[0])  # fmt: skip
            if t.relation not in totals:
                totals[t.relation] = int(con.execute(
                    count_query(t.relation, None, None, None, ws.dialect)
                ).fetchone()[0])  # fmt: skip
            t.rows_total = totals[t.relation]
    scoped = sum(t.rows_in_scope for t in draft.touches)
    full = sum(totals.values())  # a relation rewritten in several ranges counts once in full
    days = (draft.scope_end - draft.scope_start).days + 1
    draft.cost.update({
        "rows_scoped": scoped,
        "rows_full_rebuild": full,
        "share": round(scoped / full, 4) if full else None,
        "days": days,
        "relations": [
            {"node": t.node_id, "relation": t.relation, "rows_scoped": t.rows_in_scope,
             "rows_total": t.rows_total, "scoped_by": t.time_column,
             "start": t.start.isoformat() if t.start else None,
             "end": t.end.isoformat() if t.end else None}
            for t in draft.touches
        ],
    })  # fmt: skip


def _audit(ws: Workspace, graph: Graph, origin: str, diagnosis: dict[str, Any]) -> Any:
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
