"""The public operations, shared by the CLI, the MCP tools and the server. Each takes an open
Workspace (:func:`open_workspace`).

Every way in calls this module and nothing below it, and nothing below imports it back
(:mod:`splice.layers`, checked by tests/test_layers.py). What an interface needs from a
lower layer (a renderer, an exit status) is re-exported here as a thin wrapper.
"""

from __future__ import annotations

from typing import Any

from splice.graph.doctor import Check
from splice.graph.listing import node_record
from splice.principals import Principal
from splice.workspace import Workspace


def hub(root: Any, target: str | None = None, *, recheck: float | None = None) -> Any:
    """A :class:`splice.hub.Hub` for a long-lived server: a fresh workspace per request,
    the graph shared while its files are unchanged (checked every ``recheck`` seconds,
    default ``[serve] recheck_seconds``). A missing workspace or a bad splice.toml is a
    ConfigError now, before anything is served."""
    from splice.hub import Hub

    h = Hub(root, target)
    config = h._config()
    h.recheck = config.serve.recheck_seconds if recheck is None else recheck
    return h


def authenticator(hub: Any, settings: Any) -> Any:
    """A :class:`splice.access.Authenticator` for ``splice serve``: bearer token -> principal
    (API keys checked against the workspace's state, OAuth tokens through the JWKS)."""
    from splice.access import Authenticator

    def check_key(raw: str) -> Any:
        with hub.workspace() as ws:
            return authenticate_key(ws, raw)

    return Authenticator(settings, check_key)


def serve_settings(
    hub: Any, *, host: str | None = None, port: int | None = None, workers: int | None = None
) -> Any:
    """The workspace's ``[serve]`` settings with command-line overrides applied (validated as
    the file's would be)."""
    from pydantic import ValidationError

    from splice.config import load_config
    from splice.config_serve import ServeSection
    from splice.errors import InputError

    cfg = load_config(hub.root).serve
    changes = {
        k: v for k, v in (("host", host), ("port", port), ("workers", workers)) if v is not None
    }
    if not changes:
        return cfg
    try:
        return ServeSection.model_validate({**cfg.model_dump(), **changes})
    except ValidationError as e:
        err = e.errors()[0]
        raise InputError(
            f"--{err['loc'][0]}: {err['msg']}.", fix="see splice serve --help"
        ) from None


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
    return text_graph(ws, ids)


def text_graph(ws: Workspace, ids: list[str] | None) -> str:
    from splice.graph.render import evidence_label

    g = ws.graph()
    wanted = set(ids) if ids is not None else set(g.nodes)
    lines: list[str] = []
    projects = sorted({g.nodes[i].project for i in wanted})
    for p in projects:
        members = [i for i in g.topological_order(wanted) if g.nodes[i].project == p]
        lines.append(f"{p} ({len(members)} nodes)")
        for nid in members:
            n = g.nodes[nid]
            ups = sorted(u for u in g.parents(nid) if u in wanted)
            inner = [u for u in ups if g.nodes[u].project == p]
            lines.append(
                f"  {n.name} [{n.kind}]"
                + (f" <- {', '.join(g.nodes[u].name for u in inner)}" if inner else "")
            )
    bindings = [e for e in g.bindings if e.upstream in wanted and e.downstream in wanted]
    if bindings:
        lines.append("bindings across projects")
        for e in sorted(bindings, key=lambda e: (e.upstream, e.downstream)):
            rel = f" via {e.relation.key}" if e.relation else ""
            lines.append(f"  {e.upstream} -> {e.downstream} ({evidence_label(e)}{rel})")
    return "\n".join(lines)


def doctor(ws: Workspace, *, lineage: bool = True) -> list[Check]:
    """Every doctor check for the workspace's current target (:mod:`splice.doctor_service`)."""
    from splice.doctor_service import doctor as _doctor

    return _doctor(ws, lineage=lineage)


def warehouses(ws: Workspace) -> dict[str, Any]:
    """Each project's warehouse as its tool resolves it (project -> WarehouseLocation, or None
    when its config can't be read); reads the tools' configs, never the warehouse."""
    from splice.doctor_service import warehouses as _warehouses

    return _warehouses(ws)


def lineage(
    ws: Workspace, ref: str, *, direction: str | None = None, depth: int | None = None
) -> dict[str, Any]:
    from splice.lineage_query import column_lineage

    return column_lineage(ws, ref, direction=direction, depth=depth)


