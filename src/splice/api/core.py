"""The graph, lineage, runs, plans and incidents: the public operations on a workspace."""

from __future__ import annotations

from typing import Any

from splice.doctor.checks import Check
from splice.graph.listing import node_record
from splice.workspace.core import Workspace


def hub(root: Any, target: str | None = None, *, recheck: float | None = None) -> Any:
    """A :class:`splice.api.served.Hub` for a long-lived server: a fresh workspace per request,
    the graph shared while its files are unchanged (checked every ``recheck`` seconds,
    default ``[serve] recheck_seconds``). A missing workspace or a bad splice.toml is a
    ConfigError now, before anything is served."""
    from splice.api.served import Hub

    h = Hub(root, target)
    config = h._config()
    h.recheck = config.serve.recheck_seconds if recheck is None else recheck
    return h


def authenticator(hub: Any, settings: Any) -> Any:
    """A :class:`splice.auth.tokens.Authenticator` for ``splice serve``: bearer token -> principal
    (API keys checked against the workspace's state, OAuth tokens through the JWKS)."""
    from splice.api.repair import agent_principal, authenticate_key, reconfirm_key
    from splice.auth.tokens import Authenticator

    def check_key(raw: str) -> Any:
        with hub.workspace() as ws:
            return authenticate_key(ws, raw)

    def recheck_key(raw: str) -> Any:
        with hub.workspace() as ws:
            return reconfirm_key(ws, raw)

    def agent(principal: Any) -> Any:  # an agent's token never borrows a person's name
        with hub.workspace() as ws:
            return agent_principal(ws, principal)

    return Authenticator(settings, check_key, recheck_key, agent)


def oidc_client(settings: Any) -> Any:
    """The web page's OpenID Connect client at ``[serve.auth.oauth]``'s provider
    (:class:`splice.auth.oidc.OIDCClient`); ConfigError without a ``client_id``."""
    from splice.auth.oidc import OIDCClient

    return OIDCClient(settings.auth.oauth, f"{settings.base_url}/signin/callback")


def serve_settings(
    hub: Any, *, host: str | None = None, port: int | None = None, workers: int | None = None
) -> Any:
    """The workspace's ``[serve]`` settings with command-line overrides applied (validated as
    the file's would be)."""
    from pydantic import ValidationError

    from splice.config.serve import ServeSection
    from splice.config.workspace import load_config
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
    """Every doctor check for the workspace's current target (:mod:`splice.doctor.service`)."""
    from splice.doctor.service import doctor as _doctor

    return _doctor(ws, lineage=lineage)


def project_dialects(ws: Workspace) -> dict[str, dict[str, Any]]:
    """project -> the SQL dialect(s) its models were parsed in and where that comes from
    (:func:`splice.doctor.service.project_dialects`)."""
    from splice.doctor.service import project_dialects as _dialects

    return _dialects(ws)


def warehouses(ws: Workspace) -> dict[str, Any]:
    """Each project's warehouse as its tool resolves it (project -> WarehouseLocation, or None
    when its config can't be read); reads the tools' configs, never the warehouse."""
    from splice.doctor.service import warehouses as _warehouses

    return _warehouses(ws)


def lineage(
    ws: Workspace, ref: str, *, direction: str | None = None, depth: int | None = None
) -> dict[str, Any]:
    from splice.lineage.query import column_lineage

    return column_lineage(ws, ref, direction=direction, depth=depth)


def openlineage_facets(
    ws: Workspace, ref: str, *, direction: str | None = None, depth: int | None = None
) -> list[dict[str, Any]]:
    from splice.lineage.query import openlineage_for

    return openlineage_for(ws, ref, direction=direction, depth=depth)


def lineage_chain(ws: Workspace, ref: str) -> list[str]:
    """The direct upstream path of one column, nearest first, one hop per depth.

    For the demo: the Q3 close figure back to the rates vendor's ingestion job.
    """
    from splice.lineage.query import column_lineage

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
        "Where the Q3 close number comes from (column lineage across dbt, SQLMesh and the "
        "ingestion job):",
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
        "  splice keys create --principal maria --kind person --scopes read,propose,approve",
        "                                              # a key maria signs in with and approves, then:",
        "  splice serve                                # the web page at http://127.0.0.1:8765/ (docs/web.md)",
    ]
    url = getattr(story.build, "orchestrator", None)
    if url:  # the rates feed runs in Dagster or Airflow (stopped after the demo)
        lines.append(f"  splice ingestion                            # the feed's runs there; starts "
                     f"it again: its UI is {url}")  # fmt: skip
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
    from splice.api.grants import keep_access
    from splice.repair.recovery import recover_in_session
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
        recover=recover_in_session,
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
    """Run a :class:`splice.plan.model.Plan` made earlier (by the planner or by hand)."""
    from splice.repair.recovery import recover_in_session
    from splice.run.runner import run_plan as _run_plan

    return _run_plan(ws, plan, progress=progress, execution_time=execution_time, command=command,
                     recover=recover_in_session)  # fmt: skip


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


def incident(ws: Workspace, incident_id: str, *, live: bool = True) -> Any:
    """One incident with its diagnosis (raises NodeNotFoundError naming the known ids).

    ``live``: when an orchestrator runs the incident's source job (Dagster), the job's recent
    runs there (status, start, end, link) are read now and shown beside the load records, as
    ``diagnosis["source"]["orchestrator"]`` (with ``error`` when they could not be read)."""
    from splice.reads.connectors import orchestrator_runs
    from splice.watch.incidents import get_incident

    inc = get_incident(ws.state.conn, incident_id)
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


def workspace_config(root: Any) -> Any:
    """The splice.toml of the workspace at ``root``, validated (:class:`WorkspaceConfig`)."""
    from pathlib import Path

    from splice.config.workspace import load_config

    return load_config(Path(root))


def redact_url(url: str) -> str:
    """A connection URL without its password.

    >>> redact_url("postgresql://me:secret@db:5432/wh")
    'postgresql://me@db:5432/wh'
    """
    from splice.state.store import redact

    return redact(url)
