"""The planner: for each selected node, BUILD or REUSE, with the evidence for it.

:func:`make_plan` gathers the inputs (the graph, SQLMesh's own plan view, fingerprints, the
evidence in Splice's state) and :func:`decide` turns them into decisions; segments come from
:func:`splice.plan.segments.make_segments`.  :func:`decide` is pure (no tool, no I/O except the
``seen_before`` look-up it is given), so it is what the planning benchmark times.

Rules, per selected node, in the graph's order:

- dbt models, seeds and snapshots (and any non-SQLMesh buildable node):
  ``failed_last_time`` (its latest attempt failed, or was interrupted), ``never_built`` (no
  successful build recorded in this target), ``code_changed`` (fingerprint components that
  differ from the last build), ``upstream_code_changed`` (an input builds in this plan because
  of a code change), ``upstream_data_changed`` (an input builds in this plan for another reason,
  or an input's version moved since the last build: "P changed: version 41 -> 42"),
  ``source_fresher`` (the same, for an ingestion job's relation); none of these: ``unchanged``,
  REUSE.  ``incomplete_upstream_intervals`` is added (without changing the action) when an input
  is a SQLMesh model whose environment still misses intervals and that does not build here.
- SQLMesh models: SQLMesh's own plan decides (:mod:`splice.plan.sqlmesh_view`), unchanged:
  a change category or missing intervals is BUILD, nothing is REUSE.  A SQLMesh model with no
  Splice evidence that SQLMesh reports complete is REUSE: SQLMesh's state is the evidence.
  Changes SQLMesh calls data-neutral (indirect-non-breaking or metadata, with no interval to
  fill) do not make readers in other projects build.
- Tests and audits run with what they check: a test/audit whose node builds (or, for a dbt
  source test, whose source feeds a node that builds) joins the plan as ``selected_test``, even
  if the selector did not name it (as ``dbt build`` does); ``--exclude`` still removes it.
  Tests of reused nodes are left out of the decisions.
- Sources, externals, ingestion jobs and dashboards are never built by Splice: no decision.

An input of a node is the nearest buildable node (or ingestion job) upstream of it, through
sources and externals: ``finance:stg_gmv_daily``'s input is ``pricing:marts.agg_gmv_daily``
(through ``finance:source:pricing.agg_gmv_daily``).

Targets: before anything else, a selected node that would read another project's prod relation
in a non-prod target (doctor's SPL201 / SPL202) refuses the plan with
:class:`EnvironmentRefusedError`.
"""

from __future__ import annotations

import time
from datetime import date, datetime
from typing import TYPE_CHECKING

from splice.errors import SpliceError
from splice.graph.model import Graph
from splice.plan.checks import attach_checks, check_fingerprints
from splice.plan.fingerprint import changed_components, is_buildable
from splice.plan.inputs import PASS_THROUGH, PlanInputs, input_ids
from splice.plan.intervals import describe_intervals
from splice.plan.model import Action, NodeDecision, Plan, Reason, ReasonCode
from splice.plan.segments import make_segments
from splice.plan.sqlmesh_view import NodeView
from splice.providers.locations import shares_sqlmesh_state

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

CODE_CAUSES = frozenset({"code_changed", "upstream_code_changed", "sqlmesh_change"})


class EnvironmentRefusedError(SpliceError):
    """A node of the plan would read another project's prod relation in a non-prod target."""

    def __init__(
        self, message: str, *, fix: str | None, node: str, relation: str | None, code: str
    ) -> None:
        super().__init__(message, fix=fix)
        self.node = node
        self.relation = relation
        self.code = code


# -- the pure part ---------------------------------------------------------------------------
def _cause(d: NodeDecision) -> tuple[str, str, bool]:
    """(root node, words, is a code change) of why ``d`` builds, following upstream causes."""
    for r in d.reasons:
        if r.code == "upstream_code_changed":
            return str(r.data.get("root", r.upstream)), str(r.data.get("root_words", r.text)), True
    for r in d.reasons:
        if r.code in ("code_changed", "sqlmesh_change"):
            return d.node_id, r.text, True
    first = d.reasons[0].text if d.reasons else "it builds"
    return d.node_id, first, False