def openlineage_facets(
    ws: Workspace, ref: str, *, direction: str | None = None, depth: int | None = None
) -> list[dict[str, Any]]:
    from splice.lineage_query import openlineage_for

    return openlineage_for(ws, ref, direction=direction, depth=depth)


def lineage_chain(ws: Workspace, ref: str) -> list[str]:
    """The direct upstream path of one column, nearest first, one hop per depth.

    For the demo: the Q3 close figure back to the rates vendor's ingestion job.
    """
    from splice.lineage_query import column_lineage

    res = column_lineage(ws, ref, direction="upstream")
    chain = [ref]
    want = ref.rsplit(".", 1)[-1]
    by_depth: dict[int, list[dict[str, Any]]] = {}
    for h in res["upstream"]:
        if h["kind"] == "direct" and not h.get("self_ref"):  # not a model's own previous state
            by_depth.setdefault(h["depth"], []).append(h)
    current = f"{res['node']}.{want}"
    for depth in sorted(by_depth):
        nxt = [h for h in by_depth[depth] if h["via"] == current]
        # prefer the rate over the amount when a value has two direct inputs
        nxt.sort(
            key=lambda h: (not str(h["column"]).startswith("rate"), h["node"] or "", h["column"])
        )
        if not nxt:
            break
        current = f"{nxt[0]['node']}.{nxt[0]['column']}"
        chain.append(current + ("  (across binding)" if nxt[0]["across_binding"] else ""))
    return chain


def demo_tour(result: Any) -> str:
    """What a newcomer should look at next, after `splice demo DIR`."""
    ws_dir = result.workspace
    chain: list[str] = []
    try:
        with Workspace.open(ws_dir) as ws:
            chain = lineage_chain(ws, "finance:fct_gmv_qtd.gmv_usd_qtd")
            nodes = ws.graph().nodes
            projects = sorted({n.project for n in nodes.values()})
    except Exception as e:  # noqa: BLE001 - the build succeeded; the tour is a bonus
        projects = []
        chain = [f"(lineage unavailable: {e})"]
    counts = getattr(result, "counts", {}) or {}
    lines = [
        f"[bold green]Demo workspace built[/] in {ws_dir} "
        f"({getattr(result, 'elapsed_seconds', 0):.0f} s; {counts.get('bookings', '?')} bookings in "
        f"{counts.get('currencies', '?')} currencies, Q3 2026)",
        f"One graph over: {', '.join(projects)}",
        "",
        "Where the Q3 close number comes from (column lineage across dbt, SQLMesh and dlt):",
    ]
    lines += [f"  {'  ' * i}{'<- ' if i else ''}{step}" for i, step in enumerate(chain)]
    lines += [
        "",
        "Look next:",
        f"  cd {ws_dir}",
        "  splice ls                                   # every node of dbt, SQLMesh, ingestion, dashboards",
        "  splice graph                                # the joined graph; bindings with their evidence",
        "  splice lineage finance:exposure:q3_close --upstream",
        "                                              # from the Q3 close dashboard to the rates vendor",
        "  splice lineage pricing:fx.daily_rates.rate_to_usd --downstream",
        "  splice doctor                               # where the join is weak",
        "  splice plan                                 # BUILD or REUSE per node, and why",
        "  splice run -s pricing:fx.daily_rates+       # SQLMesh, then dbt downstream, in order",
        "  splice watch --backfill                     # baseline the numbers; detect anomalies",
        "(splice is in .venv/bin; `source .venv/bin/activate` puts it on your PATH)",
    ]
    return "\n".join(lines)


