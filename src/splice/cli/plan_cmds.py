"""`splice plan`: per node BUILD or REUSE and why, grouped by segment in run order."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import click

from splice.cli.main import cli, emit_json, execution_time_option, open_workspace


@cli.command("plan")
@click.option(
    "-s",
    "--select",
    "select",
    default=None,
    help="Node selector (dbt syntax: name, +name, name+, tag:x, project:*).",
)
@click.option("--exclude", default=None, help="Nodes to leave out (same syntax).")
@click.option(
    "--execution-time",
    default=None,
    callback=execution_time_option,
    metavar="TIME",
    help="Pin SQLMesh's clock (YYYY-MM-DD[THH:MM]). Default: the demo's recorded clock, else now.",
)
@click.option(
    "--fresh",
    is_flag=True,
    help="Plan from scratch even when nothing changed since the last no-op plan.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@click.pass_context
def plan_cmd(
    ctx: click.Context,
    select: str | None,
    exclude: str | None,
    execution_time: datetime | None,
    fresh: bool,
    as_json: bool,
) -> None:
    """Explain, per node of every project, whether it builds or is reused, and why."""
    from splice.api import plan as make_plan

    with open_workspace(ctx) as ws:
        plan = make_plan(ws, select, exclude=exclude, execution_time=execution_time, fresh=fresh)
    if as_json:
        emit_json(plan.to_dict())
    else:
        render_plan(plan)


def render_plan(plan: Any) -> None:
    from rich.markup import escape

    from splice.api import plan_checks, plan_summary
    from splice.cli.render import console

    c = console()
    counts = plan_summary(plan)
    envs = ", ".join(f"{p}: {e}" for p, e in plan.environments.items())
    clock = f"; SQLMesh clock {plan.execution_time}" if plan.execution_time else ""
    c.print(
        f"[bold]Plan for target {escape(plan.target)}[/] ({escape(envs)}{escape(clock)})",
        soft_wrap=True,
    )
    checks = plan_checks(plan)
    alone = sorted(
        n for n in checks if not any(r.code == "selected_test" for r in plan.decisions[n].reasons)
    )
    reused = [n for n, d in plan.decisions.items() if d.action == "reuse"]
    c.print(
        f"{counts['models']} to build, {counts['checks']} test(s)/audit(s) to run"
        + (f" ({len(alone)} on their own: new or changed)" if alone else "")
        + f" in {counts['segments']} segment{'s' if counts['segments'] != 1 else ''}, {len(reused)} reused",
        soft_wrap=True,
    )
    for seg in plan.segments:
        after = f"  after {', '.join(seg.depends_on)}" if seg.depends_on else ""
        env_word = "target" if seg.format == "dbt" else "environment"
        c.print(
            f"\n[bold cyan]{seg.id}[/] [bold]{escape(seg.project)}[/] ({seg.format}, {env_word} {escape(seg.environment)}){after}",
            soft_wrap=True,
        )
        seg_checks = [n for n in seg.node_ids if n in checks and n not in alone]
        for nid in seg.node_ids:
            if nid in checks and nid not in alone:
                continue
            d = plan.decisions[nid]
            verb = "[cyan]CHECK[/]" if nid in alone else "[green]BUILD[/]"
            c.print(f"  {verb} [bold]{escape(nid)}[/]", soft_wrap=True)
            for r in d.reasons:
                c.print(f"        {escape(r.text)}", soft_wrap=True)
        if seg_checks:
            label = "audits" if seg.format == "sqlmesh" else "tests"
            c.print(f"  [dim]+ {len(seg_checks)} {label}[/]", soft_wrap=True)
    if reused:
        c.print(f"\n[bold]Reused[/] ({len(reused)})")
        for nid in reused:
            d = plan.decisions[nid]
            notes = [r.text for r in d.reasons if r.code == "incomplete_upstream_intervals"]
            c.print(
                f"  [dim]REUSE[/] {escape(nid)}  [dim]{escape(d.reasons[0].text if d.reasons else '')}[/]",
                soft_wrap=True,
            )
            for note in notes:
                c.print(f"        [yellow]{escape(note)}[/]", soft_wrap=True)
    if plan.warnings:
        c.print("\n[bold yellow]Warnings[/]")
        for w in plan.warnings:
            c.print(f"  [yellow]![/] {escape(w)}", soft_wrap=True)
    if not plan.decisions:
        c.print(
            "[dim]Nothing selected that Splice builds (sources, ingestion jobs and dashboards are not built).[/]"
        )
