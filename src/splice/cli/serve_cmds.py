"""``splice mcp`` (an agent's stdio server) and ``splice serve`` (a team's HTTP server)."""

from __future__ import annotations

import click

from splice.cli.main import cli


@cli.command("mcp")
@click.option(
    "--group",
    "groups",
    multiple=True,
    metavar="NAME",
    help="Serve only this tool group (repeatable): catalog, incidents, quality, connectors, "
    "repairs. Default: all of them.",
)
@click.pass_context
def mcp_cmd(ctx: click.Context, groups: tuple[str, ...]) -> None:
    """Serve Splice's tools to one agent over MCP on stdio (Claude Desktop, Cursor, Claude
    Code start it themselves). The agent reads and proposes; only a person approves."""
    from splice import api
    from splice.mcp.server import DEFAULT_GROUPS, check_groups, serve_stdio

    chosen = check_groups(groups or None, allowed=DEFAULT_GROUPS)
    hub = api.hub(ctx.obj["workspace"], ctx.obj["target"])
    serve_stdio(hub, chosen)


@cli.command("serve")
@click.option(
    "--host", default=None, help="Address to listen on. Default: [serve] host (127.0.0.1)."
)
@click.option("--port", type=int, default=None, help="Port. Default: [serve] port (8765).")
@click.option(
    "--workers", type=int, default=None, help="Server processes. Default: [serve] workers (1)."
)
@click.pass_context
def serve_cmd(ctx: click.Context, host: str | None, port: int | None, workers: int | None) -> None:
    """Serve the workspace to a team: the web page at / (sign in with the identity provider or
    an API key), MCP at /mcp (streamable HTTP) for authenticated people and agents (API keys,
    OAuth), a health endpoint at /healthz, approval escalation and notifications on time. Stop
    it with Ctrl-C."""
    from splice import api
    from splice.cli.render import console
    from splice.serve.app import check_address, run

    hub = api.hub(ctx.obj["workspace"], ctx.obj["target"])
    cfg = api.serve_settings(hub, host=host, port=port, workers=workers)
    # a host it cannot listen on, a port another process holds: said now, before the graph
    # loads (uvicorn would say it only after the warm-up, and exit 3)
    check_address(
        cfg,
        host_from="--host" if host is not None else "[serve] host (splice.toml)",
        port_from="--port" if port is not None else "[serve] port (splice.toml)",
    )
    c = console()
    c.print(
        f"Serving [bold]{hub.root}[/] at {cfg.base_url}: the web page at {cfg.base_url}/, "
        f"MCP at {cfg.resource_url} "
        f"(auth: {', '.join(cfg.auth.methods()) or 'none'}), health at {cfg.base_url}/healthz."
    )
    c.print("[dim]splice keys create --principal NAME --kind person|agent makes a key.[/]")
    run(hub, cfg)