def story_tour(story: Any, repair: Any = None) -> str:
    """The incident story after `splice demo DIR --incident stale-rates`: what happened, the
    diagnosis of the incident watch opened, the repair and its receipt, and what to look at
    next (Rich markup)."""
    from rich.markup import escape

    from splice.repair.receipt import receipt_markdown
    from splice.repair.render import proposal_lines
    from splice.watch.report import incident_lines

    counts = story.run.counts()
    lines = [
        "",
        "[bold]The incident[/] (production, after the clean quarter above):",
        f"  splice watch --backfill baselined {story.baseline_points} points up to 2026-09-27: "
        f"{story.baseline_anomalies} anomalies",
        "  Monday 2026-09-28: the rates vendor re-serves Friday's rates; production runs on",
        f"  splice run {story.run.run_id}: {counts.get('success', 0)} nodes built, "
        f"{counts.get('checks_pass', 0)} audits and tests passed, "
        f"{counts.get('checks_fail', 0) + counts.get('checks_error', 0)} failed",
        f"  splice watch: {len(story.watch.anomalies)} anomalies -> "
        f"{len(story.incidents)} incident(s)",
        "",
    ]
    for inc in story.incidents:
        for n, line in enumerate(incident_lines(inc)):
            lines.append(f"[bold yellow]{escape(line)}[/]" if n == 0 else escape(line))
        lines.append("")
    first = story.incidents[0].incident_id if story.incidents else "ID"
    pid = "PR-1"
    if repair is not None:
        pid = repair.proposal.proposal_id
        lines.append("[bold]The repair[/] (the vendor fixed its feed):")
        for n, line in enumerate(proposal_lines(repair.applied.proposal)):
            lines.append(f"[bold yellow]{escape(line)}[/]" if n == 0 else escape(line))
        lines.append("")
        lines.append(escape(receipt_markdown(repair.applied.receipt)))
    lines += [
        "Look next:",
        "  splice incidents --all                      # what watch opened (and what was resolved)",
        f"  splice incident show {first} --json          # the whole diagnosis as data",
        f"  splice receipt {pid} --json                 # the receipt as data",
        "  splice audit-log verify                     # the hash-chained log of every decision",
        f"  splice undo {pid} --as maria                # put the rows back exactly as they were",
        "  splice mcp                                  # these tools for a coding agent (docs/mcp.md)",
    ]
    return "\n".join(lines)


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
    ``command`` is what the journal records as the run's command line. Repair applies killed
    mid-run are recovered first (:func:`splice.repair.recovery.recover_in_session`).
    """
    from splice.repair.recovery import recover_in_session
    from splice.run.runner import run as _run

    if fresh:
        ws.use_cache = False  # from scratch: the graph too is loaded through the tools
    return _run(
        ws,
        selector,
        exclude=exclude,
        execution_time=execution_time,
        progress=progress,
        full=full,
        fresh=fresh,
        command=command,
        recover=recover_in_session,
    )


def run_plan(
    ws: Workspace,
    plan: Any,
    *,
    progress: Any = None,
    execution_time: Any = None,
    command: str | None = None,
) -> Any:
    """Run a :class:`splice.plan.model.Plan` made earlier (by the planner or by hand)."""
    from splice.repair.recovery import recover_in_session
    from splice.run.runner import run_plan as _run_plan

    return _run_plan(ws, plan, progress=progress, execution_time=execution_time, command=command,
                     recover=recover_in_session)  # fmt: skip


def list_runs(ws: Workspace, *, limit: int = 20) -> list[dict[str, Any]]:
    """The runs in the journal, newest first (a run whose process died shows as interrupted)."""
    from pathlib import Path

    from splice.run.journal import Journal
    from splice.run.runner import recover_interrupted

    if not (ws.root / ws.config.workspace.state).exists():
        return []
    with Journal(Path(ws.state.path)) as journal:
        recover_interrupted(ws, journal)
        return [r.to_dict() for r in journal.runs(limit=limit)]


def run_journal(ws: Workspace, run_id: str) -> dict[str, Any]:
    """One run (an id or a unique prefix of one) and its events, in order."""
    from pathlib import Path

    from splice.run.journal import Journal, RunNotFoundError
    from splice.run.runner import recover_interrupted

    if not (ws.root / ws.config.workspace.state).exists():
        raise RunNotFoundError(
            f"no run {run_id!r}: the workspace has no runs yet.", fix="`splice run` starts one"
        )
    with Journal(Path(ws.state.path)) as journal:
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


def explain(ws: Workspace, node_id: str, *, selector: str | None = None) -> str:
    """Why one node builds or is reused, in words ("X builds because P changed: ...")."""
    from splice.plan.planner import explain as _explain

    return _explain(ws, node_id, selector=selector)


def evidence(ws: Workspace) -> dict[str, Any]:
    """What Splice knows was built in ``ws.target``: node id -> its latest build record."""
    from dataclasses import asdict

    from splice.plan.evidence import last_builds

    return {n: asdict(r) for n, r in sorted(last_builds(ws.state, ws.target).items())}


def list_incidents(ws: Workspace, *, status: str | None = "open") -> list[Any]:
    """The target's incidents, newest first (``status=None``: every status)."""
    from splice.watch.incidents import list_incidents as _list

    return _list(ws.state.conn, ws.target, status=status)


