"""`splice run` and `splice runs`: run a plan with a live display; play back the run journal."""

from __future__ import annotations

import sys
import threading
import time
from datetime import datetime
from typing import Any

import click

from splice.cli.main import cli, emit_json, execution_time_option, open_workspace

_MARK = {
    "success": "[green]✓[/]",
    "noop": "[dim]·[/]",
    "failed": "[bold red]✗[/]",
    "interrupted": "[bold red]![/]",
    "skipped": "[yellow]-[/]",
    "ephemeral": "[dim]~[/]",
}
_CHECK_MARK = {"fail": "[bold red]✗[/]", "error": "[bold red]✗[/]", "warn": "[yellow]![/]"}
_STATUS_STYLE = {
    "success": "green",
    "failed": "bold red",
    "partial": "bold red",
    "interrupted": "bold red",
    "skipped": "yellow",
    "incomplete": "yellow",
    "running": "cyan",
    "pass": "green",
    "warn": "yellow",
    "fail": "bold red",
    "error": "bold red",
    "noop": "dim",
    "ephemeral": "dim",
}


def _st(status: str, text: str | None = None) -> str:
    """``text`` (default: the status) in the status's colour, markup-safe."""
    style = _STATUS_STYLE.get(status)
    body = _escape(text if text is not None else status)
    return f"[{style}]{body}[/]" if style else body


def _fmt_s(seconds: float | None) -> str:
    from splice.support.numbers import duration

    return duration(seconds)


class RunDisplay:
    """The live display of a run on stderr: one line per segment and per node, and a spinner
    naming what the tools are building. Bound to the stderr of its creation, because the tools'
    output is captured (redirected) while they run."""

    def __init__(self, *, quiet: bool = False) -> None:
        from rich.console import Console

        self.console = Console(file=sys.stderr, highlight=False, soft_wrap=True, emoji=False)
        self.quiet = quiet
        self.lock = threading.Lock()
        self.building: dict[str, float] = {}
        self.checks: dict[str, dict[str, int]] = {}
        self.status: Any = None
        if not quiet and self.console.is_terminal:
            self.status = self.console.status("planning...", spinner="dots")
            self.status.start()

    def stop(self) -> None:
        if self.status is not None:
            self.status.stop()
            self.status = None

    def _spin(self) -> None:
        if self.status is None:
            return
        if self.building:
            names = sorted(self.building, key=self.building.__getitem__)
            more = f" (+{len(names) - 1})" if len(names) > 1 else ""
            self.status.update(f"building {names[0]}{more}")
        else:
            self.status.update("working...")

    def __call__(self, ev: Any) -> None:
        if self.quiet:
            return
        with self.lock:
            self._event(ev)

    def _event(self, ev: Any) -> None:
        p = self.console.print
        d = ev.data or {}
        if ev.kind == "run_started":
            segs = d.get("segments") or []
            n_checks = int(d.get("checks") or 0)
            n = sum(len(s.get("node_ids", [])) for s in segs) - n_checks
            p(
                f"[bold]Run {ev.run_id}[/] · {len(segs)} segment{'s' if len(segs) != 1 else ''}, "
                f"{n} node{'s' if n != 1 else ''} to build"
                + (f", {n_checks} test(s)/audit(s) to run" if n_checks else "")
                + (f" · SQLMesh clock {d['execution_time']}" if d.get("execution_time") else "")
            )
            for note in d.get("notes") or []:
                p(f"  [yellow]note:[/] {_escape(str(note))}")
            if not segs:
                p("  [dim]nothing to build: every selected node is up to date[/]")
        elif ev.kind == "segment_started":
            ids = d.get("node_ids") or []
            p(
                f"[bold cyan]▶ {_escape(str(ev.segment_id))}[/] {_escape(str(ev.project))} "
                f"[dim]({d.get('format')} → {d.get('environment')}, {len(ids)} nodes)[/]"
            )
            self.checks[str(ev.segment_id)] = {}
        elif ev.kind == "node_started":
            self.building[str(ev.node_id)] = time.monotonic()
            self._spin()
        elif ev.kind == "node_reported":
            self.building.pop(str(ev.node_id), None)
            self._spin()
        elif ev.kind == "node_finished":
            self.building.pop(str(ev.node_id), None)
            self._spin()
            mark = _MARK.get(str(ev.status), "?")
            extra = []
            if ev.duration is not None:
                extra.append(_fmt_s(ev.duration))
            if ev.rows is not None:
                extra.append(f"{ev.rows} rows")
            if d.get("version") is not None:
                extra.append(f"v{d['version']}")
            line = f"  {mark} {_escape(str(ev.node_id))}" + (
                f" [dim]{' · '.join(extra)}[/]" if extra else ""
            )
            if ev.status == "skipped":
                line += f" [yellow]skipped: {_escape(str(d.get('skipped_because')))} failed[/]"
            elif ev.status in ("failed", "interrupted") and d.get("message"):
                line += f"\n      [red]{_escape(str(d['message']))}[/]"
            elif ev.status == "noop":
                line += f" [dim]{_escape(str(d.get('message') or 'up to date'))}[/]"
            elif ev.status == "ephemeral":
                line += f" [dim]ephemeral: {_escape(str(d.get('message') or 'inlined'))}[/]"
            p(line)
        elif ev.kind == "check_finished":
            self.building.pop(str(ev.node_id), None)
            counts = self.checks.setdefault(str(ev.segment_id), {})
            counts[str(ev.status)] = counts.get(str(ev.status), 0) + 1
            if ev.status in _CHECK_MARK:
                msg = d.get("message")
                p(
                    f"  {_CHECK_MARK[str(ev.status)]} check {_escape(str(ev.node_id))} {ev.status}"
                    + (f": [red]{_escape(str(msg))}[/]" if msg else "")
                )
        elif ev.kind == "segment_finished":
            counts = self.checks.get(str(ev.segment_id), {})
            checks = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
            bits = [x for x in (d.get("method"), _fmt_s(ev.duration)) if x]
            if checks:
                bits.append(f"checks: {checks}")
            p(f"  {_st(str(ev.status), f'{ev.segment_id} {ev.status}')} [dim]{' · '.join(bits)}[/]")
            if d.get("error"):
                p(f"    [red]{_escape(str(d['error']))}[/]")
            for note in d.get("notes") or []:
                p(f"    [dim]{_escape(str(note))}[/]")


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _target_text(target: str, environments: dict[str, str] | None) -> str:
    """``prod``, naming each project whose tool runs another target/environment:
    ``prod; finance: ci``."""
    other = {p: e for p, e in (environments or {}).items() if e != target}
    return target + (
        "; " + ", ".join(f"{p}: {e}" for p, e in sorted(other.items())) if other else ""
    )


