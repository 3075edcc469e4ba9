"""``splice incidents`` and ``splice incident show``: what watch found, grouped and diagnosed."""

from __future__ import annotations

import click

from splice.cli.main import as_kind, cli, emit_json, kind_option, open_workspace


@cli.command("incidents")
@click.option(
    "--all", "show_all", is_flag=True, help="Also list resolved, accepted and merged incidents."
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def incidents_cmd(ctx: click.Context, show_all: bool, as_json: bool) -> None:
    """List the target's incidents (open ones, and those Splice repaired that wait for a person
    to close them, unless --all), newest first."""
    from rich.markup import escape

    from splice.api import list_incidents
    from splice.cli.render import console

    with open_workspace(ctx) as ws:
        found = list_incidents(ws, status=None if show_all else ["open", "repaired"])
    if as_json:
        emit_json([i.as_dict(with_diagnosis=False) for i in found])
        return
    c = console()
    if not found:
        c.print(
            "[green]No open incidents.[/]"
            if not show_all
            else "[green]No incidents.[/]" + " (splice watch opens them when it finds anomalies)"
        )
        return
    for i in found:
        colour = {"open": "yellow", "repaired": "cyan"}.get(i.status, "dim")
        c.print(
            f"[bold]{i.incident_id}[/] [{colour}]{i.status}[/] {escape(i.title)}  "
            f"[dim]{i.anomalies} anomalies, origin {escape(i.origin_node or '?')}[/]"
        )
    c.print("[dim]splice incident show ID explains one: cause, evidence, blast radius, scope.[/]")


@cli.group("incident")
def incident_group() -> None:
    """One incident: its diagnosis, and accepting its new level as the normal."""


@incident_group.command("show")
@click.argument("incident_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the whole diagnosis).")
@click.pass_context
def incident_show_cmd(ctx: click.Context, incident_id: str, as_json: bool) -> None:
    """Where INCIDENT_ID starts, its cause, evidence, blast radius and scope."""
    from rich.markup import escape

    from splice.api import incident, incident_lines
    from splice.cli.render import console

    with open_workspace(ctx) as ws:
        inc = incident(ws, incident_id)
    if as_json:
        emit_json(inc.as_dict())
        return
    c = console()
    for n, line in enumerate(incident_lines(inc)):
        head = not line.startswith(" ") and ":" in line[:18]
        c.print(f"[bold]{escape(line)}[/]" if n == 0 else
                (f"[bold]{escape(line.split(':', 1)[0])}:[/]{escape(line.split(':', 1)[1])}"
                 if head else escape(line)), soft_wrap=True)  # fmt: skip


@incident_group.command("accept-level")
@click.argument("incident_id")
@click.option("--as", "actor", default=None, metavar="NAME",
              help="Decide under this name (only where [policy] allow_as = true; default: your "
              "login).")  # fmt: skip
@kind_option
@click.option("--note", default=None, help="Why the new level is right (goes into the audit log).")
@click.option(
    "--series",
    "series",
    multiple=True,
    metavar="K=V",
    help="Only this series (repeatable): its dimensions (currency=JPY) or a metric's name; the "
    "others stay open.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the decision as JSON.")
@click.pass_context
def incident_accept_level_cmd(
    ctx: click.Context,
    incident_id: str,
    actor: str | None,
    note: str | None,
    series: tuple[str, ...],
    as_json: bool,
) -> None:
    """Accept INCIDENT_ID's new level as the normal (a named owner of the domain where it
    starts): each series is judged against it from where its fault started."""
    from splice.api import accept_level, cli_principal

    ctx.meta["notify_after"] = True  # the channels hear of the decision
    with open_workspace(ctx) as ws:
        who = cli_principal(ws, actor, as_kind())
        r = accept_level(ws, incident_id, principal=who, note=note, series=list(series) or None)
    if as_json:
        emit_json(r.as_dict())
        return
    starts = sorted({a["since"] for a in r.accepted})
    click.echo(
        f"{r.incident_id}: new level of {r.levels} series accepted by {who.label()}"
        f" (from {starts[0]}{'..' + starts[-1] if len(starts) > 1 else ''})."
    )
    if r.status == "accepted":
        click.echo(f"{r.incident_id} is closed (accepted); later intervals are judged against "
                   "the new level.")  # fmt: skip
    else:
        click.echo(
            f"{r.incident_id} stays open: {len(r.remaining)} series without an accepted level. "
            f"Accept them: splice incident accept-level {r.incident_id}"
            + (f" --as {who.name}" if actor is not None else "")
        )


@incident_group.command("close")
@click.argument("incident_id")
@click.option("--as", "actor", default=None, metavar="NAME",
              help="Decide under this name (only where [policy] allow_as = true; default: your "
              "login).")  # fmt: skip
@kind_option
@click.option("--note", default=None, help="What you checked (goes into the audit log).")
@click.option("--json", "as_json", is_flag=True, help="Print the decision as JSON.")
@click.pass_context
def incident_close_cmd(
    ctx: click.Context, incident_id: str, actor: str | None, note: str | None, as_json: bool
) -> None:
    """Close INCIDENT_ID, which Splice repaired by itself at L3 (status repaired), after reading
    its receipt (a named owner of the domain where it starts)."""
    from splice.api import cli_principal, close_incident

    with open_workspace(ctx) as ws:
        who = cli_principal(ws, actor, as_kind())
        r = close_incident(ws, incident_id, principal=who, note=note)
    if as_json:
        emit_json(r.as_dict())
        return
    click.echo(f"{r.incident_id} closed by {who.label()}.")
