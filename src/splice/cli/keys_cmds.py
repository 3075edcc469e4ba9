"""``splice keys create | list | revoke``: API keys for ``splice serve`` (only hashes are kept)."""

from __future__ import annotations

import click

from splice.cli.main import cli, emit_json, open_workspace


def _when(ts: float | None) -> str:
    import time

    return "-" if ts is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


@cli.group("keys")
def keys_group() -> None:
    """API keys: how a person or an agent authenticates to splice serve."""


@keys_group.command("create")
@click.option("--principal", "name", required=True, metavar="NAME", help="Who the key is for.")
@click.option(
    "--kind",
    type=click.Choice(["person", "agent"]),
    required=True,
    help="A person (may approve) or an agent (may only read and propose).",
)
@click.option(
    "--scopes",
    default="read,propose",
    show_default=True,
    help="Comma-separated: read, propose, approve.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the key and its record as JSON.")
@click.pass_context
def keys_create_cmd(ctx: click.Context, name: str, kind: str, scopes: str, as_json: bool) -> None:
    """Make an API key and print it ONCE (only a salted hash of it is stored)."""
    from splice.api import create_key

    with open_workspace(ctx) as ws:
        rec, raw = create_key(ws, name=name, kind=kind, scopes=scopes)
    if as_json:
        emit_json({**rec.as_dict(), "key": raw})
        return
    click.echo(f"API key {rec.key_id} for {rec.principal} ({rec.kind}; {','.join(rec.scopes)}):")
    click.echo(f"\n  {raw}\n")
    click.echo("It is shown this once; Splice keeps only its hash. Revoke it: "
               f"splice keys revoke {rec.key_id}")  # fmt: skip


@keys_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def keys_list_cmd(ctx: click.Context, as_json: bool) -> None:
    """Every API key (never a secret): id, principal, kind, scopes, created, last used, revoked."""
    from splice.api import list_keys

    with open_workspace(ctx) as ws:
        found = list_keys(ws)
    if as_json:
        emit_json([k.as_dict() for k in found])
        return
    if not found:
        click.echo("No API keys. splice keys create --principal NAME --kind person makes one.")
        return
    for k in found:
        state = f"revoked {_when(k.revoked_at)} by {k.revoked_by}" if k.revoked else "active"
        click.echo(f"{k.key_id}  {k.principal} ({k.kind}; {','.join(k.scopes)})  created "
                   f"{_when(k.created_at)} by {k.created_by}; last used {_when(k.last_used_at)}; "
                   f"{state}")  # fmt: skip


@keys_group.command("revoke")
@click.argument("key_id")
@click.pass_context
def keys_revoke_cmd(ctx: click.Context, key_id: str) -> None:
    """Revoke KEY_ID at once: it authenticates nothing after this."""
    from splice.api import cli_principal, revoke_key

    with open_workspace(ctx) as ws:
        rec = revoke_key(ws, key_id, principal=cli_principal(ws))
    click.echo(f"API key {rec.key_id} ({rec.principal}) revoked.")