def incident(ws: Workspace, incident_id: str) -> Any:
    """One incident with its diagnosis (raises NodeNotFoundError naming the known ids)."""
    from splice.watch.incidents import get_incident

    return get_incident(ws.state.conn, incident_id)


# -- repair (splice.repair) -----------------------------------------------------------------------
# Every decision takes the authenticated Principal behind it (splice.principals); the rules of
# who may decide are enforced below this layer (splice.repair.access, splice.repair.approvals).
def cli_principal(ws: Workspace, as_name: str | None = None) -> Principal:
    """Who the command line decides as: the operating-system user, or ``--as NAME`` where
    splice.toml's ``[policy] allow_as`` is true (refused otherwise, saying what is recorded)."""
    from splice.repair.access import cli_principal as _cli_principal

    return _cli_principal(ws.config.policy, as_name)


def propose(ws: Workspace, incident_id: str, *, principal: Principal, progress: Any = None) -> Any:
    """Draft the narrowest repair of an incident, capture and test its undo, request approval
    (``principal``: a person or an agent with the ``propose`` scope; it is the requester)."""
    from splice.repair.flow import propose as _propose

    return _propose(ws, incident_id, principal=principal, progress=progress)


def list_proposals(ws: Workspace, *, include_closed: bool = False) -> list[tuple[Any, list[str]]]:
    """The target's proposals, newest first, each with the owners asked so far (expiry and
    escalation applied first)."""
    from splice.repair import store
    from splice.repair.approvals import asked, refresh_all
    from splice.repair.domains import domain_named
    from splice.repair.recovery import recover_interrupted_applies

    recover_interrupted_applies(ws)
    refresh_all(ws)
    closed = {"rejected", "expired", "undone", "interrupted"}
    out = []
    for p in store.list_proposals(ws.state, target=ws.target):
        if p.status in closed and not include_closed:
            continue
        who = asked(ws, p) if domain_named(ws.config, p.domain) is not None else []
        out.append((p, who))
    return out


def proposal(ws: Workspace, proposal_id: str) -> dict[str, Any]:
    """One proposal as data (expiry and escalation applied first): its steps, scope, undo and
    status, the owners asked so far, and every decision on it in order."""
    from splice.repair import store
    from splice.repair.approvals import asked, refresh
    from splice.repair.domains import domain_named

    p = refresh(ws, store.load(ws.state, proposal_id))
    who = asked(ws, p) if domain_named(ws.config, p.domain) is not None else []
    return {
        **p.as_dict(),
        "asked": who,
        "decisions": [d.as_dict() for d in store.decisions(ws.state, p.proposal_id)],
    }


def approve(
    ws: Workspace, proposal_id: str, *, principal: Principal, comment: str | None = None
) -> Any:
    """A named owner approves a pending proposal (see :mod:`splice.repair.approvals`)."""
    from splice.repair.approvals import approve as _approve

    return _approve(ws, proposal_id, principal=principal, comment=comment)


def reject(ws: Workspace, proposal_id: str, *, principal: Principal, reason: str) -> Any:
    """An owner rejects, or the proposer withdraws, an open proposal."""
    from splice.repair.approvals import reject as _reject

    return _reject(ws, proposal_id, principal=principal, reason=reason)


def apply(ws: Workspace, proposal_id: str, *, principal: Principal, progress: Any = None) -> Any:
    """Run an approved proposal as one journaled run, verify it, write the receipt."""
    from splice.repair.flow import apply as _apply

    return _apply(ws, proposal_id, principal=principal, progress=progress)


def receipt(ws: Workspace, proposal_id: str) -> dict[str, Any]:
    """The receipt of a proposal as data."""
    from splice.repair.flow import receipt as _receipt

    return _receipt(ws, proposal_id)


def undo(ws: Workspace, proposal_id: str, *, principal: Principal) -> Any:
    """Restore exactly what an applied proposal rewrote, and record it."""
    from splice.repair.undo import undo as _undo

    return _undo(ws, proposal_id, principal=principal)


def stop(ws: Workspace, *, principal: Principal, reason: str) -> tuple[Any, bool]:
    """Start the org-wide stop: (the stop, whether one was already active)."""
    from splice.repair.autonomy import stop as _stop

    return _stop(ws.state, ws.config, principal=principal, reason=reason)