def decide(inp: PlanInputs) -> tuple[dict[str, NodeDecision], list[str]]:
    """Decisions for the selection, and the plan's warnings."""
    g = inp.graph
    memo: dict[str, frozenset[str]] = {}
    decisions: dict[str, NodeDecision] = {}
    warnings: list[str] = []
    changes_data: dict[str, bool] = {}
    incomplete_readers: dict[str, list[str]] = {}

    for nid in inp.selected:
        node = g.nodes[nid]
        if not is_buildable(node):
            continue
        inputs = sorted(input_ids(g, nid, memo))
        if node.tool == "sqlmesh":
            view = inp.sqlmesh.get(nid)
            if view is None:
                continue
            d = NodeDecision(
                nid,
                node.project,
                view.action,
                list(view.reasons),
                dict(view.fingerprint),
                dict(view.tool_view),
                inputs,
            )
            decisions[nid] = d
            changes_data[nid] = view.action == "build" and view.changes_data
            for u in inputs:
                ud = decisions.get(u)
                if ud is not None and ud.action == "build" and g.nodes[u].project != node.project:
                    if shares_sqlmesh_state(node, g.nodes[u]):
                        warnings.append(
                            f"{nid} reads {u}, which builds in this plan; their SQLMesh projects "
                            f"share SQLMesh's state, so SQLMesh's plan of {g.nodes[u].project} "
                            f"re-evaluates {nid} if the change is breaking, as it does by hand"
                        )
                        continue
                    warnings.append(
                        f"{nid} reads {u}, which builds in this plan; SQLMesh keeps no versions of "
                        f"its external inputs, so it re-evaluates nothing for it (restate {nid} to reprocess)"
                    )
            continue

        reasons: list[Reason] = []
        rec = inp.builds.get(nid)
        att = inp.attempts.get(nid)
        fp = inp.fingerprints.get(nid, {})
        if att is not None and att.status in ("failed", "running"):
            if att.status == "failed":
                err = (att.error or "").strip().splitlines()
                text = f"its last build failed (run {att.run_id})" + (
                    f": {err[0][:200]}" if err else ""
                )
            else:
                text = f"its last build was interrupted (run {att.run_id} started it and never finished)"
            reasons.append(
                Reason("failed_last_time", text, data={"run_id": att.run_id, "status": att.status})
            )
        if rec is None:
            reasons.append(Reason("never_built", f"never built in target {inp.target!r}"))
        else:
            comps = changed_components(rec.fingerprint, fp)
            if comps:
                reasons.append(
                    Reason(
                        "code_changed",
                        f"its code changed: {', '.join(comps)}",
                        components=tuple(comps),
                    )
                )
        for u in inputs:
            un = g.nodes[u]
            ud = decisions.get(u)
            ubuild = inp.builds.get(u)
            current = ubuild.version if ubuild is not None else 0
            upstream_builds = ud is not None and ud.action == "build"
            state = inp.sqlmesh_states.get(u)
            if (
                state is not None
                and state.missing
                and un.project != node.project
                and not upstream_builds
            ):
                incomplete_readers.setdefault(u, []).append(nid)
            if rec is None:
                continue  # never built: what its inputs did says nothing more
            if ud is not None and upstream_builds:
                if not changes_data.get(u, True):
                    continue  # SQLMesh says its data does not change
                root, words, is_code = _cause(ud)
                if is_code:
                    text = (
                        f"{u} builds in this plan: {words}"
                        if root == u
                        else f"{u} builds in this plan, after {root}: {words}"
                    )
                    reasons.append(
                        Reason(
                            "upstream_code_changed",
                            text,
                            upstream=u,
                            data={"root": root, "root_words": words},
                        )
                    )
                else:
                    reasons.append(
                        Reason(
                            "upstream_data_changed",
                            f"{u} will change: version {current} -> {current + 1} "
                            f"(it builds in this plan: {words})",
                            upstream=u,
                            data={"from": current, "to": current + 1, "planned": True},
                        )
                    )
                continue
            if u in rec.inputs:
                seen = rec.inputs[u]
            elif ubuild is None or ubuild.seq < rec.seq:
                seen = current  # nothing recorded for it since this node's build
            else:
                seen = inp.seen_before(u, rec.seq)
            if current != seen:
                code: ReasonCode = (
                    "source_fresher" if un.kind == "ingestion" else "upstream_data_changed"
                )
                reasons.append(
                    Reason(
                        code,
                        f"{u} changed: version {seen} -> {current}",
                        upstream=u,
                        data={"from": seen, "to": current, "planned": False},
                    )
                )
        action: Action = "build" if reasons else "reuse"
        for u in inputs:
            state = inp.sqlmesh_states.get(u)
            if nid in incomplete_readers.get(u, []) and state is not None:
                reasons.append(
                    Reason(
                        "incomplete_upstream_intervals",
                        f"{u} is incomplete in {inp.environments.get(g.nodes[u].project, '?')!r}: "
                        f"{state.missing_count} interval{'s' if state.missing_count != 1 else ''} missing "
                        f"({describe_intervals(state.missing)}), and it does not build in this plan",
                        upstream=u,
                        data={"missing_intervals": state.missing, "count": state.missing_count},
                    )
                )
        if action == "reuse":
            reasons.insert(
                0,
                Reason(
                    "unchanged",
                    "unchanged since its last build" + (f" (version {rec.version})" if rec else ""),
                ),
            )
        decisions[nid] = NodeDecision(nid, node.project, action, reasons, fp, {}, inputs)
        changes_data[nid] = action == "build"

    for u, readers in incomplete_readers.items():
        st = inp.sqlmesh_states[u]
        warnings.append(
            f"{u} has {st.missing_count} interval{'s' if st.missing_count != 1 else ''} missing in "
            f"{inp.environments.get(g.nodes[u].project, '?')!r} ({describe_intervals(st.missing)}) and does "
            f"not build in this plan: {', '.join(readers)} would read incomplete data; select {u} to fill them first"
        )
    for u, miss in sorted(inp.also_backfilled.items()):
        warnings.append(
            f"SQLMesh also reports missing intervals for {u}, upstream of the selection and not "
            f"selected ({describe_intervals(miss)})"
        )

    attach_checks(inp, decisions)
    return _in_order(g, decisions), warnings


