"""``splice proposals``, ``approve``, ``reject``, ``stop``, ``resume``, ``undo``, ``audit-log``."""

from __future__ import annotations

from typing import Any

import click

from splice.cli.main import as_kind, cli, emit_json, kind_option, open_workspace
from splice.support.numbers import count

#: ``--as NAME``: honoured only where splice.toml's [policy] allow_as is true.
AS_HELP = "Decide under this name (only where [policy] allow_as = true; default: your login)."


def _say(msg: str) -> None:
    click.echo(msg, err=True)


def waiting_text(status: dict[str, Any]) -> str:
    """``finance (lee)``: the domains that still have to approve, with their owners."""
    return "; ".join(f"{w['domain']} ({', '.join(w['owners']) or 'no owners'})"
                     for w in status.get("waiting_for") or [])  # fmt: skip


def _line(p: Any, asked: list[str], status: dict[str, Any]) -> str:
    from rich.markup import escape

    colour = {"pending": "yellow", "approved": "cyan", "applied": "green", "failed": "red",
              "undone": "magenta"}.get(p.status, "dim")  # fmt: skip
    from splice.support.principals import describe

    waiting = f"; asked: {', '.join(asked)}" if p.status == "pending" and asked else ""
    if p.status == "pending" and status.get("waiting_for"):
        waiting += f"; waiting for: {waiting_text(status)}"
    doms = status.get("domains") or [p.domain]
    where = f"domain {doms[0]}" if len(doms) == 1 else f"domains {', '.join(doms)}"
    if status.get("unowned"):
        where += f" (in no domain: {', '.join(status['unowned'])})"
    by = describe(p.requester) if p.requester else p.created_by
    return (f"[bold]{p.proposal_id}[/] [{colour}]{p.status}[/] {escape(p.title)}  "
            f"[dim]{p.incident_id}, {escape(where)}, by {escape(by)}{escape(waiting)}[/]")  # fmt: skip