def resume(ws: Workspace, *, principal: Principal) -> Any:
    """Lift the org-wide stop (a domain owner); returns the stop that ended."""
    from splice.repair.autonomy import resume as _resume

    return _resume(ws.state, ws.config, principal=principal)


# -- API keys (splice.keys) -----------------------------------------------------------------------
def create_key(
    ws: Workspace,
    *,
    name: str,
    kind: str,
    scopes: str | list[str] | tuple[str, ...],
    principal: Principal | None = None,
) -> tuple[Any, str]:
    """Make an API key for ``name`` (a person or an agent, with ``scopes``): (its record, the
    key, to be shown once; only a salted hash is stored).  ``principal``: who makes it
    (default: the operating-system user), recorded in the audit log."""
    from splice.keys import create
    from splice.principals import os_user_principal

    return create(ws.state, name=name, kind=kind, scopes=scopes,
                  principal=principal or os_user_principal())  # fmt: skip


def list_keys(ws: Workspace) -> list[Any]:
    """Every API key (never a secret), oldest first, revoked ones too."""
    from splice.keys import list_keys as _list

    return _list(ws.state)


def revoke_key(ws: Workspace, key_id: str, *, principal: Principal) -> Any:
    """Revoke an API key at once; recorded in the audit log."""
    from splice.keys import revoke

    return revoke(ws.state, key_id, principal=principal)


def authenticate_key(ws: Workspace, raw_key: str) -> Principal:
    """The principal an API key stands for (auth ``api-key``, credential the key's id);
    AccessError for a malformed, unknown, wrong or revoked key."""
    from splice.keys import authenticate

    return authenticate(ws.state, raw_key)


def verify_audit_log(ws: Workspace) -> Any:
    """The audit log's chain checked end to end, and against the witness kept outside the state
    (:class:`splice.repair.auditlog.AuditReport`)."""
    from splice.repair.auditlog import verify
    from splice.state import witness

    return verify(ws.state, witness.read(ws.witness_path))


# -- for the interfaces: thin wrappers over lower layers, so that the CLI, the MCP tools and
# -- the server import splice.api only (see splice.layers) -------------------------------------
def open_workspace(
    root: Any = ".",
    target: str | None = None,
    *,
    new_state: bool = False,
    use_cache: bool | None = None,
) -> Workspace:
    """Open the workspace at ``root`` (:meth:`splice.workspace.Workspace.open`); use it as a
    context manager so that its state and tools are closed."""
    return Workspace.open(root, target, new_state=new_state, use_cache=use_cache)


def doctor_exit_status(checks: list[Check]) -> int:
    """1 when a doctor check is an error, else 0 (``splice doctor``'s exit status)."""
    from splice.graph.doctor import exit_status

    return exit_status(checks)


def plan_summary(plan: Any) -> dict[str, int]:
    """Counts of a plan's decisions: {"build", "reuse", "segments"}."""
    from splice.plan.planner import summary

    return summary(plan)


def watch(
    ws: Workspace, *, backfill: bool = False, only: list[str] | None = None, progress: Any = None
) -> Any:
    """Measure every new interval of every metric and monitor, store it and judge it
    (:func:`splice.watch.service.watch`; ``only``: these metrics; ``backfill``: all again)."""
    from splice.watch.service import watch as _watch

    return _watch(ws, backfill=backfill, only=only, progress=progress)


def incident_lines(inc: Any) -> list[str]:
    """The diagnosis of one incident (:func:`incident`), as plain lines of text."""
    from splice.watch.report import incident_lines as _lines

    return _lines(inc)


def proposal_lines(p: Any) -> list[str]:
    """A proposal as plain lines: what runs, in order; the manual alternative; undo; cost."""
    from splice.repair.render import proposal_lines as _lines

    return _lines(p)


def receipt_markdown(r: dict[str, Any]) -> str:
    """A receipt (:func:`receipt`) as Markdown, for people."""
    from splice.repair.receipt import receipt_markdown as _markdown

    return _markdown(r)


def audit_entries(ws: Workspace, proposal_id: str | None = None) -> list[Any]:
    """Every entry of the audit log (of ``proposal_id`` only, when given), oldest first."""
    from splice.repair.auditlog import entries

    return entries(ws.state, proposal_id)


