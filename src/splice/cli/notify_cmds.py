"""``splice notify``: test the ``[[notify]]`` channels, send what is due, show the outbox.

Decision commands (see :data:`splice.cli.main.NOTIFY_AFTER`) deliver by themselves once their
result is printed; ``splice notify send`` is for cron (or after commands run elsewhere).
"""

from __future__ import annotations

import time

import click

from splice.cli.main import cli, emit_json, open_workspace


@cli.group("notify")
def notify_group() -> None:
    """Notifications to the [[notify]] channels of splice.toml (webhook, Slack, email)."""


@notify_group.command("test")
@click.option("--channel", default=None, metavar="NAME", help="Only this channel. Default: all.")
@click.option("--json", "as_json", is_flag=True, help="Print the result per channel as JSON.")
@click.pass_context
def notify_test_cmd(ctx: click.Context, channel: str | None, as_json: bool) -> None:
    """Send a test message to every channel (or one); exit 1 when one fails."""
    from splice.api import notify_test

    with open_workspace(ctx) as ws:
        results = notify_test(ws, channel=channel)
    if as_json:
        emit_json(results)
    else:
        for r in results:
            if r["ok"]:
                click.echo(f"{r['channel']} ({r['type']}): delivered in {r['seconds']:.2f} s")
            else:
                click.secho(f"{r['channel']} ({r['type']}): FAILED: {r['error']}", fg="red")
    if not all(r["ok"] for r in results):
        ctx.exit(1)


@notify_group.command("send")
@click.option("--json", "as_json", is_flag=True, help="Print the delivery report as JSON.")
@click.pass_context
def notify_send_cmd(ctx: click.Context, as_json: bool) -> None:
    """Apply expiry and escalation, then send every notification that is due (for cron)."""
    from splice.api import housekeeping

    with open_workspace(ctx) as ws:
        r = housekeeping(ws)
    if as_json:
        emit_json(r.as_dict())
        return
    click.echo(f"{r.queued} queued, {r.delivered} delivered, {r.retrying} to retry, "
               f"{r.failed} given up; {r.pending} waiting.")  # fmt: skip
    for e in r.errors:
        click.secho(f"  {e}", fg="yellow")


@notify_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the outbox as JSON.")
@click.pass_context
def notify_status_cmd(ctx: click.Context, as_json: bool) -> None:
    """The channels, and the notifications waiting or given up (with their last error)."""
    from splice.api import notify_status

    with open_workspace(ctx) as ws:
        s = notify_status(ws)
    if as_json:
        emit_json(s)
        return
    if not s["channels"]:
        click.echo("No [[notify]] channels in splice.toml (docs/configuration.md shows how).")
    for c in s["channels"]:
        events = "all events" if c["events"] == "all" else ", ".join(c["events"])
        kind = f"{c['type']}/{c['format']}" if c["format"] else c["type"]
        click.echo(f"{c['name']} ({kind}): {events}")
    n = s["counts"]
    click.echo(f"{n['delivered']} delivered, {n['pending'] + n['sending']} waiting, "
               f"{n['failed']} failed.")  # fmt: skip
    for w in s["waiting"]:
        due = ""
        if w["next_attempt_at"]:
            due = f", next try {time.strftime('%H:%M:%S', time.localtime(w['next_attempt_at']))}"
        click.echo(f"  #{w['id']} {w['status']} -> {w['channel']}: {w['summary']} "
                   f"({w['attempts']} attempt(s){due})"
                   + (f": {w['last_error']}" if w["last_error"] else ""))  # fmt: skip
