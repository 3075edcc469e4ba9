"""The commands. Each parses its arguments, calls one library function, and renders the result."""

from __future__ import annotations

from pathlib import Path

import click

from splice.cli.main import cli, emit_json, open_workspace
from splice.cli.render import (
    console,
    render_checks,
    render_dialects,
    render_lineage,
    render_nodes,
    working,
)


@cli.command("ls")
@click.option(
    "-s",
    "--select",
    "select",
    default=None,
    help="Node selector (dbt syntax: name, +name, name+, tag:x, kind:x, project:*).",
)
@click.option("--exclude", default=None, help="Nodes to leave out (same syntax).")
@click.option(
    "--search",
    "search",
    default=None,
    metavar="WORDS",
    help="Find nodes by name, columns, metrics and descriptions, best match first.",
)
@click.option("--kind", default=None, help="With --search: only nodes of this kind.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def ls_cmd(
    ctx: click.Context,
    select: str | None,
    exclude: str | None,
    search: str | None,
    kind: str | None,
    as_json: bool,
) -> None:
    """List the nodes of every project in one graph (or search them with --search)."""
    if search is not None:
        if select or exclude:
            raise click.UsageError("--search cannot be combined with --select or --exclude.")
        from splice.api import search_nodes
        from splice.cli.render import render_search

        with open_workspace(ctx) as ws, working("Loading the graph...", ws):
            found = search_nodes(ws, search, kind=kind)
        if as_json:
            emit_json(found)
        else:
            render_search(found, search)
        return
    if kind is not None:
        raise click.UsageError("--kind goes with --search (for a selection: -s kind:KIND).")
    from splice.api import list_nodes

    with open_workspace(ctx) as ws, working("Loading the graph...", ws):
        records = list_nodes(ws, select, exclude=exclude)
    if as_json:
        emit_json(records)
    else:
        render_nodes(records)


@cli.command("graph")
@click.option("-s", "--select", "select", default=None, help="Limit to a selection.")
@click.option("--json", "fmt", flag_value="json", help="Print JSON (nodes and edges).")
@click.option("--dot", "fmt", flag_value="dot", help="Print Graphviz DOT.")
@click.option("--mermaid", "fmt", flag_value="mermaid", help="Print a Mermaid flowchart.")
@click.pass_context
def graph_cmd(ctx: click.Context, select: str | None, fmt: str | None) -> None:
    """Print the joined graph; bindings across projects are marked with their evidence."""
    from splice.api import graph_view

    with open_workspace(ctx) as ws:
        out = graph_view(ws, select, fmt or "text")
    if fmt == "json":
        emit_json(out)
    else:
        click.echo(out)


@cli.command("lineage")
@click.argument("target_ref", metavar="NODE[.COLUMN]")
@click.option("--upstream", "direction", flag_value="upstream", help="Only walk upstream.")
@click.option("--downstream", "direction", flag_value="downstream", help="Only walk downstream.")
@click.option("--depth", type=click.IntRange(min=1), default=None, help="Stop after N hops.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option(
    "--openlineage",
    is_flag=True,
    help="Print the OpenLineage ColumnLineageDatasetFacet of each dataset.",
)
@click.pass_context
def lineage_cmd(
    ctx: click.Context,
    target_ref: str,
    direction: str | None,
    depth: int | None,
    as_json: bool,
    openlineage: bool,
) -> None:
    """Column lineage across tools, from ingestion to dashboards."""
    from splice.api import lineage, openlineage_facets

    with open_workspace(ctx) as ws, working("Loading the graph and column lineage...", ws):
        if openlineage:
            emit_json(openlineage_facets(ws, target_ref, direction=direction, depth=depth))
            return
        result = lineage(ws, target_ref, direction=direction, depth=depth)
    if as_json:
        emit_json(result)
    else:
        render_lineage(result)


