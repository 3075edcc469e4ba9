"""``splice state``: where Splice keeps its own state."""

from __future__ import annotations

import click

from splice.cli.main import cli, emit_json, open_workspace


@cli.group("state")
def state_group() -> None:
    """Splice's own state (graph cache, evidence, journal, metric history, incidents,
    proposals, audit log)."""


@state_group.command("migrate")
@click.option(
    "--to",
    "to",
    required=True,
    help="An empty PostgreSQL database: postgresql+psycopg://USER[:PASSWORD]@HOST:PORT/DB.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def state_migrate_cmd(ctx: click.Context, to: str, as_json: bool) -> None:
    """Move this workspace's SQLite state into PostgreSQL, nothing lost: every table copied in
    one transaction, row counts and the audit chain verified on the target. The SQLite file is
    left as it was; put the printed [state] lines in splice.toml to use the new one."""
    from splice.api import move_state

    with open_workspace(ctx) as ws:
        r = move_state(ws, to, progress=None if as_json else click.echo)
    if as_json:
        emit_json(r.as_dict())
        return
    click.echo(
        f"Moved {sum(r.tables.values()):,} rows in {len(r.tables)} tables to {r.target}; "
        f"counts equal; audit log intact ({r.audit_entries} entries); state {r.state_id}."
    )
    click.echo(
        "Put this in splice.toml (the password, if any, in [state] password_env's variable):"
    )
    click.echo(f'\n[state]\nurl = "{r.target}"')
