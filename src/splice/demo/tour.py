"""What the demo prints when it is built: the tour of the workspace (where the Q3 close number
comes from, what to look at next) and the incident story's tour (the diagnosis, the repair and
its receipt). Rich markup; ``tests/docs/test_docs_tour.py`` runs every command they show."""

from __future__ import annotations

from typing import Any

from splice import api


def demo_tour(result: Any) -> str:
    """What a newcomer should look at next, after `splice demo DIR`."""
    ws_dir = result.workspace
    chain: list[str] = []
    try:
        with api.Workspace.open(ws_dir) as ws:
            chain = api.lineage_chain(ws, "finance:fct_gmv_qtd.gmv_usd_qtd")
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
    lines += _bi_lines(getattr(result, "bi", None))
    return "\n".join(lines)


def _bi_lines(dashboard: str | None) -> list[str]:
    """With --bi superset: where the dashboard is, and what reads it (the Superset runs on)."""
    if not dashboard:
        return []
    return [
        f"The GMV dashboard in Superset: {dashboard} (user admin, password in "
        ".splice/superset/admin.json; left running: `splice local stop` stops it)",
        "  splice ls -s 'superset:*'                   # its dashboard and charts, read into the graph",
        "  splice metrics discover                     # the semantic-layer metrics dbt declares",
    ]


def story_tour(story: Any, repair: Any = None) -> str:
    """The incident story after `splice demo DIR --incident stale-rates`: what happened, the
    diagnosis of the incident watch opened, the repair and its receipt, and what to look at
    next (Rich markup)."""
    from rich.markup import escape

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
        for n, line in enumerate(api.incident_lines(inc)):
            lines.append(f"[bold yellow]{escape(line)}[/]" if n == 0 else escape(line))
        lines.append("")
    first = story.incidents[0].incident_id if story.incidents else "ID"
    pid = "PR-1"
    if repair is not None:
        pid = repair.proposal.proposal_id
        lines.append("[bold]The repair[/] (the vendor fixed its feed):")
        for n, line in enumerate(api.proposal_lines(repair.applied.proposal)):
            lines.append(f"[bold yellow]{escape(line)}[/]" if n == 0 else escape(line))
        lines.append("")
        lines.append(escape(api.receipt_markdown(repair.applied.receipt)))
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