def _in_order(g: Graph, decisions: dict[str, NodeDecision]) -> dict[str, NodeDecision]:
    return {n: decisions[n] for n in g.topological_order() if n in decisions}


def plan_from_inputs(
    inp: PlanInputs, *, selector: str | None = None, execution_time: datetime | None = None
) -> Plan:
    """Decide and segment: the whole planning step after the inputs are gathered."""
    t0 = time.perf_counter()
    decisions, warnings = decide(inp)
    t1 = time.perf_counter()
    segments = make_segments(
        inp.graph,
        [n for n, d in decisions.items() if d.action == "build"],
        format_of=lambda p: inp.formats.get(p, "dbt"),
        environment_of=lambda p: inp.environments.get(p, inp.target),
    )
    t2 = time.perf_counter()
    return Plan(
        target=inp.target,
        environments=dict(inp.environments),
        decisions=decisions,
        segments=segments,
        selector=selector,
        created_at=time.time(),
        warnings=warnings,
        execution_time=execution_time.isoformat() if execution_time is not None else None,
        timings={"decide": round(t1 - t0, 4), "segments": round(t2 - t1, 4)},
    )


# -- gathering the inputs from a workspace ------------------------------------------------------
def check_environments(ws: Workspace, graph: Graph, candidates: set[str]) -> None:
    """Refuse a plan in which a node would read another project's prod relation (SPL201/202),
    or a SQLMesh project of a multi-repo setup would read another whose state is in another
    file (SPL401: its SQLMesh finds an empty state and fails halfway through the run)."""
    from splice.doctor.service import doctor
    from splice.providers.locations import shares_sqlmesh_state

    for check in doctor(ws, lineage=False):
        if check.code not in ("SPL201", "SPL202", "SPL401") or check.node is None:
            continue
        if check.code == "SPL401":
            down = graph.nodes.get(check.node)
            if down is None or not any(
                shares_sqlmesh_state(graph.nodes[p], down) for p in graph.parents(check.node)
            ):
                continue  # a split warehouse of other tools: doctor reports it, the run goes on
        reader = check.node
        affected = _readers(graph, reader, candidates)
        if not affected:
            continue
        rnode = graph.nodes.get(reader)
        relation = rnode.reads[0].key if rnode is not None and rnode.reads else None
        feeds = sorted(a for a in affected if a != reader)
        raise EnvironmentRefusedError(
            f"target {ws.target!r} is refused before anything runs: "
            + (f"{check.code}: " if check.code == "SPL401" else "")
            + check.message
            + (f" It feeds {', '.join(feeds)}." if feeds else ""),
            fix=check.fix,
            node=reader,
            relation=relation,
            code=check.code,
        )


def _readers(graph: Graph, reader: str, candidates: set[str]) -> set[str]:
    """``reader`` itself if it is in the plan, or the planned nodes it feeds through sources."""
    if reader in candidates:
        return {reader}
    node = graph.nodes.get(reader)
    if node is None or node.kind not in PASS_THROUGH:
        return set()
    out: set[str] = set()
    stack, seen = [reader], {reader}
    while stack:
        cur = stack.pop()
        for c in graph.children(cur):
            if c in seen:
                continue
            seen.add(c)
            if c in candidates:
                out.add(c)
            elif graph.nodes[c].kind in PASS_THROUGH:
                stack.append(c)
    return out