@cli.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option(
    "--no-lineage", is_flag=True, help="Skip the checks that need column lineage (faster)."
)
@click.pass_context
def doctor_cmd(ctx: click.Context, as_json: bool, no_lineage: bool) -> None:
    """Check where the join of projects is weak. Exit status 1 when a check is an error."""
    from splice.api import doctor, doctor_exit_status, project_dialects

    with open_workspace(ctx) as ws, working("Running checks...", ws):
        checks = doctor(ws, lineage=not no_lineage)
        dialects = project_dialects(ws)
    if as_json:
        emit_json(
            {
                "checks": [c.to_dict() for c in checks],
                "errors": sum(c.severity == "error" for c in checks),
                "projects": dialects,
            }
        )
    else:
        render_dialects(dialects)
        render_checks(checks)
    ctx.exit(doctor_exit_status(checks))


@cli.command("demo")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--incident",
    type=click.Choice(["stale-rates"]),
    default=None,
    help="Switch on a production incident in the vendor feed.",
)
@click.option("--force", is_flag=True, help="Replace DIRECTORY if it exists.")
@click.option(
    "--warehouse",
    type=click.Choice(["duckdb", "postgres", "spark"]),
    default="duckdb",
    show_default=True,
    help="Build on a DuckDB file, on PostgreSQL, or on Apache Spark.",
)
@click.option(
    "--warehouse-url",
    help="PostgreSQL: postgresql://USER[:PASSWORD]@HOST:PORT/DATABASE to build in; Spark: its "
    "Spark Connect endpoint sc://HOST:PORT (without it, a throwaway local server Splice starts "
    "in DIRECTORY/.splice/postgres or DIRECTORY/.splice/spark).",
)
@click.option(
    "--state-url",
    help="Keep Splice's own state in this PostgreSQL database ([state] url) instead of "
    "DIRECTORY/.splice/state.db.",
)
@click.option(
    "--orchestrator",
    type=click.Choice(["dagster", "airflow"]),
    default=None,
    help="Run the rates feed as a Dagster job or an Airflow DAG (served locally on 127.0.0.1): "
    "the repair's reload is queued there.",
)
@click.option(
    "--bi",
    type=click.Choice(["superset"]),
    default=None,
    help="Serve the finance dashboards in a local Apache Superset (make superset builds it), "
    "read into the graph and annotated while an incident is open ([[bi]]).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def demo_cmd(
    ctx: click.Context,
    directory: Path,
    incident: str | None,
    force: bool,
    warehouse: str,
    warehouse_url: str | None,
    state_url: str | None,
    orchestrator: str | None,
    bi: str | None,
    as_json: bool,
) -> None:
    """Write and build the travel-marketplace demo workspace in DIRECTORY.

    With --incident stale-rates, the story goes on: the clean quarter is baselined up to
    Sunday 2026-09-27, the vendor freezes on Monday, production runs on (every audit passes),
    and splice watch opens the incident and prints its diagnosis.
    """
    from splice.demo.story import tell, throwaway_server
    from splice.demo.tour import demo_tour, story_tour

    with throwaway_server(directory, warehouse, warehouse_url):
        if as_json:
            told, fixed = tell(directory, incident=incident, force=force, warehouse=warehouse,
                               warehouse_url=warehouse_url, state_url=state_url,
                               orchestrator=orchestrator, bi=bi)  # fmt: skip
            out = told.as_dict()
            emit_json({**out, "repair": fixed.as_dict()} if fixed is not None else out)
            return
        with console().status("Building the demo workspace...") as status:
            told, fixed = tell(directory, incident=incident, force=force, warehouse=warehouse,
                               progress=status.update, warehouse_url=warehouse_url,
                               state_url=state_url, orchestrator=orchestrator, bi=bi)  # fmt: skip
        if fixed is None:
            console().print(demo_tour(told))
            return
        console().print(demo_tour(told.build))
        console().print(story_tour(told, fixed))
