"""``splice local status | stop``: the servers Splice started on this machine for the
workspace (its PostgreSQL or Spark, ``dagster-webserver``, Airflow's API server, scheduler and
DAG processor) and left running."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from splice.cli.main import cli, emit_json
from splice.cli.render import console


@cli.group("local")
def local_group() -> None:
    """Servers Splice starts on this machine for the workspace and leaves running."""


def _root(ctx: click.Context) -> Path:
    return Path(ctx.obj["workspace"]).resolve()


def _line(rec: dict[str, Any], state: str) -> str:
    from rich.markup import escape

    return f"{rec['name']:<14} {escape(rec['address']):<28} {escape(rec['home']):<22} {state}"


def _none(root: Path) -> None:
    console().print(
        f"{root} has no local server ([warehouse] local, [ingestion.dagster] local, "
        "[ingestion.airflow] local)."
    )


@local_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the servers as JSON.")
@click.pass_context
def local_status_cmd(ctx: click.Context, as_json: bool) -> None:
    """List the workspace's local servers and whether each runs now."""
    from splice.api import local_servers

    root = _root(ctx)
    servers = local_servers(root)
    if _nothing_to_list(root, servers, as_json):
        return
    for rec in servers:
        state = f"running (pid {rec['pid']})" if rec["running"] else "[dim]not running[/]"
        console().print(_line(rec, state))
    if any(rec["running"] for rec in servers):
        from splice.support.procs import local_stop_command

        console().print(f"[dim]{local_stop_command(root)} stops them.[/]")


def _nothing_to_list(root: Any, servers: list[dict[str, Any]], as_json: bool) -> bool:
    """Print the JSON, or that there is no server: True when nothing is left to list."""
    if as_json:
        emit_json(servers)
        return True
    if not servers:
        _none(root)
        return True
    return False


@local_group.command("stop")
@click.option("--json", "as_json", is_flag=True, help="Print what was stopped as JSON.")
@click.pass_context
def local_stop_cmd(ctx: click.Context, as_json: bool) -> None:
    """Stop every local server of the workspace that runs (the next command that needs one
    starts it again)."""
    from splice.api import stop_local_servers

    root = _root(ctx)
    servers = stop_local_servers(root)
    if _nothing_to_list(root, servers, as_json):
        return
    for rec in servers:
        console().print(_line(rec, "stopped" if rec["stopped"] else "[dim]was not running[/]"))