def make_plan(
    ws: Workspace,
    selector: str | None = None,
    *,
    exclude: str | None = None,
    execution_time: datetime | date | str | None = None,
    observe: bool = True,
    fresh: bool = False,
    code: str | None = None,
) -> Plan:
    """The plan for ``ws.target``: every selected node BUILD or REUSE, with why, in segments.

    ``execution_time`` pins SQLMesh's clock (see :func:`splice.plan.sqlmesh_view.resolve_execution_time`:
    by default a demo workspace's recorded clock, else now).  With ``observe`` (the default),
    changes SQLMesh made outside Splice are first recorded as new versions
    (:func:`splice.plan.evidence.observe_sqlmesh`); that is the only write a plan makes, and it
    happens only after the target's environments passed the checks.

    A plan that builds nothing is remembered (:mod:`splice.plan.memo`) and given again, without
    loading the tools, while nothing it rests on changed; ``fresh`` always plans from scratch.
    ``code`` is the memo's code key when the caller took it already (before the projects were
    read).
    """
    from splice.graph.selectors import select
    from splice.plan import memo as plan_memo
    from splice.plan.evidence import (
        checks_seen,
        last_attempts,
        last_builds,
        observe_sqlmesh,
        version_before,
    )
    from splice.plan.fingerprint import dbt_fingerprint, fallback_fingerprint
    from splice.plan.sqlmesh_kinds import changed_standalone_audits
    from splice.plan.sqlmesh_view import environment_state, plan_view, resolve_execution_time

    if code is None:
        code = plan_memo.code_key(ws, selector, exclude) if observe else ""
    if observe and not fresh:
        et0 = resolve_execution_time(ws, execution_time)
        hit = plan_memo.lookup(ws, selector, exclude, et0, code)
        if hit is not None:
            return hit
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    g = ws.graph()
    timings["graph"] = time.perf_counter() - t0

    t = time.perf_counter()
    selected = select(g, selector, exclude=exclude)
    excluded = set(g.nodes) - set(select(g, None, exclude=exclude)) if exclude else set()
    candidates = {n for n in selected if is_buildable(g.nodes[n])}
    timings["select"] = time.perf_counter() - t

    t = time.perf_counter()
    check_environments(ws, g, candidates)
    timings["environments"] = time.perf_counter() - t

    et = resolve_execution_time(ws, execution_time)
    formats: dict[str, str] = {p.name: p.format for p in ws.config.projects}
    environments = {p.name: ws.environment(p.name) for p in ws.config.projects}

    # SQLMesh: its own plan for the selected models, its state for every model read
    t = time.perf_counter()
    memo: dict[str, frozenset[str]] = {}
    read_projects = {
        g.nodes[u].project
        for n in candidates
        for u in input_ids(g, n, memo)
        if g.nodes[u].tool == "sqlmesh"
    } | {g.nodes[n].project for n in candidates if g.nodes[n].tool == "sqlmesh"}
    sqlmesh_projects = sorted(p for p in read_projects if formats.get(p) == "sqlmesh")
    states = {p: environment_state(ws, p, execution_time=et) for p in sqlmesh_projects}
    views: dict[str, NodeView] = {}
    also: dict[str, list[list[int]]] = {}
    audits: dict[str, Reason] = {}
    for p in sqlmesh_projects:
        audits.update(changed_standalone_audits(ws, p, states.get(p)))
        mine = [n for n in candidates if g.nodes[n].project == p]
        if not mine:
            continue
        pv = plan_view(ws, p, mine, execution_time=et, state=states.get(p))
        views.update(pv.nodes)
        also.update(pv.also_backfilled)
        timings[f"sqlmesh_plan:{p}"] = pv.seconds
    timings["sqlmesh"] = time.perf_counter() - t

    t = time.perf_counter()
    if observe and states:
        observe_sqlmesh(ws, projects=sqlmesh_projects, execution_time=et, states=states)
    store = ws.state
    builds = last_builds(store, ws.target)
    attempts = last_attempts(store, ws.target)
    timings["evidence"] = time.perf_counter() - t

    t = time.perf_counter()
    fps: dict[str, dict[str, str]] = {}
    for n in sorted(candidates):
        node = g.nodes[n]
        if node.tool == "sqlmesh":
            continue
        manifest = ws.provider(node.project)._parse() if node.tool == "dbt" else None
        mnode = (
            manifest.nodes.get(str(node.meta.get("unique_id"))) if manifest is not None else None
        )
        fps[n] = (
            dbt_fingerprint(mnode, manifest) if mnode is not None else fallback_fingerprint(node)
        )
    check_fps = check_fingerprints(ws, g, selected, excluded)
    seen = checks_seen(ws.state, ws.target, check_fps)
    timings["fingerprints"] = time.perf_counter() - t

    inp = PlanInputs(
        graph=g,
        selected=selected,
        target=ws.target,
        environments=environments,
        formats=formats,
        fingerprints=fps,
        builds=builds,
        attempts=attempts,
        sqlmesh=views,
        sqlmesh_states={nid: m for st in states.values() for nid, m in st.models.items()},
        also_backfilled=also,
        excluded=excluded,
        sqlmesh_audits=audits,
        seen_before=lambda u, seq: version_before(store, ws.target, u, seq),
        check_fingerprints=check_fps,
        checks_seen=seen,
    )
    plan = plan_from_inputs(inp, selector=selector, execution_time=et)
    plan.timings = {**{k: round(v, 4) for k, v in timings.items()}, **plan.timings}
    if observe:
        due = {
            nid: m.next_due
            for st in states.values()
            for nid, m in st.models.items()
            if not m.never_due
        }
        not_kept = plan_memo.remember(ws, plan, selector, exclude, due, code)
        plan.memo = {"code": code, "exclude": exclude, "not_kept": not_kept}
    return plan


