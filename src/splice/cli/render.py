"""Rich rendering of library results for people (the --json paths bypass this)."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any, Protocol

from rich.console import Console
from rich.markup import escape
from rich.table import Table


@lru_cache(maxsize=1)
def console() -> Console:
    import sys

    # piped output keeps whole lines (a terminal wraps at its own width)
    # emoji=False: a node id such as superset:chart:gmv would print as an emoji (":chart:")
    return Console(highlight=False, emoji=False, width=None if sys.stdout.isatty() else 200)


class Reporting(Protocol):
    """A workspace as the spinner sees it: what long work is doing now is told to ``progress``."""

    progress: Callable[[str], None] | None


def working(message: str, ws: Reporting | None = None):  # type: ignore[no-untyped-def]
    """A spinner on stderr while long work runs (only on a terminal; pipes stay clean); with
    ``ws``, it also says what the work is doing now (the workspace's ``progress``)."""
    import contextlib
    import sys

    if not sys.stderr.isatty():
        return contextlib.nullcontext()
    status = Console(stderr=True, emoji=False).status(message)
    if ws is None:
        return status

    @contextlib.contextmanager
    def told() -> Any:
        with status:
            ws.progress = lambda now: status.update(f"{message} {now}")
            try:
                yield status
            finally:
                ws.progress = None

    return told()


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


def _hop_label(h: dict[str, Any]) -> str:
    """One column reached, with the kind of the edge that reached it from its parent."""
    col = escape(f".{h['column']}") if h.get("column") else ""
    kind = h.get("kind", "")
    label = f"{escape(str(h['node']))}{col} " + (kind if kind == "direct" else f"[dim]{kind}[/]")
    if h.get("across_binding"):
        label += " [magenta](across binding)[/]"
    if h.get("self_ref"):
        label += " [cyan](previous state: the model reads its own table)[/]"
    if h.get("opaque_reason"):
        label += f" [red]opaque: {escape(h['opaque_reason'])}[/]"
    return label


def lineage_tree(result: dict[str, Any], direction: str) -> Any:
    """The hops of one direction as a tree: each column under the column it was reached from
    (its ``via``), each edge labelled with its kind. A walk from a whole node starts from each
    of its columns: those are the first branches."""
    from collections import defaultdict

    from rich.tree import Tree

    hops = result.get(direction) or []
    tree = Tree(f"[bold]{direction}[/] ({len(hops)} columns)", guide_style="dim")
    if not hops:
        why = (result.get("why_empty") or {}).get(direction)
        tree.add(f"[dim](none{': ' + escape(why) if why else ''})[/]")
        return tree
    index: dict[str, int] = {}
    for i, h in enumerate(hops):
        if not h.get("self_ref"):  # a model's earlier state leads nowhere further
            index.setdefault(f"{h['node']}.{h['column']}", i)
    children: dict[int, list[int]] = defaultdict(list)
    tops: list[int] = []
    for i, h in enumerate(hops):
        parent = index.get(h.get("via") or "")
        if parent is None or parent == i:
            tops.append(i)
        else:
            children[parent].append(i)
    start = str(result["node"])

    def start_column(i: int) -> str | None:
        """The root node's column a first hop was reached from, when the walk began at the
        whole node (not at one column, nor at a dashboard)."""
        via = str(hops[i].get("via") or "")
        if result.get("column") or not via or via.endswith("."):
            return None
        head, _, col = via.rpartition(".")
        return col if head in (start, "None") else None

    groups: dict[str | None, list[int]] = defaultdict(list)
    for i in tops:
        groups[start_column(i)].append(i)
    placed: set[int] = set()

    def add(branch: Any, i: int) -> None:
        placed.add(i)
        node = branch.add(_hop_label(hops[i]))
        for j in children.get(i, []):
            if j not in placed:
                add(node, j)

    for col, members in groups.items():
        branch = tree if col is None else tree.add(f"[bold]{escape(start)}.{escape(col)}[/]")
        for i in members:
            add(branch, i)
    for i in range(len(hops)):  # a parent that leads back to its child: shown at the top
        if i not in placed:
            add(tree, i)
    return tree


def render_lineage(result: dict[str, Any]) -> None:
    c = console()
    c.print(f"[bold]{escape(str(result['root']))}[/]")
    for direction in ("upstream", "downstream"):
        if result.get(direction) is not None:
            c.print(lineage_tree(result, direction))
    if result.get("upstream_origins"):
        c.print(f"[bold]origins[/]: {', '.join(result['upstream_origins'])}")
    if result.get("dashboards"):
        c.print(f"[bold]dashboards[/]: {', '.join(result['dashboards'])}")
    if result.get("opaque_reason"):
        c.print(f"[red]{result['node']} is opaque: {result['opaque_reason']}[/]")