# == reads for people and agents (splice.reads): the quality and connectors tool groups =========
# Kept together at the end of this module, each a thin wrapper over splice.reads; every result
# is plain JSON-ready data (dates as ISO text).
def metrics(ws: Workspace, *, monitors: bool = True) -> list[dict[str, Any]]:
    """Every metric and default monitor ``splice watch`` measures for the target, with its
    series count, how far it is measured, its newest values and its open anomalies."""
    from splice.reads.quality import metrics as _metrics

    return _metrics(ws, monitors=monitors)


def metric_history(
    ws: Workspace, name: str, *, series: str | None = None, last: int | None = None
) -> dict[str, Any]:
    """One metric's points per series, each with its rolling median/MAD baseline and band,
    and the anomalies on it (see :func:`splice.reads.quality.metric_history`)."""
    from splice.reads.quality import metric_history as _history

    return _history(ws, name, series=series, last=last)


def anomalies(
    ws: Workspace,
    *,
    status: str | None = None,
    metric: str | None = None,
    since: Any = None,
) -> list[dict[str, Any]]:
    """The stored anomalies of the target, newest interval first (``status`` is the incident's:
    open, resolved, merged; None: all)."""
    from splice.reads.quality import anomalies as _anomalies

    return _anomalies(ws, status=status, metric=metric, since=since)


def default_monitors(ws: Workspace) -> list[dict[str, Any]]:
    """The monitors derived from the graph: node, monitor, kind, column and why."""
    from splice.reads.quality import default_monitors as _monitors

    return _monitors(ws)


def ingestion_jobs(ws: Workspace) -> list[dict[str, Any]]:
    """Each ``[[ingestion]]`` job with its tables and its recent dlt loads (read-only)."""
    from splice.reads.connectors import ingestion_jobs as _jobs

    return _jobs(ws)


def dashboards(ws: Workspace) -> list[dict[str, Any]]:
    """Each dashboard (declared or a dbt exposure): what it reads and everything upstream."""
    from splice.reads.connectors import dashboards as _dashboards

    return _dashboards(ws)


def search_nodes(
    ws: Workspace, query: str, *, kind: str | None = None, limit: int = 20
) -> list[dict[str, Any]]:
    """Nodes matching ``query`` by name, columns, metrics and descriptions, best first."""
    from splice.reads.nodes import search_nodes as _search

    return _search(ws, query, kind=kind, limit=limit)


def node_details(ws: Workspace, node_id: str) -> dict[str, Any]:
    """One node: record, typed and described columns, neighbours, domain, last build."""
    from splice.reads.nodes import node_details as _details

    return _details(ws, node_id)


def format_number(v: Any) -> str:
    """A number as Splice shows it in reasons and tables (short, exact enough)."""
    from splice.watch.panel import fmt

    return fmt(v)


# -- notifications (splice.notify) ----------------------------------------------------------------
def notify_pending(ws: Workspace, *, now: float | None = None) -> Any:
    """Tell the ``[[notify]]`` channels what happened since the last call: queue the new events
    (audit-log decisions, incidents opened) and send what is due, retrying failed sends with
    backoff. Never raises because a channel failed
    (:class:`splice.notify.outbox.DeliveryReport`)."""
    from splice.notify.outbox import deliver

    return deliver(ws, now=now)


def housekeeping(ws: Workspace, *, now: float | None = None) -> Any:
    """What must happen on time without anyone asking (``splice serve`` calls it every few
    seconds): unanswered requests escalate and expire as of ``now``, then the channels are told
    (returns the :class:`splice.notify.outbox.DeliveryReport`)."""
    from splice.errors import SpliceError
    from splice.repair.approvals import refresh_all

    problem = None
    try:
        refresh_all(ws, now=now)
    except SpliceError as e:  # a decision raced this one: the next call applies it
        problem = f"expiry and escalation: {e.message}"
    report = notify_pending(ws)
    if problem:
        report.errors.insert(0, problem)
    return report


def notify_status(ws: Workspace) -> dict[str, Any]:
    """The notification outbox: channels, counts per status, deliveries not yet delivered."""
    from splice.notify.outbox import status

    return status(ws)


def notify_test(ws: Workspace, *, channel: str | None = None) -> list[dict[str, Any]]:
    """Send a test message to every ``[[notify]]`` channel (or the one named), now."""
    from splice.notify.outbox import send_test

    return send_test(ws, channel)
