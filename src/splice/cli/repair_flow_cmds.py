"""``splice propose``, ``splice apply``, ``splice verify`` and ``splice receipt``: from an
incident to its receipt."""

from __future__ import annotations

import click

from splice.cli.main import as_kind, cli, emit_json, kind_option, open_workspace

AS_HELP = "Decide under this name (only where [policy] allow_as = true; default: your login)."


def _print_lines(lines: list[str]) -> None:
    from rich.markup import escape

    from splice.cli.render import console

    c = console()
    for n, line in enumerate(lines):
        c.print(f"[bold]{escape(line)}[/]" if n == 0 else escape(line), soft_wrap=True)


@cli.command("propose")
@click.argument("incident_id")
@click.option("--as", "actor", default=None, metavar="NAME", help=AS_HELP)
@kind_option
@click.option("--json", "as_json", is_flag=True, help="Print the proposal as JSON.")
@click.pass_context
def propose_cmd(ctx: click.Context, incident_id: str, actor: str | None, as_json: bool) -> None:
    """Propose the narrowest repair of INCIDENT_ID, capture its undo, and request approval."""
    from splice.api import cli_principal, proposal_lines, propose

    def say(msg: str) -> None:
        click.echo(msg, err=True)

    with open_workspace(ctx) as ws:
        p = propose(ws, incident_id, principal=cli_principal(ws, actor, as_kind()), progress=say)
    if as_json:
        emit_json(p.as_dict())
        return
    _print_lines(proposal_lines(p))
    click.echo(f"\nAn owner of domain {p.domain} approves it: splice approve {p.proposal_id}")


@cli.command("apply")
@click.argument("proposal_id")
@click.option("--as", "actor", default=None, metavar="NAME", help=AS_HELP)
@kind_option
@click.option("--json", "as_json", is_flag=True, help="Print the run, verification and receipt.")
@click.pass_context
def apply_cmd(ctx: click.Context, proposal_id: str, actor: str | None, as_json: bool) -> None:
    """Run an approved proposal as one journaled run, verify it, and write its receipt."""
    from splice.api import apply, cli_principal, receipt_markdown

    def say(msg: str) -> None:
        click.echo(msg, err=True)

    with open_workspace(ctx) as ws:
        res = apply(ws, proposal_id, principal=cli_principal(ws, actor, as_kind()), progress=say)
    if as_json:
        emit_json(res.as_dict())
    else:
        click.echo(receipt_markdown(res.receipt))
    if not res.run.ok or (res.verification is not None and not res.verification.passed):
        ctx.exit(1)


@cli.command("verify")
@click.argument("proposal_id")
@click.option("--as", "actor", default=None, metavar="NAME", help=AS_HELP)
@kind_option
@click.option("--json", "as_json", is_flag=True, help="Print the verification and receipt.")
@click.pass_context
def verify_cmd(ctx: click.Context, proposal_id: str, actor: str | None, as_json: bool) -> None:
    """Run an applied repair's verification again (after a kill during verification, or on
    demand): metrics measured afresh, nodes recomputed, the fault's own test. Exit 1 unless
    verified."""
    from splice.api import cli_principal, receipt_markdown, verify_again

    def say(msg: str) -> None:
        click.echo(msg, err=True)

    with open_workspace(ctx) as ws:
        res = verify_again(ws, proposal_id, principal=cli_principal(ws, actor, as_kind()),
                           progress=say)  # fmt: skip
    if as_json:
        emit_json(res.as_dict())
    else:
        click.echo(receipt_markdown(res.receipt))
    if not res.verification.passed:
        ctx.exit(1)


@cli.command("receipt")
@click.argument("proposal_id")
@click.option("--json", "as_json", is_flag=True, help="Print the receipt as JSON.")
@click.option("--markdown", "as_markdown", is_flag=True, help="Print the receipt as Markdown.")
@click.pass_context
def receipt_cmd(ctx: click.Context, proposal_id: str, as_json: bool, as_markdown: bool) -> None:
    """The receipt of PROPOSAL_ID: cause, scope, approver, runs, verification, undo."""
    from splice.api import receipt, receipt_markdown, receipt_standing

    with open_workspace(ctx) as ws:
        r = receipt(ws, proposal_id)
        standing = receipt_standing(ws, r["proposal"])
    if as_json:
        emit_json({**r, "audit_standing": standing})
        return
    click.echo(receipt_markdown(r))
    if standing is not None:
        h = standing["head"] or {}
        where = f"entry {h.get('seq')}, hash {str(h.get('hash'))[:12]}"
        if standing["verified"]:
            click.echo(f"\nThe head this receipt recorded in the audit log ({where}) is in the "
                       "verified chain.")  # fmt: skip
        elif not standing["in_chain"]:
            click.secho(f"\nThe head this receipt recorded ({where}) is NOT in the audit log: "
                        "the log was rewritten after it (splice audit-log verify).", fg="red")  # fmt: skip
        else:
            click.secho(f"\nThe head this receipt recorded ({where}) is in the log, but the log "
                        f"does not verify: {standing['detail']}", fg="red")  # fmt: skip
