"""``splice watch``: measure new intervals, keep them, report anomalies (exit 0 either way)."""

from __future__ import annotations

from typing import Any

import click

from splice.cli.main import cli, emit_json, open_workspace
from splice.support.numbers import duration


def _stderr(message: str) -> None:
    click.echo(message, err=True)


@cli.command("watch")
@click.option(
    "--backfill",
    is_flag=True,
    help="Measure every interval again (the whole history) and judge it afresh.",
)
@click.option(
    "-m",
    "--metric",
    "metrics",
    multiple=True,
    metavar="NAME",
    help="Only this metric, or this node's monitors (repeatable). Default: all.",
)
@click.option("--sql", "show_sql", is_flag=True, help="Also print each metric's query.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (metrics, points, anomalies).")
@click.pass_context
def watch_cmd(
    ctx: click.Context, backfill: bool, metrics: tuple[str, ...], show_sql: bool, as_json: bool
) -> None:
    """Measure every metric and monitor for the intervals not yet measured, and report anomalies.

    Safe after every `sqlmesh run` / `splice run` and from cron: what was measured is not
    measured again. Anomalies are reported and stored; the exit status is 0 all the same.
    """
    from splice.api import watch

    with open_workspace(ctx) as ws:
        result = watch(ws, backfill=backfill, only=list(metrics) or None, progress=_stderr)
    if as_json:
        emit_json(result.as_dict())
        return
    render_watch(result, show_sql=show_sql)


def render_watch(result: Any, *, show_sql: bool = False) -> None:
    from rich.markup import escape
    from rich.table import Table

    from splice.cli.render import console

    c = console()
    if not result.metrics:
        c.print(
            "[yellow]Nothing to watch:[/] declare [[metrics]] in splice.toml, or give a model "
            "a time column (SQLMesh time_column) for its default monitors."
        )
        return
    measured = [m for m in result.metrics if m.new_points]
    c.print(
        f"[bold]Watched[/] {len(result.metrics)} metric queries, "
        f"{sum(m.series for m in result.metrics)} series: {result.points} new point(s)"
        + (" (backfill)" if result.backfill else "")
        + f" in {duration(result.seconds)}."
    )
    if show_sql:
        for m in result.metrics:
            c.print(f"[dim]-- {escape(m.name)}[/]")
            c.print(escape(m.sql), soft_wrap=True)
    for m in measured:
        span = f"{m.measured_from or 'start'} .. {m.through}"
        c.print(
            f"  [dim]{escape(m.name)}: {m.new_points} point(s) in {m.series} series ({span})"
            + (f", measured anew ({m.reset})" if m.reset and m.reset != "new" else "")
            + "[/]"
        )
    if not result.points:
        c.print("[dim]Nothing new to measure.[/]")
    if not result.anomalies:
        c.print("[green]No anomalies.[/]")
        return
    t = Table(box=None, header_style="bold", pad_edge=False, show_lines=False)
    for col in ("interval", "metric", "series", "detector"):
        t.add_column(col, no_wrap=True)
    t.add_column("reason", overflow="fold")
    for (interval, metric, detector), group in _groups(result.anomalies):
        first = group[0]
        if len(group) <= GROUP_AT:
            for a in group:
                t.add_row(interval, escape(metric), escape(a.series), f"[yellow]{detector}[/]",
                          escape(a.reason))  # fmt: skip
            continue
        names = [", ".join(str(v) for v in a.dims.values()) for a in group]
        shown = ", ".join(names[:6]) + (f" (+{len(names) - 6})" if len(names) > 6 else "")
        t.add_row(
            interval,
            escape(metric),
            escape(f"{len(group)} series: {shown}"),
            f"[yellow]{detector}[/]",
            escape(f"e.g. {first.series}: {first.reason}"),
        )
    c.print(t)
    by_day: dict[str, int] = {}
    for a in result.anomalies:
        by_day[a.interval.isoformat()] = by_day.get(a.interval.isoformat(), 0) + 1
    days = ", ".join(f"{d} ({n})" for d, n in sorted(by_day.items()))
    n = len(result.anomalies)
    c.print(
        f"[bold yellow]{n} anomal{'y' if n == 1 else 'ies'}[/] on {days} (stored; --json lists each)"
    )
    for inc in result.incidents:
        c.print(
            f"[bold]{inc.incident_id}[/] {escape(inc.title)} "
            f"[dim]({inc.anomalies} anomalies; splice incident show {inc.incident_id})[/]"
        )


GROUP_AT = 3


def _groups(anomalies: list[Any]) -> list[tuple[tuple[str, str, str], list[Any]]]:
    out: dict[tuple[str, str, str], list[Any]] = {}
    for a in anomalies:
        out.setdefault((a.interval.isoformat(), a.metric, a.detector), []).append(a)
    return sorted(out.items())
