"""``splice schedule`` and ``splice operator``: what ``splice serve`` does by itself.

``splice schedule list`` shows each ``[[schedule]]`` with its next tick and last outcome;
``splice schedule run NAME`` runs one now, as the server would. ``splice operator status``
adds the triggers waiting and each domain's autonomy level; ``splice operator activity`` lists
what the operator did and the rule that allowed each step.
"""

from __future__ import annotations

from typing import Any

import click

from splice.cli.main import cli, emit_json, open_workspace


@cli.group("schedule")
def schedule_group() -> None:
    """The [[schedule]] entries splice serve runs on time."""


def _last(row: dict[str, Any] | None) -> str:
    if not row:
        return "not run yet"
    when = row.get("finished_at") or row.get("started_at") or row.get("last_tick")
    return f"{row.get('outcome') or 'waiting'} ({when})" if when else "waiting for its first tick"


@schedule_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the schedules as JSON.")
@click.pass_context
def schedule_list_cmd(ctx: click.Context, as_json: bool) -> None:
    """Each schedule: its cron expression and time zone, what it does, the next tick and the
    last outcome."""
    from splice.api import operator_status

    with open_workspace(ctx) as ws:
        s = operator_status(ws)
    if as_json:
        emit_json(s["schedules"])
        return
    if not s["schedules"]:
        click.echo("No [[schedule]] in splice.toml (docs/configuration.md shows how).")
        return
    for sc in s["schedules"]:
        sel = f" --select {sc['select']}" if sc["select"] else ""
        click.echo(f"{sc['name']}: {sc['do']}{sel} on {sc['target']} at '{sc['cron']}' "
                   f"({sc['timezone']})")  # fmt: skip
        click.echo(f"  next {sc['next']}; last: {_last(sc['last'])}")


@schedule_group.command("run")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as JSON.")
@click.pass_context
def schedule_run_cmd(ctx: click.Context, name: str, as_json: bool) -> None:
    """Run the schedule NAME now (its run, its watch and the ladder after it); exit 1 when it
    did not end ok."""
    from splice.api import schedule_run

    out = schedule_run(ctx.obj["workspace"], name, target=ctx.obj["target"])
    if as_json:
        emit_json(out)
    else:
        click.echo(f"schedule {name} ({out['do']}) on {out['target']}: {out['outcome']}")
        run = out.get("run") or {}
        if run.get("run_id"):
            click.echo(f"  run {run['run_id']}: {run['status']}")
        elif run.get("held"):
            click.echo(f"  run held: {run['held']}")
        w = out.get("watch")
        if w:
            click.echo(f"  watch {w['watch_id']}: {w['points']} point(s), {w['anomalies']} "
                       f"anomalies, incidents: {', '.join(w['incidents']) or 'none'}")  # fmt: skip
            for st in w["steps"]:
                click.echo(f"  {st['level']} {st['kind']}: {st['summary']}")
        if out.get("error"):
            click.secho(f"  {out['error']}", fg="red")
    if out["outcome"] != "ok":
        ctx.exit(1)


@cli.group("operator")
def operator_group() -> None:
    """What splice serve does between plans: schedules, triggered watches, the ladder."""


@operator_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@click.pass_context
def operator_status_cmd(ctx: click.Context, as_json: bool) -> None:
    """The schedules, the watches waiting to run, each domain's level and the stop."""
    from splice.api import operator_status

    with open_workspace(ctx) as ws:
        s = operator_status(ws)
    if as_json:
        emit_json(s)
        return
    on = "on" if s["enabled"] else "off ([operator] enabled = false)"
    click.echo(f"Operator {on}; acts as {s['agent']}; clock: {s['clock']} ({s['now']})")
    if s["stop"]:
        st = s["stop"]
        runs = "scheduled runs go on" if s["run_during_stop"] else "scheduled runs are held"
        click.secho(f"Org-wide stop by {st['who']}: {st['reason']!r}; nothing is proposed or "
                    f"applied; {runs}.", fg="yellow")  # fmt: skip
    click.echo(f"Schedules: {len(s['schedules']) or 'none'}")
    for sc in s["schedules"]:
        click.echo(f"  {sc['name']} ({sc['do']} on {sc['target']}): next {sc['next']}; "
                   f"last: {_last(sc['last'])}")  # fmt: skip
    click.echo(f"Watches waiting: {len(s['waiting_triggers']) or 'none'}")
    for t in s["waiting_triggers"]:
        click.echo(f"  {t['source']} at {t['at']}")
    click.echo("Domains:" if s["domains"] else "Domains: none declared (every incident is L1)")
    for d in s["domains"]:
        click.echo(f"  {d['name']}: {d['level']} ({d['meaning']}); owners {', '.join(d['owners'])}")


@operator_group.command("activity")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 10_000))
@click.option("--json", "as_json", is_flag=True, help="Print the steps as JSON.")
@click.pass_context
def operator_activity_cmd(ctx: click.Context, limit: int, as_json: bool) -> None:
    """What the operator did, newest first: what triggered each watch and every autonomous step
    with the rule that allowed it."""
    from splice.api import operator_activity

    with open_workspace(ctx) as ws:
        rows = operator_activity(ws, limit=limit)
    if as_json:
        emit_json(rows)
        return
    if not rows:
        click.echo("The operator has done nothing yet (splice serve runs it).")
    for a in rows:
        rule = f"\n      rule: {a['rule']}" if a.get("rule") else ""
        click.echo(f"{a['at']}  {a['kind']:<16} {a['summary']}{rule}")
