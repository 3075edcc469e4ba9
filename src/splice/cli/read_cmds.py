"""Reading commands: metrics and their history, anomalies, monitors, ingestion jobs,
dashboards, and one node in full. Each calls one splice.api function and renders it."""

from __future__ import annotations

from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from splice.cli.main import cli, emit_json, open_workspace


def _table(*cols: str) -> Table:
    t = Table(box=None, header_style="bold", pad_edge=False)
    for c in cols:
        t.add_column(c, overflow="fold")
    return t


def _num(v: Any) -> str:
    from splice.api import format_number

    return format_number(v) if v is not None else "-"


def _print(*items: Any) -> None:
    from splice.cli.render import console

    for item in items:
        console().print(item, soft_wrap=True)


def _last_text(last: dict[str, Any] | None) -> str:
    if not last:
        return "-"
    if "value" in last:
        return f"{_num(last['value'])} ({last['interval']})"
    if "values" in last:
        vals = ", ".join(f"{k}: {_num(v)}" for k, v in last["values"].items())
        return f"{vals} ({last['interval']})"
    return f"{_num(last.get('min'))}..{_num(last.get('max'))} over {last['series']} ({last['interval']})"


@cli.group("metrics", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option(
    "--monitors/--no-monitors",
    default=True,
    show_default=True,
    help="Also list the default monitors (not only the declared [[metrics]]).",
)
@click.pass_context
def metrics_group(ctx: click.Context, as_json: bool, monitors: bool) -> None:
    """List every metric and monitor splice watch measures; `splice metrics show NAME` shows one."""
    if ctx.invoked_subcommand is not None:
        return
    from splice.api import metrics

    with open_workspace(ctx) as ws:
        found = metrics(ws, monitors=monitors)
    if as_json:
        emit_json(found)
        return
    if not found:
        _print(
            "Nothing is watched: declare [[metrics]] in splice.toml, or give a model a time column."
        )
        return
    t = _table("metric", "kind", "node", "series", "through", "last", "open anomalies")
    for m in found:
        n = m["open_anomalies"]
        t.add_row(
            escape(m["name"]), m["kind"], escape(m["node"]), str(m["series"]),
            m["measured_through"] or "[dim]not measured[/]", escape(_last_text(m["last"])),
            f"[yellow]{n}[/]" if n else "0",
        )  # fmt: skip
    _print(t, f"[dim]{len(found)} metrics; splice metrics show NAME for one's history[/]")


@metrics_group.command("show")
@click.argument("name")
@click.option("--series", default=None, help="One series (e.g. EUR or currency=EUR).")
@click.option(
    "--last", type=click.IntRange(min=1), default=None, help="Only the newest N points per series."
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def metrics_show(
    ctx: click.Context, name: str, series: str | None, last: int | None, as_json: bool
) -> None:
    """One metric's history per series: each point, its baseline and band, and anomalies."""
    from splice.api import metric_history

    with open_workspace(ctx) as ws:
        h = metric_history(ws, name, series=series, last=last)
    if as_json:
        emit_json(h)
        return
    b = h["baseline_method"]
    _print(
        f"[bold]{escape(h['metric'])}[/] on {escape(str(h['node']))} ({h['kind']}, per {h['grain']}): "
        f"{len(h['series'])} of {h['series_total']} series, {h['anomalies']} anomalies",
        f"[dim]baseline: median and MAD of the {b['window']} {b['window_unit']}s before each "
        f"point (anomalies left out); band: median +- {b['z']:g} x scale[/]",
    )
    for s in h["series"]:
        t = _table("interval", "value", "baseline", "band", "last good", "anomalies")
        for p in s["points"]:
            band = p["band"]
            t.add_row(
                p["interval"], _num(p["value"]), _num(p["baseline"]),
                f"{_num(band[0])}..{_num(band[1])}" if band else "-", _num(p["last_good"]),
                f"[yellow]{', '.join(p['anomalies'])}[/]" if p["anomalies"] else "",
            )  # fmt: skip
        _print(f"[bold]{escape(s['series'])}[/]", t)


@metrics_group.command("discover")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def metrics_discover(ctx: click.Context, as_json: bool) -> None:
    """List the metrics the dbt projects declare in their semantic layer (MetricFlow), and the
    [[metrics]] entry that watches each."""
    from splice.api import semantic_metrics

    with open_workspace(ctx) as ws:
        found = semantic_metrics(ws)
    if as_json:
        emit_json(found)
        return
    if not found:
        _print("No dbt project declares semantic-layer metrics (metrics: in its YAML).")
        return
    t = _table("metric", "project", "type", "group_by", "computed from", "watched by")
    for m in found:
        watched = ", ".join(m["watched_by"]) or "[dim]not watched[/]"
        t.add_row(
            escape(m["name"]), escape(m["project"]), m["type"], escape(", ".join(m["dimensions"])),
            escape(str(m["node"] or "-")), watched,
        )  # fmt: skip
    _print(t)
    todo = [m for m in found if not m["watched_by"]]
    if todo:
        _print("[dim]To watch one, add its entry to splice.toml (group_by and grain optional):[/]")
        for m in todo:
            _print(escape(m["watch"]), "")


@cli.command("anomalies")
@click.option("--all", "show_all", is_flag=True, help="Also anomalies of resolved incidents.")
@click.option("-m", "--metric", default=None, help="Only this metric (or node id).")
@click.option("--since", default=None, metavar="DATE", help="Only intervals from DATE on.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def anomalies_cmd(
    ctx: click.Context, show_all: bool, metric: str | None, since: str | None, as_json: bool
) -> None:
    """List the anomalies splice watch stored (open ones unless --all), newest first."""
    from splice.api import anomalies

    with open_workspace(ctx) as ws:
        found = anomalies(ws, status=None if show_all else "open", metric=metric, since=since)
    if as_json:
        emit_json(found)
        return
    if not found:
        _print("[green]No anomalies.[/]" + ("" if show_all else " (--all: every status)"))
        return
    t = _table("interval", "metric", "series", "detector", "status", "incident", "reason")
    for a in found:
        t.add_row(
            a["interval"], escape(a["metric"]), escape(a["series"]), f"[yellow]{a['detector']}[/]",
            a["status"], a["incident"] or "", escape(a["reason"]),
        )  # fmt: skip
    _print(t, f"[dim]{len(found)} anomalies[/]")


@cli.command("monitors")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def monitors_cmd(ctx: click.Context, as_json: bool) -> None:
    """List the monitors derived from the graph, and why each is watched."""
    from splice.api import default_monitors

    with open_workspace(ctx) as ws:
        found = default_monitors(ws)
    if as_json:
        emit_json(found)
        return
    if not found:
        _print(
            "No default monitors ([watch] default_monitors is off, or no node has a time column)."
        )
        return
    t = _table("node", "monitor", "kind", "why")
    for m in found:
        t.add_row(escape(m["node"]), escape(m["measure"]), m["kind"], escape(m["why"]))
    _print(t, f"[dim]{len(found)} monitors[/]")


@cli.command("ingestion")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def ingestion_cmd(ctx: click.Context, as_json: bool) -> None:
    """List the ingestion jobs, their tables, their recent loads (dlt's _dlt_loads) and, for a
    job an orchestrator runs, its recent runs there (Dagster)."""
    from splice.api import ingestion_jobs

    with open_workspace(ctx) as ws:
        jobs = ingestion_jobs(ws)
    if as_json:
        emit_json(jobs)
        return
    if not jobs:
        _print("No [[ingestion]] jobs in splice.toml.")
        return
    for j in jobs:
        _print(f"[bold]{escape(j['node'])}[/] ({j['runner']}) {escape(j['description'] or '')}")
        for tb in j["tables"]:
            rows = f"{tb['rows']} rows" if tb["exists"] else "not built"
            _print(f"  writes {escape(tb['relation'])} ({rows}); read by "
                   f"{escape(', '.join(tb['read_by']) or '-')}")  # fmt: skip
        for ld in j["loads"][:5]:
            ok = "[green]succeeded[/]" if ld["succeeded"] else f"[red]status {ld['status']}[/]"
            _print(f"  load {escape(ld['load_id'])} {ok} at {ld['inserted_at']}")
        if len(j["loads"]) > 5:
            _print(f"  [dim](+{len(j['loads']) - 5} older loads; --json lists them)[/]")
        orch = j.get("orchestrator") or {}
        if orch:
            _print(
                f"  runs in {orch['system']}: job {escape(orch['job'])} at {escape(orch['url'])}"
            )
        if orch.get("error"):
            _print(f"  [yellow]{escape(orch['error'])}[/]")
        for run in orch.get("runs", [])[:5]:
            color = "green" if run["status"] == "SUCCESS" else "red"
            _print(f"  {orch['system']} run {escape(run['run_id'])} [{color}]{run['status']}[/] "
                   f"({escape(run['url'])})")  # fmt: skip
        if j.get("loads_note"):
            _print(f"  [dim]{escape(j['loads_note'])}[/]")


@cli.command("dashboards")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def dashboards_cmd(ctx: click.Context, as_json: bool) -> None:
    """List the dashboards, what each reads, and everything upstream of it."""
    from splice.api import dashboards

    with open_workspace(ctx) as ws:
        found = dashboards(ws)
    if as_json:
        emit_json(found)
        return
    if not found:
        _print("No dashboards ([[dashboards]] in splice.toml, or dbt exposures).")
        return
    for d in found:
        inc = (f" [yellow]open incidents: {', '.join(d['open_incidents'])}[/]"
               if d["open_incidents"] else "")  # fmt: skip
        _print(
            f"[bold]{escape(d['label'])}[/] ({escape(d['id'])}, {escape(d['source'])}){inc}",
            f"  reads {escape(', '.join(r['node'] for r in d['reads']) or '-')}",
            f"  upstream ({len(d['upstream'])}): {escape(', '.join(d['upstream']))}",
        )
        if d["metrics"]:
            _print(f"  watched on the way: {escape(', '.join(d['metrics']))}")


@cli.command("show")
@click.argument("node")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def show_cmd(ctx: click.Context, node: str, as_json: bool) -> None:
    """Everything about one node: columns, neighbours, domain, checks, metrics, last build."""
    from splice.api import node_details

    with open_workspace(ctx) as ws:
        d = node_details(ws, node)
    if as_json:
        emit_json(d)
        return
    dom = d["domain"]
    lines = [
        f"[bold]{escape(d['id'])}[/] {d['kind']} ({d['tool']}"
        + (f", {escape(str(d['materialization']))}" if d.get("materialization") else "")
        + ")",
    ]
    if d["description"]:
        lines.append(f"  {escape(d['description'])}")
    lines.append(f"  relation: {escape(d['relation'] or '-')}"
                 + (f"; time column {escape(d['time_column'])}" if d["time_column"] else ""))  # fmt: skip
    if dom:
        lines.append(f"  domain {escape(dom['name'])}: owners {escape(', '.join(dom['owners']))}"
                     f" (autonomy {dom['autonomy']})")  # fmt: skip
    b = d["last_build"]
    lines.append(f"  last build: v{b['version']} at {b['built_at']} (run {b['run_id']})"
                 if b else "  last build: none recorded in this target")  # fmt: skip
    lines.append(f"  parents: {escape(', '.join(p['id'] for p in d['parents']) or '-')}")
    kids = [c["id"] for c in d["children"] if c["id"] not in d["checks"]]
    lines.append(f"  children: {escape(', '.join(kids) or '-')}")
    if d["checks"]:
        lines.append(f"  checks: {len(d['checks'])}")
    if d["metrics"] or d["open_anomalies"]:
        lines.append(f"  metrics: {escape(', '.join(d['metrics']) or '-')}; "
                     f"open anomalies: {d['open_anomalies']}")  # fmt: skip
    _print(*lines)
    if d["columns"]:
        t = _table("column", "type", "description")
        for c in d["columns"]:
            t.add_row(escape(c["name"]), escape(c["type"] or "?"), escape(c["description"] or ""))
        _print(t)