def render_report(report: Any) -> None:
    from splice.cli.render import console

    c = console()
    counts = report.counts()
    parts = [
        f"{counts.get('success', 0)} built",
        f"{counts.get('noop', 0)} up to date",
        f"{counts.get('failed', 0) + counts.get('interrupted', 0)} failed",
        f"{counts.get('skipped', 0)} skipped",
    ]
    if counts.get("ephemeral"):
        parts.append(f"{counts['ephemeral']} ephemeral (inlined by dbt)")
    checks = {k[7:]: v for k, v in counts.items() if k.startswith("checks_")}
    if checks:
        parts.append("checks " + ", ".join(f"{v} {k}" for k, v in sorted(checks.items())))
    c.print(
        f"{_st(report.status, f'Run {report.run_id} {report.status}')} in {_fmt_s(report.duration)}"
        + (f" (planning {_fmt_s(report.timings['plan'])})" if report.timings.get("plan") else "")
        + " "
        f"(target {_escape(_target_text(report.target, report.environments))}): "
        + " · ".join(parts)
    )
    by_seg = {s.id: s for s in report.segments}
    for sid in report.failed_segments:
        s = by_seg[sid]
        failed = [n for n, r in report.nodes.items() if r.segment_id == sid and r.failed]
        c.print(
            f"  [bold red]failed segment {sid}[/] ({_escape(s.project)}, {s.method or s.format})"
        )
        if s.error:
            c.print(f"    {_escape(s.error)}")
        for nid in failed:
            c.print(
                f"    [red]✗ {_escape(nid)}[/]: {_escape(report.nodes[nid].message or 'failed')}"
            )
        for cid, chk in report.checks.items():
            if chk.segment_id == sid and chk.failed:
                c.print(f"    [red]✗ check {_escape(cid)}[/]: {_escape(chk.message or chk.status)}")
    skipped = report.skipped_nodes
    if skipped:
        c.print(f"  [yellow]skipped[/] (downstream of a failure): {_escape(', '.join(skipped))}")
    for note in report.notes:
        c.print(f"  [dim]note: {_escape(note)}[/]")
    c.print(f"  [dim]journal: splice runs show {report.run_id}[/]")


@cli.command("run")
@click.option(
    "-s", "--select", "select", default=None, help="Node selector (dbt syntax, across projects)."
)
@click.option("--exclude", default=None, help="Nodes to leave out (same syntax).")
@click.option(
    "--execution-time",
    default=None,
    callback=execution_time_option,
    help="The clock SQLMesh runs with (ISO date or time). Default: the plan's (a demo "
    "workspace's recorded clock, else now).",
)
@click.option(
    "--full",
    is_flag=True,
    help="Build every selected node whatever the evidence says (SQLMesh still decides its own "
    "intervals).",
)
@click.option(
    "--fresh",
    is_flag=True,
    help="Plan from scratch even when nothing changed since the last no-op plan.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the run report as JSON.")
@click.pass_context
def run_cmd(
    ctx: click.Context,
    select: str | None,
    exclude: str | None,
    execution_time: datetime | None,
    full: bool,
    fresh: bool,
    as_json: bool,
) -> None:
    """Run the plan: segments in order, each through its tool; exit 1 if a node failed."""
    from splice.api import run

    display = RunDisplay()
    command = (
        "splice run"
        + "".join(
            f" {flag} {val}"
            for flag, val in (
                ("-s", select),
                ("--exclude", exclude),
                ("--execution-time", ctx.meta.get("execution_time_text")),
            )
            if val
        )
        + (" --full" if full else "")
    )
    try:
        with open_workspace(ctx) as ws:
            report = run(
                ws,
                select,
                exclude=exclude,
                execution_time=execution_time,
                progress=display,
                command=command,
                full=full,
                fresh=fresh,
            )
    finally:
        display.stop()
    _show_report(ctx, report, as_json)


