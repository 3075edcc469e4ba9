"""``splice access request | list | show | approve | reject | revoke``: scoped, time-boxed read
access to the relations some nodes write, approved like a repair."""

from __future__ import annotations

import time
from typing import Any

import click

from splice.cli.main import as_kind, cli, emit_json, kind_option, open_workspace
from splice.cli.repair_cmds import AS_HELP


def _when(ts: float | None) -> str:
    return "-" if ts is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def _line(g: dict[str, Any]) -> str:
    from rich.markup import escape

    colour = {"pending": "yellow", "granted": "green", "granting": "cyan", "failed": "red"}.get(
        g["status"], "dim"
    )
    rels = ", ".join(g["relations"][:4]) + (
        f" (+{len(g['relations']) - 4})" if len(g["relations"]) > 4 else ""
    )
    if g["status"] == "pending":
        state = f"asked: {', '.join(g.get('asked') or []) or '-'}; expires {_when(g['expires_at'])}"
    elif g["status"] in ("granted", "granting"):
        state = f"until {_when(g['until'])}" + (
            f"; revoke failed: {g['last_error']}" if g.get("last_error") else ""
        )
    else:
        state = g.get("end_reason") or g["status"]
    return (f"[bold]{g['grant_id']}[/] [{colour}]{g['status']}[/] {escape(g['grantee'])} reads "
            f"{escape(rels)}  [dim]domain {g['domain']}, by {escape(g['created_by'])}; "
            f"{escape(state)}[/]")  # fmt: skip


@cli.group("access")
def access_group() -> None:
    """Read access for a while: requested, approved by an owner, granted, revoked on time."""


@access_group.command("request")
@click.argument("selector")
@click.option("--for", "grantee", required=True, metavar="NAME",
              help="Who reads: a principal ([access] roles maps it to its warehouse role) or a "
              "warehouse role.")  # fmt: skip
@click.option("--why", required=True, help="Why access is needed (shown to the owners).")
@click.option("--hours", type=float, required=True, help="How long access lasts once approved.")
@click.option("--as", "actor", default=None, metavar="NAME", help=AS_HELP)
@kind_option
@click.option("--json", "as_json", is_flag=True, help="Print the request as JSON.")
@click.pass_context
def access_request_cmd(ctx: click.Context, selector: str, grantee: str, why: str, hours: float,
                       actor: str | None, as_json: bool) -> None:  # fmt: skip
    """Ask for read access to the relations SELECTOR's nodes write in the target."""
    from splice.api import cli_principal, request_access

    with open_workspace(ctx) as ws:
        g = request_access(ws, selector, grantee=grantee, why=why, hours=hours,
                           principal=cli_principal(ws, actor, as_kind()))  # fmt: skip
    if as_json:
        emit_json(g)
        return
    click.echo(f"{g['grant_id']} asks read access for {g['grantee']} to {len(g['relations'])} "
               f"relation(s) for {g['hours']:g} h: {', '.join(g['relations'])}.")  # fmt: skip
    click.echo(f"Waiting for an owner of {g['domain']} ({', '.join(g['asked'])}): "
               f"splice access approve {g['grant_id']}")  # fmt: skip


