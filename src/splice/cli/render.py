"""Rich rendering of library results for people (the --json paths bypass this)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table


@lru_cache(maxsize=1)
def console() -> Console:
    import sys

    # piped output keeps whole lines (a terminal wraps at its own width)
    return Console(highlight=False, width=None if sys.stdout.isatty() else 200)


def working(message: str):  # type: ignore[no-untyped-def]
    """A spinner on stderr while long work runs (only on a terminal; pipes stay clean)."""
    import contextlib
    import sys

    if not sys.stderr.isatty():
        return contextlib.nullcontext()
    return Console(stderr=True).status(message)


def render_nodes(records: list[dict[str, Any]]) -> None:
    t = Table(box=None, header_style="bold", pad_edge=False)
    t.add_column("id", no_wrap=True)
    for col in ("kind", "tool", "writes", "reads"):
        t.add_column(col, overflow="fold")
    for r in records:
        reads = ", ".join(r["reads"][:3]) + (
            f" (+{len(r['reads']) - 3})" if len(r["reads"]) > 3 else ""
        )
        t.add_row(escape(r["id"]), r["kind"], r["tool"], escape(r["writes"] or ""), escape(reads))
    console().print(t)
    console().print(f"[dim]{len(records)} nodes[/]")


def render_search(found: list[dict[str, Any]], query: str) -> None:
    if not found:
        console().print(f"No node matches {escape(query)!r}.")
        return
    t = Table(box=None, header_style="bold", pad_edge=False)
    t.add_column("id", no_wrap=True)
    for col in ("kind", "score", "matched"):
        t.add_column(col, overflow="fold")
    for r in found:
        t.add_row(escape(r["id"]), r["kind"], f"{r['score']:g}", escape("; ".join(r["matched"])))
    console().print(t)
    console().print("[dim]splice show ID tells everything about one.[/]")


SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def render_dialects(projects: dict[str, dict[str, Any]]) -> None:
    """One line per project: the SQL dialect its models were parsed in, and why."""
    c = console()
    for name, p in projects.items():
        c.print(
            f"[dim]{escape(name)} ({p['format']}): SQL parsed as {', '.join(p['dialects'])}"
            f" ({escape(p['from'])})[/]",
            soft_wrap=True,
        )
    if projects:
        c.print()


def render_checks(checks: list[Any]) -> None:
    c = console()
    if not checks:
        c.print("[green]No problems found.[/]")
        return
    for chk in checks:
        style = SEVERITY_STYLE[chk.severity]
        c.print(
            f"[{style}]{chk.severity.upper():7}[/] [bold]{chk.code}[/] {escape(chk.message)}",
            markup=True,
            soft_wrap=True,
        )
        c.print(f"        [dim]fix: {escape(chk.fix)}[/]", soft_wrap=True)
    errors = sum(x.severity == "error" for x in checks)
    warnings = sum(x.severity == "warning" for x in checks)
    c.print(f"\n{errors} error(s), {warnings} warning(s), {len(checks) - errors - warnings} info")


def render_lineage(result: dict[str, Any]) -> None:
    c = console()
    c.print(f"[bold]{result['root']}[/]")
    for direction in ("upstream", "downstream"):
        hops = result.get(direction)
        if hops is None:
            continue
        c.print(f"[bold]{direction}[/] ({len(hops)} columns)")
        if not hops:
            why = (result.get("why_empty") or {}).get(direction)
            c.print(f"  [dim](none{': ' + escape(why) if why else ''})[/]", soft_wrap=True)
        for h in hops:
            indent = "  " * h["depth"]
            col = escape(f".{h['column']}") if h.get("column") else ""
            kind = h.get("kind", "")
            style = "" if kind == "direct" else "dim"
            note = (
                f" [red]opaque: {escape(h['opaque_reason'])}[/]" if h.get("opaque_reason") else ""
            )
            via = " [magenta](across binding)[/]" if h.get("across_binding") else ""
            if h.get("self_ref"):
                via += " [cyan](previous state: the model reads its own table)[/]"
            line = (
                f"{indent}{escape(str(h['node']))}{col} [{style}]{kind}[/]{via}{note}"
                if style
                else f"{indent}{escape(str(h['node']))}{col} {kind}{via}{note}"
            )
            c.print(line, soft_wrap=True)
    if result.get("upstream_origins"):
        c.print(f"[bold]origins[/]: {', '.join(result['upstream_origins'])}")
    if result.get("dashboards"):
        c.print(f"[bold]dashboards[/]: {', '.join(result['dashboards'])}")
    if result.get("opaque_reason"):
        c.print(f"[red]{result['node']} is opaque: {result['opaque_reason']}[/]")