def _show_report(ctx: click.Context, report: Any, as_json: bool) -> None:
    """A run's report as JSON or a table; exit 1 when it did not succeed."""
    if as_json:
        emit_json(report.to_dict())
    else:
        render_report(report)
    if not report.ok:
        ctx.exit(1)


@cli.command("ingest")
@click.argument("job")
@click.option("--start", required=True, help="The first day to load (YYYY-MM-DD).")
@click.option("--end", required=True, help="The last day to load (YYYY-MM-DD, included).")
@click.option("--json", "as_json", is_flag=True, help="Print the run report as JSON.")
@click.pass_context
def ingest_cmd(ctx: click.Context, job: str, start: str, end: str, as_json: bool) -> None:
    """Run ingestion JOB for START..END as a journaled run (its command, or its runs in the
    orchestrator that owns it): a failed load is on record for the diagnosis; exit 1 if it
    failed."""
    from splice.api import ingest

    display = RunDisplay()
    try:
        with open_workspace(ctx) as ws:
            report = ingest(ws, job, start, end, progress=display)
    finally:
        display.stop()
    _show_report(ctx, report, as_json)


@cli.group("runs", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option(
    "-n",
    "--limit",
    default=20,
    show_default=True,
    type=click.IntRange(min=1),
    help="How many runs, newest first.",
)
@click.pass_context
def runs_group(ctx: click.Context, as_json: bool, limit: int) -> None:
    """List the runs in the journal (newest first); `splice runs show RUN_ID` plays one back."""
    if ctx.invoked_subcommand is not None:
        return
    from splice.api import list_runs

    with open_workspace(ctx) as ws:
        runs = list_runs(ws, limit=limit)
    if as_json:
        emit_json(runs)
        return
    from rich.table import Table

    from splice.cli.render import console

    if not runs:
        console().print("No runs yet. `splice run` starts one.")
        return
    t = Table(box=None, header_style="bold", pad_edge=False)
    for col in (
        "run",
        "target",
        "status",
        "started",
        "duration",
        "built",
        "failed",
        "skipped",
        "command",
    ):
        t.add_column(col, no_wrap=col in ("run", "started"))
    for r in runs:
        counts = (r.get("summary") or {}).get("counts") or {}
        t.add_row(
            r["run_id"],
            _escape(_target_text(r["target"], (r.get("summary") or {}).get("environments"))),
            _st(r["status"]),
            time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["started_at"])),
            _fmt_s(r.get("duration")),
            str(counts.get("success", "")),
            str((counts.get("failed", 0) + counts.get("interrupted", 0)) or ""),
            str(counts.get("skipped", "") or ""),
            _escape(r.get("command") or ""),
        )
    console().print(t)


@runs_group.command("show")
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def runs_show(ctx: click.Context, run_id: str, as_json: bool) -> None:
    """Play back one run's journal, event by event."""
    from splice.api import run_journal

    with open_workspace(ctx) as ws:
        data = run_journal(ws, run_id)
    if as_json:
        emit_json(data)
        return
    from splice.cli.render import console

    c = console()
    r = data["run"]
    c.print(
        f"[bold]Run {r['run_id']}[/] {_st(r['status'])} · target "
        f"{_escape(_target_text(r['target'], (r.get('summary') or {}).get('environments')))} · "
        f"pid {r['pid']} on {_escape(r['host'])} · {_escape(r.get('command') or '')}"
    )
    t0 = r["started_at"]
    for ev in data["events"]:
        d = ev.get("data") or {}
        bits = [ev["kind"]]
        if ev.get("segment_id"):
            bits.append(_escape(str(ev["segment_id"])))
        if ev.get("project") and not ev.get("node_id"):
            bits.append(_escape(str(ev["project"])))
        if ev.get("node_id"):
            bits.append(_escape(str(ev["node_id"])))
        if ev.get("status"):
            bits.append(_st(str(ev["status"])))
        if ev.get("duration") is not None:
            bits.append(f"[dim]{_fmt_s(ev['duration'])}[/]")
        if ev.get("rows") is not None:
            bits.append(f"[dim]{ev['rows']} rows[/]")
        detail = d.get("message") or d.get("error") or d.get("method") or d.get("note")
        if ev["kind"] == "run_started":
            detail = f"{len(d.get('segments') or [])} segments, planner {d.get('planner')}"
        if d.get("skipped_because"):
            detail = f"{d['skipped_because']} failed"
        line = f"  +{ev['ts'] - t0:7.2f}s  " + " ".join(bits)
        if detail:
            line += f"  [dim]{_escape(str(detail))}[/]"
        c.print(line, soft_wrap=True)
