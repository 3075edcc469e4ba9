"""`splice review`: a pull request's change across tools, before it merges."""

from __future__ import annotations

import sys
from typing import Any

import click

from splice.cli.main import cli, emit_json, execution_time_option


@cli.command("review")
@click.option(
    "--base",
    required=True,
    metavar="REF",
    help="The commit the change is compared with (e.g. origin/main).",
)
@click.option(
    "--head",
    default=None,
    metavar="REF",
    help="The commit reviewed: the checked-out one (the default; naming another is an error).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the review as JSON.")
@click.option(
    "--markdown", "as_markdown", is_flag=True, help="Print a pull-request comment (Markdown)."
)
@click.option(
    "--fail-on",
    "fail_on",
    type=click.Choice(["breaking", "metric-change"]),
    multiple=True,
    help="Exit 1 when the change is breaking, or changes a declared metric (repeatable): a CI gate.",
)
@click.option(
    "--no-data",
    is_flag=True,
    help="Skip the build and the data comparison (what changed and what it reaches only).",
)
@click.option(
    "--execution-time",
    default=None,
    callback=execution_time_option,
    metavar="TIME",
    help="Pin SQLMesh's clock for its plan and the build (YYYY-MM-DD[THH:MM]). Default: the demo's recorded clock, else now.",
)
@click.option("--keep", is_flag=True, help="Leave the review environment in place for inspection.")
@click.pass_context
def review_cmd(
    ctx: click.Context,
    base: str,
    head: str | None,
    as_json: bool,
    as_markdown: bool,
    fail_on: tuple[str, ...],
    no_data: bool,
    execution_time: Any,
    keep: bool,
) -> None:
    """Review the checked-out commit against --base: what changed in each tool's terms (SQLMesh's
    change categories, dbt's state:modified reasons), which columns, metrics and dashboards it
    reaches across tools, and (built in the review target, -t or [review] target) what it does
    to the rows and the metrics, compared with prod."""
    from splice.api import review, review_markdown, review_text

    if as_json and as_markdown:
        raise click.UsageError("--json and --markdown are exclusive: choose one")
    if no_data and "metric-change" in fail_on:
        raise click.UsageError(
            "--fail-on metric-change needs the data step, which --no-data skips: drop one"
        )
    progress = None
    if not (as_json or as_markdown):
        from splice.cli.render import console

        def progress(msg: str) -> None:
            console().print(f"[dim]{msg}[/dim]", soft_wrap=True)

    result = review(
        ctx.obj["workspace"],
        base=base,
        head=head,
        data=not no_data,
        keep=keep,
        target=ctx.obj["target"],
        execution_time=execution_time,
        progress=progress,
    )
    data = result.to_dict()
    if as_json:
        emit_json(data)
    elif as_markdown:
        click.echo(review_markdown(data, result.comment_limit), nl=False)
    else:
        click.echo(review_text(data), nl=False)
    tripped = [
        f
        for f in fail_on
        if (f == "breaking" and result.breaking) or (f == "metric-change" and result.metric_changes)
    ]
    if tripped:
        click.echo(f"splice review: --fail-on {' and '.join(tripped)}: the gate fails", err=True)
        sys.exit(1)
    missing = result.not_built
    if fail_on and missing:  # a gate passes only on what was compared
        click.echo(
            f"splice review: {len(missing)} model(s) to compare were not built for the head "
            f"({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}): --fail-on "
            f"{' and '.join(fail_on)} cannot pass on data not compared; the gate fails",
            err=True,
        )
        sys.exit(1)