@access_group.command("list")
@click.option("--all", "show_all", is_flag=True, help="Also list ended, rejected and expired.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def access_list_cmd(ctx: click.Context, show_all: bool, as_json: bool) -> None:
    """What is granted and until when, and what waits for an owner (newest first)."""
    from splice.api import list_access
    from splice.cli.render import console

    with open_workspace(ctx) as ws:
        found = list_access(ws, include_closed=show_all)
    if as_json:
        emit_json(found)
        return
    c = console()
    if not found:
        c.print("[green]No access granted or waiting.[/] (splice access request SELECTOR "
                "--for ROLE --why TEXT --hours N asks for some)")  # fmt: skip
        return
    for g in found:
        c.print(_line(g), soft_wrap=True)


@access_group.command("show")
@click.argument("grant_id")
@click.option("--json", "as_json", is_flag=True, help="Print the grant, decisions and receipt.")
@click.pass_context
def access_show_cmd(ctx: click.Context, grant_id: str, as_json: bool) -> None:
    """One grant: what it covers, every decision, the statements run, and its receipt."""
    from splice.api import access_grant
    from splice.cli.render import console

    with open_workspace(ctx) as ws:
        g = access_grant(ws, grant_id)
    if as_json:
        emit_json(g)
        return
    from rich.markup import escape

    c = console()
    c.print(_line(g), soft_wrap=True)
    c.print(f"  why: {escape(g['why'])}; {g['hours']:g} h; nodes: {', '.join(g['nodes'])}",
            soft_wrap=True)  # fmt: skip
    for d in g["decisions"]:
        c.print(f"  {_when(d['at'])}  {d['decision']:<9} {escape(d['actor'])} "
                f"({d['principal_kind']}, {d['principal_auth']})"
                + (f": {escape(d['comment'])}" if d["comment"] else ""), soft_wrap=True)  # fmt: skip
    for sql in g["statements"]:
        c.print(f"  [dim]granted:[/] {escape(sql)}", soft_wrap=True)
    if g["status"] in ("ended", "failed"):
        for sql in g["revoke_statements"]:
            c.print(f"  [dim]revoked:[/] {escape(sql)}", soft_wrap=True)


def _decide(ctx: click.Context, action: str, grant_id: str, actor: str | None,
            as_json: bool, **kw: Any) -> None:  # fmt: skip
    from splice import api

    with open_workspace(ctx) as ws:
        who = api.cli_principal(ws, actor, as_kind())
        g = getattr(api, f"{action}_access")(ws, grant_id, principal=who, **kw)
    if as_json:
        emit_json(g)
        return
    if action == "approve":
        click.echo(f"{g['grant_id']} approved by {who.label()}: {g['grantee']} reads "
                   f"{', '.join(g['relations'])} until {_when(g['until'])} (role {g['role']}).")  # fmt: skip
    elif action == "reject":
        click.echo(f"{g['grant_id']} rejected by {who.label()}.")
    else:
        click.echo(
            f"{g['grant_id']} revoked by {who.label()}: {g['grantee']} reads none of it now."
        )


@access_group.command("approve")
@click.argument("grant_id")
@click.option("--as", "actor", default=None, metavar="NAME", help=AS_HELP)
@kind_option
@click.option("--comment", default=None, help="Why (goes into the audit log).")
@click.option("--json", "as_json", is_flag=True, help="Print the grant as JSON.")
@click.pass_context
def access_approve_cmd(ctx: click.Context, grant_id: str, actor: str | None,
                       comment: str | None, as_json: bool) -> None:  # fmt: skip
    """Approve GRANT_ID as a named owner of its domain: access is granted now."""
    _decide(ctx, "approve", grant_id, actor, as_json, comment=comment)


@access_group.command("reject")
@click.argument("grant_id")
@click.option("--as", "actor", default=None, metavar="NAME", help=AS_HELP)
@kind_option
@click.option("--reason", required=True, help="Why (goes into the audit log).")
@click.option("--json", "as_json", is_flag=True, help="Print the grant as JSON.")
@click.pass_context
def access_reject_cmd(ctx: click.Context, grant_id: str, actor: str | None, reason: str,
                      as_json: bool) -> None:  # fmt: skip
    """Refuse a pending request (an owner), or withdraw it (its requester)."""
    _decide(ctx, "reject", grant_id, actor, as_json, reason=reason)


@access_group.command("revoke")
@click.argument("grant_id")
@click.option("--as", "actor", default=None, metavar="NAME", help=AS_HELP)
@kind_option
@click.option("--reason", required=True, help="Why (goes into the audit log).")
@click.option("--json", "as_json", is_flag=True, help="Print the grant as JSON.")
@click.pass_context
def access_revoke_cmd(ctx: click.Context, grant_id: str, actor: str | None, reason: str,
                      as_json: bool) -> None:  # fmt: skip
    """End a granted access now, before its time (an owner, or its requester)."""
    _decide(ctx, "revoke", grant_id, actor, as_json, reason=reason)