@cli.command("proposals")
@click.option("--all", "show_all", is_flag=True, help="Also list rejected, expired and undone.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def proposals_cmd(ctx: click.Context, show_all: bool, as_json: bool) -> None:
    """List the target's repair proposals, newest first (expiry and escalation applied)."""
    from splice.api import approval_status, list_proposals
    from splice.cli.render import console

    with open_workspace(ctx) as ws:
        found = [(p, asked, approval_status(ws, p))
                 for p, asked in list_proposals(ws, include_closed=show_all)]  # fmt: skip
    if as_json:
        emit_json([{**p.as_dict(), "asked": asked, **status} for p, asked, status in found])
        return
    c = console()
    if not found:
        c.print("[green]No proposals.[/] (splice propose INCIDENT_ID drafts one)")
        return
    for p, asked, status in found:
        c.print(_line(p, asked, status), soft_wrap=True)
    c.print("[dim]splice approve ID approves one; splice receipt ID shows a done one.[/]")


@cli.command("approve")
@click.argument("proposal_id")
@click.option("--as", "actor", default=None, metavar="NAME", help=AS_HELP)
@kind_option
@click.option("--comment", default=None, help="Why (goes into the audit log).")
@click.option("--json", "as_json", is_flag=True, help="Print the proposal as JSON.")
@click.pass_context
def approve_cmd(
    ctx: click.Context, proposal_id: str, actor: str | None, comment: str | None, as_json: bool
) -> None:
    """Approve PROPOSAL_ID for the domains it touches that you own (never the one who asked
    for it); it is approved once an owner of every domain it touches has."""
    from splice.api import approval_status, approve, cli_principal

    with open_workspace(ctx) as ws:
        who = cli_principal(ws, actor, as_kind())
        p = approve(ws, proposal_id, principal=who, comment=comment)
        status = approval_status(ws, p)
    if as_json:
        emit_json({**p.as_dict(), **status})
        return
    again = f" --as {who.name}" if actor is not None else ""
    if p.status == "pending":
        mine = [d for d, names in status["approved_for"].items() if who.name in names]
        click.echo(
            f"{p.proposal_id} approved for {', '.join(mine)} by {who.label()}; it stays pending, "
            f"waiting for {waiting_text(status)}: splice approve {p.proposal_id}"
        )
        return
    click.echo(
        f"{p.proposal_id} approved by {who.label()}. Run it: splice apply {p.proposal_id}{again}"
    )


@cli.command("reject")
@click.argument("proposal_id")
@click.option("--as", "actor", default=None, metavar="NAME", help=AS_HELP)
@kind_option
@click.option("--reason", required=True, help="Why (goes into the audit log).")
@click.option("--json", "as_json", is_flag=True, help="Print the proposal as JSON.")
@click.pass_context
def reject_cmd(
    ctx: click.Context, proposal_id: str, actor: str | None, reason: str, as_json: bool
) -> None:
    """Reject PROPOSAL_ID (an owner), or withdraw it (its proposer)."""
    from splice.api import cli_principal, reject

    with open_workspace(ctx) as ws:
        who = cli_principal(ws, actor, as_kind())
        p = reject(ws, proposal_id, principal=who, reason=reason)
    if as_json:
        emit_json(p.as_dict())
        return
    click.echo(f"{p.proposal_id} rejected by {who.label()}.")


@cli.command("stop")
@click.option("--as", "actor", default=None, metavar="NAME", help=AS_HELP)
@kind_option
@click.option("--reason", required=True, help="Why (goes into the audit log).")
@click.pass_context
def stop_cmd(ctx: click.Context, actor: str | None, reason: str) -> None:
    """Halt every approval and apply org-wide, autonomous or not, until splice resume."""
    from splice.api import cli_principal, stop

    with open_workspace(ctx) as ws:
        s, already = stop(ws, principal=cli_principal(ws, actor, as_kind()), reason=reason)
    if already:
        click.echo(f"An org-wide stop is already active ({s.who}: {s.reason!r}); nothing changed.")
    else:
        click.echo(
            f"Stopped org-wide by {s.who}: {s.reason}. A domain owner lifts it: splice resume"
        )


@cli.command("resume")
@click.option("--as", "actor", default=None, metavar="NAME", help=AS_HELP)
@kind_option
@click.pass_context
def resume_cmd(ctx: click.Context, actor: str | None) -> None:
    """Lift the org-wide stop (a domain owner)."""
    from splice.api import cli_principal, resume

    with open_workspace(ctx) as ws:
        who = cli_principal(ws, actor, as_kind())
        s = resume(ws, principal=who)
    click.echo(f"Resumed by {who.label()}; the stop by {s.who} ({s.reason!r}) is lifted.")


@cli.command("undo")
@click.argument("proposal_id")
@click.option("--as", "actor", default=None, metavar="NAME", help=AS_HELP)
@kind_option
@click.option("--json", "as_json", is_flag=True, help="Print the proposal as JSON.")
@click.pass_context
def undo_cmd(ctx: click.Context, proposal_id: str, actor: str | None, as_json: bool) -> None:
    """Put back exactly what PROPOSAL_ID's repair rewrote (checksums checked); reopen its incident."""
    from splice.api import cli_principal, undo

    with open_workspace(ctx) as ws:
        who = cli_principal(ws, actor, as_kind())
        p = undo(ws, proposal_id, principal=who, progress=_say)
    if as_json:
        emit_json(p.as_dict())
        return
    rows = sum(u.rows for u in p.undo)
    click.echo(f"{p.proposal_id} undone: {len(p.undo)} relation(s), {count(rows)} rows restored, "
               f"checksums equal. Incident {p.incident_id} is open again.")  # fmt: skip


@cli.group("audit-log")
def audit_group() -> None:
    """The append-only, hash-chained log of every repair decision and receipt."""


@audit_group.command("verify")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def audit_verify_cmd(ctx: click.Context, as_json: bool) -> None:
    """Check the log end to end: no entry edited, deleted or moved; the witness outside the
    state still held; every signature good (with [policy] decisions = "server", every
    decision signed by a server key); every receipt's head in the chain; every [audit]
    anchor holding the head. Exit 1 when one fails."""
    from splice.api import verify_audit_log

    with open_workspace(ctx) as ws:
        r = verify_audit_log(ws)
    if as_json:
        emit_json({**r.as_dict(), "not_run": r.not_run})
    elif r.intact:
        head = f"; head {r.head_seq} {r.head_hash}" if r.head_hash else ""
        click.echo(f"Audit log intact: {r.entries} entries{head}")
        for c in r.checks:
            mark = "checked" if c["ok"] else "NOT checked"
            click.echo(f"  {c['check']}: {mark}: {c['detail']}")
        for d in r.divergences:
            who = (d.get("by") or {}).get("name", "?")
            click.echo(f"  {d.get('kind', 'divergence')} accepted by {who}: {d.get('reason')} "
                       f"(from entry {d.get('from_seq', '-')} to {d.get('to_seq')})")  # fmt: skip
    else:
        click.secho(
            f"Audit log TAMPERED at entry {r.seq or '-'} ({r.problem}): {r.detail}",
            fg="red",
            err=True,
        )
    if not r.intact:
        ctx.exit(1)


@audit_group.command("accept-divergence")
@click.option("--as", "actor", default=None, help="The owner accepting ([policy] allow_as).")
@kind_option
@click.option("--reason", required=True, help="Why the log as it is now is right (recorded).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def audit_accept_cmd(ctx: click.Context, actor: str | None, reason: str, as_json: bool) -> None:
    """An owner accepts the log as it is although it no longer extends what the witness
    recorded (a state restored from a backup). Recorded in the log, the witness and every
    anchor; a chain broken inside is never accepted."""
    from splice.api import accept_divergence, cli_principal

    with open_workspace(ctx) as ws:
        out = accept_divergence(ws, principal=cli_principal(ws, actor, as_kind()), reason=reason)
    if as_json:
        emit_json(out)
        return
    click.echo(f"Divergence accepted ({out['found']}): the witness moved from entry "
               f"{out['from']['seq']} to entry {out['seq']}, recorded as entry {out['seq']}.")  # fmt: skip


@audit_group.command("rewitness")
@click.option("--as", "actor", default=None, help="The owner ([policy] allow_as).")
@kind_option
@click.option("--reason", required=True, help="Why the witness was lost (recorded).")
@click.pass_context
def audit_rewitness_cmd(ctx: click.Context, actor: str | None, reason: str) -> None:
    """An owner re-creates the witness file from the state's log after it was lost (recorded
    in the log); until then every command that writes is refused."""
    from splice.api import cli_principal, rewitness

    with open_workspace(ctx) as ws:
        out = rewitness(ws, principal=cli_principal(ws, actor, as_kind()), reason=reason)
    click.echo(f"Witness {out['witness']} re-created at entry {out['seq']} (recorded).")


@audit_group.command("anchor")
@click.pass_context
def audit_anchor_cmd(ctx: click.Context) -> None:
    """Send the witnessed head again to every [audit] anchor (after one did not answer)."""
    from splice.api import reanchor_audit_log

    with open_workspace(ctx) as ws:
        out = reanchor_audit_log(ws)
    names = ", ".join(out["anchors"]) or "none configured"
    click.echo(f"Head entry {out['seq']} sent to: {names}.")


@audit_group.command("server-key")
@click.pass_context
def audit_server_key_cmd(ctx: click.Context) -> None:
    """Print the public key splice serve signs entries with (made when missing): list it in
    [policy] server_keys."""
    from splice.api import server_key

    with open_workspace(ctx) as ws:
        click.echo(server_key(ws))


@audit_group.command("show")
@click.argument("proposal_id", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def audit_show_cmd(ctx: click.Context, proposal_id: str | None, as_json: bool) -> None:
    """Every entry of the log (of PROPOSAL_ID only, when given), oldest first."""
    import time

    from rich.markup import escape

    from splice.api import audit_entries
    from splice.cli.render import console
    from splice.support.names import printable
    from splice.support.principals import describe

    with open_workspace(ctx) as ws:
        found = audit_entries(ws, proposal_id.upper() if proposal_id else None)
    if as_json:
        emit_json([e.as_dict() for e in found])
        return
    c = console()
    if not found:
        c.print("The audit log is empty." if not proposal_id else f"No entries for {proposal_id}.")
        return
    for e in found:
        at = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e.at))
        payload = e.as_dict()["payload"]
        comment = payload.get("comment") if isinstance(payload, dict) else None
        who = payload.get("principal") if isinstance(payload, dict) else None
        who = describe(who) if isinstance(who, dict) else e.actor  # older entries: a name only
        about = e.proposal_id or (payload.get("incident_id") if isinstance(payload, dict) else None)
        c.print(f"{e.seq:>4} {at} [bold]{e.kind}[/] {escape(printable(who))}"
                + (f" {escape(printable(str(about)))}" if about else "")
                + (f" [dim]{escape(printable(str(comment)))}[/]" if comment else "")
                + f" [dim]{e.hash[:12]}[/]", soft_wrap=True)  # fmt: skip