def remember_after_run(
    ws: Workspace, plan: Plan, execution_time: datetime | str | None = None
) -> tuple[bool, str | None]:
    """After ``plan`` ran cleanly, plan once more with the graph already loaded (a fraction of a
    second) so that the next ``splice run`` with nothing new finds that no-op plan in the memo
    and loads neither tool. (whether nothing is left to build, why that no-op plan was not
    kept: None when it was).

    The memo rests on the code key taken before ``plan`` read the projects: a file edited
    while the run went on no longer matches it, so that edit is never hidden.
    """
    if not plan.memo or not plan.to_build:
        return False, None
    again = make_plan(
        ws,
        plan.selector,
        exclude=plan.memo.get("exclude"),
        execution_time=execution_time,
        fresh=True,
        code=str(plan.memo["code"]),
    )
    if again.to_build:
        return False, None
    return True, again.memo.get("not_kept")


def because(plan: Plan, node_id: str) -> str:
    """One line: "X builds because ..." / "X is reused: ..." for a decision of ``plan``."""
    d = plan.decisions.get(node_id)
    if d is None:
        return f"{node_id} is not in the plan (not selected, or not a node Splice builds)"
    verb = "builds because" if d.action == "build" else "is reused:"
    return f"{node_id} {verb} {d.because}"


def explain(
    ws: Workspace,
    node_id: str,
    *,
    selector: str | None = None,
    execution_time: datetime | date | str | None = None,
) -> str:
    """Why ``node_id`` builds or is reused in ``ws.target``, in words.

    It is decided in the plan of ``selector`` (default: every node), as `splice plan` would.
    """
    from splice.errors import NodeNotFoundError

    g = ws.graph()
    if node_id not in g.nodes:
        from splice.graph.suggest import closest

        near = closest(node_id, list(g.nodes))
        raise NodeNotFoundError(
            f"no node {node_id!r}." + (f" Closest: {', '.join(near)}." if near else ""),
            fix="use an id project:node as `splice ls` prints it",
        )
    plan = make_plan(ws, selector, execution_time=execution_time)
    lines = [because(plan, node_id)]
    d = plan.decisions.get(node_id)
    if d is not None and d.tool_view:
        tv = d.tool_view
        lines.append(
            f"  SQLMesh ({tv.get('environment')}): change {tv.get('change') or 'none'}"
            + (f", category {tv['change_category']}" if tv.get("change_category") else "")
            + f", {tv.get('missing_interval_count', 0)} missing intervals"
        )
    from splice.plan.memo import REUSED

    lines += [f"  warning: {w}" for w in plan.warnings if not w.startswith(REUSED)]
    return "\n".join(lines)


def summary(plan: Plan) -> dict[str, int]:
    """Counts of the plan's decisions: ``build`` (every decision that runs), of which
    ``checks`` run tests and audits and ``models`` build relations; ``reuse``; ``segments``."""
    from splice.plan.checks import is_check

    build = [d for d in plan.decisions.values() if d.action == "build"]
    checks = sum(1 for d in build if is_check(d))
    return {
        "build": len(build),
        "models": len(build) - checks,
        "checks": checks,
        "reuse": len(plan.decisions) - len(build),
        "segments": len(plan.segments),
    }
